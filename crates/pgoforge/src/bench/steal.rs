//! CPU steal: time the hypervisor gave this VM's CPUs to someone else while a run was measured.
//! It is the one part of a noisy host the guest can see (/proc/stat's steal column, recorded
//! with every run's [`super::load::Load`]). Where it is large the scatter of a run's seconds is
//! the host's other tenants, not the servers or pgoforge, and no setting inside the VM removes it;
//! where a noisy run shows none, the noise came another way (docs/bench/steal/).

use super::report::LoadPoint;

/// Steal worth a sentence: 1 % of the measured time, on average over the runs.
pub const NOTABLE: f64 = 0.01;
/// A run that lost this share of its CPU time or more counts as hit hard.
pub const HIGH: f64 = 0.10;

/// What the recorded steal of a benchmark's runs says.
#[derive(Clone, Debug, PartialEq)]
pub struct Steal {
    /// The runs' steal share, averaged over runs (each run is one cell's slice or run, of
    /// similar length within a benchmark).
    pub mean: f64,
    /// The largest share one run lost.
    pub worst: f64,
    /// The share of runs that lost [`HIGH`] or more.
    pub runs_high: f64,
    pub runs: usize,
}

impl Steal {
    /// The summary of a report's load trace; `None` when no run recorded its load.
    pub fn of(trace: &[LoadPoint]) -> Option<Steal> {
        if trace.is_empty() {
            return None;
        }
        let shares: Vec<f64> = trace
            .iter()
            .map(|p| p.steal_share.clamp(0.0, 1.0))
            .collect();
        Some(Steal {
            mean: super::stats::mean(&shares),
            worst: shares.iter().copied().fold(0.0, f64::max),
            runs_high: shares.iter().filter(|s| **s >= HIGH).count() as f64 / shares.len() as f64,
            runs: shares.len(),
        })
    }

    /// A sentence for the report when there is something to say: steal that matters, or a
    /// noisy host (`noisy`) with none, which rules the hypervisor's time-slicing out as the cause.
    pub fn sentence(&self, noisy: bool) -> Option<String> {
        if self.mean >= NOTABLE {
            Some(format!(
                "CPU steal: the hypervisor took {:.1}% of this VM's CPU time over the {} measured \
                 runs ({:.0}% of them lost {:.0}% or more, the worst {:.0}%) — time the host gave to \
                 other VMs or its own work, which slows whichever server is running and which \
                 nothing inside the VM removes; paired rounds and the sliced design cancel what \
                 hits contenders alike.",
                self.mean * 100.0,
                self.runs,
                self.runs_high * 100.0,
                HIGH * 100.0,
                self.worst * 100.0,
            ))
        } else if noisy {
            Some(format!(
                "CPU steal: {:.1}% of the measured time — the hypervisor took almost none, so this \
                 host's noise did not come from time taken away from the VM.",
                self.mean * 100.0
            ))
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trace(shares: &[f64]) -> Vec<LoadPoint> {
        shares
            .iter()
            .map(|&s| LoadPoint {
                round: 1,
                contender: "a".into(),
                workload: "oltp_read_only".into(),
                other_share: 0.0,
                steal_share: s,
            })
            .collect()
    }

    #[test]
    fn steal_is_summarised_and_said_only_when_it_matters() {
        assert_eq!(Steal::of(&[]), None);
        let s = Steal::of(&trace(&[0.0, 0.02, 0.30, 0.08])).unwrap();
        assert!((s.mean - 0.10).abs() < 1e-12);
        assert_eq!(s.worst, 0.30);
        assert_eq!(s.runs_high, 0.25);
        let text = s.sentence(false).unwrap();
        assert!(
            text.contains("10.0% of this VM's CPU time over the 4 measured runs"),
            "{text}"
        );
        assert!(
            text.contains("25% of them lost 10% or more, the worst 30%"),
            "{text}"
        );

        let quiet = Steal::of(&trace(&[0.0, 0.001])).unwrap();
        assert_eq!(
            quiet.sentence(false),
            None,
            "a quiet host with no steal: nothing to say"
        );
        let text = quiet.sentence(true).unwrap();
        assert!(text.contains("0.1% of the measured time"), "{text}");
        assert!(text.contains("did not come from time taken away"), "{text}");
    }
}
