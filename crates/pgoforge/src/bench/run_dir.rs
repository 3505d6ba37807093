//! A benchmark's run directory: plan.json (what was asked; its hash names the directory),
//! environment.json, and results.jsonl (one [`Record`] per measured run, appended as each ends; a
//! line torn by a crash is cut before appending continues).

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use oltp::settings::TestName;
use oltp::RunResult;
use serde::{Deserialize, Serialize};

use super::environment::Environment;
use super::load::Load;
use super::plan::BenchPlan;

/// One line of results.jsonl.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub round: u32,
    /// Position of the contender in this round's order (0 = ran first).
    pub position: usize,
    pub contender: String,
    pub workload: TestName,
    pub threads: u32,
    pub result: RunResult,
    /// The machine around the measured run (absent in results recorded before it was sampled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<Load>,
    /// The slice of the round, in the sliced design (absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slice: Option<u32>,
    /// The median `SELECT 1` round trip to this server over the run's transport, in µs, measured
    /// when it started (absent in results recorded before it was).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_us: Option<f64>,
    /// The client host the run was driven from (`--client-host`: destination and address);
    /// absent: this host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
}

/// The run directory's plan.json: what was asked, so a resume or a report knows.
pub fn plan_path(dir: &Path) -> PathBuf {
    dir.join("plan.json")
}

/// The plan of the benchmark in `dir`, if it holds a readable one (what a resume continues).
pub fn read_plan(dir: &Path) -> Option<BenchPlan> {
    serde_json::from_str(&fs::read_to_string(plan_path(dir)).ok()?).ok()
}

pub fn results_path(dir: &Path) -> PathBuf {
    dir.join("results.jsonl")
}

/// Reads results.jsonl; a torn last line (a crash mid-write) is ignored, any other bad line is an error.
pub fn read_records(dir: &Path) -> Result<Vec<Record>> {
    let p = results_path(dir);
    let f = match File::open(&p) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("opening {}", p.display())),
    };
    let lines: Vec<String> = BufReader::new(f).lines().collect::<Result<_, _>>()?;
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Record>(l) {
            Ok(r) => out.push(r),
            Err(_) if i + 1 == lines.len() => break,
            Err(e) => bail!(
                "{} line {} is corrupted ({e}); nothing was overwritten",
                p.display(),
                i + 1
            ),
        }
    }
    Ok(out)
}

/// Cuts a line left half-written by a crash, so that appending continues a well-formed file.
pub(super) fn drop_torn_tail(p: &Path) -> Result<()> {
    let Ok(text) = fs::read_to_string(p) else {
        return Ok(());
    };
    if text.is_empty() || text.ends_with('\n') {
        return Ok(());
    }
    let keep = text.rfind('\n').map_or(0, |i| i + 1);
    let f = OpenOptions::new().write(true).open(p)?;
    f.set_len(keep as u64)?;
    Ok(())
}

/// A new run directory gets the plan and the environment; an existing one must hold the same
/// plan, and is continued only when asked to.
pub(super) fn open_run_dir(plan: &BenchPlan, dir: &Path, resume: bool) -> Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let pp = plan_path(dir);
    if !pp.exists() {
        crate::infra::fs::write_json(&dir.join("environment.json"), &Environment::probe(plan))?;
        // The plan last: a directory with a plan is a benchmark.
        return crate::infra::fs::write_json(&pp, plan);
    }
    let old: BenchPlan = serde_json::from_str(&fs::read_to_string(&pp)?)
        .with_context(|| format!("reading {}", pp.display()))?;
    if !resume {
        bail!(
            "{} already holds a benchmark; pass --resume to continue it or choose another --run",
            dir.display()
        );
    }
    if old != *plan {
        bail!(
            "--resume: {} holds a benchmark with a different plan; start a new --run instead",
            dir.display()
        );
    }
    Ok(())
}

/// One contender's `metric` on one cell (workload `w`, `t` threads), round by round.
pub fn by_round(
    records: &[Record],
    name: &str,
    w: TestName,
    t: u32,
    metric: &dyn Fn(&Record) -> f64,
) -> Vec<(u32, f64)> {
    // A round's slices (the sliced design) are averaged: pairing stays by round.
    let mut sums: std::collections::BTreeMap<u32, (f64, u32)> = std::collections::BTreeMap::new();
    for r in records
        .iter()
        .filter(|r| r.contender == name && r.workload == w && r.threads == t)
    {
        let e = sums.entry(r.round).or_insert((0.0, 0));
        e.0 += metric(r);
        e.1 += 1;
    }
    sums.into_iter()
        .map(|(round, (sum, n))| (round, if n == 1 { sum } else { sum / n as f64 }))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_last_line_is_cut_and_skipped_and_any_other_bad_line_is_an_error() {
        let dir = std::env::temp_dir().join(format!("pgoforge-rundir-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let p = results_path(&dir);
        // Nothing recorded yet: no records, and cutting a missing file is no error.
        assert!(read_records(&dir).unwrap().is_empty());
        drop_torn_tail(&p).unwrap();
        // A crash mid-write leaves a line without its newline: reading skips it...
        fs::write(&p, "{\"round\":1,\"posi").unwrap();
        assert!(read_records(&dir).unwrap().is_empty());
        // ...and cutting it leaves a well-formed (here empty) file to append to.
        drop_torn_tail(&p).unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "");
        // Whole lines stay; only the torn tail goes.
        fs::write(&p, "{}\n{\"x\":").unwrap();
        drop_torn_tail(&p).unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "{}\n");
        // A bad line that is not the last is corruption: an error naming the line.
        fs::write(&p, "not json\n{}\n").unwrap();
        let e = read_records(&dir).unwrap_err().to_string();
        assert!(e.contains("line 1 is corrupted"), "{e}");
        fs::remove_dir_all(&dir).unwrap();
    }
}
