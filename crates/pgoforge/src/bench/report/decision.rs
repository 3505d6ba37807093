//! What the report decides: Holm's correction over the run's comparisons with the minimum change
//! the policy asks for, the winner (beats the baseline, loses nowhere, best geometric mean, tested
//! against the runner-up). The policy it applies is policy.rs's.

use serde::{Deserialize, Serialize};

use super::held_out::{is_held_out, HeldOut};
use super::model::Cell;
use super::policy::Policy;
use super::rows::{CellComparison, Geomean};
use crate::bench::plan::BenchPlan;
use crate::bench::stats::{compare, geomean, Better, Comparison, Verdict};

/// Which contender to package, and whether it really beats the next best.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// Faster than the baseline with significance in at least one cell (after Holm), slower in
    /// none; the best geometric mean among those. `None`: nothing measurably won.
    pub winner: Option<String>,
    /// The qualifying contender with the next best geometric mean.
    pub runner_up: Option<String>,
    /// The winner against the runner-up, cell by cell (paired, Holm over these cells).
    pub versus: Vec<CellComparison>,
    /// The winner is not significantly faster than the runner-up in any cell.
    pub tied: bool,
    /// Contenders that beat the baseline but were not shown within the margin on their held-out
    /// workloads (non-inferiority), so are not packaged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held_back: Vec<String>,
    /// Cells where the winner and the runner-up are equivalent within ±`margin` (TOST at 5 %).
    #[serde(default)]
    pub equivalent_cells: usize,
    /// The margin of the equivalence and non-inferiority tests (a fraction).
    #[serde(default = "crate::bench::stats::default_margin")]
    pub margin: f64,
    /// In a buffer-pool sweep, the contenders of the other pools that also beat their pool's
    /// baseline and lost nowhere (no rivals of the winner: their cells pair with another
    /// baseline). Absent elsewhere, so reports written before keep their bytes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_pools: Vec<String>,
}

impl Decision {
    pub fn sentence(&self) -> String {
        let m = crate::bench::stats::percent_number(self.margin);
        let held_back = if self.held_back.is_empty() {
            String::new()
        } else {
            format!(
                "{} beat the baseline but {} not shown within -{m}% on {} held-out workloads \
                 (non-inferiority; see the held-out line), so {} not packaged",
                self.held_back.join(", "),
                if self.held_back.len() == 1 {
                    "is"
                } else {
                    "are"
                },
                if self.held_back.len() == 1 {
                    "its"
                } else {
                    "their"
                },
                if self.held_back.len() == 1 {
                    "it is"
                } else {
                    "they are"
                },
            )
        };
        let main = match (&self.winner, &self.runner_up) {
            (None, _) if !held_back.is_empty() => {
                return format!("no contender can be packaged: {held_back}")
            }
            (None, _) => "no contender measurably beat the baseline".into(),
            (Some(w), None) if !self.other_pools.is_empty() => format!(
                "{w} measurably beat its buffer pool's baseline, and so did {} at {} pool{} (a \
                 sweep: each pool's contenders are compared with its own baseline only; {w} \
                 has the highest geometric mean of TPS ratios)",
                self.other_pools.join(", "),
                if self.other_pools.len() == 1 {
                    "its"
                } else {
                    "their"
                },
                if self.other_pools.len() == 1 { "" } else { "s" }
            ),
            (Some(w), None) => {
                format!("{w} is the only contender that measurably beat the baseline")
            }
            (Some(w), Some(r)) if self.tied => {
                let (lo, hi) =
                    self.versus
                        .iter()
                        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                            let (a, b) = v.comparison.shown_interval();
                            (lo.min((a - 1.0) * 100.0), hi.max((b - 1.0) * 100.0))
                        });
                let allow = if lo.is_finite() && hi.is_finite() {
                    format!("the data allow {lo:+.1}% to {hi:+.1}% there")
                } else {
                    "too few rounds to bound the difference".into()
                };
                let eq = match self.equivalent_cells {
                    0 => format!("equivalence within ±{m}% (TOST) shown in none"),
                    n if n == self.versus.len() => {
                        format!("equivalent within ±{m}% in every cell (TOST, 5%)")
                    }
                    n => format!("equivalence within ±{m}% (TOST) shown in {n} of them"),
                };
                format!(
                    "{w} is not significantly faster than the runner-up {r} in any of the {} cells \
                     ({allow}; {eq}); {w} is chosen for its higher geometric mean of TPS ratios, \
                     not because it is proven faster",
                    self.versus.len()
                )
            }
            (Some(w), Some(r)) => {
                let won = self
                    .versus
                    .iter()
                    .filter(|v| v.comparison.verdict == Verdict::Faster)
                    .count();
                format!(
                    "{w} beats the runner-up {r}: significantly faster in {won} of {} cells",
                    self.versus.len()
                )
            }
        };
        // Which metric decided: throughput, what clients see; capacity is beside it.
        let main = format!("{main} (decided on throughput; capacity per server-CPU second is shown, not decided on)");
        if held_back.is_empty() {
            main
        } else {
            format!("{main}; {held_back}")
        }
    }
}

/// Holm over every throughput comparison of the run, and separately over every latency one:
/// a run of 3 variants × 3 workloads makes 9 claims, and each is called significant only if it
/// survives the correction.
pub(super) fn correct_over_the_run(cells: &mut [Cell], plan: &BenchPlan, min_effect: Option<f64>) {
    // The A/A control is not a claim: corrected over its own cells, it leaves the run's
    // intervals as they would be without it.
    let mut control: Vec<&mut Comparison> = Vec::new();
    for c in cells.iter_mut().filter(|c| plan.is_control(&c.contender)) {
        if let Some(k) = c.tps_vs_baseline.as_mut() {
            control.push(k);
        }
    }
    Comparison::apply_holm_with(&mut control, Better::Higher, min_effect);
    let mut tps: Vec<&mut Comparison> = Vec::new();
    let mut p95: Vec<&mut Comparison> = Vec::new();
    let mut capacity: Vec<&mut Comparison> = Vec::new();
    for c in cells.iter_mut().filter(|c| !plan.is_control(&c.contender)) {
        if let Some(k) = c.tps_vs_baseline.as_mut() {
            tps.push(k);
        }
        if let Some(k) = c.p95_vs_baseline.as_mut() {
            p95.push(k);
        }
        if let Some(k) = c.capacity_vs_baseline.as_mut() {
            capacity.push(k);
        }
    }
    let m = tps.len();
    Comparison::apply_holm_with(&mut tps, Better::Higher, min_effect);
    Comparison::apply_holm_with(&mut p95, Better::Lower, min_effect);
    // Capacity is a family of its own, as latency is: the decision reads throughput.
    Comparison::apply_holm_with(&mut capacity, Better::Higher, min_effect);
    let needed = crate::bench::stats::rounds_needed(m);
    for c in cells.iter_mut() {
        if let Some(k) = c.tps_vs_baseline.as_mut() {
            if k.pairs < needed {
                // This says more than the per-comparison minimum; one warning is enough.
                k.warnings
                    .retain(|w| !w.contains("the exact test needs at least"));
                k.warnings.push(format!(
                    "{} paired rounds cannot show significance over this run's {m} comparisons \
                     (the exact test needs {needed}; use --rounds {needed} or more)",
                    k.pairs
                ));
            }
        }
    }
}

/// The winner to package: it must beat the baseline (after Holm), lose nowhere, have the best
/// geometric mean — and beat the runner-up, or the decision says the two are tied.
pub(super) fn decide(
    plan: &BenchPlan,
    cells: &[Cell],
    geomeans: &[Geomean],
    policy: Policy,
    held: Option<&HeldOut>,
) -> Decision {
    let mut qualified: Vec<(f64, String)> = Vec::new();
    let mut held_back = Vec::new();
    for c in plan.contenders.iter().skip(1) {
        if plan.reference_only.contains(&c.name) || plan.is_control(&c.name) {
            continue;
        }
        // A link-bound cell measured the round trip: it neither qualifies nor disqualifies.
        let mine: Vec<&Cell> = cells
            .iter()
            .filter(|x| x.contender == c.name && x.link_bound.is_none())
            .collect();
        let faster = mine
            .iter()
            .filter_map(|x| x.tps_vs_baseline.as_ref())
            .any(|k| k.verdict == Verdict::Faster);
        // Slower anywhere disqualifies, except on a held-out workload when the user allows it.
        let slower = mine.iter().any(|x| {
            let excused = policy.allow_held_out_regression && is_held_out(plan, x);
            !excused
                && x.tps_vs_baseline
                    .as_ref()
                    .is_some_and(|k| k.verdict == Verdict::Slower)
        });
        if !faster || slower {
            continue;
        }
        // Beating the baseline is not enough where the profile never trained: there it must be
        // shown not slower than the margin, unless the user allows a regression.
        if !policy.allow_held_out_regression && held.is_some_and(|h| !h.not_slower(&c.name)) {
            held_back.push(c.name.clone());
            continue;
        }
        let g: Vec<f64> = geomeans
            .iter()
            .filter(|g| g.contender == c.name)
            .map(|g| g.ratio)
            .collect();
        qualified.push((geomean(&g), c.name.clone()));
    }
    qualified.sort_by(|a, b| b.0.total_cmp(&a.0));
    let winner = qualified.first().map(|x| x.1.clone());
    // In a buffer-pool sweep the runner-up is the best other contender at the winner's pool: the
    // same binary at another pool is not a rival, and cells of different pools do not pair.
    let pool_of = |name: &str| {
        plan.contenders
            .iter()
            .find(|c| c.name == name)
            .map(|c| plan.buffer_pool_mb_of(c))
    };
    let runner_up = winner.as_ref().and_then(|w| {
        qualified
            .iter()
            .skip(1)
            .find(|x| pool_of(&x.1) == pool_of(w))
            .map(|x| x.1.clone())
    });
    let other_pools = winner
        .as_ref()
        .map(|w| {
            qualified
                .iter()
                .filter(|x| pool_of(&x.1) != pool_of(w))
                .map(|x| x.1.clone())
                .collect()
        })
        .unwrap_or_default();
    let mut versus = Vec::new();
    if let (Some(w), Some(r)) = (&winner, &runner_up) {
        for c in cells
            .iter()
            .filter(|c| &c.contender == w && c.link_bound.is_none())
        {
            let Some(rc) = cells
                .iter()
                .find(|x| &x.contender == r && x.workload == c.workload && x.threads == c.threads)
            else {
                continue;
            };
            versus.push(CellComparison {
                workload: c.workload.clone(),
                threads: c.threads,
                comparison: compare(&rc.tps_rounds, &c.tps_rounds, Better::Higher),
            });
        }
        let mut fam: Vec<&mut Comparison> = versus.iter_mut().map(|v| &mut v.comparison).collect();
        Comparison::apply_holm_with(&mut fam, Better::Higher, policy.min_effect);
    }
    let tied = runner_up.is_some()
        && !versus
            .iter()
            .any(|v| v.comparison.verdict == Verdict::Faster);
    let margin = policy.margin();
    let equivalent_cells = versus
        .iter()
        .filter(|v| v.comparison.equivalence(margin).is_some_and(|e| e.1))
        .count();
    Decision {
        winner,
        runner_up,
        versus,
        tied,
        held_back,
        equivalent_cells,
        margin,
        other_pools,
    }
}
