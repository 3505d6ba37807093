//! `pgoforge report`: the reports of a benchmark run, regenerated from its stored results.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use pgoforge::bench::cachegrind::{self, CgPlan};
use pgoforge::bench::export::document::cachegrind_table;
use pgoforge::bench::export::{self, Exporter};
use pgoforge::bench::export::{
    csv::Csv,
    json::Json,
    markdown::{self, Markdown},
    text::Text,
};
use pgoforge::bench::report;
use pgoforge::bench::run_dir;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Md,
    Json,
    Csv,
}

#[derive(Args)]
pub struct ReportArgs {
    /// A run directory made by `pgoforge bench` or `pgoforge run`.
    run: PathBuf,
    /// What to print (all formats are written into the run directory).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Compare with this contender instead of the run's baseline (e.g. pgo, to see what BOLT adds);
    /// printed only, the stored reports keep the run's baseline.
    #[arg(long)]
    baseline: Option<String>,
}

pub fn main(a: ReportArgs) -> Result<i32> {
    let cg_plan = cachegrind::plan_path(&a.run);
    if !run_dir::plan_path(&a.run).exists() && cg_plan.exists() {
        let text = std::fs::read_to_string(&cg_plan)
            .with_context(|| format!("reading {}", cg_plan.display()))?;
        let plan: CgPlan = serde_json::from_str(&text)
            .with_context(|| format!("parsing {}", cg_plan.display()))?;
        let recs = cachegrind::read_records(&a.run)?;
        print!(
            "{}",
            markdown::table(&cachegrind_table(&recs, &plan.contenders[0].name))
        );
        return Ok(0);
    }
    let r = match &a.baseline {
        Some(b) => report::build_against(&a.run, Some(b))?,
        None => {
            let r = report::build(&a.run)?;
            export::write_all(&a.run, &r)?;
            r
        }
    };
    let exporter: &dyn Exporter = match a.format {
        Format::Md => &Markdown,
        Format::Json => &Json,
        Format::Csv => &Csv,
        Format::Text => &Text,
    };
    let out = exporter.render(&r)?;
    print!("{out}");
    Ok(0)
}
