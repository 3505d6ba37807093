//! The held-out check: the workloads a contender's training never ran, and on each of them a
//! non-inferiority test against the margin — "not slower than −3 %" only when the one-sided bound
//! says so, never read off a missing verdict.

use serde::{Deserialize, Serialize};

use super::model::Cell;
use super::policy::Policy;
use crate::bench::plan::BenchPlan;
use crate::bench::stats::{MarginTest, NonInferiority};

/// The held-out check: workloads the profiles never saw, each cell's non-inferiority test, and
/// the cells significantly slower than the baseline.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HeldOut {
    pub workloads: Vec<String>,
    /// "contender workload at N threads: −x % [lo, hi]" for each significantly slower cell.
    pub regressions: Vec<String>,
    /// `--allow-regression`: such a contender may still be chosen and packaged.
    pub allowed: bool,
    /// The non-inferiority margin (a fraction; `--margin`).
    #[serde(default = "crate::bench::stats::default_margin")]
    pub margin: f64,
    /// Every held-out cell of a contender that could be chosen, with its test and sentence.
    #[serde(default)]
    pub cells: Vec<HeldOutCell>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HeldOutCell {
    pub contender: String,
    pub workload: String,
    pub threads: u32,
    pub test: MarginTest,
    pub sentence: String,
}

impl HeldOut {
    pub fn sentence(&self) -> String {
        let w = self.workloads.join(", ");
        let m = crate::bench::stats::percent_number(self.margin);
        if !self.regressions.is_empty() {
            return format!(
                "held-out workloads ({w}): REGRESSION {}{}",
                self.regressions.join("; "),
                if self.allowed {
                    " (allowed by --allow-regression)"
                } else {
                    "; a variant that regressed is not packaged (pass --allow-regression to allow it)"
                }
            );
        }
        if self.cells.is_empty() {
            return format!("held-out workloads ({w}): no variant was tested on them");
        }
        // Per contender: one line when every cell is shown not slower (its lowest bound), the
        // cells one by one otherwise.
        let mut cells: Vec<String> = Vec::new();
        // Each contender once, in the order of its first cell: the cells run workload by
        // workload, so one contender's cells need not be next to each other.
        let mut names: Vec<&str> = Vec::new();
        for c in &self.cells {
            if !names.contains(&c.contender.as_str()) {
                names.push(&c.contender);
            }
        }
        for name in names {
            let mine: Vec<&HeldOutCell> =
                self.cells.iter().filter(|c| c.contender == name).collect();
            let lowest = mine
                .iter()
                .filter_map(|c| match c.test.result {
                    NonInferiority::NotSlower { bound } => Some(bound),
                    _ => None,
                })
                .fold(f64::INFINITY, f64::min);
            if mine.len() > 1 && mine.iter().all(|c| c.test.not_slower()) {
                cells.push(format!(
                    "{name}: not slower than -{m}% in all {} cells (lowest one-sided 95% bound {:+.1}%)",
                    mine.len(),
                    (lowest - 1.0) * 100.0
                ));
                continue;
            }
            cells.extend(mine.iter().map(|c| {
                format!(
                    "{} {} at {} threads: {}",
                    c.contender, c.workload, c.threads, c.sentence
                )
            }));
        }
        let all = self.cells.iter().all(|c| c.test.not_slower());
        format!(
            "held-out workloads ({w}), non-inferiority at a -{m}% margin (one-sided, 5% per cell): {}{}",
            cells.join("; "),
            if all {
                String::new()
            } else if self.allowed {
                " (a variant that cannot be shown not slower may still be chosen: --allow-regression)"
                    .into()
            } else {
                format!(
                    "; a variant not shown to be within -{m}% there is not packaged (more rounds, \
                     a wider --margin, or --allow-regression)"
                )
            }
        )
    }

    /// Whether `contender` is shown not slower than the margin on every held-out cell it ran.
    pub fn not_slower(&self, contender: &str) -> bool {
        self.cells
            .iter()
            .filter(|c| c.contender == contender)
            .all(|c| c.test.not_slower())
    }
}

pub(super) fn held_out(plan: &BenchPlan, cells: &[Cell], policy: Policy) -> Option<HeldOut> {
    let held = plan.held_out();
    if held.is_empty() {
        return None;
    }
    let names: Vec<String> = held.iter().map(|w| w.to_string()).collect();
    let margin = policy.margin();
    let tested: Vec<HeldOutCell> = cells
        .iter()
        .filter(|c| is_held_out(plan, c))
        .filter(|c| !plan.reference_only.contains(&c.contender))
        .filter_map(|c| {
            let k = c.tps_vs_baseline.as_ref()?;
            let test = k.non_inferiority(margin)?;
            Some(HeldOutCell {
                contender: c.contender.clone(),
                workload: c.workload.clone(),
                threads: c.threads,
                sentence: test.sentence(k),
                test,
            })
        })
        .collect();
    let regressions = tested
        .iter()
        .filter(|c| c.test.result == NonInferiority::Slower)
        .map(|c| {
            format!(
                "{} {} at {} threads: {}",
                c.contender, c.workload, c.threads, c.sentence
            )
        })
        .collect();
    Some(HeldOut {
        workloads: names,
        regressions,
        allowed: policy.allow_held_out_regression,
        margin,
        cells: tested,
    })
}

/// Whether the cell's workload is one its contender's profile was not trained on.
pub fn is_held_out(plan: &BenchPlan, c: &Cell) -> bool {
    plan.held_out_for(&c.contender)
        .iter()
        .any(|w| w.to_string() == c.workload)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::stats::MarginTest;

    /// Cells come workload by workload and thread count by thread count, so two contenders'
    /// cells alternate: each contender is still summed up once.
    #[test]
    fn each_contender_is_summed_up_once_whatever_the_order_of_its_cells() {
        let cell = |contender: &str, threads: u32, bound: f64| HeldOutCell {
            contender: contender.into(),
            workload: "tpcc".into(),
            threads,
            test: MarginTest {
                margin: 0.03,
                result: NonInferiority::NotSlower { bound },
            },
            sentence: String::new(),
        };
        let h = HeldOut {
            workloads: vec!["tpcc".into()],
            regressions: Vec::new(),
            allowed: false,
            margin: 0.03,
            cells: vec![
                cell("pgo", 1, 1.02),
                cell("lto", 1, 1.05),
                cell("pgo", 4, 1.01),
                cell("lto", 4, 1.04),
            ],
        };
        let s = h.sentence();
        assert_eq!(
            s.matches("pgo: not slower than -3% in all 2 cells").count(),
            1,
            "{s}"
        );
        assert_eq!(
            s.matches("lto: not slower than -3% in all 2 cells").count(),
            1,
            "{s}"
        );
        assert!(
            s.contains(
                "pgo: not slower than -3% in all 2 cells (lowest one-sided 95% bound +1.0%)"
            ),
            "{s}"
        );
    }
}
