//! `pgoforge run` and `pgoforge package`.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{bail, Result};
use clap::Args;
use oltp::settings::TestName;
use pgoforge::bench::report;
use pgoforge::build::Variant;
use pgoforge::pipeline::state::human;
use pgoforge::pipeline::{self, deps, BenchSettings, Options, Outcome};
use pgoforge::recipe::{Recipe, DEFAULT};
use pgoforge::toolchain::Compiler;

use super::profile::MixArgs;

#[derive(Args)]
pub struct RunArgs {
    /// An embedded recipe name (`pgoforge recipes`) or a recipe TOML file.
    #[arg(long, default_value = DEFAULT)]
    recipe: String,
    /// A source directory, tarball or URL (instead of the recipe's source).
    #[arg(long)]
    source: Option<String>,
    /// The sha256 of --source (required for URLs; checked for tarballs when given).
    #[arg(long)]
    sha256: Option<String>,
    /// gcc, clang, a versioned name (clang-16), or a path.
    #[arg(long, default_value = "gcc")]
    compiler: String,
    /// Variants compared with the baseline, comma-separated [default: pgo,pgo+lto,pgo+bolt; with
    /// --quick: pgo]. A +bolt variant is BOLTed after its build; its unBOLTed build is compared too
    /// (as NAME-prebolt) unless the plain variant is listed.
    #[arg(long, value_delimiter = ',')]
    variants: Vec<String>,
    /// Short training and benchmark, one variant (pgo): a first look, three builds.
    #[arg(long)]
    quick: bool,
    /// Where sources, builds, profiles, runs, packages and the run state live.
    #[arg(long = "work-dir", default_value = "pgoforge-work")]
    work_dir: PathBuf,
    /// Install missing dependencies with apt (as root, or through sudo).
    #[arg(long = "install-deps")]
    install_deps: bool,
    /// Use this trained profile (a gcda directory or .profdata) instead of training pgo-gen.
    #[arg(long)]
    profile: Option<PathBuf>,
    /// Training phases: test[@text][:seconds[:threads]], comma-separated.
    #[arg(long)]
    mix: Option<String>,
    /// Tables of the training dataset.
    #[arg(long = "train-tables")]
    train_tables: Option<u32>,
    /// Rows per table of the training dataset.
    #[arg(long = "train-table-size")]
    train_table_size: Option<u64>,
    /// Benchmark workloads, comma-separated [point_select, read_only, read_write; --quick: the
    /// first two].
    #[arg(long, value_delimiter = ',')]
    workloads: Vec<TestName>,
    /// Benchmark client threads, comma-separated [4].
    #[arg(long, value_delimiter = ',')]
    threads: Vec<u32>,
    /// Benchmark rounds; every variant runs once per round, in a new order each round [5; --quick 4].
    #[arg(long)]
    rounds: Option<u32>,
    /// Seconds per measured benchmark run [30; --quick 10].
    #[arg(long)]
    time: Option<u64>,
    /// Seconds of warm-up before each measured run [5; --quick 3].
    #[arg(long)]
    warmup: Option<u64>,
    /// Tables of the benchmark dataset [4; --quick 2].
    #[arg(long)]
    tables: Option<u32>,
    /// Rows per table of the benchmark dataset [100000; --quick 20000].
    #[arg(long = "table-size")]
    table_size: Option<u64>,
    /// InnoDB buffer pool of every server the run starts.
    #[arg(long = "buffer-pool-mb", default_value_t = 2048)]
    buffer_pool_mb: u64,
    /// BOLT optimization flags instead of the probed ones, space-separated.
    #[arg(long = "bolt-flags")]
    bolt_flags: Option<String>,
    /// Also measure each variant under valgrind's cachegrind: instructions, I1 misses and
    /// mispredicted branches per transaction (deterministic; adds minutes per variant and workload).
    #[arg(long)]
    cachegrind: bool,
    /// Do not package the winning variant.
    #[arg(long = "no-package")]
    no_package: bool,
    /// Print the outcome as JSON (progress still goes to stderr).
    #[arg(long)]
    json: bool,
}

/// On Ctrl-C (or SIGTERM): say what survives, then die of the signal as before. Servers die with
/// pgoforge (PR_SET_PDEATHSIG) and make gets the terminal's SIGINT itself; unfinished stages were
/// never recorded, so a rerun redoes exactly those.
extern "C" fn on_interrupt(sig: libc::c_int) {
    const MSG: &[u8] =
        b"\npgoforge run: interrupted. Finished stages are kept (run-state.json, finished builds, \
benchmark rounds already written); rerun the same command to continue.\n";
    // SAFETY: write, signal and raise are async-signal-safe.
    unsafe {
        libc::write(2, MSG.as_ptr().cast(), MSG.len());
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

pub fn run_main(a: RunArgs) -> Result<i32> {
    let t0 = Instant::now();
    // SAFETY: installing a handler that only makes async-signal-safe calls.
    unsafe {
        libc::signal(
            libc::SIGINT,
            on_interrupt as *const () as libc::sighandler_t,
        );
        libc::signal(
            libc::SIGTERM,
            on_interrupt as *const () as libc::sighandler_t,
        );
    }
    let recipe = Recipe::load(&a.recipe)?;
    let variant_names = if !a.variants.is_empty() {
        a.variants.clone()
    } else if a.quick {
        vec!["pgo".into()]
    } else {
        vec!["pgo".into(), "pgo+lto".into(), "pgo+bolt".into()]
    };
    let variants: Vec<Variant> = variant_names
        .iter()
        .map(|v| v.parse().unwrap_or_else(|e: String| super::usage_error(e)))
        .collect();
    let log = |l: &str| eprintln!("[{:>9}] {l}", human(t0.elapsed().as_secs_f64()));

    let check = deps::check(&recipe, &a.compiler, variants.iter().any(|v| v.bolt_ready));
    if !check.unchecked.is_empty() {
        log(&format!(
            "cannot check packages on this system (no dpkg-query): {}; CMake will name what is missing",
            check.unchecked.join(" ")
        ));
    }
    if !check.missing.is_empty() {
        let what: Vec<String> = check.missing.iter().map(|m| m.what.clone()).collect();
        if a.install_deps || pgoforge::process::is_root() {
            log(&format!(
                "missing: {}; installing with apt: {}",
                what.join(", "),
                check.packages().join(" ")
            ));
            deps::install(&check)?;
        } else {
            bail!(
                "missing dependencies: {}\ninstall them with:\n  sudo {}\nor rerun with --install-deps",
                what.join(", "),
                check.command()
            );
        }
    }
    let compiler = Compiler::find(&a.compiler, None)?;

    let mix = MixArgs {
        mix: a.mix.clone(),
        quick: a.quick,
        tables: a.train_tables,
        table_size: a.train_table_size,
    }
    .mix();
    if mix.phases.is_empty() {
        super::usage_error("--mix has no phases");
    }
    let default_workloads = if a.quick {
        vec![TestName::OltpPointSelect, TestName::OltpReadOnly]
    } else {
        vec![
            TestName::OltpPointSelect,
            TestName::OltpReadOnly,
            TestName::OltpReadWrite,
        ]
    };
    let bench = BenchSettings {
        workloads: if a.workloads.is_empty() {
            default_workloads
        } else {
            a.workloads.clone()
        },
        threads: if a.threads.is_empty() {
            vec![4]
        } else {
            a.threads.clone()
        },
        rounds: a.rounds.unwrap_or(if a.quick { 4 } else { 5 }),
        seconds: a.time.unwrap_or(if a.quick { 10 } else { 30 }),
        warmup_seconds: a.warmup.unwrap_or(if a.quick { 3 } else { 5 }),
        tables: a.tables.unwrap_or(if a.quick { 2 } else { 4 }),
        table_size: a
            .table_size
            .unwrap_or(if a.quick { 20_000 } else { 100_000 }),
        buffer_pool_mb: a.buffer_pool_mb,
    };
    if bench.rounds == 0 || bench.seconds == 0 || bench.threads.contains(&0) {
        super::usage_error("--rounds, --time and --threads must be at least 1");
    }
    let opts = Options {
        recipe: &recipe,
        source: a.source.clone(),
        sha256: a.sha256.clone(),
        compiler: &compiler,
        variants,
        profile: a.profile.clone(),
        mix,
        bench,
        bolt_flags: a
            .bolt_flags
            .as_ref()
            .map(|f| f.split_whitespace().map(str::to_string).collect()),
        work_dir: a.work_dir.clone(),
        package: !a.no_package,
        cachegrind: a.cachegrind,
        show_progress: !a.json,
    };
    let (out, rep) = pipeline::run(&opts, &log)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(0);
    }
    print_summary(&out, &rep, t0.elapsed().as_secs_f64());
    Ok(0)
}

fn print_summary(out: &Outcome, r: &report::Report, total: f64) {
    println!(
        "\nStages (this run's wall time; reused stages show the time they took when they ran):"
    );
    for s in &out.timings {
        let how = if s.reused {
            format!("reused (took {})", human(s.work_seconds))
        } else {
            human(s.seconds)
        };
        println!("  {:<24} {how}", s.stage);
    }
    println!("  {:<24} {}", "total", human(total));
    println!();
    print!("{}", report::text(r));
    for w in &out.warnings {
        println!("warning: {w}");
    }
    println!(
        "\nReport: {} (also report.md, report.json, report.csv)",
        out.run_dir.join("report.html").display()
    );
    match (&out.winner, &out.package) {
        (Some(w), Some(p)) => println!(
            "Package ({w}, the variant that measurably wins): {}\n  sha256 {}  ({:.1} MiB, {} files)",
            p.path.display(),
            p.sha256,
            p.bytes as f64 / 1048576.0,
            p.files
        ),
        (Some(w), None) => println!("Winner: {w} (not packaged: --no-package)"),
        (None, _) => println!("No variant measurably beat the baseline; nothing packaged."),
    }
}

#[derive(Args)]
pub struct PackageArgs {
    /// The variant (contender name) of the finished run to package, e.g. pgo+bolt.
    variant: String,
    #[arg(long = "work-dir", default_value = "pgoforge-work")]
    work_dir: PathBuf,
}

pub fn package_main(a: PackageArgs) -> Result<i32> {
    let work = std::fs::canonicalize(&a.work_dir)
        .map_err(|e| anyhow::anyhow!("work dir {}: {e}", a.work_dir.display()))?;
    let out = Outcome::load(&work)?;
    let rep = report::build(&out.run_dir).ok();
    let p = pipeline::package_contender(&work, &out, rep.as_ref(), &a.variant)?;
    println!(
        "{}\n  sha256 {}  ({:.1} MiB, {} files)",
        p.path.display(),
        p.sha256,
        p.bytes as f64 / 1048576.0,
        p.files
    );
    Ok(0)
}
