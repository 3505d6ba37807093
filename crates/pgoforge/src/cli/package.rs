//! `pgoforge package`: a contender of a finished run as a tar.zst with its manifest and SHA256SUMS.

use anyhow::Result;
use clap::Args;
use pgoforge::bench::report;
use pgoforge::pipeline::{self, Outcome};

use super::args::WorkDirArgs;

#[derive(Args)]
pub struct PackageArgs {
    /// The variant (contender name) of the finished run to package, e.g. pgo+bolt.
    variant: String,
    #[command(flatten)]
    work: WorkDirArgs,
    /// Print the package record as JSON.
    #[arg(long)]
    json: bool,
}

pub fn main(a: PackageArgs) -> Result<i32> {
    let work = a.work.existing()?;
    let _lock = pgoforge::infra::lock::WorkLock::acquire(&work)?;
    let out = Outcome::load(&work)?;
    let rep = report::build(&out.run_dir).ok();
    let p = pipeline::package_contender(&work, &out, rep.as_ref(), &a.variant)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&p)?);
        return Ok(0);
    }
    println!(
        "{}\n  sha256 {}  ({:.1} MiB, {} files)",
        p.path.display(),
        p.sha256,
        p.bytes as f64 / 1048576.0,
        p.files
    );
    Ok(0)
}
