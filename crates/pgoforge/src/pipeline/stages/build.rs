//! One build of a variant. The build directory is its own cache (build.json, shared with
//! `pgoforge build`), so a build finished by any command is found rather than redone.

use std::path::Path;

use anyhow::Result;

use crate::builder::{self, BuildOutput, BuildRequest, ProfileInput, Variant};
use crate::events::Event;
use crate::pipeline::plan::RunPlan;
use crate::pipeline::stage::{Ctx, Made, Stage, StageId};
use crate::recipe::Recipe;
use crate::source::Source;
use crate::toolchain::Compiler;

pub struct BuildStage<'a> {
    pub recipe: &'a Recipe,
    pub source: &'a Source,
    pub compiler: &'a Compiler,
    pub variant: Variant,
    pub profile: Option<&'a ProfileInput>,
    /// The training mix of the profile, in a matrix's further mixes (the stage's name only).
    pub mix: Option<String>,
    /// make -j (0: from cores and memory).
    pub jobs: usize,
    /// The build cluster, when one is configured and reachable.
    pub cluster: Option<&'a crate::builder::cluster::Cluster>,
}

impl BuildStage<'_> {
    /// The builder's request for this stage (a build host's build gets the same one).
    pub fn request<'r>(
        &'r self,
        work: &'r Path,
        progress: Option<&'r dyn Fn(u64)>,
    ) -> BuildRequest<'r> {
        BuildRequest {
            recipe: self.recipe,
            source: self.source,
            variant: self.variant,
            compiler: self.compiler,
            profile: self.profile,
            work_dir: work,
            jobs: self.jobs,
            progress,
            cluster: self.cluster,
            source_paths: builder::relative::SourcePaths::of_profile(self.profile),
        }
    }

    /// Whether this build is finished (a variant whose profile is not trained yet is not).
    pub fn finished(&self, work: &Path) -> bool {
        builder::plan(&self.request(work, None)).is_ok_and(|(_, d)| d.join("build.json").is_file())
    }
}

impl Stage for BuildStage<'_> {
    type Output = BuildOutput;

    fn name(&self) -> StageId {
        StageId::Build(self.variant, self.mix.clone())
    }

    fn key(&self) -> Result<String> {
        // The key is the build's own (source, recipe, variant, compiler, profile hash, flags);
        // the targets are checked by still_valid, as the build cache checks them.
        // (The work directory only places the build; it is not part of the key.)
        Ok(builder::plan(&self.request(Path::new("."), None))?.0)
    }

    fn still_valid(&self, b: &BuildOutput) -> bool {
        b.binary.is_file()
            && b.dir.join("build.json").is_file()
            && self
                .recipe
                .build
                .targets
                .iter()
                .all(|t| b.targets.contains(t))
    }

    fn run(&self, cx: &Ctx) -> Result<Made<BuildOutput>> {
        let stage = self.name().to_string();
        // make prints its percentage on every line; report each new value once.
        let last = std::cell::Cell::new(u64::MAX);
        let tick = |pct: u64| {
            if last.replace(pct) != pct {
                cx.reporter.event(Event::Progress {
                    stage: stage.clone(),
                    done: pct,
                    total: 100,
                })
            }
        };
        let b = builder::build(&self.request(cx.work, Some(&tick)))?;
        if !b.cached && b.attempts > 1 {
            cx.reporter.message(
                &stage,
                &format!(
                    "resumed an unfinished build; {} in {} attempts",
                    crate::infra::time::human(b.seconds),
                    b.attempts
                ),
            );
        }
        if let (false, Some(d)) = (b.cached, &b.distributed) {
            cx.reporter.message(&stage, &d.sentence());
        }
        Ok(if b.cached {
            Made::Found {
                work_seconds: b.seconds,
                out: b,
            }
        } else {
            Made::New(b)
        })
    }
}

impl<'a> BuildStage<'a> {
    /// A build of `pgoforge run`: the plan's recipe, compiler and cluster.
    pub fn of_run(
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
}
