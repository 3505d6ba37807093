//! The server tier: tests that start Debian's MariaDB (mariadb-server) on private datadirs and run
//! real sysbench beside pgoforge — bad input over every subcommand, the benchmark, the OLTP
//! driver's command line, sysbench interop, servers by hand. `cargo test --workspace --test server`.

#[path = "../common/mod.rs"]
mod common;

mod bad_input;
mod bench;
mod cli_oltp;
mod client_host;
mod cpu_level;
mod deploy;
mod distro;
mod engine;
mod follow;
mod follow_timer;
mod interop;
mod mirror;
mod plain_debian;
mod publish;
mod release;
mod replay;
mod reproducible;
mod security_update;
mod server;
mod systemd;
mod test_deps;
mod tpcc;
mod try_package;
mod verify;
