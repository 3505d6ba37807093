//! `pgoforge try PACKAGE`: what the package gains on this host, against this host's own server —
//! on any host that has the package and Debian's server, no build and no toolchain. The package
//! is unpacked and checked (SHA256SUMS, its CPU level), then benchmarked against the installed
//! mariadbd with `bench`'s default design and its A/A control, and the gain is said with its
//! interval for this host. A busy host (production) is measured as it is, and the summary says
//! what the load did to the verdict; `--wait-for-idle` waits for a quiet host instead.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, Parser};
use pgoforge::bench::plan::AA_CONTROL;
use pgoforge::bench::report::{self, Report};

use super::args::WorkDirArgs;
use super::bench::BenchArgs;

/// The package's server and this host's, as the benchmark names them.
const HOST: &str = "this-host";
const PACKAGE: &str = "package";

#[derive(Args)]
pub struct TryArgs {
    /// The package tarball (NAME.tar.zst).
    package: PathBuf,
    /// This host's server to compare with [/usr/sbin/mariadbd; Debian's binary
    /// /usr/sbin/mariadbd.distrib where mariadb-server-pgo is installed].
    #[arg(long, value_name = "PATH")]
    host_server: Option<PathBuf>,
    /// Wait for the host to be quiet before each run, as `bench` does, and give up (exit 75)
    /// if it stays busy [measure beside whatever runs, and say what it did].
    #[arg(long)]
    wait_for_idle: bool,
    #[command(flatten)]
    work: WorkDirArgs,
    /// Further `bench` options, after `--` (e.g. `-- --workloads point_select --threads 4`).
    #[arg(last = true, value_name = "BENCH_OPTIONS")]
    bench: Vec<String>,
}

#[derive(Parser)]
struct AsBench {
    #[command(flatten)]
    args: BenchArgs,
}

/// Debian's binary, wherever the .deb's selector stands in its place.
fn host_server(given: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = given {
        if !p.is_file() {
            pgoforge::usage!("--host-server {} does not exist", p.display());
        }
        return Ok(p.to_path_buf());
    }
    for p in ["/usr/sbin/mariadbd.distrib", "/usr/sbin/mariadbd"] {
        if Path::new(p).is_file() {
            return Ok(PathBuf::from(p));
        }
    }
    pgoforge::usage!(
        "this host has no MariaDB server to compare with (/usr/sbin/mariadbd): apt-get install \
         mariadb-server-core, or name one with --host-server PATH"
    )
}

/// The package unpacked and checked under the work dir; its server binary (None: this CPU
/// lacks the package's level, said on stderr).
fn unpack(package: &Path, work: &Path) -> Result<Option<PathBuf>> {
    if !package.is_file() {
        pgoforge::usage!(
            "{} does not exist (give a package tarball, NAME.tar.zst)",
            package.display()
        );
    }
    // One directory per try: a server another try benchmarks is never replaced under it.
    let into = work.join("try").join(format!(
        "{}-{}",
        pgoforge::infra::time::now_secs(),
        std::process::id()
    ));
    std::fs::create_dir_all(&into).with_context(|| format!("creating {}", into.display()))?;
    let (root, m) = pgoforge::package::unpack::unpack_checked(package, &into)?;
    // A CPU without the package's level would die with SIGILL mid-benchmark: its own check.
    let check = root.join(pgoforge::package::cpu::TARBALL_CHECK);
    if check.is_file() {
        let out = std::process::Command::new(&check)
            .output()
            .with_context(|| format!("running {}", check.display()))?;
        if !out.status.success() {
            eprintln!(
                "error: {} needs CPU features this host lacks: {}",
                m.name,
                String::from_utf8_lossy(&out.stderr).trim()
            );
            return Ok(None);
        }
    }
    match ["mariadbd", "mysqld"]
        .map(|s| root.join("bin").join(s))
        .into_iter()
        .find(|p| p.is_file())
    {
        Some(server) => Ok(Some(server)),
        None => pgoforge::usage!("{} has no bin/mariadbd or bin/mysqld", package.display()),
    }
}

pub fn main(a: TryArgs) -> Result<i32> {
    for flag in ["--baseline", "--binary", "--run", "--work-dir", "--resume"] {
        if a.bench
            .iter()
            .any(|o| o == flag || o.starts_with(&format!("{flag}=")))
        {
            pgoforge::usage!("`try` sets {flag} itself; leave it out of the bench options");
        }
    }
    let work = a.work.create()?;
    let host = host_server(a.host_server.as_deref())?;
    let Some(server) = unpack(&a.package, &work)? else {
        return Ok(pgoforge::package::cpu::EXIT_CPU);
    };
    let dir = work
        .join("runs")
        .join(format!("try-{}", pgoforge::infra::time::now_secs()));
    let mut argv: Vec<String> = vec![
        "pgoforge try".into(),
        format!("--baseline={HOST}={}", host.display()),
        format!("--binary={PACKAGE}={}", server.display()),
        format!("--work-dir={}", work.display()),
        format!("--run={}", dir.display()),
    ];
    if !a.wait_for_idle && !a.bench.iter().any(|o| o == "--allow-busy") {
        argv.push("--allow-busy".into());
    }
    argv.extend(a.bench.iter().cloned());
    let bench = match AsBench::try_parse_from(&argv) {
        Ok(b) => b.args,
        Err(e) => pgoforge::usage!("the bench options after `--`: {e}"),
    };
    let code = super::bench::main(bench)?;
    if code != 0 {
        return Ok(code);
    }
    let r = report::build(&dir)?;
    print!("{}", summary(&r, &host, &a.package));
    Ok(0)
}

/// The gain on this host, cell by cell, the A/A control beside it, and what the host's load did.
fn summary(r: &Report, host: &Path, package: &Path) -> String {
    let mut s = format!(
        "\nOn this host: {} against {} (this host's own server), with the A/A control:\n",
        package.display(),
        host.display()
    );
    for c in &r.cells {
        let Some(cmp) = &c.tps_vs_baseline else {
            continue;
        };
        let who = if c.contender == AA_CONTROL {
            "A/A control"
        } else {
            "the package"
        };
        s += &format!(
            "  {:<24} {:>3} threads  {:<12} {}\n",
            c.workload,
            c.threads,
            who,
            cmp.sentence()
        );
    }
    let disturbed: Vec<f64> = r
        .cells
        .iter()
        .flat_map(|c| c.disturbed.iter().map(|(_, share)| *share))
        .collect();
    let runs: usize = r.cells.iter().map(|c| c.tps_rounds.len()).sum();
    s += &busy_sentence(&disturbed, runs);
    s
}

/// What other load did to the verdict, from the runs others disturbed (their CPU shares).
fn busy_sentence(disturbed: &[f64], runs: usize) -> String {
    if disturbed.is_empty() {
        return format!(
            "The host was quiet during all {runs} measured runs (others under {:.0} % of its CPU): \
             the figures are this host's idle ones.\n",
            pgoforge::bench::load::BUSY_SHARE * 100.0
        );
    }
    let worst = disturbed.iter().copied().fold(0.0, f64::max);
    format!(
        "The host was busy during {} of {runs} measured runs (others took up to {:.0} % of its \
         CPU). Both servers ran under that load in every round (rounds are paired and their \
         order alternates), so the comparison stays fair, but: the intervals are wider than an \
         idle host's (a real gain can show as no significant difference), and the gain is the \
         one under this load — unoptimized code tends to suffer more from contention, so an idle \
         host's gain can be smaller or larger. The A/A control line shows how much the load \
         alone moved two identical servers apart. For the idle figure, rerun with \
         --wait-for-idle when the host is quiet.\n",
        disturbed.len(),
        worst * 100.0
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_busy_sentence_counts_the_disturbed_runs_and_their_worst_share() {
        let quiet = busy_sentence(&[], 12);
        assert!(quiet.contains("quiet during all 12"), "{quiet}");
        let busy = busy_sentence(&[0.3, 0.62], 12);
        assert!(busy.contains("busy during 2 of 12"), "{busy}");
        assert!(busy.contains("up to 62 %"), "{busy}");
        assert!(busy.contains("--wait-for-idle"));
    }

    #[test]
    fn bench_options_try_sets_itself_are_refused() {
        let a = TryArgs {
            package: PathBuf::from("/nonexistent.tar.zst"),
            host_server: None,
            wait_for_idle: false,
            work: WorkDirArgs {
                work_dir: PathBuf::from("/nonexistent"),
            },
            bench: vec!["--run=x".into()],
        };
        let e = main(a).unwrap_err().to_string();
        assert!(e.contains("sets --run itself"), "{e}");
    }
}
