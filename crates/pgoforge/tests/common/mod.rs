//! Helpers shared by the CLI tests: run the pgoforge binary or real sysbench against a server.

#![allow(dead_code)]

pub mod booted;
pub mod plain_debian;
pub mod readme;
pub mod sshd;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use testsupport::TestServer;

/// Held by the tests that install packages on this machine or read its apt and dpkg state
/// through an overlay of it (test_deps, deploy, security_update): an `apt-get update` on the
/// machine rewrites the lists under an overlay's feet, and one test's apt lock would fail
/// another's apt call.
pub static MACHINE_PACKAGES: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// [`MACHINE_PACKAGES`], held until the guard drops (a failed test does not poison it).
pub fn machine_packages() -> std::sync::MutexGuard<'static, ()> {
    MACHINE_PACKAGES.lock().unwrap_or_else(|e| e.into_inner())
}

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
    pgoforge_in(Path::new("."), args)
}

/// `pgoforge` with extra environment variables (APT_CONFIG, XDG_CACHE_HOME of a test's mirror).
pub fn pgoforge_env(args: &[&str], env: &[(&str, &Path)]) -> Ran {
    let t0 = Instant::now();
    let mut c = Command::new(env!("CARGO_BIN_EXE_pgoforge"));
    c.args(args);
    for (k, v) in env {
        c.env(k, v);
    }
    ran(c.output().expect("running pgoforge"), t0)
}

/// `pgoforge` started in `dir`: what a user's relative paths are relative to.
pub fn pgoforge_in(dir: &Path, args: &[&str]) -> Ran {
    let t0 = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_pgoforge"))
        .args(args)
        .current_dir(dir)
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

/// Live (not zombie) processes whose command line mentions `dir`: pid and command line.
pub fn processes_mentioning(dir: &Path) -> Vec<(u32, String)> {
    let needle = dir.to_string_lossy();
    fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| pgoforge::infra::pid_alive(*pid))
        .filter_map(|pid| {
            let cmd = fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            cmd.contains(&*needle).then_some((pid, cmd))
        })
        .collect()
}

/// The names of the entries of `dir` (which must exist), in directory order.
pub fn names_in(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// Every path under `root`, directories included.
pub fn paths_under(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(p.clone());
            }
            out.push(p);
        }
    }
    out
}

/// `pgoforge bench` arguments for the smallest real benchmark: Debian's mariadbd under two names,
/// one round of one second of `workloads` on 100 rows.
pub fn tiny_bench(work: &Path, run: &Path, workloads: &str) -> Vec<String> {
    vec![
        "bench".to_string(),
        format!("--baseline=a={}", testsupport::MARIADBD),
        format!("--binary=b={}", testsupport::MARIADBD),
        format!("--workloads={workloads}"),
        "--rounds=1".into(),
        "--time=1".into(),
        "--warmup=0".into(),
        "--tables=1".into(),
        "--table-size=100".into(),
        "--buffer-pool-mb=64".into(),
        // A small redo log: every round restores it with the datadir (512 MiB by default).
        "--redo-log-mb=32".into(),
        // Threads chosen per workload (the default) have their own test; these tests are about
        // other things, at 4 threads.
        "--threads=4".into(),
        // The A/A control is the default; these tests are about other things.
        "--no-aa".into(),
        // Tests share the machine with other tests: measure anyway (each run records its load)
        // rather than wait before every round for theirs to pass.
        "--allow-busy".into(),
        format!("--work-dir={}", work.display()),
        format!("--run={}", run.display()),
    ]
}

/// Runs `pgoforge` with `args` and then `extra`.
pub fn pgoforge_with(args: Vec<String>, extra: &[&str]) -> Ran {
    let mut a = args;
    a.extend(extra.iter().map(|s| s.to_string()));
    pgoforge(&a.iter().map(String::as_str).collect::<Vec<_>>())
}

/// Every record of a benchmark run directory's results.jsonl, as JSON.
pub fn records(run: &Path) -> Vec<serde_json::Value> {
    fs::read_to_string(run.join("results.jsonl"))
        .unwrap_or_else(|e| panic!("{}/results.jsonl: {e}", run.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}
