//! `pgoforge follow`: one unattended cycle — the newest release Debian serves, built from the
//! repository's last published profiles, gated, measured against Debian's own server of that
//! release and published when not slower beyond the margin. The systemd timer in
//! contrib/systemd/ runs it; its one-line outcome is the journal's.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use pgoforge::follow::{self, FollowRequest};

#[derive(Args)]
pub struct FollowArgs {
    /// The repository `pgoforge publish` made: its newest published build's profiles are the
    /// next release's, and the new build is published into it.
    #[arg(long, value_name = "DIR")]
    repo: PathBuf,
    /// Follow's own directory: its lock, its status (follow-status.json, follow-history.jsonl)
    /// and the runs (WORK/run) [./pgoforge-follow].
    #[arg(long, value_name = "DIR", default_value = "pgoforge-follow")]
    work_dir: PathBuf,
    /// The suite packages are published into.
    #[arg(long, default_value = "bookworm-pgoforge")]
    suite: String,
    /// Sign with this secret key of your GnuPG keyring (--key-home is then not used) [the key
    /// pgoforge made in --key-home].
    #[arg(long, value_name = "KEY")]
    key: Option<String>,
    /// Where pgoforge keeps its signing key [as `publish`].
    #[arg(long, value_name = "DIR")]
    key_home: Option<PathBuf>,
    /// The URL hosts reach the repository at (for the sources line in the status).
    #[arg(long)]
    url: Option<String>,
    /// Publish only when the new build is not slower than Debian's server of the same release
    /// by more than this, in percent (the one-sided 95 % bound of every cell above −PCT) [5].
    #[arg(long, value_name = "PCT", default_value = "5", value_parser = super::args::parse_margin)]
    margin: f64,
    /// Print the cycle's status as JSON (the one-line summary goes to stderr).
    #[arg(long)]
    json: bool,
    /// More `pgoforge run` options for the cycle's run (its benchmark's, say: -- --time 10).
    #[arg(last = true, value_name = "RUN_OPTIONS")]
    run_args: Vec<String>,
}

pub fn main(a: FollowArgs) -> Result<i32> {
    let home = a
        .key_home
        .clone()
        .unwrap_or_else(super::publish::default_key_home);
    let key = super::publish::key_choice(&a.key, &home);
    let st = follow::cycle(&FollowRequest {
        repo: &a.repo,
        work: &a.work_dir,
        suite: &a.suite,
        key,
        url: a.url.as_deref(),
        margin: a.margin,
        run_args: &a.run_args,
        exe: std::env::current_exe().context("finding pgoforge's own executable")?,
    })?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&st)?);
        eprintln!("{}", st.line());
    } else {
        println!("{}", st.line());
    }
    Ok(st.outcome.exit_code())
}
