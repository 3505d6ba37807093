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
    /// Debian's server is the run's baseline too (`run --baseline debian`): no gain over a
    /// built baseline to show beside.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reference_is_baseline: bool,
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
    /// cachegrind's counts per transaction, the winner's over the reference's, where the run
    /// counted both (`--cachegrind`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted: Option<CountRatios>,
}

/// The winner's cachegrind counts per transaction over the reference's (0.8: 20 % fewer).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct CountRatios {
    pub instructions: f64,
    pub i1_misses: f64,
    pub mispredicts: f64,
}

/// Points by which the user-time cut and the instruction cut may differ before the report
/// explains it: a few points are the timing's own scatter.
const AGREE_POINTS: f64 = 5.0;

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

    /// The ceiling's table cell, with cachegrind's instruction cut beside the user-time cut.
    pub fn ceiling_cell(&self) -> String {
        let mut s = self.ceiling().map_or("-".into(), |x| x.cell());
        if let Some(c) = &self.counted {
            s.push_str(&format!(
                "; instructions {:+.0}% (cachegrind)",
                (c.instructions - 1.0) * 100.0
            ));
        }
        s
    }

    /// Where the timed user-time cut and cachegrind's instruction cut disagree by more than a
    /// few points, why: the time per instruction changed too, and the counts say how — I1
    /// misses (code layout) and mispredicted branches, which cost cycles without instructions.
    pub fn counts_note(&self) -> Option<String> {
        let (c, ceiling) = (self.counted?, self.ceiling()?);
        let user = -ceiling.user_cut * 100.0;
        let instr = (c.instructions - 1.0) * 100.0;
        if (user - instr).abs() <= AGREE_POINTS {
            return None;
        }
        let (way, why) = if user < instr {
            ("more", "each instruction took fewer cycles")
        } else {
            ("less", "each instruction took more cycles")
        };
        Some(format!(
            "{} at {} threads: user time per transaction {user:+.0}%, instructions {instr:+.0}% — \
             time fell {:.0} points {way} than instructions, so {why}; I1 misses {:+.0}%, \
             mispredicted branches {:+.0}% per transaction (cachegrind)",
            self.workload,
            self.threads,
            (user - instr).abs(),
            (c.i1_misses - 1.0) * 100.0,
            (c.mispredicts - 1.0) * 100.0
        ))
    }
}

impl Headline {
    /// Adds cachegrind's counts of the winner and the reference, where the run has both.
    pub fn add_counts(&mut self, records: &[crate::bench::cachegrind::CgRecord]) {
        for c in &mut self.cells {
            let Ok(test) = c.workload.parse::<TestName>() else {
                continue;
            };
            let of = |name: &str| {
                records
                    .iter()
                    .find(|r| r.contender == name && r.workload == test)
                    .map(|r| r.per_txn.clone())
            };
            // cachegrind counts each binary once, at its own pool, under its unswept name.
            use crate::bench::plan::split_pool;
            let (Some(w), Some(r)) = (
                of(split_pool(&self.winner).0),
                of(split_pool(&self.reference).0),
            ) else {
                continue;
            };
            let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { f64::NAN };
            let counted = CountRatios {
                instructions: ratio(w.instructions, r.instructions),
                i1_misses: ratio(w.i1_misses, r.i1_misses),
                mispredicts: ratio(w.mispredicts, r.mispredicts),
            };
            if counted.instructions.is_finite() {
                c.counted = Some(counted);
            }
        }
    }

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
             Holm's correction over these {} cells each; {}each server's CPU per transaction \
             (user + kernel µs). A \
             compiler shortens only the user part: the last column gives the reference's user \
             share, the capacity gain a user-space optimization could reach at most (all user \
             time gone), and the winner's user-time cut with the capacity gain that cut alone \
             gives with the kernel part unchanged.",
            self.winner,
            self.reference,
            self.cells.len(),
            if self.reference_is_baseline {
                "it is the run's baseline (no baseline was built); "
            } else {
                "the gain over pgoforge's own baseline build beside it, and "
            }
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
    // In a buffer-pool sweep, the distribution's server at the winner's pool.
    let reference = plan.at_pool_of(REFERENCE, winner)?.name.as_str();
    if winner == reference {
        return None;
    }
    let reference_is_baseline = plan.contenders.first().is_some_and(|c| c.name == reference);
    let mut out: Vec<HeadlineCell> = cells
        .iter()
        .filter(|c| &c.contender == winner)
        .filter_map(|w| {
            let r = cells.iter().find(|r| {
                r.contender == reference && r.workload == w.workload && r.threads == w.threads
            })?;
            let capacity = |name: &str| {
                let test: TestName = w.workload.parse().ok()?;
                Some(capacity_rounds(records, name, test, w.threads))
            };
            let capacity_vs_reference = match (capacity(reference), capacity(winner)) {
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
                vs_baseline: w.tps_vs_baseline.clone().filter(|_| !reference_is_baseline),
                winner_us: per_txn(w),
                reference_us: per_txn(r),
                counted: None,
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
        reference_version: versions.get(reference).cloned(),
        winner: winner.clone(),
        reference: reference.into(),
        cells: out,
        reference_is_baseline,
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

    fn cg(
        contender: &str,
        instructions: f64,
        i1: f64,
        mis: f64,
    ) -> crate::bench::cachegrind::CgRecord {
        crate::bench::cachegrind::CgRecord {
            contender: contender.into(),
            workload: TestName::OltpPointSelect,
            events: 1000,
            short: Default::default(),
            long: Default::default(),
            per_txn: crate::bench::cachegrind::PerTxn {
                instructions,
                i1_misses: i1,
                mispredicts: mis,
                ..Default::default()
            },
            failed_statements: None,
            functions: Vec::new(),
        }
    }

    #[test]
    fn cachegrinds_counts_stand_beside_the_ceiling_and_a_disagreement_is_explained() {
        let rounds = [(1, 100.0), (2, 101.0), (3, 99.0)];
        let cell = HeadlineCell {
            workload: "oltp_point_select".into(),
            threads: 4,
            vs_reference: compare(&rounds, &rounds, Better::Higher),
            vs_baseline: None,
            capacity_vs_reference: None,
            // user time −32 %
            winner_us: Some((4.2, 8.9)),
            reference_us: Some((6.2, 8.5)),
            counted: None,
        };
        let mut h = Headline {
            winner: "pgo+lto+bolt".into(),
            reference: REFERENCE.into(),
            winner_version: None,
            reference_version: None,
            cells: vec![cell],
            reference_is_baseline: false,
        };
        // No counts (no --cachegrind, or the reference not counted): the ceiling alone.
        h.add_counts(&[cg("pgo+lto+bolt", 20_000.0, 100.0, 50.0)]);
        assert_eq!(h.cells[0].counted, None);
        assert!(!h.cells[0].ceiling_cell().contains("cachegrind"));
        // Instructions −20 %, user time −32 %: 12 points apart, explained by the misses.
        h.add_counts(&[
            cg("pgo+lto+bolt", 20_000.0, 100.0, 50.0),
            cg(REFERENCE, 25_000.0, 200.0, 80.0),
        ]);
        let c = h.cells[0].counted.unwrap();
        assert!((c.instructions - 0.8).abs() < 1e-9 && (c.i1_misses - 0.5).abs() < 1e-9);
        assert!(h.cells[0]
            .ceiling_cell()
            .ends_with("; instructions -20% (cachegrind)"));
        let note = h.cells[0].counts_note().unwrap();
        assert!(
            note.contains("user time per transaction -32%, instructions -20%"),
            "{note}"
        );
        assert!(note.contains("12 points more than instructions"), "{note}");
        assert!(
            note.contains("I1 misses -50%, mispredicted branches -38%"),
            "{note}"
        );
        // Within a few points of each other: nothing to explain.
        h.add_counts(&[
            cg("pgo+lto+bolt", 17_250.0, 100.0, 50.0),
            cg(REFERENCE, 25_000.0, 200.0, 80.0),
        ]);
        assert_eq!(h.cells[0].counts_note(), None);
    }
}
