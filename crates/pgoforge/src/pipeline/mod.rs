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
mod run_cx;
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
use run_cx::RunCx;
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
    let mut r = RunCx {
        plan,
        cx: Ctx {
            work: &work,
            reporter,
        },
        t: Tracker::open(&work)?,
        warnings: Vec::new(),
    };
    let src = r.run(&SourceStage::of_run(req))?;
    for w in plan.source_release.iter().flat_map(|c| c.warnings()) {
        reporter.message("source", &format!("warning: {w}"));
        r.warnings.push(w);
    }
    let given = given_profile(plan, &src)?;
    deps::check_space(
        &work,
        unfinished_builds(plan, &src, given.as_ref(), &work),
        deps::bytes_per_build(&plan.request.recipe),
    )?;
    let baseline = r.run(&BuildStage::of_run(
        plan,
        &src,
        plan.builds[0].variant,
        None,
        None,
    ))?;
    let profiles = match given {
        Some(p) => Profiles::given(p),
        None => train_profiles(&mut r, &src, &baseline)?,
    };
    let mut contenders = build_contenders(&mut r, &src, &baseline, &profiles)?;
    contenders.extend(outside_contenders(req)?);
    r.run(&GateStage::of_run(req, &contenders))?;
    let mtr = match MtrStage::of_run(plan, &src, &baseline, &contenders) {
        Some(stage) => Some(r.run(&stage)?),
        None => None,
    };
    if let Some(g) = &mtr {
        stop_regressed(&mut r, &mut contenders, g)?;
    }
    let seed = r.run(&SeedStage { given: req.seed })?;
    // Trained contenders make every benchmark workload outside the mix a held-out one.
    let trained = !profiles.is_empty() || contenders.iter().any(|c| c.bolt.is_some());
    let bench = BenchStage::of_run(plan, &src, &contenders, seed, trained);
    let run_dir = r.run(&bench)?;
    if let Some(g) = &mtr {
        // The report shows the gate beside the numbers it let through.
        crate::infra::fs::write_json(&crate::gate::mtr::copy_in_run_dir(&run_dir), g)?;
    }
    if let Some(c) = &plan.source_release {
        // And which release was measured, against what the distribution served then.
        crate::infra::fs::write_json(&crate::source::release::copy_in_run_dir(&run_dir), c)?;
    }
    if plan.runs(&StageId::Cachegrind) {
        r.run(&CachegrindStage::of_run(plan, &bench.plan, &run_dir))?;
    }
    let report = r.run(&ReportStage {
        run_dir: run_dir.clone(),
        policy: crate::bench::report::Policy {
            allow_held_out_regression: req.allow_regression,
            min_effect: req.min_effect,
            margin: req.margin,
        },
    })?;
    let mut outcome = Outcome {
        recipe: req.recipe.name.clone(),
        source: src,
        contenders,
        profile: profiles.into_first().and_then(|(_, s)| s),
        run_dir,
        winner: winner(&report),
        package: None,
        warnings: std::mem::take(&mut r.warnings),
        timings: Vec::new(),
    };
    outcome.save(&work)?;
    package_winner(&mut r, &mut outcome, &report)?;
    outcome.timings = r.t.timings.clone();
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
fn package_winner(r: &mut RunCx, outcome: &mut Outcome, report: &Report) -> Result<()> {
    if !r.plan.runs(&StageId::Package) {
        return Ok(());
    }
    let Some(w) = outcome.winner.clone() else {
        let msg = "no variant measurably beat the baseline; nothing packaged (`pgoforge package NAME` packages one anyway)";
        r.cx.reporter.warning(msg);
        outcome.warnings.push(msg.into());
        return Ok(());
    };
    let pkg = r.run(&PackageStage {
        outcome,
        report: Some(report),
        contender: &w,
    })?;
    outcome.package = Some(pkg);
    Ok(())
}
