//! The run's compiler profiles: `--profile` resolved and checked, or the pgo-gen build trained on
//! the mix (for a variant with its own code generation, +native or +v3, the instrumented build
//! of that code generation; for cs-pgo, its cs-pgo-gen build trained and merged with the first
//! profile).

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};

use super::plan::ProfileFrom;
use super::plan::{PlannedBuild, RunPlan};
use super::run_cx::RunCx;
use super::stages::*;
use crate::builder::codegen::Codegen;
use crate::builder::{PgoPhase, ProfileInput, Variant};
use crate::profile::train::NamedMix;
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

/// The run's compiler profiles: one per training mix (or `--profile`), and each other code
/// generation's own (+native, +v3 …) when the run trains them.
#[derive(Default)]
pub(super) struct Profiles {
    pub by_mix: Vec<Profile>,
    pub own: Vec<(Codegen, Profile)>,
}

impl Profiles {
    pub fn given(p: Profile) -> Profiles {
        Profiles {
            by_mix: vec![p],
            own: Vec::new(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.by_mix.is_empty() && self.own.is_empty()
    }

    /// The profile the outcome records: the first mix's, else the first code generation's own.
    pub fn into_first(self) -> Option<Profile> {
        let own = self.own.into_iter().next().map(|(_, p)| p);
        self.by_mix.into_iter().next().or(own)
    }

    /// The (first) profile `b` is built with: its code generation's own when trained, else its
    /// training mix's (the first mix's, unless it names another).
    pub fn for_build(&self, mixes: &[NamedMix], b: &PlannedBuild) -> Option<&ProfileInput> {
        if let Some((_, (i, _))) = self.own.iter().find(|(c, _)| *c == b.variant.codegen) {
            return Some(i);
        }
        let mix_index = b
            .mix
            .as_ref()
            .map_or(0, |m| mixes.iter().position(|x| &x.name == m).unwrap_or(0));
        self.by_mix.get(mix_index).map(|(i, _)| i)
    }
}

/// The pgo-gen build trained on each of the run's mixes, in their order, and each other code
/// generation's instrumented build (pgo-gen+native, pgo-gen+v3) trained on the first mix (each
/// only when the plan has it).
pub(super) fn train_profiles(r: &mut RunCx, src: &Source, dataset_from: &Path) -> Result<Profiles> {
    let plan = r.plan;
    let gens = || {
        plan.builds
            .iter()
            .filter(|b| b.variant.phase == PgoPhase::PgoGen)
    };
    let mut out = Profiles::default();
    if let Some(gen) = gens().find(|b| b.variant.codegen.is_default()) {
        let gen = r.run(&BuildStage::of_run(plan, src, gen.variant, None, None))?;
        for (i, m) in plan.request.mixes.iter().enumerate() {
            let mix_name = (i > 0).then_some(m.name.as_str());
            let stored = r.run(&TrainStage::of_run(
                plan,
                dataset_from,
                &gen,
                &m.mix,
                mix_name,
                None,
            ))?;
            out.by_mix.push((stored.input(), Some(stored)));
        }
    }
    for gen in gens().filter(|b| !b.variant.codegen.is_default()) {
        let codegen = gen.variant.codegen;
        let gen = r.run(&BuildStage::of_run(plan, src, gen.variant, None, None))?;
        let stored = r.run(&TrainStage::of_run(
            plan,
            dataset_from,
            &gen,
            plan.request.mix(),
            None,
            None,
        ))?;
        out.own.push((codegen, (stored.input(), Some(stored))));
    }
    Ok(out)
}

/// The profile of a cs-pgo variant: its cs-pgo-gen build (optimized with the first profile)
/// trained on the same mix, the counts merged with the first profile.
pub(super) fn cs_profile(
    r: &mut RunCx,
    src: &Source,
    dataset_from: &Path,
    gen: Variant,
    first: &ProfileInput,
) -> Result<ProfileInput> {
    let plan = r.plan;
    let gen = r.run(&BuildStage::of_run(plan, src, gen, Some(first), None))?;
    let stored = r.run(&TrainStage::of_run(
        plan,
        dataset_from,
        &gen,
        plan.request.mix(),
        None,
        Some(first.path()),
    ))?;
    Ok(stored.input())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile::train::Mix;

    #[test]
    fn a_build_takes_its_code_generations_own_profile_and_the_others_their_mixs() {
        let mixes: Vec<NamedMix> = ["oltp", "tpcc"]
            .iter()
            .map(|n| NamedMix {
                name: n.to_string(),
                mix: Mix::quick(),
            })
            .collect();
        let p = |s: &str| (ProfileInput::GccDir(s.into()), None);
        let build = |v: &str, mix: Option<&str>| PlannedBuild {
            variant: v.parse().unwrap(),
            profile: ProfileFrom::Trained,
            mix: mix.map(str::to_string),
            compiles: None,
            shared: false,
        };
        let path = |x: Option<&ProfileInput>| x.map(|i| i.path().display().to_string());
        let mut ps = Profiles {
            by_mix: vec![p("/oltp"), p("/tpcc")],
            own: vec![
                (Codegen::NATIVE, p("/native")),
                ("pgo+v3".parse::<Variant>().unwrap().codegen, p("/v3")),
            ],
        };
        assert_eq!(
            path(ps.for_build(&mixes, &build("pgo+lto+bolt+v3", None))).as_deref(),
            Some("/v3")
        );
        assert_eq!(
            path(ps.for_build(&mixes, &build("pgo+lto+native", None))).as_deref(),
            Some("/native")
        );
        assert_eq!(
            path(ps.for_build(&mixes, &build("pgo+lto", None))).as_deref(),
            Some("/oltp")
        );
        assert_eq!(
            path(ps.for_build(&mixes, &build("pgo+lto", Some("tpcc")))).as_deref(),
            Some("/tpcc")
        );
        // --profile (no native one): every variant takes the given profile.
        ps.own.clear();
        assert_eq!(
            path(ps.for_build(&mixes, &build("pgo+lto+native", None))).as_deref(),
            Some("/oltp")
        );
        assert_eq!(
            ps.into_first()
                .map(|(i, _)| i.path().display().to_string())
                .as_deref(),
            Some("/oltp")
        );
        let only_native = Profiles {
            by_mix: Vec::new(),
            own: vec![(Codegen::NATIVE, p("/native"))],
        };
        assert!(!only_native.is_empty());
        assert_eq!(
            only_native
                .into_first()
                .map(|(i, _)| i.path().display().to_string())
                .as_deref(),
            Some("/native")
        );
    }
}
