//! `pgoforge run`: every stage in one pipeline — source, baseline, pgo-gen, training, the optimized
//! builds, BOLT, the correctness gate, the benchmark, the report and the package of the variant that
//! measurably wins.
//!
//! A run is first resolved into a [`RunPlan`] (every argument checked, every build and stage named,
//! before any side effect), then executed stage by stage. Each stage ([`stages`]) implements
//! [`Stage`](stage::Stage); the [`Tracker`] is the one caching path (the state file `state.rs`), so a
//! rerun after Ctrl-C, a crash or a reboot continues from the last finished stage, and a rerun with
//! nothing changed only regenerates the report.

mod contenders;
pub mod deps;
pub mod outcome;
pub mod plan;
mod profiles;
mod spread;
pub mod stage;
pub mod stages;
pub mod state;

use std::path::Path;

use anyhow::Result;

use crate::bench::report::Report;
use crate::events::Reporter;
use crate::source::Source;
pub use outcome::{gains, outcome_path, package_contender, winner, Outcome, RunContender};
pub use plan::{Env, ProfileFrom, RunPlan, RunRequest};
use stage::{Ctx, StageId};
use stages::*;
pub use state::Tracker;

use contenders::{build_contenders, outside_contenders, stop_regressed};
use profiles::{given_profile, train_profiles, Profile, Profiles};

/// Runs the whole pipeline; returns what it made and the benchmark's report.
pub fn run(plan: &RunPlan, reporter: &dyn Reporter) -> Result<(Outcome, Report)> {
    let req = &plan.request;
    let work = crate::infra::fs::create_canonical(&req.work_dir)?;
    let _lock = crate::infra::lock::WorkLock::acquire(&work)?;
    let cx = Ctx {
        work: &work,
        reporter,
    };
    let mut t = Tracker::open(&work)?;
    let src = t.run(&SourceStage::of_run(req), &cx)?;
    let mut warnings = Vec::new();
    for w in plan.source_release.iter().flat_map(|c| c.warnings()) {
        reporter.message("source", &format!("warning: {w}"));
        warnings.push(w);
    }
    let given = given_profile(plan, &src)?;
    deps::check_space(
        &work,
        unfinished_builds(plan, &src, given.as_ref(), &work),
        deps::bytes_per_build(&plan.request.recipe),
    )?;
    let baseline = t.run(
        &BuildStage::of_run(plan, &src, plan.builds[0].variant, None, None),
        &cx,
    )?;
    let profiles = match given {
        Some(p) => Profiles::given(p),
        None => train_profiles(plan, &src, &baseline, &mut t, &cx)?,
    };
    let mut contenders =
        build_contenders(plan, &src, &baseline, &profiles, &mut t, &cx, &mut warnings)?;
    contenders.extend(outside_contenders(req)?);
    t.run(&GateStage::of_run(req, &contenders), &cx)?;
    let mtr = match MtrStage::of_run(plan, &src, &baseline, &contenders) {
        Some(stage) => Some(t.run(&stage, &cx)?),
        None => None,
    };
    if let Some(g) = &mtr {
        stop_regressed(&mut contenders, g, reporter, &mut warnings)?;
    }
    let seed = t.run(&SeedStage { given: req.seed }, &cx)?;
    // Trained contenders make every benchmark workload outside the mix a held-out one.
    let trained = !profiles.is_empty() || contenders.iter().any(|c| c.bolt.is_some());
    let bench = BenchStage::of_run(plan, &src, &contenders, seed, trained);
    let run_dir = t.run(&bench, &cx)?;
    if let Some(g) = &mtr {
        // The report shows the gate beside the numbers it let through.
        crate::infra::fs::write_json(&crate::gate::mtr::copy_in_run_dir(&run_dir), g)?;
    }
    if let Some(c) = &plan.source_release {
        // And which release was measured, against what the distribution served then.
        crate::infra::fs::write_json(&crate::source::release::copy_in_run_dir(&run_dir), c)?;
    }
    if plan.runs(&StageId::Cachegrind) {
        t.run(&CachegrindStage::of_run(plan, &bench.plan, &run_dir), &cx)?;
    }
    let report = t.run(
        &ReportStage {
            run_dir: run_dir.clone(),
            policy: crate::bench::report::Policy {
                allow_held_out_regression: req.allow_regression,
                min_effect: req.min_effect,
            },
        },
        &cx,
    )?;
    let mut outcome = Outcome {
        recipe: req.recipe.name.clone(),
        source: src,
        contenders,
        profile: profiles.into_first().and_then(|(_, s)| s),
        run_dir,
        winner: winner(&report),
        package: None,
        warnings,
        timings: Vec::new(),
    };
    outcome.save(&work)?;
    package_winner(plan, &mut outcome, &report, &mut t, &cx)?;
    outcome.timings = t.timings.clone();
    outcome.save(&work)?;
    Ok((outcome, report))
}

/// Builds not finished yet, for the disk-space check (one needing a profile not yet trained
/// counts as not finished).
fn unfinished_builds(plan: &RunPlan, src: &Source, given: Option<&Profile>, work: &Path) -> usize {
    // (A given profile serves a run of one mix: validate refuses --profile in a matrix.)
    plan.builds
        .iter()
        .filter(|b| {
            let p = match b.profile {
                ProfileFrom::NoProfile => None,
                ProfileFrom::Given => given.map(|(i, _)| i),
                ProfileFrom::Trained | ProfileFrom::CsTrained | ProfileFrom::NativeTrained => {
                    return true
                }
            };
            !BuildStage::of_run(plan, src, b.variant, p, None).finished(work)
        })
        .count()
}

/// Packages the winner, when the run packages and something measurably won.
fn package_winner(
    plan: &RunPlan,
    outcome: &mut Outcome,
    report: &Report,
    t: &mut Tracker,
    cx: &Ctx,
) -> Result<()> {
    if !plan.runs(&StageId::Package) {
        return Ok(());
    }
    let Some(w) = outcome.winner.clone() else {
        let msg = "no variant measurably beat the baseline; nothing packaged (`pgoforge package NAME` packages one anyway)";
        cx.reporter.warning(msg);
        outcome.warnings.push(msg.into());
        return Ok(());
    };
    let pkg = t.run(
        &PackageStage {
            outcome,
            report: Some(report),
            contender: &w,
        },
        cx,
    )?;
    outcome.package = Some(pkg);
    Ok(())
}
