//! The run's compiler profiles: `--profile` resolved and checked, or the pgo-gen build trained on
//! the mix (and, for cs-pgo, its cs-pgo-gen build trained and merged with the first profile).

use std::fs;

use anyhow::{Context, Result};

use super::build_stage;
use super::plan::ProfileFrom;
use super::plan::RunPlan;
use super::stage::Ctx;
use super::stages::*;
use super::state::Tracker;
use crate::builder::{BuildOutput, ProfileInput, Variant};
use crate::profile::{check_belongs, Stored};
use crate::source::Source;

/// A compiler profile and, when pgoforge stored it, its record.
pub(super) type Profile = (ProfileInput, Option<Stored>);

/// `--profile`, resolved and checked against this source and compiler.
pub(super) fn given_profile(plan: &RunPlan, src: &Source) -> Result<Option<Profile>> {
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

/// The pgo-gen build trained on each of the run's mixes, in their order (none when the plan does
/// not train).
pub(super) fn train_profiles(
    plan: &RunPlan,
    src: &Source,
    baseline: &BuildOutput,
    t: &mut Tracker,
    cx: &Ctx,
) -> Result<Vec<Profile>> {
    let Some(gen) = plan
        .builds
        .iter()
        .find(|b| b.variant.phase == crate::builder::PgoPhase::PgoGen)
    else {
        return Ok(Vec::new());
    };
    let gen = t.run(&build_stage(plan, src, gen.variant, None, None), cx)?;
    let mut out = Vec::new();
    for (i, m) in plan.request.mixes.iter().enumerate() {
        let stored = t.run(
            &TrainStage {
                gen: &gen,
                base: None,
                mix: &m.mix,
                mix_name: (i > 0).then_some(m.name.as_str()),
                server: &plan.request.server,
                dataset_from: Some(&baseline.binary),
            },
            cx,
        )?;
        out.push((stored.input(), Some(stored)));
    }
    Ok(out)
}

/// The profile of a cs-pgo variant: its cs-pgo-gen build (optimized with the first profile)
/// trained on the same mix, the counts merged with the first profile.
pub(super) fn cs_profile(
    plan: &RunPlan,
    src: &Source,
    baseline: &BuildOutput,
    gen: Variant,
    first: &ProfileInput,
    t: &mut Tracker,
    cx: &Ctx,
) -> Result<ProfileInput> {
    let gen = t.run(&build_stage(plan, src, gen, Some(first), None), cx)?;
    let stored = t.run(
        &TrainStage {
            gen: &gen,
            base: Some(first.path()),
            mix: plan.request.mix(),
            mix_name: None,
            server: &plan.request.server,
            dataset_from: Some(&baseline.binary),
        },
        cx,
    )?;
    Ok(stored.input())
}
