//! A noise line for a run without an A/A control (a matrix, `--no-aa`): the scatter of each
//! comparison's per-round log-ratios around its own mean, pooled per cell over the contenders.
//! With the true change constant across rounds, that scatter is the pair's noise, so what the run
//! could detect follows from it as from an A/A control; what it cannot show is a bias common to
//! all rounds (a position or start-up effect), which only an A/A control reveals.

use serde::{Deserialize, Serialize};

use super::model::Cell;
use crate::bench::plan::BenchPlan;
use crate::bench::stats::{detectable, paired_log_ratios, stddev, Rule};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PooledNoise {
    /// The comparisons Holm corrects over.
    pub comparisons: usize,
    /// The minimum change counted (a fraction).
    pub min_effect: f64,
    pub cells: Vec<PooledCell>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PooledCell {
    pub workload: String,
    pub threads: u32,
    /// Contenders pooled (each compared with the baseline in this cell).
    pub contenders: usize,
    /// Rounds of the comparisons (the fewest of them).
    pub rounds: usize,
    /// Degrees of freedom of the pooled scatter (Σ rounds − 1).
    pub df: usize,
    /// The pooled standard deviation of the per-round log-ratios.
    pub sd_log_ratio: f64,
    /// The smallest true change reported with 80 % power under the run's rule, and the same at
    /// the ends of the scatter's 95 % interval (ratios; infinite when not reachable).
    #[serde(with = "crate::bench::stats::unbounded")]
    pub detectable_ratio: f64,
    #[serde(with = "crate::bench::stats::unbounded::pair")]
    pub detectable_interval: (f64, f64),
}

impl PooledNoise {
    pub fn sentence(&self) -> String {
        let pct = |r: f64| {
            if r.is_finite() {
                format!("{:.1}%", (r - 1.0) * 100.0)
            } else {
                "not reachable".into()
            }
        };
        let cells: Vec<String> = self
            .cells
            .iter()
            .map(|c| {
                format!(
                    "{} {} thr: scatter {:.1}% per round, detectable {} ({}-{})",
                    c.workload,
                    c.threads,
                    c.sd_log_ratio * 100.0,
                    pct(c.detectable_ratio),
                    pct(c.detectable_interval.0),
                    pct(c.detectable_interval.1)
                )
            })
            .collect();
        format!(
            "This run's noise (no A/A control: the scatter of each comparison's per-round ratios \
             around its own mean, pooled per cell; it cannot show a bias shared by all rounds, \
             which an A/A control would; detectable = the smallest true change reported with 80% \
             power under this report's rule — the exact test, Holm over the run's {} comparisons, \
             the {:.0}% minimum change — simulated, and in brackets at the ends of the scatter's \
             95% interval): {}.",
            self.comparisons,
            self.min_effect * 100.0,
            cells.join("; ")
        )
    }
}

/// The pooled scatter per cell, for a run without an A/A control; `None` with one, or when no
/// comparison has three rounds.
pub(super) fn pooled_noise(
    plan: &BenchPlan,
    cells: &[Cell],
    min_effect: Option<f64>,
) -> Option<PooledNoise> {
    if plan.aa_control.is_some() {
        return None;
    }
    let compared: Vec<&Cell> = cells
        .iter()
        .filter(|c| c.tps_vs_baseline.is_some())
        .collect();
    let comparisons = compared.len();
    let rule = Rule::new(comparisons, min_effect);
    // Each cell once, in the report's order.
    let mut keys: Vec<(String, u32)> = Vec::new();
    for c in &compared {
        let k = (c.workload.clone(), c.threads);
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut out = Vec::new();
    for (workload, threads) in keys {
        let (mut ss, mut df, mut n, mut rounds) = (0.0, 0usize, 0usize, usize::MAX);
        for c in compared
            .iter()
            .filter(|c| c.workload == workload && c.threads == threads)
        {
            let Some(me) = plan.contenders.iter().find(|x| x.name == c.contender) else {
                continue;
            };
            let base_name = &plan.baseline_for(me).name;
            let Some(base) = cells.iter().find(|b| {
                &b.contender == base_name && b.workload == workload && b.threads == threads
            }) else {
                continue;
            };
            let d = paired_log_ratios(&base.tps_rounds, &c.tps_rounds);
            if d.len() < 3 {
                continue;
            }
            ss += stddev(&d).powi(2) * (d.len() - 1) as f64;
            df += d.len() - 1;
            n += 1;
            rounds = rounds.min(d.len());
        }
        if n == 0 {
            continue;
        }
        let sd = (ss / df as f64).sqrt();
        let det = detectable(rule, sd, df, rounds);
        out.push(PooledCell {
            workload,
            threads,
            contenders: n,
            rounds,
            df,
            sd_log_ratio: sd,
            detectable_ratio: det.ratio,
            detectable_interval: (det.low, det.high),
        });
    }
    (!out.is_empty()).then_some(PooledNoise {
        comparisons,
        min_effect: rule.min_effect,
        cells: out,
    })
}
