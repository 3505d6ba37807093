//! The command line: one file per subcommand — `run` (the whole pipeline), the single steps it is
//! made of (`build`, `train`, `bolt`, `gate`, `bench`, `report`, `package`, `rebuild`) and the tools beside it
//! (`oltp`, `server`, `calibrate`, `doctor`, `recipes`); flags shared by several live in `args.rs`,
//! exit statuses in `pgoforge::infra::exit`.

mod args;
mod bench;
mod bolt;
mod build;
mod calibrate;
mod doctor;
mod follow;
mod gate;
mod oltp;
mod package;
mod pool;
mod power;
mod publish;
mod rebuild;
mod recipes;
mod report;
mod run;
mod server;
mod source;
mod train;
mod try_package;

use clap::{CommandFactory, Parser, Subcommand};
use pgoforge::events::{JsonLines, Reporter, Terminal};
use pgoforge::infra::exit::{ExitStatus, Stop};
use pgoforge::pipeline::plan::PlanError;

#[derive(Parser)]
#[command(
    name = "pgoforge",
    version,
    about = "Feedback-directed optimization (PGO, LTO, BOLT) for MySQL, Percona Server and MariaDB, with proof",
    long_about = None
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// The whole pipeline: source, builds, training, BOLT, gate, benchmark, report, package.
    Run(Box<run::RunArgs>),
    /// Fetch the recipe's source: the newest release the mirror serves (or --source-version),
    /// checked and unpacked into the work dir.
    Source(Box<source::SourceCmdArgs>),
    /// Build a server variant from source (baseline, lto, pgo-gen, pgo, pgo+lto; +bolt, +native).
    Build(Box<build::BuildArgs>),
    /// Build the instrumented (pgo-gen) server, train it on the OLTP mix, store the profile.
    Train(Box<train::TrainArgs>),
    /// Profile a bolt-ready server binary and optimize it with BOLT.
    Bolt(Box<bolt::BoltArgs>),
    /// Check that optimized binaries compute what the baseline computes.
    Gate(Box<gate::GateArgs>),
    /// Benchmark servers side by side: interleaved rounds, statistics, reports.
    Bench(Box<bench::BenchArgs>),
    /// Regenerate the reports of a benchmark run from its stored results.
    Report(report::ReportArgs),
    /// Package a variant of a finished run as a tar.zst with its manifest and SHA256SUMS.
    Package(package::PackageArgs),
    /// Pool one comparison measured on several hosts: each host's gain, the spread between
    /// hosts, and a pooled gain whose interval counts it (a random-effects model).
    Pool(pool::PoolArgs),
    /// Publish .debs (or package tarballs) into a signed apt repository and print the sources
    /// entry hosts add (apt-ftparchive and gpg; the key is yours or one pgoforge makes).
    Publish(publish::PublishArgs),
    /// One unattended cycle: the newest release Debian serves, built from the repository's last
    /// published profiles, gated, benchmarked against Debian's server of that release, and
    /// published when not slower beyond a margin (a systemd timer runs it: contrib/systemd/).
    Follow(Box<follow::FollowArgs>),
    /// What a package gains on this host: benchmarked against this host's own mariadbd with the
    /// A/A control (no build or toolchain needed), the gain with its interval, and what the
    /// host's load did to it.
    Try(Box<try_package::TryArgs>),
    /// Rebuild a package from its sidecar (recipe, source identity, profiles, toolchain) without
    /// training, and compare the binary byte for byte (exit 11 when it differs).
    Rebuild(Box<rebuild::RebuildArgs>),
    /// Measure the machine's noise floor: one server against itself (A/A), and the smallest
    /// effect a benchmark here can detect.
    Calibrate(Box<calibrate::CalibrateArgs>),
    /// What a benchmark can find before it runs: power under the reports' rule, the smallest
    /// change found 80 % of the time, the rounds a change needs.
    Power(power::PowerArgs),
    /// sysbench-compatible OLTP workloads: prepare, prewarm, run, cleanup.
    Oltp(Box<oltp::OltpArgs>),
    /// Run a MySQL-family server by hand: start, stop, status.
    Server(server::ServerArgs),
    /// Show which tools are present, which are missing, and the apt command that fixes it.
    Doctor(doctor::DoctorArgs),
    /// List the embedded recipes.
    Recipes(recipes::RecipesArgs),
    /// The benchmark client's side of `--client-host`: started by pgoforge over ssh, it answers
    /// run requests on stdin (JSON lines) until stdin closes. Not for people.
    #[command(hide = true)]
    ClientServe,
    /// A build host's side of `--build-host`: started by pgoforge over ssh, it reads one build
    /// request on stdin (JSON), builds it and answers on stdout. Not for people.
    #[command(hide = true)]
    BuildServe,
}

/// Runs the command line; the returned value is the process exit status.
pub fn main() -> anyhow::Result<i32> {
    let cli = Cli::parse();
    // Builds and other long tools run in process groups of their own; a signal to pgoforge is
    // passed on to them.
    pgoforge::infra::interrupt::install(None);
    match cli.command {
        Command::Oltp(args) => oltp::main(*args),
        Command::Server(args) => server::main(args),
        Command::Build(args) => build::main(*args),
        Command::Source(args) => source::main(*args),
        Command::Recipes(args) => recipes::main(args),
        Command::Doctor(args) => doctor::main(args),
        Command::Train(args) => train::main(*args),
        Command::Bolt(args) => bolt::main(*args),
        Command::Gate(args) => gate::main(*args),
        Command::Bench(args) => bench::main(*args),
        Command::Calibrate(args) => calibrate::main(*args),
        Command::Power(args) => power::main(args),
        Command::Report(args) => report::main(args),
        Command::Run(args) => run::main(*args),
        Command::Package(args) => package::main(args),
        Command::Pool(args) => pool::main(args),
        Command::Publish(args) => publish::main(args),
        Command::Follow(args) => follow::main(*args),
        Command::Try(args) => try_package::main(*args),
        Command::Rebuild(args) => rebuild::main(*args),
        Command::ClientServe => pgoforge::bench::remote::serve(),
        Command::BuildServe => pgoforge::builder::host::serve(),
    }
}

/// The exit status an error means (the table in `pgoforge::infra::exit`): the first cause in
/// its chain that has a kind decides; an error without one is a general failure.
pub fn exit_status(e: &anyhow::Error) -> ExitStatus {
    for cause in e.chain() {
        if let Some(stop) = cause.downcast_ref::<Stop>() {
            return stop.status();
        }
        if cause.downcast_ref::<PlanError>().is_some() {
            return ExitStatus::Usage;
        }
    }
    ExitStatus::Failure
}

/// Where a command's events go: JSON lines with `--json`, the terminal otherwise.
fn reporter(json: bool) -> Box<dyn Reporter> {
    if json {
        Box::new(JsonLines)
    } else {
        Box::new(Terminal::default())
    }
}

/// Exits with clap's usage-error status (2) and message.
pub fn usage_error(msg: impl std::fmt::Display) -> ! {
    Cli::command()
        .error(clap::error::ErrorKind::ValueValidation, msg)
        .exit()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_of_error_exits_with_its_own_status() {
        use anyhow::Context;
        let status = |e: anyhow::Error| exit_status(&e).code();
        assert_eq!(status(anyhow::anyhow!("a build failed")), 1);
        assert_eq!(status(Stop::Usage("--rounds 0".into()).into()), 2);
        assert_eq!(status(PlanError::NoVariants.into()), 2);
        let gate = Stop::GateStopped {
            variants: vec!["pgo".into()],
            message: "different checksums".into(),
        };
        assert_eq!(status(gate.into()), 3);
        let busy = Stop::Busy {
            share: 0.9,
            message: "busy".into(),
        };
        // The kind survives the context added on the way up.
        let wrapped = Err::<(), _>(anyhow::Error::from(busy))
            .context("stage bench failed")
            .unwrap_err();
        assert_eq!(status(wrapped), 75);
    }

    #[test]
    fn the_command_line_is_consistent() {
        // clap's own checks: no flag defined twice in a command, defaults parse, and so on.
        Cli::command().debug_assert();
    }

    #[test]
    fn shared_flags_parse_the_same_everywhere() {
        let p = |args: &[&str]| Cli::try_parse_from(args).map(|_| ()).map_err(|e| e.kind());
        for cmd in ["build", "train", "run"] {
            assert_eq!(
                p(&[
                    "pgoforge",
                    cmd,
                    "--work-dir",
                    "/tmp/w",
                    "--recipe",
                    "mysql-9.7"
                ]),
                Ok(())
            );
            assert_eq!(
                p(&[
                    "pgoforge",
                    cmd,
                    "--compiler",
                    "/opt/icx",
                    "--flag-family",
                    "clang"
                ]),
                Ok(())
            );
            assert_eq!(
                p(&["pgoforge", cmd, "--flag-family", "icc"]),
                Err(clap::error::ErrorKind::InvalidValue)
            );
        }
        assert_eq!(
            p(&["pgoforge", "build", "--variant", "pgo+lto+bolt"]),
            Ok(())
        );
        assert_eq!(
            p(&["pgoforge", "build", "--variant", "fast"]),
            Err(clap::error::ErrorKind::ValueValidation)
        );
        assert_eq!(
            p(&[
                "pgoforge",
                "bench",
                "--baseline",
                "a=/x",
                "--binary",
                "b=/y",
                "--measure",
                "cachegrind"
            ]),
            Ok(())
        );
        assert_eq!(
            p(&[
                "pgoforge",
                "bench",
                "--baseline",
                "a=/x",
                "--binary",
                "b=/y",
                "--measure",
                "perf"
            ]),
            Err(clap::error::ErrorKind::InvalidValue)
        );
        assert_eq!(p(&["pgoforge", "report", "/r", "--format", "csv"]), Ok(()));
        // An instance name never leaves WORK/servers.
        assert_eq!(
            p(&["pgoforge", "server", "start", "--name", "../x"]),
            Err(clap::error::ErrorKind::ValueValidation)
        );
        assert_eq!(
            p(&["pgoforge", "server", "stop", "--name", "bench-1"]),
            Ok(())
        );
        assert_eq!(
            p(&["pgoforge", "report", "/r", "--format", "xml"]),
            Err(clap::error::ErrorKind::InvalidValue)
        );
        assert_eq!(
            p(&[
                "pgoforge",
                "gate",
                "--baseline",
                "/x",
                "--candidate",
                "nopath"
            ]),
            Err(clap::error::ErrorKind::ValueValidation)
        );
        assert_eq!(
            p(&[
                "pgoforge",
                "run",
                "--variants",
                "pgo,pgo+lto+bolt",
                "--buffer-pool-mb",
                "512",
                "--set",
                "a=1",
                "--train-tables",
                "2",
                "--tables",
                "3"
            ]),
            Ok(())
        );
        assert_eq!(
            p(&[
                "pgoforge",
                "train",
                "--tables",
                "2",
                "--train-table-size",
                "9"
            ]),
            Ok(())
        );
    }
}
