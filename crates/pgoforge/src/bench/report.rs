//! Reports from stored results only: the statistics per cell and per contender against the baseline,
//! rendered for a terminal, as Markdown in the seeds' shape, as JSON and as CSV. The same results
//! file always gives the same report.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::run::{plan_path, read_records, Plan, Record};
use super::stats::{compare, describe, geomean, Comparison, Describe};

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
    for w in &plan.workloads {
        for &t in &plan.threads {
            let pick = |name: &str, f: &dyn Fn(&Record) -> f64| -> Vec<f64> {
                let mut v: Vec<(u32, f64)> = records
                    .iter()
                    .filter(|r| r.contender == name && r.workload == *w && r.threads == t)
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
            for c in &plan.contenders {
                // Compared with the first contender run with the same server settings.
                let base = &plan.baseline_for(c).name;
                let base_tps = pick(base, &tps);
                let base_p95 = pick(base, &p95);
                let v_tps = pick(&c.name, &tps);
                if v_tps.is_empty() {
                    continue;
                }
                let v_p95 = pick(&c.name, &p95);
                let mut warnings = Vec::new();
                // Unstable runs: an interval more than 10 % from the run's mean (first second dropped).
                let unstable = records
                    .iter()
                    .filter(|r| r.contender == c.name && r.workload == *w && r.threads == t)
                    .filter(|r| {
                        let iv: Vec<f64> =
                            r.result.intervals.iter().skip(1).map(|i| i.tps).collect();
                        let m = super::stats::mean(&iv);
                        iv.len() > 2 && iv.iter().any(|x| (x - m).abs() > 0.10 * m)
                    })
                    .count();
                if unstable > 0 {
                    warnings.push(format!(
                        "{unstable} run(s) with intervals more than 10% from their mean"
                    ));
                }
                let (tc, pc) = if c.name == *base || base_tps.is_empty() {
                    (None, None)
                } else {
                    let tc = compare(&base_tps, &v_tps, true, 17);
                    ratios
                        .entry((c.name.clone(), t))
                        .or_default()
                        .push(tc.ratio);
                    (Some(tc), Some(compare(&base_p95, &v_p95, false, 19)))
                };
                cells.push(Cell {
                    contender: c.name.clone(),
                    workload: w.to_string(),
                    threads: t,
                    tps: describe(&v_tps),
                    p95_ms: describe(&v_p95),
                    tps_vs_baseline: tc,
                    p95_vs_baseline: pc,
                    warnings,
                });
            }
        }
    }
    // A dataset larger than the buffer pool makes the benchmark I/O-bound.
    let data_mb = plan.tables as f64 * plan.table_size as f64 * 250.0 / 1_048_576.0;
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
        plan,
        cells,
        geomeans,
        rounds_found,
    })
}

fn pct(r: f64) -> String {
    format!("{:+.1}%", (r - 1.0) * 100.0)
}

/// A terminal table.
pub fn text(r: &Report) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "{:<16} {:<22} {:>4}  {:>10} {:>9}  {:>9}  verdict (TPS vs {})",
        "contender", "workload", "thr", "TPS median", "±CI95", "p95 ms", r.plan.contenders[0].name
    );
    for c in &r.cells {
        let half = (c.tps.ci95.1 - c.tps.ci95.0) / 2.0;
        let verdict = c
            .tps_vs_baseline
            .as_ref()
            .map_or("baseline".to_string(), |v| v.verdict.clone());
        let _ = writeln!(
            o,
            "{:<16} {:<22} {:>4}  {:>10.0} {:>9.0}  {:>9.2}  {verdict}",
            c.contender, c.workload, c.threads, c.tps.median, half, c.p95_ms.median
        );
    }
    for (n, t, g) in &r.geomeans {
        let _ = writeln!(
            o,
            "geometric mean over workloads, {n} at {t} threads: {}",
            pct(*g)
        );
    }
    if !r.cachegrind.is_empty() {
        let _ = writeln!(
            o,
            "per transaction under cachegrind (deterministic):\n{}",
            super::cachegrind::markdown(&r.cachegrind, &r.plan.contenders[0].name).trim_end()
        );
    }
    for c in &r.cells {
        for w in c
            .warnings
            .iter()
            .chain(c.tps_vs_baseline.iter().flat_map(|v| v.warnings.iter()))
        {
            let _ = writeln!(
                o,
                "warning: {} {} {}: {w}",
                c.contender, c.workload, c.threads
            );
        }
    }
    o
}

/// Markdown in the seeds' shape: TPS per workload per contender, gain and its interval.
pub fn markdown(r: &Report) -> String {
    let mut o = String::new();
    let base = &r.plan.contenders[0].name;
    let _ = writeln!(
        o,
        "# Benchmark: {}\n",
        r.plan
            .contenders
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(" vs ")
    );
    let _ = writeln!(
        o,
        "{} rounds (interleaved, a new contender order each round), {} s per run after {} s warm-up, {} tables x {} rows, buffer pool {} MiB.\n",
        r.rounds_found, r.plan.seconds, r.plan.warmup_seconds, r.plan.tables, r.plan.table_size, r.plan.config.buffer_pool_mb
    );
    let _ = writeln!(o, "| workload | threads | contender | TPS (median) | 95% CI of mean | p95 latency ms | vs {base} | 95% CI | p |");
    let _ = writeln!(o, "|---|---|---|---|---|---|---|---|---|");
    for c in &r.cells {
        let (g, ci, p) = match &c.tps_vs_baseline {
            Some(v) => (
                // The verdict's own numbers are the next columns; say only which way it went.
                format!(
                    "{} {}",
                    pct(v.ratio),
                    match (v.significant, v.ratio > 1.0) {
                        (false, _) => "(not significant)",
                        (true, true) => "faster",
                        (true, false) => "slower",
                    }
                ),
                format!("[{}, {}]", pct(v.ratio_ci95.0), pct(v.ratio_ci95.1)),
                format!("{:.3}", v.p_value),
            ),
            None => ("baseline".into(), String::new(), String::new()),
        };
        let _ = writeln!(
            o,
            "| {} | {} | {} | {:.0} | [{:.0}, {:.0}] | {:.2} | {g} | {ci} | {p} |",
            c.workload,
            c.threads,
            c.contender,
            c.tps.median,
            c.tps.ci95.0,
            c.tps.ci95.1,
            c.p95_ms.median
        );
    }
    let lat: Vec<String> = r
        .cells
        .iter()
        .filter_map(|c| {
            c.p95_vs_baseline.as_ref().map(|v| {
                format!(
                    "- {} {} {} threads: {} (p = {:.3})",
                    c.contender, c.workload, c.threads, v.verdict, v.p_value
                )
            })
        })
        .collect();
    if !lat.is_empty() {
        let _ = writeln!(
            o,
            "\np95 latency against the baseline:\n\n{}",
            lat.join("\n")
        );
    }
    if !r.geomeans.is_empty() {
        let _ = writeln!(o, "\nGeometric mean of TPS ratios over workloads:\n");
        for (n, t, g) in &r.geomeans {
            let _ = writeln!(o, "- {n}, {t} threads: {}", pct(*g));
        }
    }
    if !r.cachegrind.is_empty() {
        let _ = writeln!(
            o,
            "\nDeterministic counts per transaction (cachegrind, one connection; differences under ~0.5% for read-only and ~3% for write workloads are the method's noise):\n\n{}",
            super::cachegrind::markdown(&r.cachegrind, &r.plan.contenders[0].name).trim_end()
        );
    }
    let warnings: Vec<String> = r
        .cells
        .iter()
        .flat_map(|c| {
            c.warnings
                .iter()
                .chain(c.tps_vs_baseline.iter().flat_map(|v| v.warnings.iter()))
                .map(move |w| format!("- {} {} {}: {w}", c.contender, c.workload, c.threads))
        })
        .collect();
    if !warnings.is_empty() {
        let _ = writeln!(o, "\nWarnings:\n\n{}", warnings.join("\n"));
    }
    let e = &r.environment;
    let _ = writeln!(
        o,
        "\nEnvironment: {} ({} CPUs), kernel {}.",
        e.cpu, e.cpus, e.kernel
    );
    for (n, b) in &e.builds {
        let _ = writeln!(o, "- {n}: built by pgoforge: {b}");
    }
    for (n, v) in &e.server_versions {
        let bin = r
            .plan
            .contenders
            .iter()
            .find(|c| &c.name == n)
            .map(|c| c.binary.display().to_string())
            .unwrap_or_default();
        let _ = writeln!(o, "- {n}: {v} ({bin})");
    }
    if !r.plan.label.is_empty() {
        let _ = writeln!(o, "\n{}", r.plan.label);
    }
    o
}

pub fn csv(r: &Report) -> String {
    let mut o = String::from("contender,workload,threads,rounds,tps_median,tps_mean,tps_ci_low,tps_ci_high,p95_ms_median,ratio,ratio_ci_low,ratio_ci_high,p_value,verdict\n");
    for c in &r.cells {
        let (ratio, lo, hi, p, v) = match &c.tps_vs_baseline {
            Some(v) => (
                format!("{:.4}", v.ratio),
                format!("{:.4}", v.ratio_ci95.0),
                format!("{:.4}", v.ratio_ci95.1),
                format!("{:.4}", v.p_value),
                v.verdict.clone(),
            ),
            None => (
                String::new(),
                String::new(),
                String::new(),
                String::new(),
                "baseline".into(),
            ),
        };
        let _ = writeln!(
            o,
            "{},{},{},{},{:.2},{:.2},{:.2},{:.2},{:.3},{ratio},{lo},{hi},{p},\"{v}\"",
            c.contender,
            c.workload,
            c.threads,
            c.tps.n,
            c.tps.median,
            c.tps.mean,
            c.tps.ci95.0,
            c.tps.ci95.1,
            c.p95_ms.median
        );
    }
    o
}

/// Writes report.{md,json,csv,txt,html} into the run directory (each to a temporary name, then renamed).
pub fn write_all(dir: &Path, r: &Report) -> Result<()> {
    for (name, text) in [
        ("report.md", markdown(r)),
        ("report.json", serde_json::to_string_pretty(r)?),
        ("report.csv", csv(r)),
        ("report.txt", text(r)),
        ("report.html", super::html::html(r)),
    ] {
        let p = dir.join(name);
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &p).with_context(|| format!("writing {}", p.display()))?;
    }
    Ok(())
}
