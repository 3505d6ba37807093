//! BOLT: a bolt-ready build is profiled (instrumentation, or perf sampling where the CPU has
//! LBR) on the training mix and optimized; the result sits beside it as `<binary>.bolt`.

use anyhow::Result;

use crate::events::{log_to, tick_to};
use crate::pipeline::stage::{Ctx, Made, Stage, StageId};
use crate::pipeline::state::inputs_hash;
use crate::profile::bolt::{self, BoltOutput, BoltRequest};
use crate::profile::train::Mix;
use crate::server::{ServerConfig, ServerSpec};
use crate::toolchain::Bolt;

pub struct BoltStage<'a> {
    /// The contender's name (`pgo+bolt`).
    pub name: String,
    /// The bolt-ready binary and the key of its build ("" for a binary given by hand).
    pub binary: &'a std::path::Path,
    pub build_key: &'a str,
    pub bolt: &'a Bolt,
    pub mix: &'a Mix,
    pub flags: Option<&'a [String]>,
    pub server: &'a ServerConfig,
    pub source_hash: &'a str,
    /// As [`super::train::TrainStage::dataset_from`].
    pub dataset_from: Option<&'a std::path::Path>,
    /// Another build's BOLT profile to apply instead of profiling (`run --profile-from`).
    pub given: Option<&'a std::path::Path>,
}

impl Stage for BoltStage<'_> {
    type Output = BoltOutput;

    fn name(&self) -> StageId {
        StageId::Bolt(self.name.clone())
    }

    fn key(&self) -> Result<String> {
        // The server's configuration shapes the profile as much as the mix does.
        // The dataset's origin is left out, as in training's key.
        let profiled = inputs_hash(&(
            &self.build_key,
            &self.mix,
            &self.flags,
            &self.bolt.llvm_bolt,
            &self.mix.server_config(self.server),
        ))?;
        // A given profile is an input of its own; without one the key is what it always was.
        match self.given {
            None => Ok(profiled),
            Some(g) => {
                let h = crate::builder::ProfileInput::Profdata(g.to_path_buf()).content_hash()?;
                inputs_hash(&(&self.build_key, &self.flags, &self.bolt.llvm_bolt, h))
            }
        }
    }

    fn still_valid(&self, x: &BoltOutput) -> bool {
        x.binary.is_file()
    }

    fn run(&self, cx: &Ctx) -> Result<Made<BoltOutput>> {
        let stage = self.name().to_string();
        tick_to(cx.reporter, &stage)(0, 0);
        // A given profile needs no training run, so no dataset.
        // BOLT's profiling run trains on the mix's engine, as the training did.
        let config = self.mix.server_config(self.server);
        let template = match self.given {
            Some(_) => None,
            None => super::train::dataset(self.dataset_from, &config, self.mix, cx, &stage)?,
        };
        let out = bolt::optimize(
            &BoltRequest {
                binary: self.binary,
                bolt: self.bolt,
                spec: ServerSpec::with_config(config.clone()),
                mix: self.mix,
                dataset: template.as_deref(),
                work_dir: cx.work,
                flags: self.flags.map(<[String]>::to_vec),
                source_hash: self.source_hash.into(),
                build_key: self.build_key.into(),
                given: self.given,
            },
            &log_to(cx.reporter, &stage),
        )?;
        if let Some(c) = &out.coverage {
            cx.reporter.message(&stage, c);
        }
        Ok(Made::New(out))
    }
}
