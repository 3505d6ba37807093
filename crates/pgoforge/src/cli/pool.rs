//! `pgoforge pool`: one comparison from runs on several hosts, each host's gain, the spread
//! between hosts and a pooled gain that counts it (bench/pool.rs).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

#[derive(Args)]
pub struct PoolArgs {
    /// Run directories (of `run`, `bench` or `try`), one per host.
    #[arg(required = true, num_args = 2.., value_name = "RUN")]
    runs: Vec<PathBuf>,
    /// The contender whose gain is pooled (`package` for `try`'s runs).
    #[arg(long, default_value = "package")]
    contender: String,
    /// What it is compared with (`this-host` for `try`'s runs; `debian` in a run's headline).
    #[arg(long, default_value = "this-host")]
    reference: String,
    /// Only cells at this many client threads [each run's own].
    #[arg(long)]
    threads: Option<u32>,
    /// Print the table as JSON.
    #[arg(long)]
    json: bool,
}

pub fn main(a: PoolArgs) -> Result<i32> {
    for r in &a.runs {
        if !r.join("results.jsonl").is_file() {
            pgoforge::usage!(
                "{} holds no benchmark results (results.jsonl): give run directories",
                r.display()
            );
        }
    }
    let t = pgoforge::bench::pool::pool(&a.runs, &a.contender, &a.reference, a.threads)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&t)?);
    } else {
        print!("{}", pgoforge::bench::pool::markdown(&t));
    }
    Ok(0)
}
