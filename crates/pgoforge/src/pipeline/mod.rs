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
pub mod estimate;
pub mod outcome;
pub mod plan;
pub mod profile_from;
mod profiles;
pub mod reuse_record;
mod run_cx;
mod spread;
pub mod stage;
pub mod stages;
pub mod stale_check;
pub mod state;
mod tail;

use std::path::Path;

use anyhow::Result;

use crate::bench::report::Report;
use crate::events::Reporter;
use crate::source::Source;
pub use outcome::{gains, outcome_path, package_contender, winner, Outcome, RunContender};
pub use plan::{BaselineFrom, Env, ProfileFrom, RunPlan, RunRequest};
use run_cx::RunCx;
use stage::Ctx;
use stages::*;
pub use state::Tracker;
use tail::Tail;

use contenders::{build_contenders, outside_contenders};
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
    // The baseline: the recipe's plain build, or Debian's server of the release (no build).
    let (baseline, mut contenders) = match req.baseline {
        BaselineFrom::Build => {
            let variant = plan.builds[0].variant;
            let b = r.run(&BuildStage::of_run(plan, &src, variant, None, None))?;
            (Some(b), Vec::new())
        }
        BaselineFrom::Debian => (None, vec![distro::reference(&mut r)?]),
    };
    let dataset_from = match (&baseline, contenders.first()) {
        (Some(b), _) => b.binary.clone(),
        (None, Some(c)) => c.binary.clone(),
        (None, None) => anyhow::bail!("the run has no baseline (a bug in pipeline::run)"),
    };
    let profiles = match given {
        Some(p) => Profiles::given(p),
        None => train_profiles(&mut r, &src, &dataset_from)?,
    };
    contenders.extend(build_contenders(
        &mut r,
        &src,
        baseline.as_ref(),
        &dataset_from,
        &profiles,
    )?);
    contenders.extend(outside_contenders(req)?);
    // Trained contenders make every benchmark workload outside the mix a held-out one.
    let trained = !profiles.is_empty() || contenders.iter().any(|c| c.bolt.is_some());
    let mut tail = Tail {
        src,
        baseline,
        profile: profiles.into_first().and_then(|(_, s)| s),
        contenders,
        trained,
        mtr: None,
        seed: None,
        bench: None,
        run_dir: None,
        report: None,
        outcome: None,
    };
    // The plan's tail, in the list's order: each step the plan lists, and no other.
    for step in stages::AFTER_BUILDS {
        if plan.runs(&step.id()) {
            step.run(&mut r, &mut tail)?;
        }
    }
    let (Some(mut outcome), Some(report)) = (tail.outcome, tail.report) else {
        anyhow::bail!("the run ended without a report: the plan lists no report stage (a bug)");
    };
    outcome.timings = r.t.timings.clone();
    outcome.save(&work)?;
    Ok((outcome, report))
}

/// The whole plan of a run of `req`: the source and the builds ([`RunPlan::resolve`]), then the
/// stages after the builds that the request asks for ([`stages::after_builds`]).
pub fn resolve(req: RunRequest, env: &Env) -> Result<RunPlan> {
    let mut plan = RunPlan::resolve(req, env)?;
    plan.stages.extend(stages::after_builds(&plan.request));
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let req = &plan.request;
    plan.estimate = estimate::RunEstimate::of(
        &estimate::Planned {
            stages: &plan.stages,
            recipe: &req.recipe,
            family: req.compiler.family,
            mixes: &req.mixes,
            binaries: plan.contenders.len() + req.outside_count(),
            // Debian's server runs MTR only as the baseline.
            mtr_binaries: plan.contenders.len()
                + req.outside.len()
                + usize::from(!req.baseline.is_build()),
            bench_seconds: plan.bench_estimate_seconds,
        },
        cores,
    );
    Ok(plan)
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
                ProfileFrom::Trained | ProfileFrom::CsTrained | ProfileFrom::OwnTrained => {
                    return true
                }
            };
            !BuildStage::of_run(plan, src, b.variant, p, None).finished(work)
        })
        .count()
}
