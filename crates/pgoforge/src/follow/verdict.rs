//! The rule a follow cycle publishes by: the new release's optimized server must not be slower
//! than Debian's own server of the same release beyond a stated margin — a non-inferiority test
//! (the one-sided 95 % bound of the ratio above 1 − margin, in every cell: an intersection-union
//! test, so no correction is owed), not "significantly faster". A security release must not wait
//! on a noisy win; it must not ship a server slower than the one it replaces either.

use std::path::Path;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::bench::report;
use crate::bench::stats::{Comparison, MarginTest};
use crate::source::distro;

/// One cell of the test.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CellVerdict {
    pub workload: String,
    pub threads: u32,
    /// The candidate's TPS over Debian's (geometric mean of the rounds) and its 95 % interval.
    pub ratio: f64,
    pub ratio_ci95: (f64, f64),
    pub pairs: usize,
    pub test: MarginTest,
    /// What the cell allows, in words.
    pub sentence: String,
}

/// The test over a run's cells.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub candidate: String,
    pub reference: String,
    pub margin: f64,
    pub cells: Vec<CellVerdict>,
}

impl Verdict {
    /// Publishable: every cell tested, every one not slower.
    pub fn not_slower(&self) -> bool {
        !self.cells.is_empty() && self.cells.iter().all(|c| c.test.not_slower())
    }

    /// `point_select +52.1 % [+47.0, +57.3]; read_write …` for the summary line.
    pub fn gains(&self) -> String {
        self.cells
            .iter()
            .map(|c| {
                format!(
                    "{} {:+.1} % [{:+.1}, {:+.1}]",
                    c.workload.trim_start_matches("oltp_"),
                    (c.ratio - 1.0) * 100.0,
                    (c.ratio_ci95.0 - 1.0) * 100.0,
                    (c.ratio_ci95.1 - 1.0) * 100.0
                )
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// `candidate` against Debian's server in the benchmark of `run_dir`, cell by cell.
pub fn judge(run_dir: &Path, candidate: &str, margin: f64) -> Result<Verdict> {
    let r = report::build_against(run_dir, Some(distro::NAME))?;
    let cells = r
        .cells
        .iter()
        .filter(|c| c.contender == candidate)
        .filter_map(|c| Some((c.workload.as_str(), c.threads, c.tps_vs_baseline.as_ref()?)));
    Ok(of_cells(cells, candidate, margin))
}

fn of_cells<'a>(
    cells: impl Iterator<Item = (&'a str, u32, &'a Comparison)>,
    candidate: &str,
    margin: f64,
) -> Verdict {
    let cells = cells
        .filter_map(|(workload, threads, cmp)| {
            let test = cmp.non_inferiority(margin)?;
            Some(CellVerdict {
                workload: workload.to_string(),
                threads,
                ratio: cmp.ratio,
                ratio_ci95: cmp.ratio_ci95,
                pairs: cmp.pairs,
                sentence: test.sentence(cmp),
                test,
            })
        })
        .collect();
    Verdict {
        candidate: candidate.to_string(),
        reference: distro::NAME.to_string(),
        margin,
        cells,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::stats::{compare, Better};

    /// Eight rounds of Debian at 1000 TPS and the candidate at `gain` with a ±`wobble` zigzag.
    fn cmp(gain: f64, wobble: f64) -> Comparison {
        let debian: Vec<(u32, f64)> = (0..8).map(|i| (i, 1000.0)).collect();
        let cand: Vec<(u32, f64)> = (0..8)
            .map(|i| {
                let w = if i % 2 == 0 { wobble } else { -wobble };
                (i, 1000.0 * gain * (1.0 + w))
            })
            .collect();
        compare(&debian, &cand, Better::Higher)
    }

    #[test]
    fn published_only_when_every_cell_is_bounded_above_the_margin() {
        let fast = cmp(1.5, 0.01);
        let level = cmp(1.0, 0.005);
        let noisy = cmp(1.0, 0.2);
        let slower = cmp(0.9, 0.005);
        let v = |cs: &[&Comparison]| {
            of_cells(
                cs.iter().map(|c| ("oltp_point_select", 4, *c)),
                "pgo+lto+bolt",
                0.05,
            )
        };
        // Faster, or level within a tight interval: not slower than −5 %.
        assert!(v(&[&fast, &level]).not_slower());
        assert!(v(&[&fast]).gains().starts_with("point_select +50.0 % ["));
        // A noisy cell cannot exclude a loss beyond the margin: held, though not "slower".
        let held = v(&[&fast, &noisy]);
        assert!(!held.not_slower());
        assert!(
            held.cells[1].sentence.contains("cannot exclude"),
            "{:?}",
            held.cells[1]
        );
        // 10 % slower: held.
        assert!(!v(&[&slower]).not_slower());
        // No cell measured: nothing to publish on.
        assert!(!v(&[]).not_slower());
    }
}
