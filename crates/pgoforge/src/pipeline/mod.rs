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

use crate::bench::cachegrind::CgPlan;
use crate::bench::order::OrderScheme;
use crate::bench::plan::{BenchPlan, Contender};
use crate::bench::report::Report;
use crate::builder::{BuildOutput, ProfileInput, Variant};
use crate::events::Reporter;
use crate::gate::GateMode;
use crate::gate::GateWorkload;
use crate::source::Source;
pub use outcome::{gains, outcome_path, package_contender, winner, Outcome, RunContender};
pub use plan::{Env, ProfileFrom, RunPlan, RunRequest};
use stage::Ctx;
use stages::*;
pub use state::Tracker;

use contenders::{build_contenders, candidates, identities, outside_contenders, stop_regressed};
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
    let src = t.run(&source_stage(req), &cx)?;
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
        &build_stage(plan, &src, plan.builds[0].variant, None, None),
        &cx,
    )?;
    let profiles = match given {
        Some(p) => Profiles::given(p),
        None => train_profiles(plan, &src, &baseline, &mut t, &cx)?,
    };
    let mut contenders =
        build_contenders(plan, &src, &baseline, &profiles, &mut t, &cx, &mut warnings)?;
    contenders.extend(outside_contenders(req)?);
    t.run(&gate_stage(req, &contenders), &cx)?;
    let mtr = match mtr_stage(plan, &src, &baseline, &contenders) {
        Some(stage) => Some(t.run(&stage, &cx)?),
        None => None,
    };
    if let Some(g) = &mtr {
        stop_regressed(&mut contenders, g, reporter, &mut warnings)?;
    }
    let seed = t.run(&SeedStage { given: req.seed }, &cx)?;
    // Trained contenders make every benchmark workload outside the mix a held-out one.
    let trained = !profiles.is_empty() || contenders.iter().any(|c| c.bolt.is_some());
    let bench = bench_stage(plan, &src, &contenders, seed, trained);
    let run_dir = t.run(&bench, &cx)?;
    if let Some(g) = &mtr {
        // The report shows the gate beside the numbers it let through.
        crate::infra::fs::write_json(&crate::gate::mtr::copy_in_run_dir(&run_dir), g)?;
    }
    if let Some(c) = &plan.source_release {
        // And which release was measured, against what the distribution served then.
        crate::infra::fs::write_json(&crate::source::release::copy_in_run_dir(&run_dir), c)?;
    }
    if req.cachegrind {
        t.run(&cachegrind_stage(plan, &bench.plan, &run_dir), &cx)?;
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

fn source_stage(req: &RunRequest) -> SourceStage<'_> {
    SourceStage {
        recipe: &req.recipe,
        user: req.source.as_deref(),
        sha256: req.sha256.as_deref(),
    }
}

pub(super) fn build_stage<'a>(
    plan: &'a RunPlan,
    src: &'a Source,
    variant: Variant,
    profile: Option<&'a ProfileInput>,
    mix: Option<&str>,
) -> BuildStage<'a> {
    BuildStage {
        recipe: &plan.request.recipe,
        source: src,
        compiler: &plan.request.compiler,
        variant,
        profile,
        mix: mix.map(str::to_string),
        jobs: 0,
        cluster: plan.cluster.cluster(),
    }
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
            !build_stage(plan, src, b.variant, p, None).finished(work)
        })
        .count()
}

fn gate_stage<'a>(req: &'a RunRequest, contenders: &[RunContender]) -> GateStage<'a> {
    GateStage {
        baseline: contenders[0].binary.clone(),
        candidates: candidates(contenders),
        identities: identities(contenders),
        server: &req.server,
        workload: GateWorkload::default(),
    }
}

/// The MTR step of the gate, when the run's gate includes it.
fn mtr_stage<'a>(
    plan: &'a RunPlan,
    src: &Source,
    baseline: &BuildOutput,
    contenders: &[RunContender],
) -> Option<MtrStage<'a>> {
    let req = &plan.request;
    let spec = req
        .recipe
        .mtr
        .as_ref()
        .filter(|_| req.gate != GateMode::Quick)?;
    let (tests, args) = spec.selection(req.gate, req.mtr_tests.as_deref());
    Some(MtrStage {
        spec,
        mode: req.gate,
        tests,
        args,
        build_dir: baseline.build_dir.clone(),
        server_rel: req.recipe.build.binary.clone().into(),
        source_dir: src.dir.clone(),
        baseline: contenders[0].binary.clone(),
        candidates: candidates(contenders),
        identities: identities(contenders),
    })
}

fn bench_stage(
    plan: &RunPlan,
    src: &Source,
    contenders: &[RunContender],
    seed: u64,
    trained: bool,
) -> BenchStage {
    let req = &plan.request;
    let ids = identities(contenders);
    BenchStage {
        guard: req.guard,
        plan: BenchPlan {
            contenders: contenders
                .iter()
                .map(|c| Contender {
                    name: c.name.clone(),
                    binary: c.binary.clone(),
                    buffer_pool_mb: None,
                })
                .chain(req.aa.then(|| Contender {
                    // The baseline's binary again: the A/A control.
                    name: crate::bench::plan::AA_CONTROL.into(),
                    binary: contenders[0].binary.clone(),
                    buffer_pool_mb: None,
                }))
                .collect(),
            spec: req.bench.clone(),
            config: req.server.clone(),
            pin: true,
            seed,
            order_scheme: OrderScheme::Williams,
            reference_only: req.outside.iter().map(|c| c.name.clone()).collect(),
            trained_on: if trained && !req.is_matrix() {
                let mut v: Vec<_> = req.mix().phases.iter().map(|p| p.test).collect();
                v.dedup();
                v
            } else {
                Vec::new()
            },
            training: if req.is_matrix() {
                training(plan, contenders)
            } else {
                Vec::new()
            },
            aa_control: req.aa.then(|| crate::bench::plan::AA_CONTROL.into()),
            // The binaries' identities: a rebuilt binary at the same path is a new benchmark.
            label: format!(
                "recipe {} source {} {}",
                req.recipe.name,
                &src.hash[..12.min(src.hash.len())],
                ids.iter()
                    .map(|(n, i)| format!("{n}={i}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
        },
    }
}

/// A matrix's contenders and their training mixes (the built ones: a build that failed is gone).
fn training(plan: &RunPlan, contenders: &[RunContender]) -> Vec<crate::bench::plan::Training> {
    let mixes = &plan.request.mixes;
    plan.contenders
        .iter()
        .filter(|c| c.build.needs_profile() && contenders.iter().any(|r| r.name == c.name))
        .map(|c| {
            let m = c
                .mix
                .as_ref()
                .and_then(|n| mixes.iter().find(|m| &m.name == n))
                .unwrap_or(&mixes[0]);
            crate::bench::plan::Training {
                contender: c.name.clone(),
                mix: m.name.clone(),
                workloads: m.workloads(),
            }
        })
        .collect()
}

fn cachegrind_stage(plan: &RunPlan, bench: &BenchPlan, run_dir: &Path) -> CachegrindStage {
    let (tables, table_size) = crate::bench::cachegrind::oltp_tables_for(&bench.spec);
    CachegrindStage {
        plan: CgPlan {
            // The control's counts are the baseline's: deterministic, nothing to learn.
            contenders: bench
                .contenders
                .iter()
                .filter(|c| !bench.is_control(&c.name))
                .cloned()
                .collect(),
            workloads: bench.spec.workloads.clone(),
            events: 0,
            warmup_events: 100,
            tables,
            table_size,
            config: plan.cachegrind_server(),
            replay: bench.spec.replay.clone(),
        },
        label: bench.label.clone(),
        run_dir: run_dir.to_path_buf(),
    }
}

/// Packages the winner, when the run packages and something measurably won.
fn package_winner(
    plan: &RunPlan,
    outcome: &mut Outcome,
    report: &Report,
    t: &mut Tracker,
    cx: &Ctx,
) -> Result<()> {
    if !plan.request.package {
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
