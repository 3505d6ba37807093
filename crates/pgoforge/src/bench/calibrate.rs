//! The machine's noise floor, measured A/A: one server benchmarked against itself in the usual
//! paired, balanced rounds. Whatever the per-round ratios scatter then is noise (the machine, the
//! page cache, the server's own variance), so their spread is the floor any real comparison must
//! rise above. From it: the smallest effect the planned rounds can detect under the rule reports
//! apply (the exact test, Holm, the 2 % minimum change), the rounds (and minutes) a 3 % difference
//! needs (a true 2 % is never found 80 % of the time with a 2 % cut-off), and a yardstick for reports ("this run was far noisier than
//! the machine's floor").
//!
//! The latest calibration of a work dir is WORK/calibration.json; each benchmark copies it into its
//! run directory when it starts, so a report is judged against the floor in force when it ran.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::stats::{
    self, detectable, min_detectable_ratio, rounds_to_detect, t975, Comparison, Rule,
};

/// The names of the two contenders of an A/A benchmark.
pub const A: &str = "a";
pub const A_AGAIN: &str = "a-again";

/// How far the rounds a target difference needs are counted (a noisy VM needs hundreds).
pub const MAX_ROUNDS: usize = 2000;

/// The effect the floor is translated into rounds and minutes for: 3 %, because under the
/// default 2 % minimum change a true 2 % is reported about half the time at any length.
pub const TARGET_EFFECT: f64 = 1.03;

/// The floor on one cell (workload × threads).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Floor {
    pub workload: String,
    pub threads: u32,
    /// Paired rounds measured.
    pub rounds: usize,
    /// Standard deviation of the per-round log-ratios (≈ the relative scatter of one round's
    /// ratio): the noise floor.
    pub sd_log_ratio: f64,
    /// The A/A comparison itself (it should be ~1 and not significant).
    pub aa: Comparison,
    /// The smallest change reported with 80 % power under the rule (exact test, one comparison,
    /// the 2 % minimum) at the calibration's own rounds (a ratio; `None` when the exact test
    /// cannot reach 5 % with so few rounds).
    pub detectable_here: Option<f64>,
    /// The same at the ends of the floor's own 95 % interval (absent in older calibrations; an
    /// end that cannot be reached is null).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "crate::bench::stats::unbounded::option_pair"
    )]
    pub detectable_here_interval: Option<(f64, f64)>,
    /// The same for a default `pgoforge run` (8 rounds, 6 comparisons under Holm).
    pub detectable_default_run: Option<f64>,
    /// Rounds a [`TARGET_EFFECT`] difference needs under the rule (one comparison), if at most
    /// [`MAX_ROUNDS`]. (Calibrations made before the rule's power was simulated stored a
    /// t-test's rounds for 2 % under the old name.)
    #[serde(alias = "rounds_for_2pct")]
    pub rounds_for_target: Option<usize>,
    /// Minutes of benchmarking one pair on this workload alone takes for those rounds.
    #[serde(alias = "minutes_for_2pct")]
    pub minutes_for_target: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    pub binary: PathBuf,
    /// Unix time the calibration finished.
    pub measured_at: u64,
    /// Measured seconds and warm-up per run, and the wall seconds a run really cost (with server
    /// starts and datadir copies shared out).
    pub seconds: u64,
    pub warmup_seconds: u64,
    pub wall_seconds_per_run: f64,
    pub floors: Vec<Floor>,
    /// The fingerprint of the host it was measured on ([`super::environment::Host`]): a floor is
    /// the host's, and is applied on no other (absent in calibrations made before it was kept).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// One cell of an A/A benchmark: the two contenders' (round, TPS).
pub struct AaCell<'a> {
    pub workload: &'a str,
    pub threads: u32,
    pub a: &'a [(u32, f64)],
    pub a_again: &'a [(u32, f64)],
    /// a-again against a as the report judged it (Holm over the calibration's cells).
    pub aa: &'a Comparison,
}

/// Rounds and comparisons of a default `pgoforge run` (baseline, pgo+lto, pgo+lto+bolt over
/// three workloads).
const DEFAULT_RUN: (usize, usize) = (8, 6);

impl Calibration {
    /// The floor from an A/A benchmark of `binary`: per cell (workload, threads) the throughput
    /// of [`A`] and of [`A_AGAIN`] round by round; `wall_seconds_per_run` from the caller's clock.
    pub fn from_cells<'a>(
        binary: &Path,
        seconds: u64,
        warmup_seconds: u64,
        wall_seconds_per_run: f64,
        cells: impl IntoIterator<Item = AaCell<'a>>,
    ) -> Calibration {
        let mut floors = Vec::new();
        for c in cells {
            let d = stats::paired_log_ratios(c.a, c.a_again);
            let sd = stats::stddev(&d);
            let one = Rule::new(1, None);
            let rounds = rounds_to_detect(one, TARGET_EFFECT, sd, MAX_ROUNDS);
            let here = detectable(one, sd, d.len().max(1) - 1, d.len());
            floors.push(Floor {
                workload: c.workload.to_string(),
                threads: c.threads,
                rounds: d.len(),
                sd_log_ratio: sd,
                aa: c.aa.clone(),
                detectable_here: finite(here.ratio),
                detectable_here_interval: finite(here.ratio).map(|_| (here.low, here.high)),
                detectable_default_run: finite(min_detectable_ratio(
                    Rule::new(DEFAULT_RUN.1, None),
                    sd,
                    DEFAULT_RUN.0,
                )),
                rounds_for_target: rounds,
                minutes_for_target: rounds.map(|n| n as f64 * 2.0 * wall_seconds_per_run / 60.0),
            });
        }
        Calibration {
            binary: binary.to_path_buf(),
            measured_at: crate::infra::time::now_secs(),
            seconds,
            warmup_seconds,
            wall_seconds_per_run,
            floors,
            host: Some(super::environment::Host::probe().fingerprint),
        }
    }

    /// What a planned benchmark of `rounds` under `rule` can find on the `workloads` this floor
    /// has: per floor, the smallest true change reported with 80 % power (a ratio).
    pub fn planned_detectable(
        &self,
        workloads: &[String],
        rounds: usize,
        rule: Rule,
    ) -> Vec<(&Floor, f64)> {
        self.floors
            .iter()
            .filter(|f| workloads.contains(&f.workload))
            .map(|f| (f, min_detectable_ratio(rule, f.sd_log_ratio, rounds)))
            .collect()
    }

    /// Whether this floor was measured on the host `fingerprint` names.
    pub fn measured_on(&self, fingerprint: &str) -> bool {
        self.host.as_deref() == Some(fingerprint)
    }

    pub fn floor(&self, workload: &str, threads: u32) -> Option<&Floor> {
        self.floors
            .iter()
            .find(|f| f.workload == workload && f.threads == threads)
    }
}

/// JSON has no infinity: an unreachable effect is `None`.
fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

/// The work dir's latest calibration.
pub fn path(work_dir: &Path) -> PathBuf {
    work_dir.join("calibration.json")
}

/// The calibration copied into a run directory when the benchmark started.
pub fn copy_in_run_dir(run_dir: &Path) -> PathBuf {
    run_dir.join("calibration.json")
}

/// Reads a calibration; `None` when there is none, an error when it is unreadable.
pub fn read(p: &Path) -> Result<Option<Calibration>> {
    crate::infra::fs::read_json_if_present(p, "delete it or calibrate again")
}

/// How far a comparison's per-round scatter lies above the floor: the ratio of the standard
/// deviations of the log-ratios, recovered from the comparison's t interval. `None` below 4
/// pairs (too few to say).
pub fn scatter_over_floor(c: &Comparison, f: &Floor) -> Option<f64> {
    if c.pairs < 4 || f.sd_log_ratio <= 0.0 {
        return None;
    }
    let sd = c.log_half_width() * (c.pairs as f64).sqrt() / t975(c.pairs - 1);
    Some(sd / f.sd_log_ratio)
}

/// Above this many times the floor's scatter a run is called unstable: for 8–10 rounds on each
/// side the variance ratio 4 lies beyond the F distribution's 97.5 % point (about 3.4–4.4).
pub const UNSTABLE_OVER_FLOOR: f64 = 2.0;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::stats::{compare, Better};

    fn rounds(v: &[f64]) -> Vec<(u32, f64)> {
        v.iter()
            .enumerate()
            .map(|(i, x)| (i as u32 + 1, *x))
            .collect()
    }

    #[test]
    fn the_scatter_of_a_comparison_is_measured_against_the_floor() {
        let base = rounds(&[1000.0; 8]);
        let calm = rounds(&[1010.0, 990.0, 1005.0, 995.0, 1010.0, 990.0, 1000.0, 1000.0]);
        let rough = rounds(&[1100.0, 900.0, 1050.0, 950.0, 1100.0, 900.0, 1000.0, 1000.0]);
        let d: Vec<f64> = calm.iter().map(|(_, v)| (v / 1000.0f64).ln()).collect();
        let floor = Floor {
            workload: "oltp_point_select".into(),
            threads: 4,
            rounds: 8,
            sd_log_ratio: stats::stddev(&d),
            aa: compare(&base, &calm, Better::Higher),
            detectable_here: None,
            detectable_default_run: None,
            rounds_for_target: None,
            detectable_here_interval: None,
            minutes_for_target: None,
        };
        let same = scatter_over_floor(&compare(&base, &calm, Better::Higher), &floor).unwrap();
        assert!((same - 1.0).abs() < 1e-6, "{same}");
        let ten = scatter_over_floor(&compare(&base, &rough, Better::Higher), &floor).unwrap();
        // ±10 % against ±1 % (on the log scale a little under 10×).
        assert!((ten - 10.0).abs() < 0.6, "{ten}");
        assert!(
            scatter_over_floor(&compare(&base[..3], &rough[..3], Better::Higher), &floor).is_none()
        );
        // A plan's figure from the floor: only the planned workloads; more comparisons or fewer
        // rounds detect less.
        let cal = Calibration {
            binary: "/x".into(),
            measured_at: 0,
            seconds: 10,
            warmup_seconds: 3,
            wall_seconds_per_run: 14.0,
            floors: vec![floor],
            host: None,
        };
        let at = |rounds: usize, m: usize| {
            cal.planned_detectable(&["oltp_point_select".into()], rounds, Rule::new(m, None))[0].1
        };
        assert!(at(12, 1) > 1.02 && at(12, 1) < 1.03, "{}", at(12, 1));
        assert!(at(12, 9) >= at(12, 1));
        assert!(at(8, 9) > at(8, 1), "{} {}", at(8, 9), at(8, 1));
        assert!(at(5, 9).is_infinite());
        assert!(cal
            .planned_detectable(&["tpcc".into()], 12, Rule::new(1, None))
            .is_empty());
    }
}
