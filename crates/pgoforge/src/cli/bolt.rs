//! `pgoforge bolt`: profiles a bolt-ready server binary and optimizes it with BOLT.

use anyhow::{Context, Result};
use clap::Args;
use pgoforge::infra::tools::install_hint;
use pgoforge::pipeline::stage::Ctx;
use pgoforge::pipeline::stages::BoltStage;
use pgoforge::pipeline::Tracker;
use pgoforge::toolchain::Bolt;

use super::args::{words, ServerConfigArgs, TrainingArgs, WorkDirArgs};
use pgoforge::infra::exit::Refuse;

#[derive(Args)]
pub struct BoltArgs {
    /// A bolt-ready server binary (built as a +bolt variant).
    #[arg(long)]
    binary: std::path::PathBuf,
    #[command(flatten)]
    work: WorkDirArgs,
    #[command(flatten)]
    training: TrainingArgs,
    /// Optimization flags instead of the probed ones, space-separated.
    #[arg(long = "bolt-flags")]
    bolt_flags: Option<String>,
    #[command(flatten)]
    server: ServerConfigArgs,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

pub fn main(a: BoltArgs) -> Result<i32> {
    let mix = a
        .training
        .mix()
        .and_then(|m| m.check().map(|()| m))
        .unwrap_or_else(|e| super::usage_error(e));
    let dataset_from = a.training.dataset_from()?;
    let b = Bolt::find()
        .with_context(|| format!("llvm-bolt not found; {}", install_hint("llvm-bolt")))?;
    let bin = std::fs::canonicalize(&a.binary)
        .with_context(|| format!("{} does not exist", a.binary.display()))
        .refused()?;
    let (work, _lock) = a.work.locked()?;
    let reporter = super::reporter(a.json);
    let cx = Ctx {
        work: &work,
        reporter: reporter.as_ref(),
    };
    let flags = words(&a.bolt_flags);
    let config = a.server.config();
    let out = Tracker::ephemeral().run(
        &BoltStage {
            name: bin.display().to_string(),
            binary: &bin,
            build_key: "",
            bolt: &b,
            mix: &mix,
            flags: flags.as_deref(),
            server: &config,
            source_hash: "",
            dataset_from: dataset_from.as_deref(),
            given: None,
        },
        &cx,
    )?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(0);
    }
    println!(
        "BOLTed binary: {} ({}, {:.0} s)",
        out.binary.display(),
        out.method,
        out.seconds
    );
    if let Some(c) = &out.coverage {
        println!("  {c}");
    }
    println!("  profile: {}", out.profile.dir.display());
    Ok(0)
}
