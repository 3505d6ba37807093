//! The command line: one subcommand per pipeline stage.

mod oltp;
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
}

/// Runs the command line; the returned value is the process exit status.
pub fn main() -> anyhow::Result<i32> {
    let cli = Cli::parse();
    match cli.command {
        Command::Oltp(args) => oltp::main(*args),
        Command::Server(args) => server::main(args),
    }
}

/// Exits with clap's usage-error status (2) and message.
pub fn usage_error(msg: impl std::fmt::Display) -> ! {
    Cli::command()
        .error(clap::error::ErrorKind::ValueValidation, msg)
        .exit()
}
