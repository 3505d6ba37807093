//! The report's first table: the winner — the variant `run` packages — against the
//! distribution's own server of the same release (`debian`, what users run now), cell by cell,
//! paired by round, with Holm's correction over these cells; beside it the winner's gain over
//! pgoforge's own baseline (from the run's family: what the optimization itself did, the
//! compiler's and build's differences from Debian's left out), and each side's server CPU per
//! transaction, user and kernel apart (a compiler shortens only the user part).

use serde::{Deserialize, Serialize};

use super::model::{capacity_rounds, Cell};
use super::Decision;
use crate::bench::plan::BenchPlan;
use crate::bench::run_dir::Record;
use crate::bench::stats::pair_by_round;
use crate::bench::stats::{compare, Better, Comparison};
use oltp::settings::TestName;

/// The contender a headline compares with: the distribution's server, however it came in
/// (the run's `distro` stage, or `--binary debian=…`).
pub const REFERENCE: &str = crate::source::distro::NAME;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Headline {
    pub winner: String,
    pub reference: String,
    /// The servers' own versions (`SELECT VERSION()`), when the runs recorded them: the
    /// reference is the same release as the build, or the table says it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub winner_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_version: Option<String>,
    pub cells: Vec<HeadlineCell>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HeadlineCell {
    pub workload: String,
    pub threads: u32,
    /// The winner's TPS over the reference's (Holm over the headline's cells).
    pub vs_reference: Comparison,
    /// The winner against the run's baseline, as the results table has it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vs_baseline: Option<Comparison>,
    /// Transactions per server-CPU second, the winner's over the reference's, paired by round
    /// (Holm over the headline's cells apart from throughput's): what a fleet sized by CPU gains.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_vs_reference: Option<Comparison>,
    /// The winner's and the reference's server CPU per transaction, µs (user, kernel), medians
    /// over the cell's runs (absent in runs that did not record it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub winner_us: Option<(f64, f64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_us: Option<(f64, f64)>,
}

/// What a user-space optimization can do to a cell at most (Amdahl): only the user part of
/// the server's CPU per transaction shrinks; the kernel's (the socket, the scheduler) stays.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Ceiling {
    /// The reference's user share of its server CPU per transaction.
    pub user_share: f64,
    /// The capacity ratio with the user part gone entirely: 1 / (1 − user share).
    pub max_ratio: f64,
    /// How much of the reference's user time per transaction the winner cut (0.4: 40 % less).
    pub user_cut: f64,
    /// The capacity ratio that cut alone gives with the kernel part unchanged:
    /// 1 / (1 − user share × cut).
    pub expected_ratio: f64,
}

impl Ceiling {
    fn of(winner: (f64, f64), reference: (f64, f64)) -> Option<Ceiling> {
        let (wu, _) = winner;
        let (ru, rs) = reference;
        if !(ru > 0.0 && rs >= 0.0 && wu >= 0.0) {
            return None;
        }
        let user_share = ru / (ru + rs);
        let user_cut = 1.0 - wu / ru;
        Some(Ceiling {
            user_share,
            max_ratio: 1.0 / (1.0 - user_share),
            user_cut,
            expected_ratio: 1.0 / (1.0 - user_share * user_cut),
        })
    }

    /// `user 46%: at most +85%; user −49% → +29%` in a table cell.
    pub fn cell(&self) -> String {
        let pct = |r: f64| (r - 1.0) * 100.0;
        let max = if self.max_ratio.is_finite() {
            format!("at most {:+.0}%", pct(self.max_ratio))
        } else {
            "no kernel part".into()
        };
        format!(
            "user {:.0}%: {max}; user {:+.0}% → {:+.0}%",
            self.user_share * 100.0,
            -self.user_cut * 100.0,
            pct(self.expected_ratio)
        )
    }
}

impl HeadlineCell {
    /// The Amdahl ceiling of the cell, when both servers' CPU per transaction was recorded.
    pub fn ceiling(&self) -> Option<Ceiling> {
        Ceiling::of(self.winner_us?, self.reference_us?)
    }
}

impl Headline {
    /// The lead-in sentence of the table.
    pub fn sentence(&self) -> String {
        let release = match (&self.winner_version, &self.reference_version) {
            (Some(w), Some(r)) if upstream(w) == upstream(r) => {
                format!("of the same release, {}", upstream(r))
            }
            (Some(w), Some(r)) => format!(
                "of another release — {} against the built {}, so the difference includes the \
                 releases' own —",
                upstream(r),
                upstream(w)
            ),
            _ => "(its release not recorded)".into(),
        };
        format!(
            "{} against Debian's own server {release} ({}): what replacing it gains in \
             throughput and in capacity (transactions per server-CPU second), paired by round, \
             Holm's correction over these {} cells each; the gain over pgoforge's own baseline \
             build beside it, and each server's CPU per transaction (user + kernel µs). A \
             compiler shortens only the user part: the last column gives the reference's user \
             share, the capacity gain a user-space optimization could reach at most (all user \
             time gone), and the winner's user-time cut with the capacity gain that cut alone \
             gives with the kernel part unchanged.",
            self.winner,
            self.reference,
            self.cells.len()
        )
    }
}

/// `10.11.18` of `10.11.18-MariaDB-0+deb12u1` (or `-pgo`).
fn upstream(version: &str) -> &str {
    version.split('-').next().unwrap_or(version)
}

fn per_txn(c: &Cell) -> Option<(f64, f64)> {
    c.server_per_txn
        .as_ref()
        .map(|s| (s.user_us.median, s.sys_us.median))
}

/// The headline of a run whose plan has the reference and whose decision chose a winner.
pub(super) fn headline(
    plan: &BenchPlan,
    cells: &[Cell],
    records: &[Record],
    decision: &Decision,
    min_effect: Option<f64>,
    versions: &std::collections::BTreeMap<String, String>,
) -> Option<Headline> {
    let winner = decision.winner.as_ref()?;
    if !plan.contenders.iter().any(|c| c.name == REFERENCE) || winner == REFERENCE {
        return None;
    }
    let mut out: Vec<HeadlineCell> = cells
        .iter()
        .filter(|c| &c.contender == winner)
        .filter_map(|w| {
            let r = cells.iter().find(|r| {
                r.contender == REFERENCE && r.workload == w.workload && r.threads == w.threads
            })?;
            let capacity = |name: &str| {
                let test: TestName = w.workload.parse().ok()?;
                Some(capacity_rounds(records, name, test, w.threads))
            };
            let capacity_vs_reference = match (capacity(REFERENCE), capacity(winner)) {
                (Some(r), Some(v)) if pair_by_round(&r, &v).len() >= 2 => {
                    Some(compare(&r, &v, Better::Higher))
                }
                _ => None,
            };
            Some(HeadlineCell {
                workload: w.workload.clone(),
                threads: w.threads,
                vs_reference: compare(&r.tps_rounds, &w.tps_rounds, Better::Higher),
                capacity_vs_reference,
                vs_baseline: w.tps_vs_baseline.clone(),
                winner_us: per_txn(w),
                reference_us: per_txn(r),
            })
        })
        .collect();
    if out.is_empty() {
        return None;
    }
    let mut fam: Vec<&mut Comparison> = out.iter_mut().map(|c| &mut c.vs_reference).collect();
    Comparison::apply_holm_with(&mut fam, Better::Higher, min_effect);
    let mut fam: Vec<&mut Comparison> = out
        .iter_mut()
        .filter_map(|c| c.capacity_vs_reference.as_mut())
        .collect();
    Comparison::apply_holm_with(&mut fam, Better::Higher, min_effect);
    Some(Headline {
        winner_version: versions.get(winner).cloned(),
        reference_version: versions.get(REFERENCE).cloned(),
        winner: winner.clone(),
        reference: REFERENCE.into(),
        cells: out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ceiling_is_amdahls_over_the_user_part() {
        // Issue 57's point_select cell: Debian 10.1 + 11.7 µs, clang pgo+lto 5.2 + 12.7 µs.
        let c = Ceiling::of((5.2, 12.7), (10.1, 11.7)).unwrap();
        assert!((c.user_share - 0.4633).abs() < 1e-3, "{c:?}");
        assert!((c.max_ratio - 1.8636).abs() < 1e-3, "{c:?}");
        assert!((c.user_cut - 0.4851).abs() < 1e-3, "{c:?}");
        assert!((c.expected_ratio - 1.2902).abs() < 1e-3, "{c:?}");
        assert_eq!(c.cell(), "user 46%: at most +86%; user -49% → +29%");
        // Nothing recorded, or no user time at all: no ceiling to state.
        assert!(Ceiling::of((1.0, 1.0), (0.0, 2.0)).is_none());
        assert!(Ceiling::of((f64::NAN, 1.0), (1.0, 2.0)).is_none());
        let all_user = Ceiling::of((1.0, 0.0), (2.0, 0.0)).unwrap();
        assert!(all_user.cell().starts_with("user 100%: no kernel part"));
    }
}
