//! `pgoforge source`: the first stage of `run` alone — the release resolved by what the mirror
//! serves, fetched (checked against the index and the .dsc), unpacked into WORK/sources/ — for a
//! packager who wants the tree, and for a test that the default source can be fetched.

use anyhow::Result;
use clap::Args;
use pgoforge::pipeline::stage::Ctx;
use pgoforge::pipeline::Tracker;

use super::args::{SourceArgs, WorkDirArgs};

#[derive(Args)]
pub struct SourceCmdArgs {
    #[command(flatten)]
    source: SourceArgs,
    #[command(flatten)]
    work: WorkDirArgs,
    /// Print the fetched source and the release check as JSON.
    #[arg(long)]
    json: bool,
}

pub fn main(a: SourceCmdArgs) -> Result<i32> {
    let (recipe, release) = a.source.recipe()?;
    if !a.json {
        SourceArgs::warn(release.as_ref());
    }
    let (work, _lock) = a.work.locked()?;
    let reporter = super::reporter(a.json);
    let cx = Ctx {
        work: &work,
        reporter: reporter.as_ref(),
    };
    let src = Tracker::ephemeral().run(&a.source.stage(&recipe), &cx)?;
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "source": src,
                "source_release": release,
            }))?
        );
    } else {
        println!(
            "{}\n  {}\n  sha256 {}",
            src.dir.display(),
            src.origin,
            src.hash
        );
    }
    Ok(0)
}
