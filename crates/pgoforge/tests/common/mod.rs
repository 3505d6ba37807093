//! Helpers shared by the CLI tests: run the pgoforge binary or real sysbench against a server.

#![allow(dead_code)]

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use testsupport::TestServer;

pub struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

fn ran(out: Output, t0: Instant) -> Ran {
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        elapsed: t0.elapsed(),
    }
}

pub fn pgoforge(args: &[&str]) -> Ran {
    let t0 = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_pgoforge"))
        .args(args)
        .output()
        .expect("running pgoforge");
    ran(out, t0)
}

/// `pgoforge oltp CMD TEST` with the server's socket arguments and `extra`.
pub fn oltp(srv: &TestServer, cmd: &str, test: &str, extra: &[&str]) -> Ran {
    let conn = srv.socket_args();
    let mut args = vec!["oltp", cmd, test];
    args.extend(conn.iter().map(String::as_str));
    args.extend(extra);
    pgoforge(&args)
}

/// Real sysbench: `sysbench TEST [args] CMD`.
pub fn sysbench(srv: &TestServer, test: &str, cmd: &str, extra: &[&str]) -> Ran {
    let t0 = Instant::now();
    let out = Command::new("sysbench")
        .arg(test)
        .args(srv.socket_args())
        .args(extra)
        .arg(cmd)
        .output()
        .expect("sysbench must be installed (scripts/install-test-deps.sh)");
    ran(out, t0)
}

/// The number after a report label, e.g. `transactions:` → 200.
pub fn field(report: &str, label: &str) -> u64 {
    let line = report
        .lines()
        .find(|l| l.trim_start().starts_with(label))
        .unwrap_or_else(|| panic!("no '{label}' line in:\n{report}"));
    line.trim_start()[label.len()..]
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no number in '{line}'"))
}
