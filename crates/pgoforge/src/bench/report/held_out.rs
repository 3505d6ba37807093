//! The held-out check: the workloads a contender's training never ran, and whether it is slower
//! there.

use serde::{Deserialize, Serialize};

use super::model::Cell;
use super::policy::Policy;
use crate::bench::plan::BenchPlan;
use crate::bench::stats::Verdict;

/// The held-out check: workloads the profiles never saw, and the cells significantly slower than
/// the baseline on them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HeldOut {
    pub workloads: Vec<String>,
    /// "contender workload at N threads: −x % [lo, hi]" for each significantly slower cell.
    pub regressions: Vec<String>,
    /// `--allow-regression`: such a contender may still be chosen and packaged.
    pub allowed: bool,
}

impl HeldOut {
    pub fn sentence(&self) -> String {
        let w = self.workloads.join(", ");
        if self.regressions.is_empty() {
            return format!("held-out workloads ({w}): no regression");
        }
        format!(
            "held-out workloads ({w}): REGRESSION {}{}",
            self.regressions.join("; "),
            if self.allowed {
                " (allowed by --allow-regression)"
            } else {
                "; a variant that regressed is not packaged (pass --allow-regression to allow it)"
            }
        )
    }
}

pub(super) fn held_out(plan: &BenchPlan, cells: &[Cell], policy: Policy) -> Option<HeldOut> {
    let held = plan.held_out();
    if held.is_empty() {
        return None;
    }
    let names: Vec<String> = held.iter().map(|w| w.to_string()).collect();
    let regressions = cells
        .iter()
        .filter(|c| is_held_out(plan, c))
        .filter_map(|c| {
            let k = c.tps_vs_baseline.as_ref()?;
            (k.verdict == Verdict::Slower).then(|| {
                format!(
                    "{} {} at {} threads: {}",
                    c.contender,
                    c.workload,
                    c.threads,
                    k.sentence()
                )
            })
        })
        .collect();
    Some(HeldOut {
        workloads: names,
        regressions,
        allowed: policy.allow_held_out_regression,
    })
}

/// Whether the cell's workload is one its contender's profile was not trained on.
pub fn is_held_out(plan: &BenchPlan, c: &Cell) -> bool {
    plan.held_out_for(&c.contender)
        .iter()
        .any(|w| w.to_string() == c.workload)
}
