//! What a cachegrind measurement keeps: cachegrind's totals as it prints them, the cost per
//! transaction, one record per cell in cachegrind.jsonl and the contenders it could not run.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use oltp::settings::TestName;
use serde::{Deserialize, Serialize};

/// Cachegrind's totals (its `events:` names).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    pub ir: u64,
    pub i1mr: u64,
    pub ilmr: u64,
    pub dr: u64,
    pub d1mr: u64,
    pub dlmr: u64,
    pub dw: u64,
    pub d1mw: u64,
    pub dlmw: u64,
    pub bc: u64,
    pub bcm: u64,
    pub bi: u64,
    pub bim: u64,
}

/// Per-transaction costs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PerTxn {
    pub instructions: f64,
    pub i1_misses: f64,
    pub d1_misses: f64,
    pub ll_misses: f64,
    pub branches: f64,
    pub mispredicts: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CgRecord {
    pub contender: String,
    pub workload: TestName,
    pub events: u64,
    /// The warm-up-only run and the measured run.
    pub short: Counts,
    pub long: Counts,
    pub per_txn: PerTxn,
    /// A replay's statements that failed in the measured run (absent for the other workloads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_statements: Option<u64>,
    /// The costliest functions per transaction (absent from measurements made before they were
    /// kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub functions: Vec<crate::bench::hot_functions::FnCost>,
}

/// Reads the `events:` and `summary:` lines of a cachegrind output file.
pub fn parse_counts(text: &str) -> Result<Counts> {
    let events: Vec<&str> = text
        .lines()
        .find_map(|l| l.strip_prefix("events:"))
        .context("no 'events:' line in the cachegrind output")?
        .split_whitespace()
        .collect();
    let summary: Vec<u64> = text
        .lines()
        .find_map(|l| l.strip_prefix("summary:"))
        .context("no 'summary:' line in the cachegrind output (did the server exit cleanly?)")?
        .split_whitespace()
        .map(|v| v.parse::<u64>())
        .collect::<Result<_, _>>()
        .context("a non-numeric summary in the cachegrind output")?;
    if events.len() != summary.len() {
        bail!(
            "cachegrind output: {} events but {} totals",
            events.len(),
            summary.len()
        );
    }
    let mut c = Counts::default();
    for (e, v) in events.iter().zip(summary) {
        let slot = match *e {
            "Ir" => &mut c.ir,
            "I1mr" => &mut c.i1mr,
            "ILmr" => &mut c.ilmr,
            "Dr" => &mut c.dr,
            "D1mr" => &mut c.d1mr,
            "DLmr" => &mut c.dlmr,
            "Dw" => &mut c.dw,
            "D1mw" => &mut c.d1mw,
            "DLmw" => &mut c.dlmw,
            "Bc" => &mut c.bc,
            "Bcm" => &mut c.bcm,
            "Bi" => &mut c.bi,
            "Bim" => &mut c.bim,
            _ => continue,
        };
        *slot = v;
    }
    if c.ir == 0 || c.bc == 0 {
        bail!("cachegrind counted no instructions or branches: was it run with --cache-sim=yes --branch-sim=yes?");
    }
    Ok(c)
}

/// (long − short) / events for each figure.
pub fn per_txn(short: &Counts, long: &Counts, events: u64) -> PerTxn {
    let d = |a: u64, b: u64| (b as f64 - a as f64) / events as f64;
    PerTxn {
        instructions: d(short.ir, long.ir),
        i1_misses: d(short.i1mr, long.i1mr),
        d1_misses: d(short.d1mr + short.d1mw, long.d1mr + long.d1mw),
        ll_misses: d(
            short.ilmr + short.dlmr + short.dlmw,
            long.ilmr + long.dlmr + long.dlmw,
        ),
        branches: d(short.bc + short.bi, long.bc + long.bi),
        mispredicts: d(short.bcm + short.bim, long.bcm + long.bim),
    }
}

pub fn records_path(dir: &Path) -> PathBuf {
    dir.join("cachegrind.jsonl")
}

/// A contender valgrind cannot run, and why: measured without it, named in the report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CgSkip {
    pub contender: String,
    pub reason: String,
}

pub fn skipped_path(dir: &Path) -> PathBuf {
    dir.join("cachegrind-skipped.json")
}

/// The contenders a measurement in `dir` could not run under valgrind (none when it has no such
/// file).
pub fn read_skipped(dir: &Path) -> Result<Vec<CgSkip>> {
    let p = skipped_path(dir);
    match fs::read_to_string(&p) {
        Ok(text) => serde_json::from_str(&text).with_context(|| format!("reading {}", p.display())),
        Err(_) => Ok(Vec::new()),
    }
}

pub fn read_records(dir: &Path) -> Result<Vec<CgRecord>> {
    let p = records_path(dir);
    let Ok(text) = fs::read_to_string(&p) else {
        return Ok(Vec::new());
    };
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        match serde_json::from_str(l) {
            Ok(r) => out.push(r),
            // A line torn by a crash mid-write, as in results.jsonl: cut before appending.
            Err(_) if i + 1 == lines.len() && !text.ends_with('\n') => break,
            Err(e) => {
                return Err(e).with_context(|| {
                    format!("{} line {}: not a cachegrind record", p.display(), i + 1)
                })
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_last_record_is_skipped_and_cut_and_any_other_bad_line_is_an_error() {
        let dir = std::env::temp_dir().join(format!("pgoforge-cg-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let p = records_path(&dir);
        fs::write(&p, "{\"contender\": \"pg").unwrap();
        assert!(read_records(&dir).unwrap().is_empty());
        crate::bench::run_dir::drop_torn_tail(&p).unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "");
        // A whole line that does not parse is corruption, not a crash's tail.
        fs::write(&p, "not a record\n").unwrap();
        let e = format!("{:#}", read_records(&dir).unwrap_err());
        assert!(e.contains("line 1: not a cachegrind record"), "{e}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn parses_cachegrind_totals_and_subtracts() {
        let a = "desc: I1 cache: 32768 B, 64 B, 8-way associative\ncmd: x\nevents: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw Bc Bcm Bi Bim\nfl=a\n1 2 3\nsummary: 1000 10 1 300 20 2 100 5 1 200 9 10 1\n";
        let b = "events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw Bc Bcm Bi Bim\nsummary: 3000 30 3 900 60 6 300 15 3 600 29 30 3\n";
        let (x, y) = (parse_counts(a).unwrap(), parse_counts(b).unwrap());
        assert_eq!((x.ir, x.bim, y.d1mw), (1000, 1, 15));
        let p = per_txn(&x, &y, 10);
        assert_eq!(p.instructions, 200.0);
        assert_eq!(p.i1_misses, 2.0);
        assert_eq!(p.mispredicts, 2.2);
        assert_eq!(p.branches, 42.0);
        assert!(parse_counts("events: Ir\n").is_err());
        assert!(parse_counts("events: Ir Bc\nsummary: 0 0\n").is_err());
    }
}
