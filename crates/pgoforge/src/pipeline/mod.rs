//! `pgoforge run`: every stage in one pipeline — source, baseline, pgo-gen, training, the optimized
//! builds, BOLT, the correctness gate, the benchmark, the report and the package of the variant that
//! measurably wins.
//!
//! A run is first resolved into a [`RunPlan`] (every argument checked, every build and stage named,
//! before any side effect), then executed stage by stage. Each stage ([`stages`]) implements
//! [`Stage`](stage::Stage); the [`Tracker`] is the one caching path (the state file `state.rs`), so a
//! rerun after Ctrl-C, a crash or a reboot continues from the last finished stage, and a rerun with
//! nothing changed only regenerates the report.

pub mod deps;
pub mod outcome;
pub mod plan;
pub mod stage;
pub mod stages;
pub mod state;

use std::fs;
use std::path::Path;

use anyhow::{bail, Context, Result};

use crate::bench::cachegrind::CgPlan;
use crate::bench::plan::{BenchPlan, Contender, OrderScheme};
use crate::bench::report::Report;
use crate::builder::{BuildOutput, ProfileInput, Variant};
use crate::events::Reporter;
use crate::gate::mtr::MtrGate;
use crate::gate::GateMode;
use crate::gate::GateWorkload;
use crate::profile::{check_belongs, Stored};
use crate::source::Source;
pub use outcome::{gains, outcome_path, package_contender, winner, Built, Outcome};
pub use plan::{Env, ProfileFrom, RunPlan, RunRequest};
use stage::Ctx;
use stages::*;
pub use state::Tracker;

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
    let given = given_profile(plan, &src)?;
    deps::check_space(&work, unfinished_builds(plan, &src, given.as_ref(), &work))?;
    let baseline = t.run(&build_stage(plan, &src, plan.builds[0].variant, None), &cx)?;
    let profile = match given {
        Some(p) => Some(p),
        None => train_profile(plan, &src, &baseline, &mut t, &cx)?,
    };
    let mut warnings = Vec::new();
    let mut contenders = build_contenders(
        plan,
        &src,
        &baseline,
        profile.as_ref(),
        &mut t,
        &cx,
        &mut warnings,
    )?;
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
    let bench = bench_stage(plan, &src, &contenders, seed);
    let run_dir = t.run(&bench, &cx)?;
    if let Some(g) = &mtr {
        // The report shows the gate beside the numbers it let through.
        crate::infra::fs::write_json(&crate::gate::mtr::run_copy(&run_dir), g)?;
    }
    if req.cachegrind {
        t.run(&cachegrind_stage(plan, &bench.plan, &run_dir), &cx)?;
    }
    let report = t.run(
        &ReportStage {
            run_dir: run_dir.clone(),
        },
        &cx,
    )?;
    let mut outcome = Outcome {
        recipe: req.recipe.name.clone(),
        source: src,
        contenders,
        profile: profile.and_then(|(_, s)| s),
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

fn build_stage<'a>(
    plan: &'a RunPlan,
    src: &'a Source,
    variant: Variant,
    profile: Option<&'a ProfileInput>,
) -> BuildStage<'a> {
    BuildStage {
        recipe: &plan.request.recipe,
        source: src,
        compiler: &plan.request.compiler,
        variant,
        profile,
        jobs: 0,
    }
}

/// A compiler profile and, when pgoforge stored it, its record.
type Profile = (ProfileInput, Option<Stored>);

/// `--profile`, resolved and checked against this source and compiler.
fn given_profile(plan: &RunPlan, src: &Source) -> Result<Option<Profile>> {
    let Some(p) = plan.request.profile.as_ref() else {
        return Ok(None);
    };
    if !plan.builds.iter().any(|b| b.profile == ProfileFrom::Given) {
        return Ok(None);
    }
    let p = fs::canonicalize(p).with_context(|| format!("--profile {}", p.display()))?;
    let stored = p.parent().and_then(|d| Stored::load(d).ok());
    if let Some(s) = &stored {
        check_belongs(s, &src.hash, &plan.request.compiler.label())?;
    }
    Ok(Some((ProfileInput::from_path(p), stored)))
}

/// Builds not finished yet, for the disk-space check (one needing a profile not yet trained
/// counts as not finished).
fn unfinished_builds(plan: &RunPlan, src: &Source, given: Option<&Profile>, work: &Path) -> usize {
    plan.builds
        .iter()
        .filter(|b| {
            let p = match b.profile {
                ProfileFrom::None => None,
                ProfileFrom::Given => given.map(|(i, _)| i),
                ProfileFrom::Trained | ProfileFrom::CsTrained => return true,
            };
            !build_stage(plan, src, b.variant, p).finished(work)
        })
        .count()
}

/// The pgo-gen build trained on the mix, when the plan trains.
fn train_profile(
    plan: &RunPlan,
    src: &Source,
    baseline: &BuildOutput,
    t: &mut Tracker,
    cx: &Ctx,
) -> Result<Option<Profile>> {
    let Some(gen) = plan
        .builds
        .iter()
        .find(|b| b.variant.phase == crate::builder::PgoPhase::PgoGen)
    else {
        return Ok(None);
    };
    let gen = t.run(&build_stage(plan, src, gen.variant, None), cx)?;
    let stored = t.run(
        &TrainStage {
            gen: &gen,
            base: None,
            mix: &plan.request.mix,
            server: &plan.request.server,
            dataset_from: Some(&baseline.binary),
        },
        cx,
    )?;
    Ok(Some((stored.input(), Some(stored))))
}

/// The profile of a cs-pgo variant: its cs-pgo-gen build (optimized with the first profile)
/// trained on the same mix, the counts merged with the first profile.
fn cs_profile(
    plan: &RunPlan,
    src: &Source,
    baseline: &BuildOutput,
    gen: Variant,
    first: &ProfileInput,
    t: &mut Tracker,
    cx: &Ctx,
) -> Result<ProfileInput> {
    let gen = t.run(&build_stage(plan, src, gen, Some(first)), cx)?;
    let stored = t.run(
        &TrainStage {
            gen: &gen,
            base: Some(first.path()),
            mix: &plan.request.mix,
            server: &plan.request.server,
            dataset_from: Some(&baseline.binary),
        },
        cx,
    )?;
    Ok(stored.input())
}

/// The optimized builds and their BOLTed binaries, in the plan's contender order. A variant that
/// fails to build is named and left out (the others are still compared); BOLT failing leaves the
/// unBOLTed build compared in its place.
fn build_contenders(
    plan: &RunPlan,
    src: &Source,
    baseline: &BuildOutput,
    profile: Option<&Profile>,
    t: &mut Tracker,
    cx: &Ctx,
    warnings: &mut Vec<String>,
) -> Result<Vec<Built>> {
    let warn = |warnings: &mut Vec<String>, msg: String| {
        cx.reporter.warning(&msg);
        warnings.push(msg);
    };
    let mut built: Vec<(Variant, BuildOutput)> = vec![(baseline_variant(plan), baseline.clone())];
    for b in &plan.builds[1..] {
        if b.variant.instrumented() {
            continue;
        }
        let first = profile.map(|(i, _)| i);
        let cs = match (b.variant.cs_gen(), first) {
            (Some(g), Some(first)) => match cs_profile(plan, src, baseline, g, first, t, cx) {
                Ok(p) => Some(p),
                Err(e) => {
                    warn(
                        warnings,
                        format!(
                            "{}: no context-sensitive profile, left out of the comparison: {e:#}",
                            b.variant
                        ),
                    );
                    continue;
                }
            },
            _ => None,
        };
        let input = cs
            .as_ref()
            .or_else(|| b.variant.needs_profile().then_some(first).flatten());
        // A failed build is never cached, so a rerun tries it again.
        match t.run(&build_stage(plan, src, b.variant, input), cx) {
            Ok(out) => {
                if b.variant.needs_profile() && out.missing_profile_warnings > 0 {
                    warn(warnings, format!(
                        "{}: {} missing-profile warnings (functions or files without profile data); log {}",
                        b.variant, out.missing_profile_warnings, out.log.display()
                    ));
                }
                built.push((b.variant, out));
            }
            Err(e) => warn(
                warnings,
                format!(
                    "{}: build failed, left out of the comparison: {e:#}",
                    b.variant
                ),
            ),
        }
    }
    let mut contenders = Vec::new();
    let bolt_mix = plan.request.mix.for_bolt();
    for c in &plan.contenders {
        let Some((_, b)) = built.iter().find(|(v, _)| *v == c.build) else {
            continue;
        };
        if !c.bolted {
            contenders.push(Built {
                name: c.name.clone(),
                binary: b.binary.clone(),
                build: Some(b.clone()),
                bolt: None,
                sha256: None,
            });
            continue;
        }
        let bolt = plan
            .bolt
            .as_ref()
            .context("the plan has a +bolt variant, so BOLT was found")?;
        let stage = BoltStage {
            name: c.name.clone(),
            binary: &b.binary,
            build_key: &b.key,
            bolt,
            mix: &bolt_mix,
            flags: plan.request.bolt_flags.as_deref(),
            server: &plan.request.server,
            source_hash: &src.hash,
            dataset_from: Some(&baseline.binary),
        };
        match t.run(&stage, cx) {
            Ok(x) => contenders.push(Built {
                name: c.name.clone(),
                binary: x.binary.clone(),
                build: Some(b.clone()),
                bolt: Some(x),
                sha256: None,
            }),
            // The unBOLTed build is compared already (as the plain variant or as -prebolt).
            Err(e) => warn(
                warnings,
                format!("{}: BOLT failed, compared without it: {e:#}", c.name),
            ),
        }
    }
    if contenders.len() < 2 {
        bail!(
            "no variant was built, nothing to compare with the baseline:\n{}",
            warnings.join("\n")
        );
    }
    Ok(contenders)
}

/// The `--binary` servers, compared as they are; their hash is their identity.
fn outside_contenders(req: &RunRequest) -> Result<Vec<Built>> {
    req.outside
        .iter()
        .map(|c| {
            let binary = fs::canonicalize(&c.binary)
                .with_context(|| format!("--binary {}={}", c.name, c.binary.display()))?;
            Ok(Built {
                name: c.name.clone(),
                sha256: Some(crate::infra::fs::sha256_file(&binary)?),
                binary,
                build: None,
                bolt: None,
            })
        })
        .collect()
}

fn baseline_variant(plan: &RunPlan) -> Variant {
    plan.builds[0].variant
}

fn identities(contenders: &[Built]) -> Vec<(String, String)> {
    contenders
        .iter()
        .map(|c| (c.name.clone(), c.identity()))
        .collect()
}

/// Every contender but the baseline, as the gate's steps take them.
fn candidates(contenders: &[Built]) -> Vec<(String, std::path::PathBuf)> {
    contenders[1..]
        .iter()
        .map(|c| (c.name.clone(), c.binary.clone()))
        .collect()
}

fn gate_stage<'a>(req: &'a RunRequest, contenders: &[Built]) -> GateStage<'a> {
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
    contenders: &[Built],
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

/// Takes the variants MTR found a regression in out of the benchmark (and so out of packaging),
/// naming the test and showing its diff.
fn stop_regressed(
    contenders: &mut Vec<Built>,
    g: &MtrGate,
    reporter: &dyn Reporter,
    warnings: &mut Vec<String>,
) -> Result<()> {
    for name in g.stopped() {
        let tests: Vec<String> = g
            .regressions
            .iter()
            .filter(|r| r.variant == name)
            .map(|r| {
                let diff: Vec<&str> = r.detail.lines().take(20).collect();
                format!("  {} ({}):\n    {}", r.test, r.outcome, diff.join("\n    "))
            })
            .collect();
        let msg = format!(
            "{name}: stopped by the gate, left out of the benchmark and never packaged: {} MTR tests pass on the baseline and not on {name}:\n{}",
            tests.len(),
            tests.join("\n")
        );
        reporter.warning(&msg);
        warnings.push(msg);
        contenders.retain(|c| c.name != name);
    }
    if contenders.len() < 2 {
        bail!(
            "the gate stopped every variant; nothing left to compare with the baseline:\n{}",
            warnings.join("\n")
        );
    }
    Ok(())
}

fn bench_stage(plan: &RunPlan, src: &Source, contenders: &[Built], seed: u64) -> BenchStage {
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
                .collect(),
            spec: req.bench.clone(),
            config: req.server.clone(),
            pin: true,
            seed,
            order_scheme: OrderScheme::Balanced,
            reference_only: req.outside.iter().map(|c| c.name.clone()).collect(),
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

fn cachegrind_stage(plan: &RunPlan, bench: &BenchPlan, run_dir: &Path) -> CachegrindStage {
    CachegrindStage {
        plan: CgPlan {
            contenders: bench.contenders.clone(),
            workloads: bench.spec.workloads.clone(),
            events: 0,
            warmup_events: 100,
            tables: 1,
            table_size: 10_000,
            config: plan.cachegrind_server(),
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
