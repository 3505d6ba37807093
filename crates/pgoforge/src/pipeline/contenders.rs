//! The run's contenders: the optimized builds and their BOLTed binaries (a variant that fails to
//! build is named and left out), the `--binary` servers, and the variants the gate's regression
//! tests stop before the benchmark.

use std::fs;

use anyhow::{bail, Context, Result};

use super::build_stage;
use super::outcome::RunContender;
use super::plan::{RunPlan, RunRequest};
use super::profiles::{cs_profile, Profile};
use super::stage::Ctx;
use super::stages::*;
use super::state::Tracker;
use crate::builder::{BuildOutput, Variant};
use crate::events::Reporter;
use crate::gate::mtr::MtrGate;
use crate::source::Source;

/// The optimized builds and their BOLTed binaries, in the plan's contender order. A variant that
/// fails to build is named and left out (the others are still compared); BOLT failing leaves the
/// unBOLTed build compared in its place.
pub(super) fn build_contenders(
    plan: &RunPlan,
    src: &Source,
    baseline: &BuildOutput,
    profiles: &[Profile],
    t: &mut Tracker,
    cx: &Ctx,
    warnings: &mut Vec<String>,
) -> Result<Vec<RunContender>> {
    let warn = |warnings: &mut Vec<String>, msg: String| {
        cx.reporter.warning(&msg);
        warnings.push(msg);
    };
    let mut built: Vec<(Variant, Option<String>, BuildOutput)> =
        vec![(baseline_variant(plan), None, baseline.clone())];
    for b in &plan.builds[1..] {
        if b.variant.instrumented() {
            continue;
        }
        // The profile of the build's training mix (the first mix's, unless it names another).
        let mix_index = b.mix.as_ref().map_or(0, |m| {
            plan.request
                .mixes
                .iter()
                .position(|x| &x.name == m)
                .unwrap_or(0)
        });
        let first = profiles.get(mix_index).map(|(i, _)| i);
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
        match t.run(
            &build_stage(plan, src, b.variant, input, b.mix.as_deref()),
            cx,
        ) {
            Ok(out) => {
                if b.variant.needs_profile() && out.missing_profile_warnings > 0 {
                    warn(warnings, format!(
                        "{}: {} missing-profile warnings (functions or files without profile data); log {}",
                        b.variant, out.missing_profile_warnings, out.log.display()
                    ));
                }
                built.push((b.variant, b.mix.clone(), out));
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
            dataset_from: Some(&baseline.binary),
        };
        match t.run(&stage, cx) {
            Ok(x) => contenders.push(RunContender {
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
pub(super) fn outside_contenders(req: &RunRequest) -> Result<Vec<RunContender>> {
    req.outside
        .iter()
        .map(|c| {
            let binary = fs::canonicalize(&c.binary)
                .with_context(|| format!("--binary {}={}", c.name, c.binary.display()))?;
            Ok(RunContender {
                name: c.name.clone(),
                sha256: Some(crate::infra::fs::sha256_file(&binary)?),
                binary,
                build: None,
                bolt: None,
            })
        })
        .collect()
}

pub(super) fn baseline_variant(plan: &RunPlan) -> Variant {
    plan.builds[0].variant
}

pub(super) fn identities(contenders: &[RunContender]) -> Vec<(String, String)> {
    contenders
        .iter()
        .map(|c| (c.name.clone(), c.identity()))
        .collect()
}

/// Every contender but the baseline, as the gate's steps take them.
pub(super) fn candidates(contenders: &[RunContender]) -> Vec<(String, std::path::PathBuf)> {
    contenders[1..]
        .iter()
        .map(|c| (c.name.clone(), c.binary.clone()))
        .collect()
}

/// Takes the variants MTR found a regression in out of the benchmark (and so out of packaging),
/// naming the test and showing its diff.
pub(super) fn stop_regressed(
    contenders: &mut Vec<RunContender>,
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
