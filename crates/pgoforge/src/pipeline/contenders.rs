//! The run's contenders: the optimized builds and their BOLTed binaries (a variant that fails to
//! build is named and left out), the `--binary` servers, and the variants the gate's regression
//! tests stop before the benchmark.

use std::fs;
use std::path::Path;

use anyhow::{bail, Context, Result};

use super::outcome::RunContender;
use super::plan::{PlannedBuild, RunPlan, RunRequest};
use super::profiles::{cs_profile, Profiles};
use super::run_cx::RunCx;
use super::spread;
use super::stages::*;
use crate::builder::{BuildOutput, ProfileInput, Variant};
use crate::source::Source;

/// The baseline's build (when the run has one) and the optimized builds with their BOLTed
/// binaries, in the plan's contender order. A variant that fails to build is named and left out
/// (the others are still compared); BOLT failing leaves the unBOLTed build compared in its place.
/// `dataset_from` is the baseline's binary, built or Debian's: it prepares BOLT's datasets.
pub(super) fn build_contenders(
    r: &mut RunCx,
    src: &Source,
    baseline: Option<&BuildOutput>,
    dataset_from: &Path,
    profiles: &Profiles,
) -> Result<Vec<RunContender>> {
    let plan = r.plan;
    let built = build_variants(r, src, baseline, dataset_from, profiles);
    if let Some(reuse) = &plan.request.reuse {
        judge_staleness(r, reuse, &built)?;
    }
    let mut contenders = Vec::new();
    let bolt_mix = plan.request.mix().for_bolt();
    for c in &plan.contenders {
        let Some((_, _, b)) = built.iter().find(|(v, m, _)| *v == c.build && *m == c.mix) else {
            continue;
        };
        if !c.bolted {
            contenders.push(RunContender {
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
            dataset_from: Some(dataset_from),
            given: plan
                .request
                .reuse
                .as_ref()
                .and_then(|r| r.bolt_profile.as_deref()),
        };
        match r.run(&stage) {
            Ok(x) => contenders.push(RunContender {
                name: c.name.clone(),
                binary: x.binary.clone(),
                build: Some(b.clone()),
                bolt: Some(x),
                sha256: None,
            }),
            // The unBOLTed build is compared already (as the plain variant or as -prebolt).
            Err(e) => r.warn(format!(
                "{}: BOLT failed, compared without it: {e:#}",
                c.name
            )),
        }
    }
    if contenders.len() == usize::from(baseline.is_some()) {
        bail!(
            "no variant was built, nothing to compare with the baseline:\n{}",
            r.warnings.join("\n")
        );
    }
    Ok(contenders)
}

/// The plan's builds after the baseline (the instrumented ones are training's), each either
/// built here or, with build hosts, taken from the host that built it (`spread`). A build that
/// fails is warned about and left out.
fn build_variants(
    r: &mut RunCx,
    src: &Source,
    baseline: Option<&BuildOutput>,
    dataset_from: &Path,
    profiles: &Profiles,
) -> Vec<(Variant, Option<String>, BuildOutput)> {
    let plan = r.plan;
    let mut built: Vec<(Variant, Option<String>, BuildOutput)> = baseline
        .map(|b| (baseline_variant(plan), None, b.clone()))
        .into_iter()
        .collect();
    // The builds after the baseline's (none with Debian's server as the baseline).
    let skip = usize::from(baseline.is_some());
    let work = r.cx.work;
    // The builds a build host may make that are not finished yet, by their place in the plan.
    let shared: Vec<usize> = (skip..plan.builds.len())
        .filter(|&i| {
            let b = &plan.builds[i];
            let p = plain_profile(plan, profiles, b);
            b.shared
                && p.is_some() == b.variant.needs_profile()
                && !BuildStage::of_run(plan, src, b.variant, p, b.mix.as_deref()).finished(work)
        })
        .collect();
    let board = spread::Board::new(shared.len());
    std::thread::scope(|s| {
        for host in &plan.build_hosts {
            let (board, shared) = (&board, &shared);
            s.spawn(move || {
                while let Some(j) = board.next_for(&host.destination) {
                    let b = &plan.builds[shared[j]];
                    let p = plain_profile(plan, profiles, b);
                    let stage = BuildStage::of_run(plan, src, b.variant, p, b.mix.as_deref());
                    let r = crate::builder::host::build_on(host, &stage.request(work, None));
                    board.done(
                        j,
                        &host.destination,
                        r.map(|_| ()).map_err(|e| format!("{e:#}")),
                    );
                }
            });
        }
        for (i, b) in plan.builds.iter().enumerate().skip(skip) {
            if b.variant.instrumented() {
                continue;
            }
            // Its training mix's profile, or a native variant's own.
            let first = profiles.for_build(&plan.request.mixes, b);
            claim_shared(&board, &shared, i, b, r);
            let cs = match (b.variant.cs_gen(), first) {
                (Some(g), Some(first)) => match cs_profile(r, src, dataset_from, g, first) {
                    Ok(p) => Some(p),
                    Err(e) => {
                        r.warn(format!(
                            "{}: no context-sensitive profile, left out of the comparison: {e:#}",
                            b.variant
                        ));
                        continue;
                    }
                },
                _ => None,
            };
            let input = cs
                .as_ref()
                .or_else(|| b.variant.needs_profile().then_some(first).flatten());
            // A failed build is never cached, so a rerun tries it again.
            match r.run(&BuildStage::of_run(
                plan,
                src,
                b.variant,
                input,
                b.mix.as_deref(),
            )) {
                Ok(out) => {
                    if b.variant.needs_profile() && out.missing_profile_warnings > 0 {
                        r.warn(format!(
                            "{}: {} missing-profile warnings (functions or files without profile data); log {}",
                            b.variant, out.missing_profile_warnings, out.log.display()
                        ));
                    }
                    if let Some(st) = out.stale.as_ref().filter(|s| s.mismatched > 0) {
                        r.warn(format!("{}: {}", b.variant, st.sentence()));
                    }
                    built.push((b.variant, b.mix.clone(), out));
                }
                Err(e) => r.warn(format!(
                    "{}: build failed, left out of the comparison: {e:#}",
                    b.variant
                )),
            }
        }
        // Nothing is left for the hosts once this host has passed every build.
        board.close();
    });
    built
}

/// The builds from a profile of an earlier release against the policy: a warning at or over
/// the threshold, or the run stopped for retraining ([`TooStale`](super::stale_check::TooStale)).
fn judge_staleness(
    r: &mut RunCx,
    reuse: &super::profile_from::Reuse,
    built: &[(Variant, Option<String>, BuildOutput)],
) -> Result<()> {
    use super::stale_check::TooStale;
    for (v, _, b) in built.iter().filter(|(v, _, _)| v.needs_profile()) {
        let Some(stale) = &b.stale else { continue };
        let verdict = reuse.verdict(&v.to_string(), stale, &b.compiler);
        if !verdict.over() {
            r.info(verdict.warning());
        } else if reuse.stale.retrain {
            return Err(TooStale(verdict).into());
        } else {
            r.warn(format!(
                "{}; --retrain-if-stale trains this release's own profile instead",
                verdict.warning()
            ));
        }
    }
    Ok(())
}

/// The profile a build uses when it needs no context-sensitive one.
fn plain_profile<'a>(
    plan: &RunPlan,
    profiles: &'a Profiles,
    b: &PlannedBuild,
) -> Option<&'a ProfileInput> {
    b.variant
        .needs_profile()
        .then(|| profiles.for_build(&plan.request.mixes, b))
        .flatten()
}

/// Where this host stands with build `i` of the plan when build hosts share the builds: built
/// there (said), failed there (warned: built here instead), or this host's.
fn claim_shared(
    board: &spread::Board,
    shared: &[usize],
    i: usize,
    b: &PlannedBuild,
    r: &mut RunCx,
) {
    let Some(j) = shared.iter().position(|&x| x == i) else {
        return;
    };
    let stage = crate::pipeline::stage::StageId::Build(b.variant, b.mix.clone()).to_string();
    let reporter = r.cx.reporter;
    let waiting = |host: &str, waited: std::time::Duration| {
        reporter.message(
            &stage,
            &format!(
                "waiting for the build host {host} ({} so far)",
                crate::infra::time::human(waited.as_secs_f64())
            ),
        )
    };
    match board.claim(j, &waiting) {
        spread::Claim::Here => {}
        spread::Claim::Built(host) => {
            reporter.message(&stage, &format!("built on the build host {host}"))
        }
        spread::Claim::Failed { host, error } => {
            let msg = format!(
                "{}: the build host {host} could not build it ({error}); building it here",
                b.variant
            );
            r.warn(msg);
        }
    }
}

/// The `--binary` servers, compared as they are; their hash is their identity.
pub(super) fn outside_contenders(req: &RunRequest) -> Result<Vec<RunContender>> {
    req.outside
        .iter()
        .map(|c| {
            let binary = fs::canonicalize(&c.binary)
                .with_context(|| format!("--binary {}={}", c.name, c.binary.display()))?;
            RunContender::not_built(&c.name, binary)
        })
        .collect()
}

pub(super) fn baseline_variant(plan: &RunPlan) -> Variant {
    plan.builds[0].variant
}
