//! The command line: one subcommand per pipeline stage.

mod bench;
mod build;
mod oltp;
mod profile;
mod run;
mod server;

use clap::{CommandFactory, Parser, Subcommand};

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
    /// sysbench-compatible OLTP workloads: prepare, prewarm, run, cleanup.
    Oltp(Box<oltp::OltpArgs>),
    /// Run a MySQL-family server by hand: start, stop, status.
    Server(server::ServerArgs),
    /// Build a server variant from source (baseline, lto, pgo-gen, pgo, pgo+lto; +bolt, +native).
    Build(Box<build::BuildArgs>),
    /// List the embedded recipes.
    Recipes(build::RecipesArgs),
    /// Show which tools are present, which are missing, and the apt command that fixes it.
    Doctor(build::DoctorArgs),
    /// Build the instrumented (pgo-gen) server, train it on the OLTP mix, store the profile.
    Train(Box<profile::TrainArgs>),
    /// Profile a bolt-ready server binary and optimize it with BOLT.
    Bolt(Box<profile::BoltArgs>),
    /// Check that optimized binaries compute what the baseline computes.
    Gate(profile::GateArgs),
    /// Benchmark servers side by side: interleaved rounds, statistics, reports.
    Bench(Box<bench::BenchArgs>),
    /// Regenerate the reports of a benchmark run from its stored results.
    Report(bench::ReportArgs),
    /// The whole pipeline: source, builds, training, BOLT, gate, benchmark, report, package.
    Run(Box<run::RunArgs>),
    /// Package a variant of a finished run as a tar.zst with its manifest and SHA256SUMS.
    Package(run::PackageArgs),
}

/// Runs the command line; the returned value is the process exit status.
pub fn main() -> anyhow::Result<i32> {
    let cli = Cli::parse();
    match cli.command {
        Command::Oltp(args) => oltp::main(*args),
        Command::Server(args) => server::main(args),
        Command::Build(args) => build::build_main(*args),
        Command::Recipes(args) => build::recipes_main(args),
        Command::Doctor(args) => build::doctor_main(args),
        Command::Train(args) => profile::train_main(*args),
        Command::Bolt(args) => profile::bolt_main(*args),
        Command::Gate(args) => profile::gate_main(args),
        Command::Bench(args) => bench::bench_main(*args),
        Command::Report(args) => bench::report_main(args),
        Command::Run(args) => run::run_main(*args),
        Command::Package(args) => run::package_main(args),
    }
}

/// Exits with clap's usage-error status (2) and message.
pub fn usage_error(msg: impl std::fmt::Display) -> ! {
    Cli::command()
        .error(clap::error::ErrorKind::ValueValidation, msg)
        .exit()
}
