//! The report's model, from stored results only: the statistics per cell and per contender against
//! the baseline. The same results file always gives the same report; `export/` renders it.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::run::{plan_path, read_records, Plan, Record};
use super::stats::{compare, describe, geomean, Comparison, Describe};
use oltp::settings::TestName;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    pub contender: String,
    pub workload: String,
    pub threads: u32,
    pub tps: Describe,
    pub p95_ms: Describe,
    /// Against the baseline (absent for the baseline itself).
    pub tps_vs_baseline: Option<Comparison>,
    pub p95_vs_baseline: Option<Comparison>,
    pub warnings: Vec<String>,
}

pub use super::run::Environment;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub plan: Plan,
    pub environment: Environment,
    pub cells: Vec<Cell>,
    /// Per contender and thread count: geometric mean of TPS ratios over workloads.
    pub geomeans: Vec<(String, u32, f64)>,
    pub rounds_found: u32,
    /// Deterministic per-transaction counts, when the run directory also holds a cachegrind
    /// measurement (`pgoforge run --cachegrind`).
    #[serde(default)]
    pub cachegrind: Vec<super::cachegrind::CgRecord>,
    /// The contender order each round actually ran in (from the results, not the plan).
    #[serde(default)]
    pub orders: Vec<(u32, Vec<String>)>,
}

/// Round by round, the contenders in the order they ran.
fn orders(records: &[Record]) -> Vec<(u32, Vec<String>)> {
    let mut by_round: BTreeMap<u32, BTreeMap<usize, String>> = BTreeMap::new();
    for r in records {
        by_round
            .entry(r.round)
            .or_default()
            .entry(r.position)
            .or_insert_with(|| r.contender.clone());
    }
    by_round
        .into_iter()
        .map(|(round, p)| (round, p.into_values().collect()))
        .collect()
}

fn environment(dir: &Path, records: &[Record]) -> Environment {
    // Recorded when the benchmark ran, so a report made elsewhere still describes the machine it ran on.
    let mut env: Environment = std::fs::read_to_string(dir.join("environment.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    for r in records {
        env.server_versions
            .entry(r.contender.clone())
            .or_insert_with(|| r.result.server.version.clone());
    }
    env
}

/// One contender's figures on one workload and thread count, compared with the first contender
/// run with the same server settings; `None` when it has no results there.
fn cell(plan: &Plan, records: &[Record], name: &str, w: TestName, t: u32) -> Option<Cell> {
    let pick = |name: &str, f: &dyn Fn(&Record) -> f64| -> Vec<f64> {
        let mut v: Vec<(u32, f64)> = records
            .iter()
            .filter(|r| r.contender == name && r.workload == w && r.threads == t)
            .map(|r| (r.round, f(r)))
            .collect();
        v.sort_by_key(|x| x.0);
        v.into_iter().map(|x| x.1).collect()
    };
    let tps = |r: &Record| r.result.tps();
    let p95 = |r: &Record| {
        r.result
            .latency
            .percentile
            .unwrap_or(r.result.latency.hdr.p95)
    };
    let c = plan.contenders.iter().find(|c| c.name == name)?;
    let base = &plan.baseline_for(c).name;
    let base_tps = pick(base, &tps);
    let base_p95 = pick(base, &p95);
    let v_tps = pick(name, &tps);
    if v_tps.is_empty() {
        return None;
    }
    let v_p95 = pick(name, &p95);
    let mut warnings = Vec::new();
    // Unstable runs: an interval more than 10 % from the run's mean (first second dropped).
    let unstable = records
        .iter()
        .filter(|r| r.contender == name && r.workload == w && r.threads == t)
        .filter(|r| {
            let iv: Vec<f64> = r.result.intervals.iter().skip(1).map(|i| i.tps).collect();
            let m = super::stats::mean(&iv);
            iv.len() > 2 && iv.iter().any(|x| (x - m).abs() > 0.10 * m)
        })
        .count();
    if unstable > 0 {
        warnings.push(format!(
            "{unstable} run(s) with intervals more than 10% from their mean"
        ));
    }
    let (tc, pc) = if name == base || base_tps.is_empty() {
        (None, None)
    } else {
        (
            Some(compare(&base_tps, &v_tps, true, 17)),
            Some(compare(&base_p95, &v_p95, false, 19)),
        )
    };
    Some(Cell {
        contender: name.to_string(),
        workload: w.to_string(),
        threads: t,
        tps: describe(&v_tps),
        p95_ms: describe(&v_p95),
        tps_vs_baseline: tc,
        p95_vs_baseline: pc,
        warnings,
    })
}

/// Builds the report of the run in `dir`.
pub fn build(dir: &Path) -> Result<Report> {
    build_against(dir, None)
}

/// Builds the report with `baseline` (a contender's name) as the reference instead of the plan's
/// first contender, e.g. the PGO build to show what BOLT adds on top of it.
pub fn build_against(dir: &Path, baseline: Option<&str>) -> Result<Report> {
    let pp = plan_path(dir);
    let mut plan: Plan = serde_json::from_str(
        &std::fs::read_to_string(&pp)
            .with_context(|| format!("{} has no benchmark (no plan.json)", dir.display()))?,
    )
    .with_context(|| format!("{} is corrupted", pp.display()))?;
    if let Some(b) = baseline {
        let Some(i) = plan.contenders.iter().position(|c| c.name == b) else {
            let names: Vec<&str> = plan.contenders.iter().map(|c| c.name.as_str()).collect();
            bail!(
                "--baseline {b}: no such contender in {}; it has: {}",
                dir.display(),
                names.join(", ")
            );
        };
        let c = plan.contenders.remove(i);
        plan.contenders.insert(0, c);
    }
    let records = read_records(dir)?;
    if records.is_empty() {
        bail!("{} holds no results yet", dir.display());
    }
    for r in &records {
        if !plan.contenders.iter().any(|c| c.name == r.contender) {
            bail!("results name contender '{}', which the plan in {} does not have: the file belongs to another run", r.contender, dir.display());
        }
    }
    let mut cells = Vec::new();
    let mut ratios: BTreeMap<(String, u32), Vec<f64>> = BTreeMap::new();
    for w in &plan.spec.workloads {
        for &t in &plan.spec.threads {
            for c in &plan.contenders {
                let Some(cell) = cell(&plan, &records, &c.name, *w, t) else {
                    continue;
                };
                if let Some(k) = &cell.tps_vs_baseline {
                    ratios.entry((c.name.clone(), t)).or_default().push(k.ratio);
                }
                cells.push(cell);
            }
        }
    }
    // A dataset larger than the buffer pool makes the benchmark I/O-bound.
    let data_mb = plan.spec.tables as f64 * plan.spec.table_size as f64 * 250.0 / 1_048_576.0;
    if data_mb > plan.config.buffer_pool_mb as f64 * 0.8 {
        for c in &mut cells {
            c.warnings.push(format!(
                "dataset (~{data_mb:.0} MiB) near or above the buffer pool ({} MiB): I/O-bound",
                plan.config.buffer_pool_mb
            ));
        }
    }
    let geomeans = ratios
        .into_iter()
        .map(|((n, t), r)| (n, t, geomean(&r)))
        .collect();
    let rounds_found = records.iter().map(|r| r.round).max().unwrap_or(0);
    Ok(Report {
        environment: environment(dir, &records),
        cachegrind: super::cachegrind::read_records(dir)?,
        orders: orders(&records),
        plan,
        cells,
        geomeans,
        rounds_found,
    })
}
