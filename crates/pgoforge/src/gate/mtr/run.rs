//! One binary's MTR run: the script started with the binary swapped in, its vardir pruned of bulk
//! and its reject files kept; and MTR's tools built in the baseline's tree before any run.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::output::{parse, result_line, TestOutcome, TestResult};
use super::swap::{server_dir, MtrTree};
use crate::infra::runner::{Tool, ToolError};

/// One binary's MTR run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MtrRun {
    pub name: String,
    pub binary: PathBuf,
    pub tests: Vec<TestResult>,
    pub seconds: f64,
    /// MTR's whole output.
    pub log: PathBuf,
}

impl MtrRun {
    pub fn count(&self, o: TestOutcome) -> usize {
        self.tests.iter().filter(|t| t.outcome == o).count()
    }

    pub(super) fn get(&self, name: &str) -> Option<&TestResult> {
        self.tests.iter().find(|t| t.name == name)
    }
}

/// What every binary runs: the same MTR, tests and arguments.
pub struct Suite<'a> {
    pub tree: &'a MtrTree,
    pub tests: &'a [String],
    pub args: &'a [String],
}

/// Runs the suite on `binary` in `dir` (its own vardir and server link). MTR reporting failures
/// is a result, not an error; MTR reporting nothing at all is an error.
pub fn run_on(
    suite: &Suite,
    name: &str,
    binary: &Path,
    dir: &Path,
    progress: &dyn Fn(&TestResult),
) -> Result<MtrRun> {
    let tree = suite.tree;
    let binary = fs::canonicalize(binary)
        .with_context(|| format!("MTR for {name}: the binary {}", binary.display()))?;
    if dir.exists() {
        fs::remove_dir_all(dir)
            .with_context(|| format!("removing {}, left by an earlier MTR run", dir.display()))?;
    }
    let under_test = server_dir(tree, &binary, dir)?;
    let script = super::swap::script(tree, &under_test);
    let test_dir = script
        .parent()
        .context("the MTR script has a directory")?
        .to_path_buf();
    let log = dir.join("mtr.log");
    let started = std::time::SystemTime::now();
    let t0 = Instant::now();
    let parallel = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut cmd = Command::new("perl");
    // MTR dying with pgoforge takes its servers along (its process wrapper watches its parent).
    crate::infra::interrupt::dies_with_pgoforge(&mut cmd);
    cmd.arg(&script)
        .current_dir(&test_dir)
        .envs(under_test)
        .arg(format!("--vardir={}", dir.join("var").display()))
        .arg(format!("--parallel={parallel}"))
        // Every test runs whatever fails before it; a test hanging in a broken binary is stopped.
        .args(["--force", "--max-test-fail=0", "--testcase-timeout=10"])
        .args(suite.args)
        .args(suite.tests);
    let ran = Tool::new(&mut cmd, format!("mysql-test-run on {name}"))
        .log(Some(&log))
        .run_with(|line| {
            if let Some((name, outcome)) = result_line(line) {
                progress(&TestResult {
                    name,
                    outcome,
                    detail: String::new(),
                });
            }
        });
    let seconds = t0.elapsed().as_secs_f64();
    keep_rejects(&tree.tests_dir, started, &dir.join("rejects"));
    prune_vardir(&dir.join("var"));
    match ran {
        Ok(_) | Err(ToolError::Failed { .. }) => {}
        Err(e) => return Err(e.into()),
    }
    let text = fs::read_to_string(&log).with_context(|| format!("reading {}", log.display()))?;
    let results = parse(&text);
    if results.is_empty() {
        let tail: Vec<&str> = text.lines().rev().take(25).collect();
        bail!(
            "mysql-test-run on {name} reported no test results; its last lines:\n{}\n(log {})",
            tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
            log.display()
        );
    }
    Ok(MtrRun {
        name: name.to_string(),
        binary,
        tests: results,
        seconds,
        log,
    })
}

/// Directories in an MTR vardir that hold data, not findings: datadirs (MySQL keeps a ~100 MB copy
/// for every failing test), the copied test data, MariaDB's bootstrap database.
const VARDIR_BULK: [&str; 3] = ["data", "std_data", "install.db"];

/// Leaves in a finished run's vardir what explains a failure — the test logs, reject files,
/// server error logs, configurations — and removes the bulk (a MySQL run with a dozen failures
/// left 3 GB).
fn prune_vardir(var: &Path) {
    let Ok(entries) = fs::read_dir(var) else {
        return;
    };
    for e in entries.flatten() {
        // Not followed through links: file_type does not.
        if !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let p = e.path();
        if VARDIR_BULK.iter().any(|b| e.file_name() == *b) {
            let _ = fs::remove_dir_all(&p);
        } else {
            prune_vardir(&p);
        }
    }
}

/// mysqltest writes a failing test's output beside its expected result when that directory is
/// writable (the test tree, not the vardir); those files are moved into `keep` so the tree stays
/// as it was and the next binary's run starts clean.
fn keep_rejects(test_dir: &Path, since: std::time::SystemTime, keep: &Path) {
    fn walk(d: &Path, depth: usize, found: &mut Vec<PathBuf>) {
        let Ok(entries) = fs::read_dir(d) else { return };
        for e in entries.flatten() {
            let p = e.path();
            let Ok(t) = e.file_type() else { continue };
            if t.is_dir() && depth > 0 && p.file_name().is_some_and(|n| n != "var") {
                walk(&p, depth - 1, found);
            } else if t.is_file() && p.extension().is_some_and(|x| x == "reject") {
                found.push(p);
            }
        }
    }
    let mut found = Vec::new();
    walk(test_dir, 4, &mut found);
    for p in found {
        let fresh = fs::metadata(&p)
            .and_then(|m| m.modified())
            .is_ok_and(|m| m >= since);
        if !fresh {
            continue;
        }
        let _ = fs::create_dir_all(keep);
        let to = keep.join(p.file_name().unwrap_or_default());
        if fs::rename(&p, &to).is_err() && fs::copy(&p, &to).is_ok() {
            let _ = fs::remove_file(&p);
        }
    }
}

/// Builds MTR's tools (`targets`) in the baseline's build tree; returns the seconds it took.
pub fn build_tools(build_dir: &Path, targets: &[String], log: &Path) -> Result<f64> {
    let t0 = Instant::now();
    let mut make = Command::new("cmake");
    make.arg("--build")
        .arg(build_dir)
        .arg("-j")
        .arg(crate::builder::default_jobs().to_string());
    for t in targets {
        make.arg("--target").arg(t);
    }
    Tool::new(&mut make, "building MTR's tools in the baseline's tree")
        .log(Some(log))
        .own_process_group()
        .run()?;
    Ok(t0.elapsed().as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pruned_vardir_keeps_the_findings_and_drops_the_datadirs() {
        let t = tempfile::tempdir().unwrap();
        let var = t.path().join("var");
        for d in [
            "data/mysql",
            "std_data/x",
            "install.db",
            "1/log/main.cast/mysqld.1/data/test",
            "mysqld.1/data",
        ] {
            fs::create_dir_all(var.join(d)).unwrap();
        }
        for f in [
            "1/log/cast.reject",
            "1/log/mysqld.1.err",
            "1/log/main.cast/mysqld.1/mysqld.log",
            "1/log/main.cast/mysqld.1/data/test/t1.ibd",
        ] {
            fs::write(var.join(f), "x").unwrap();
        }
        // A link to a data directory elsewhere is not followed.
        let outside = t.path().join("outside/data");
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("keep"), "x").unwrap();
        std::os::unix::fs::symlink(t.path().join("outside"), var.join("linked")).unwrap();
        prune_vardir(&var);
        for gone in [
            "data",
            "std_data",
            "install.db",
            "1/log/main.cast/mysqld.1/data",
            "mysqld.1/data",
        ] {
            assert!(!var.join(gone).exists(), "{gone}");
        }
        for kept in [
            "1/log/cast.reject",
            "1/log/mysqld.1.err",
            "1/log/main.cast/mysqld.1/mysqld.log",
        ] {
            assert!(var.join(kept).is_file(), "{kept}");
        }
        assert!(outside.join("keep").is_file());
    }
}
