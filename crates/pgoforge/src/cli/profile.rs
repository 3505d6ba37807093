//! `pgoforge train`, `pgoforge bolt`, `pgoforge gate`.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use pgoforge::build::{self, BuildRequest, Variant};
use pgoforge::pipeline::server_spec;
use pgoforge::profile::bolt::{self, BoltRequest};
use pgoforge::profile::gate::{self, GateWorkload};
use pgoforge::profile::train::{self, Mix, Phases, TrainRequest};
use pgoforge::recipe::{Recipe, DEFAULT};
use pgoforge::source;
use pgoforge::toolchain::{Bolt, Compiler};

#[derive(Args, Clone)]
pub struct MixArgs {
    /// Training phases: test[@text][:seconds[:threads]], comma-separated.
    #[arg(long)]
    pub mix: Option<String>,
    /// A short mix (about half a minute) for a first look.
    #[arg(long)]
    pub quick: bool,
    /// Tables of the training dataset.
    #[arg(long)]
    pub tables: Option<u32>,
    /// Rows per table of the training dataset.
    #[arg(long = "table-size")]
    pub table_size: Option<u64>,
}

impl MixArgs {
    pub fn mix(&self) -> Mix {
        let mut m = if self.quick {
            Mix::quick()
        } else {
            Mix::standard()
        };
        if let Some(spec) = &self.mix {
            m.phases = spec
                .parse::<Phases>()
                .unwrap_or_else(|e| super::usage_error(e))
                .0;
        }
        if let Some(t) = self.tables {
            m.tables = t;
        }
        if let Some(n) = self.table_size {
            m.table_size = n;
        }
        m
    }
}

#[derive(Args)]
pub struct TrainArgs {
    #[arg(long, default_value = DEFAULT)]
    recipe: String,
    #[arg(long, default_value = "gcc")]
    compiler: String,
    #[arg(long)]
    source: Option<String>,
    #[arg(long)]
    sha256: Option<String>,
    #[arg(long = "work-dir", default_value = "pgoforge-work")]
    work_dir: PathBuf,
    #[command(flatten)]
    mix: MixArgs,
    #[arg(long = "buffer-pool-mb", default_value_t = 2048)]
    buffer_pool_mb: u64,
}

pub fn train_main(a: TrainArgs) -> Result<i32> {
    let compiler = Compiler::find(&a.compiler, None)?;
    let recipe = Recipe::load(&a.recipe)?;
    std::fs::create_dir_all(&a.work_dir)?;
    let work = std::fs::canonicalize(&a.work_dir)?;
    let src = source::fetch(&recipe, a.source.as_deref(), a.sha256.as_deref(), &work)?;
    let gen = build::build(&BuildRequest {
        recipe: &recipe,
        source: &src,
        variant: "pgo-gen".parse::<Variant>().expect("valid"),
        compiler: &compiler,
        profile: None,
        work_dir: &work,
        jobs: 0,
        show_progress: true,
    })?;
    let mix = a.mix.mix();
    let stored = train::train(
        &TrainRequest {
            gen: &gen,
            spec: server_spec(a.buffer_pool_mb),
            mix: &mix,
            work_dir: &work,
        },
        &|l| eprintln!("  {l}"),
    )?;
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
        "Next: pgoforge build --variant pgo --compiler {} --recipe {} --profile {}",
        a.compiler,
        a.recipe,
        stored.data().display()
    );
    Ok(0)
}

#[derive(Args)]
pub struct BoltArgs {
    /// A bolt-ready server binary (built as a +bolt variant).
    #[arg(long)]
    binary: PathBuf,
    #[arg(long = "work-dir", default_value = "pgoforge-work")]
    work_dir: PathBuf,
    #[command(flatten)]
    mix: MixArgs,
    /// Optimization flags instead of the probed ones, space-separated.
    #[arg(long = "bolt-flags")]
    bolt_flags: Option<String>,
    #[arg(long = "buffer-pool-mb", default_value_t = 2048)]
    buffer_pool_mb: u64,
}

pub fn bolt_main(a: BoltArgs) -> Result<i32> {
    let b =
        Bolt::find().context("llvm-bolt not found; install it with: apt-get install bolt-22")?;
    std::fs::create_dir_all(&a.work_dir)?;
    let work = std::fs::canonicalize(&a.work_dir)?;
    let bin = std::fs::canonicalize(&a.binary)
        .with_context(|| format!("{} does not exist", a.binary.display()))?;
    let mix = a.mix.mix();
    let out = bolt::optimize(
        &BoltRequest {
            binary: &bin,
            bolt: &b,
            spec: server_spec(a.buffer_pool_mb),
            mix: &mix,
            work_dir: &work,
            flags: a
                .bolt_flags
                .map(|f| f.split_whitespace().map(str::to_string).collect()),
            source_hash: String::new(),
            build_key: String::new(),
        },
        &|l| eprintln!("  {l}"),
    )?;
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

#[derive(Args)]
pub struct GateArgs {
    /// The reference binary.
    #[arg(long)]
    baseline: PathBuf,
    /// Binaries to check, NAME=PATH (repeatable).
    #[arg(long = "candidate", value_name = "NAME=PATH", required = true)]
    candidates: Vec<String>,
    #[arg(long = "work-dir", default_value = "pgoforge-work")]
    work_dir: PathBuf,
    #[arg(long, default_value_t = 2000)]
    events: u64,
}

pub fn gate_main(a: GateArgs) -> Result<i32> {
    let mut cands = Vec::new();
    for c in &a.candidates {
        let Some((n, p)) = c.split_once('=') else {
            super::usage_error(format!("--candidate takes NAME=PATH, got '{c}'"));
        };
        cands.push((n.to_string(), PathBuf::from(p)));
    }
    std::fs::create_dir_all(&a.work_dir)?;
    let work = std::fs::canonicalize(&a.work_dir)?;
    let w = GateWorkload {
        events: a.events,
        ..GateWorkload::default()
    };
    let sums = gate::gate(&server_spec(512), &a.baseline, &cands, &work, &w)?;
    for s in &sums {
        let t: Vec<String> = s.tables.iter().map(|(t, v)| format!("{t}={v}")).collect();
        println!("{}: {}", s.binary.display(), t.join(" "));
    }
    println!(
        "correctness gate passed: {} binaries compute what the baseline computes",
        cands.len()
    );
    Ok(0)
}
