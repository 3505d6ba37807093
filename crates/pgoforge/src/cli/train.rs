//! `pgoforge train`: builds the instrumented (pgo-gen, or with --native pgo-gen+native) server,
//! trains it, stores the profile — the same stages `pgoforge run` uses.

use anyhow::Result;
use clap::Args;
use pgoforge::builder::Variant;
use pgoforge::pipeline::stage::Ctx;
use pgoforge::pipeline::stages::{BuildStage, TrainStage};
use pgoforge::pipeline::Tracker;

use super::args::{CompilerArgs, ServerConfigArgs, SourceArgs, TrainingArgs, WorkDirArgs};

#[derive(Args)]
pub struct TrainArgs {
    #[command(flatten)]
    source: SourceArgs,
    #[command(flatten)]
    compiler: CompilerArgs,
    #[command(flatten)]
    work: WorkDirArgs,
    #[command(flatten)]
    training: TrainingArgs,
    #[command(flatten)]
    server: ServerConfigArgs,
    /// Train the -O3 -march=native instrumented build (pgo-gen+native): the profile for +native
    /// variants, which GCC applies only partly when it comes from the generic build.
    #[arg(long)]
    native: bool,
    /// Print the stored profile's record as JSON (progress events go to stderr as JSON lines).
    #[arg(long)]
    json: bool,
}

pub fn main(a: TrainArgs) -> Result<i32> {
    // Everything that can be wrong with the arguments is found before any build starts.
    let mix = a
        .training
        .mix()
        .and_then(|m| m.check().map(|()| m))
        .unwrap_or_else(|e| super::usage_error(e));
    let dataset_from = a.training.dataset_from()?;
    let (recipe, release) = a.source.recipe()?;
    SourceArgs::warn(release.as_ref());
    let compiler = a.compiler.find(&recipe)?;
    let (work, _lock) = a.work.locked()?;
    let reporter = super::reporter(a.json);
    let cx = Ctx {
        work: &work,
        reporter: reporter.as_ref(),
    };
    let mut gen_variant: Variant = "pgo-gen".parse().expect("a valid variant");
    if a.native {
        gen_variant.codegen = pgoforge::builder::codegen::Codegen::NATIVE;
    }
    let mut t = Tracker::ephemeral();
    let src = t.run(&a.source.stage(&recipe), &cx)?;
    let gen = t.run(
        &BuildStage {
            recipe: &recipe,
            source: &src,
            compiler: &compiler,
            variant: gen_variant,
            profile: None,
            mix: None,
            jobs: 0,
            cluster: pgoforge::builder::cluster::probe().cluster(),
        },
        &cx,
    )?;
    let config = a.server.config();
    let stored = t.run(
        &TrainStage {
            mix_name: None,
            gen: &gen,
            base: None,
            mix: &mix,
            server: &config,
            dataset_from: dataset_from.as_deref(),
        },
        &cx,
    )?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&stored)?);
        return Ok(0);
    }
    let s = &stored.meta.summary;
    println!(
        "profile stored in {} ({:?}, {} files, {} bytes, trained {:.0} s)",
        stored.dir.display(),
        stored.meta.kind,
        s.files,
        s.bytes,
        stored.meta.seconds
    );
    if let Some(f) = s.functions {
        println!(
            "  {} functions, {} with counts",
            f,
            s.functions_with_counts.unwrap_or(0)
        );
    }
    if !s.hottest.is_empty() {
        println!("  hottest: {}", s.hottest.join(", "));
    }
    println!(
        "Next: pgoforge build --variant {} --compiler {} --recipe {} --profile {}",
        if a.native { "pgo+lto+native" } else { "pgo" },
        a.compiler.spec(&recipe),
        a.source.recipe,
        stored.data().display()
    );
    Ok(0)
}
