//! The run's own noise: the A/A control's scatter and what it lets the run detect, the pooled
//! position effect of the round orders, the per-second steadiness of a run, and the runs noisier
//! than the host's calibrated floor.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::model::Cell;
use crate::bench::plan::BenchPlan;
use crate::bench::run_dir::Record;
use crate::bench::stats::Comparison;
use oltp::settings::TestName;

/// What the A/A control (the baseline served again, interleaved like every contender) says
/// about this run: how much the per-round ratios scatter with nothing changed, and the smallest
/// change the run's rounds could detect over its comparisons.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OwnNoise {
    pub control: String,
    /// The comparisons Holm corrects over (the control's are not among them).
    pub comparisons: usize,
    /// The minimum change the report counts (a fraction), part of the rule power is for.
    #[serde(default = "default_min_effect")]
    pub min_effect: f64,
    pub cells: Vec<NoiseCell>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NoiseCell {
    pub workload: String,
    pub threads: u32,
    pub rounds: usize,
    /// Standard deviation of the control's per-round log-ratios against the baseline.
    pub sd_log_ratio: f64,
    /// The smallest true change reported with 80 % power under the run's rule (the exact test,
    /// Holm over `comparisons`, the minimum change) at these rounds (a ratio; infinite when the
    /// rounds cannot reach the level at all).
    #[serde(with = "crate::bench::stats::unbounded")]
    pub detectable_ratio: f64,
    /// The same at the ends of the scatter's 95 % interval (it is estimated from `rounds` − 1
    /// degrees of freedom): what the run could detect is known only this well.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::bench::stats::unbounded::option_pair"
    )]
    pub detectable_interval: Option<(f64, f64)>,
    /// The control against the baseline: significant here means the run is not A/A-clean.
    pub aa: Comparison,
}

impl OwnNoise {
    /// One sentence for the report.
    pub fn sentence(&self) -> String {
        let cells: Vec<String> = self
            .cells
            .iter()
            .map(|c| {
                format!(
                    "{} {} thr: scatter {:.1}% per round, detectable {}",
                    c.workload,
                    c.threads,
                    c.sd_log_ratio * 100.0,
                    if c.detectable_ratio.is_finite() {
                        let pct = |r: f64| (r - 1.0) * 100.0;
                        match c.detectable_interval {
                            Some((lo, hi)) if hi.is_finite() => format!(
                                "{:.1}% ({:.1}-{:.1}%)",
                                pct(c.detectable_ratio),
                                pct(lo),
                                pct(hi)
                            ),
                            Some((lo, _)) => format!(
                                "{:.1}% ({:.1}% to not reachable)",
                                pct(c.detectable_ratio),
                                pct(lo)
                            ),
                            None => format!("{:.1}%", pct(c.detectable_ratio)),
                        }
                    } else {
                        "nothing (too few rounds)".into()
                    }
                )
            })
            .collect();
        format!(
            "This run's own noise (A/A control: the baseline served again as {}, interleaved like \
             every contender; detectable = the smallest true change reported with 80% power \
             under this report's rule — the exact test, Holm over the run's {} comparisons, the \
             {:.0}% minimum change — at these rounds, simulated; in brackets, the same at the \
             ends of the scatter's 95% interval): {}.",
            self.control,
            self.comparisons,
            self.min_effect * 100.0,
            cells.join("; ")
        )
    }
}

fn default_min_effect() -> f64 {
    crate::bench::stats::NOISE
}

pub(super) fn own_noise(
    plan: &BenchPlan,
    cells: &[Cell],
    min_effect: Option<f64>,
) -> Option<OwnNoise> {
    let control = plan.aa_control.as_ref()?;
    let comparisons = cells
        .iter()
        .filter(|c| !plan.is_control(&c.contender) && c.tps_vs_baseline.is_some())
        .count();
    let base = &plan.aa_reference()?.name;
    let rule = crate::bench::stats::Rule::new(comparisons, min_effect);
    let noise_cells: Vec<NoiseCell> = cells
        .iter()
        .filter(|c| &c.contender == control)
        .filter_map(|c| {
            let aa = c.tps_vs_baseline.clone()?;
            let b = cells.iter().find(|x| {
                &x.contender == base && x.workload == c.workload && x.threads == c.threads
            })?;
            let d = crate::bench::stats::paired_log_ratios(&b.tps_rounds, &c.tps_rounds);
            let sd = if d.len() > 1 {
                crate::bench::stats::stddev(&d)
            } else {
                f64::INFINITY
            };
            let detectable = crate::bench::stats::detectable(rule, sd, d.len().max(1) - 1, d.len());
            Some(NoiseCell {
                workload: c.workload.clone(),
                threads: c.threads,
                rounds: d.len(),
                sd_log_ratio: sd,
                detectable_ratio: detectable.ratio,
                detectable_interval: d.len().gt(&2).then_some((detectable.low, detectable.high)),
                aa,
            })
        })
        .collect();
    Some(OwnNoise {
        control: control.clone(),
        comparisons,
        min_effect: rule.min_effect,
        cells: noise_cells,
    })
}

/// The run's position effect ([`crate::bench::stats::position`]) from every cell's complete rounds, and
/// what adjusting the cells' comparisons for it would do to their scatter.
pub(super) fn position_effect(
    plan: &BenchPlan,
    records: &[Record],
    cells: &[Cell],
) -> Option<crate::bench::stats::position::PositionEffect> {
    use crate::bench::stats::position::{estimate, CellObs};
    let mut pos: BTreeMap<(&str, String, u32, u32), usize> = BTreeMap::new();
    for r in records {
        pos.entry((
            r.contender.as_str(),
            r.workload.to_string(),
            r.threads,
            r.round,
        ))
        .or_insert(r.position);
    }
    let position_of = |name: &str, w: &str, t: u32, round: u32| {
        pos.get(&(name, w.to_string(), t, round)).map(|p| *p as f64)
    };
    // Per cell, the contenders' per-round throughput the cells already hold, in the rounds every
    // contender of the cell ran.
    let mut groups: Vec<Vec<&Cell>> = Vec::new();
    for c in cells {
        match groups
            .iter_mut()
            .find(|g| g[0].workload == c.workload && g[0].threads == c.threads)
        {
            Some(g) => g.push(c),
            None => groups.push(vec![c]),
        }
    }
    let obs: Vec<CellObs> = groups
        .iter()
        .map(|g| CellObs {
            rounds: g[0]
                .tps_rounds
                .iter()
                .filter_map(|(round, _)| {
                    g.iter()
                        .map(|c| {
                            let (_, y) = c.tps_rounds.iter().find(|(r, _)| r == round)?;
                            let p = position_of(&c.contender, &c.workload, c.threads, *round)?;
                            (*y > 0.0).then(|| (p, y.ln()))
                        })
                        .collect::<Option<Vec<_>>>()
                })
                .collect(),
        })
        .collect();
    let pairs: Vec<Vec<(f64, f64)>> = cells
        .iter()
        .filter(|c| c.tps_vs_baseline.is_some())
        .filter_map(|c| {
            let me = plan.contenders.iter().find(|x| x.name == c.contender)?;
            let base = &plan.baseline_for(me).name;
            let base_cell = cells.iter().find(|b| {
                &b.contender == base && b.workload == c.workload && b.threads == c.threads
            })?;
            Some(
                c.tps_rounds
                    .iter()
                    .filter_map(|(round, v)| {
                        let (_, b) = base_cell.tps_rounds.iter().find(|(r, _)| r == round)?;
                        let dp = position_of(&c.contender, &c.workload, c.threads, *round)?
                            - position_of(base, &c.workload, c.threads, *round)?;
                        (*v > 0.0 && *b > 0.0).then(|| ((v / b).ln(), dp))
                    })
                    .collect(),
            )
        })
        .collect();
    estimate(&obs, &pairs)
}

/// sysbench's OLTP tests: steady single-kind transactions whose per-second throughput should be
/// flat on a quiet host (tpcc's mix and a replay's file vary by themselves), so their per-second
/// variation measures the host.
pub fn is_steady(w: TestName) -> bool {
    !matches!(w, TestName::Tpcc | TestName::Replay)
}

/// The coefficient of variation of a run's per-second throughput (its first second left out),
/// when it has at least three seconds.
pub fn per_second_cv(r: &oltp::RunResult) -> Option<f64> {
    let iv: Vec<f64> = r.intervals.iter().skip(1).map(|i| i.tps).collect();
    seconds_cv(&iv)
}

/// The coefficient of variation of per-second throughputs, when there are at least three.
pub(super) fn seconds_cv(tps: &[f64]) -> Option<f64> {
    if tps.len() < 3 {
        return None;
    }
    let m = crate::bench::stats::mean(tps);
    (m > 0.0).then(|| crate::bench::stats::stddev(tps) / m)
}

/// The per-second variation of every steady run: a plain run's own ([`per_second_cv`]); in
/// the sliced design, a round's slices of one contender and cell taken together (each slice's
/// first second, the switch, left out when it has more) — a 2-s slice alone has too few seconds.
pub(crate) fn run_cvs(records: &[Record]) -> Vec<f64> {
    let mut sliced: BTreeMap<(u32, &str, String, u32), Vec<f64>> = BTreeMap::new();
    let mut out = Vec::new();
    for r in records.iter().filter(|r| is_steady(r.workload)) {
        if r.slice.is_none() {
            out.extend(per_second_cv(&r.result));
            continue;
        }
        let skip = usize::from(r.result.intervals.len() > 1);
        sliced
            .entry((r.round, &r.contender, r.workload.to_string(), r.threads))
            .or_default()
            .extend(r.result.intervals.iter().skip(skip).map(|i| i.tps));
    }
    out.extend(sliced.values().filter_map(|v| seconds_cv(v)));
    out
}

/// A run is unstable when its per-second throughput varies far more than the benchmark's other
/// runs do (coefficient of variation over 3 times the median of all runs): a fixed threshold
/// fired on every cell and said nothing.
pub(super) fn unstable_runs(cells: &mut [Cell], records: &[Record]) {
    let cv = |r: &Record| per_second_cv(&r.result);
    let all: Vec<f64> = records.iter().filter_map(cv).collect();
    if all.len() < 4 {
        return;
    }
    let floor = crate::bench::stats::median(&all);
    for c in cells.iter_mut() {
        let odd: Vec<u32> = records
            .iter()
            .filter(|r| {
                r.contender == c.contender
                    && r.workload.to_string() == c.workload
                    && r.threads == c.threads
            })
            .filter(|r| cv(r).is_some_and(|x| x > 3.0 * floor && x > 0.02))
            .map(|r| r.round)
            .collect();
        if !odd.is_empty() {
            c.warnings.push(format!(
                "unstable run(s) in round(s) {odd:?}: per-second throughput varied more than 3x \
                 the benchmark's typical {:.1}%",
                floor * 100.0
            ));
        }
    }
}

/// A comparison whose rounds scatter far more than the machine's A/A floor did: the run was
/// disturbed (or the server itself is erratic), whatever its interval says.
pub(super) fn noisier_than_the_floor(
    cells: &mut [Cell],
    cal: &crate::bench::calibrate::Calibration,
) {
    use crate::bench::calibrate::{scatter_over_floor, UNSTABLE_OVER_FLOOR};
    for c in cells.iter_mut() {
        let (Some(k), Some(f)) = (&c.tps_vs_baseline, cal.floor(&c.workload, c.threads)) else {
            continue;
        };
        if let Some(x) = scatter_over_floor(k, f).filter(|x| *x > UNSTABLE_OVER_FLOOR) {
            c.warnings.push(format!(
                "rounds scattered {x:.1}x more than this machine's A/A floor ({:.1}% per round, \
                 calibrated with {}): something disturbed the run, or the server is erratic",
                f.sd_log_ratio * 100.0,
                cal.binary.display()
            ));
        }
    }
}
