//! `pgoforge gate`: checks that optimized binaries compute what the baseline computes.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use pgoforge::gate::GateWorkload;
use pgoforge::pipeline::stage::Ctx;
use pgoforge::pipeline::stages::GateStage;
use pgoforge::pipeline::Tracker;

use super::args::{ServerConfigArgs, WorkDirArgs};

/// `NAME=PATH`.
fn named(s: &str) -> Result<(String, PathBuf), String> {
    let (n, p) = s
        .split_once('=')
        .ok_or_else(|| format!("--candidate takes NAME=PATH, got '{s}'"))?;
    Ok((n.to_string(), PathBuf::from(p)))
}

#[derive(Args)]
pub struct GateArgs {
    /// The reference binary.
    #[arg(long)]
    baseline: PathBuf,
    /// Binaries to check, NAME=PATH (repeatable).
    #[arg(long = "candidate", value_name = "NAME=PATH", required = true, value_parser = named)]
    candidates: Vec<(String, PathBuf)>,
    #[command(flatten)]
    work: WorkDirArgs,
    /// Transactions of the seeded write workload.
    #[arg(long, default_value_t = GateWorkload::default().events, value_parser = clap::value_parser!(u64).range(1..=100_000_000))]
    events: u64,
    #[command(flatten)]
    server: ServerConfigArgs,
    /// Print the checksums as JSON.
    #[arg(long)]
    json: bool,
}

pub fn main(a: GateArgs) -> Result<i32> {
    let (work, _lock) = a.work.locked()?;
    let reporter = super::reporter(a.json);
    let cx = Ctx {
        work: &work,
        reporter: reporter.as_ref(),
    };
    let config = a.server.config();
    let identities = a
        .candidates
        .iter()
        .map(|(n, p)| (n.clone(), p.display().to_string()))
        .collect();
    let sums = Tracker::ephemeral().run(
        &GateStage {
            baseline: a.baseline.clone(),
            candidates: a.candidates.clone(),
            identities,
            server: &config,
            workload: GateWorkload {
                events: a.events,
                ..GateWorkload::default()
            },
        },
        &cx,
    )?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&sums)?);
        return Ok(0);
    }
    for s in &sums {
        let t: Vec<String> = s.tables.iter().map(|(t, v)| format!("{t}={v}")).collect();
        println!("{}: {}", s.binary.display(), t.join(" "));
    }
    println!(
        "correctness gate passed: {} binaries compute what the baseline computes",
        a.candidates.len()
    );
    Ok(0)
}
