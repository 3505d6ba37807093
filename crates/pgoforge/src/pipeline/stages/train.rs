//! Training: the instrumented (pgo-gen) build serves the training mix; its profile is checked and
//! stored in WORK/profiles/<hash>/.

use anyhow::Result;
use serde::Serialize;

use crate::builder::BuildOutput;
use crate::events::{log_to, tick_to};
use crate::pipeline::plan::RunPlan;
use crate::pipeline::stage::{Ctx, Made, Stage, StageId};
use crate::pipeline::state::inputs_hash;
use crate::profile::train::{self, Mix, TrainRequest};
use crate::profile::Stored;
use crate::server::{ServerConfig, ServerSpec};

pub struct TrainStage<'a> {
    pub gen: &'a BuildOutput,
    /// The first profile, for a cs-pgo-gen build (see [`TrainRequest::base`]).
    pub base: Option<&'a std::path::Path>,
    pub mix: &'a Mix,
    /// A matrix's further training mix, by name (the stage's name only; `None` for the first).
    pub mix_name: Option<&'a str>,
    pub server: &'a ServerConfig,
    /// The baseline's binary, which prepares the mix's dataset once as a template
    /// ([`train::dataset_template`]); `None` lets the instrumented server prepare it.
    pub dataset_from: Option<&'a std::path::Path>,
}

/// The dataset template `binary` makes for `mix`, when given one.
pub fn dataset(
    binary: Option<&std::path::Path>,
    server: &ServerConfig,
    mix: &Mix,
    cx: &Ctx,
    stage: &str,
) -> Result<Option<std::path::PathBuf>> {
    let Some(b) = binary else { return Ok(None) };
    let spec = ServerSpec {
        binary: b.to_path_buf(),
        ..ServerSpec::with_config(server.clone())
    };
    let (dir, made) = train::dataset_template(cx.work, &spec, mix)?;
    cx.reporter.message(
        stage,
        &if made {
            format!("prepared the dataset template with {}", b.display())
        } else {
            format!("the dataset template is made ({})", dir.display())
        },
    );
    Ok(Some(dir))
}

/// The key of a server configuration as the stages before it was carried whole recorded it: the
/// buffer pool alone, when nothing else differs from the defaults (so finished training and its
/// profile, hence every pgo build keyed by that profile, stay valid).
pub fn server_key(c: &ServerConfig) -> ServerKey<'_> {
    let only_pool = ServerConfig {
        buffer_pool_mb: c.buffer_pool_mb,
        ..ServerConfig::default()
    };
    if *c == only_pool {
        ServerKey::Pool(c.buffer_pool_mb)
    } else {
        ServerKey::Whole(c)
    }
}

#[derive(Serialize)]
#[serde(untagged)]
pub enum ServerKey<'a> {
    Pool(u64),
    Whole(&'a ServerConfig),
}

impl Stage for TrainStage<'_> {
    type Output = Stored;

    fn name(&self) -> StageId {
        // The first training of the plain pgo-gen keeps the name it always had (finished runs
        // find it); cs-pgo-gen's and pgo-gen+native's are named by their build.
        match self.mix_name {
            Some(m) => StageId::TrainOn(m.to_string()),
            None => {
                StageId::Train((self.gen.variant != "pgo-gen").then(|| self.gen.variant.clone()))
            }
        }
    }

    fn key(&self) -> Result<String> {
        // Where the dataset comes from is left out: the same tables, however they were made, so
        // profiles trained before the shared template stay valid (and the builds keyed by them).
        inputs_hash(&(&self.gen.key, &self.mix, server_key(&self.config())))
    }

    fn still_valid(&self, s: &Stored) -> bool {
        s.data().exists()
    }

    fn run(&self, cx: &Ctx) -> Result<Made<Stored>> {
        let stage = self.name().to_string();
        tick_to(cx.reporter, &stage)(0, 0);
        let config = self.config();
        let template = dataset(self.dataset_from, &config, self.mix, cx, &stage)?;
        let stored = train::train(
            &TrainRequest {
                gen: self.gen,
                base: self.base,
                spec: ServerSpec::with_config(config.clone()),
                mix: self.mix,
                dataset: template.as_deref(),
                work_dir: cx.work,
            },
            &log_to(cx.reporter, &stage),
        )?;
        cx.reporter.message(
            &stage,
            &format!(
                "profile {} ({} files, {} bytes{})",
                stored.dir.display(),
                stored.meta.summary.files,
                stored.meta.summary.bytes,
                stored
                    .meta
                    .summary
                    .context_sensitive_functions
                    .map(|n| format!(", {n} functions with context-sensitive counts"))
                    .unwrap_or_default()
            ),
        );
        Ok(Made::New(stored))
    }
}

impl<'a> TrainStage<'a> {
    /// Training `gen` on `mix` with the run's server settings, on the dataset template the baseline
    /// (`dataset_from`: the built one or Debian's) prepares (`base`: the first profile, for a
    /// cs-pgo-gen build).
    /// The training servers' configuration: the run's, on the mix's engine.
    fn config(&self) -> ServerConfig {
        self.mix.server_config(self.server)
    }

    pub fn of_run(
        plan: &'a RunPlan,
        dataset_from: &'a std::path::Path,
        gen: &'a BuildOutput,
        mix: &'a Mix,
        mix_name: Option<&'a str>,
        base: Option<&'a std::path::Path>,
    ) -> TrainStage<'a> {
        TrainStage {
            gen,
            base,
            mix,
            mix_name,
            server: &plan.request.server,
            dataset_from: Some(dataset_from),
        }
    }
}
