//! The record of a run that reused an earlier release's profiles, for the report's "keeping up
//! with releases" section (bench/report/reuse.rs): built from the plan's reuse and the
//! contenders' builds when the benchmark has run.

use super::outcome::RunContender;
use super::profile_from::Reuse;
use crate::bench::report::reuse::{BoltCoverage, ProfileReuse};
use crate::builder::staleness::StaleShare;

/// What the report's "keeping up with releases" section shows of a run that reused `reuse`:
/// each optimized build's staleness (once per build, however many contenders share it) and BOLT's
/// coverage of each binary it optimized with the reused BOLT profile.
pub fn reuse_record(reuse: &Reuse, contenders: &[RunContender]) -> ProfileReuse {
    let p = &reuse.provenance;
    let mut builds: Vec<StaleShare> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for b in contenders.iter().filter_map(|c| c.build.as_ref()) {
        let Some(stale) = b.stale.as_ref() else {
            continue;
        };
        if !seen.insert(b.key.clone()) {
            continue;
        }
        builds.push(reuse.verdict(&b.variant, stale, &b.compiler));
    }
    let bolt = if reuse.bolt_profile.is_some() {
        contenders
            .iter()
            .filter_map(|c| {
                let cov = c.bolt.as_ref()?.coverage.clone()?;
                Some(BoltCoverage {
                    contender: c.name.clone(),
                    coverage: cov,
                })
            })
            .collect()
    } else {
        Vec::new()
    };
    ProfileReuse {
        from: p.package.clone(),
        trained_on: p.source_origin.clone(),
        compiler_version: p.compiler_version.clone(),
        training: p.training.clone(),
        builds,
        bolt,
    }
}
