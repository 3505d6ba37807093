//! The report's first table: the winner — the variant `run` packages — against the
//! distribution's own server of the same release (`debian`, what users run now), cell by cell,
//! paired by round, with Holm's correction over these cells; beside it the winner's gain over
//! pgoforge's own baseline (from the run's family: what the optimization itself did, the
//! compiler's and build's differences from Debian's left out), and each side's server CPU per
//! transaction, user and kernel apart (a compiler shortens only the user part).

use serde::{Deserialize, Serialize};

use super::model::Cell;
use super::Decision;
use crate::bench::plan::BenchPlan;
use crate::bench::stats::{compare, Better, Comparison};

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
    /// The winner's and the reference's server CPU per transaction, µs (user, kernel), medians
    /// over the cell's runs (absent in runs that did not record it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub winner_us: Option<(f64, f64)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_us: Option<(f64, f64)>,
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
            "{} against Debian's own server {release} ({}): what replacing it gains, paired by \
             round, Holm's correction over these {} cells; the gain over pgoforge's own baseline \
             build beside it, and each server's CPU per transaction (user + kernel µs: a \
             compiler shortens only the user part).",
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
            Some(HeadlineCell {
                workload: w.workload.clone(),
                threads: w.threads,
                vs_reference: compare(&r.tps_rounds, &w.tps_rounds, Better::Higher),
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
    Some(Headline {
        winner_version: versions.get(winner).cloned(),
        reference_version: versions.get(REFERENCE).cloned(),
        winner: winner.clone(),
        reference: REFERENCE.into(),
        cells: out,
    })
}
