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
    /// Let a variant significantly slower on a held-out workload win (stored in the run directory,
    /// as `run --allow-regression` does; `--no-allow-regression` takes it back).
    #[arg(long = "allow-regression", overrides_with = "no_allow_regression")]
    allow_regression: bool,
    #[arg(long = "no-allow-regression", hide = true)]
    no_allow_regression: bool,
    /// The smallest change, in percent, that counts as faster or slower [2; or what the run
    /// stored]; stored in the run directory like --allow-regression.
    #[arg(long = "min-effect", value_name = "PCT", value_parser = super::args::parse_min_effect)]
    min_effect: Option<f64>,
    /// The non-inferiority margin, in percent, on held-out workloads [3; or what the run
    /// stored]: "not slower than -PCT%" needs the one-sided bound above it; stored like
    /// --min-effect.
    #[arg(long, value_name = "PCT", value_parser = super::args::parse_margin)]
    margin: Option<f64>,
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
    // A policy given here is stored only once the run directory proved to hold a benchmark.
    let stored = || report::Policy::stored(&a.run);
    let given = if a.allow_regression
        || a.no_allow_regression
        || a.min_effect.is_some()
        || a.margin.is_some()
    {
        let before = stored().unwrap_or_default();
        Some(report::Policy {
            allow_held_out_regression: if a.allow_regression || a.no_allow_regression {
                a.allow_regression
            } else {
                before.allow_held_out_regression
            },
            min_effect: a.min_effect.or(before.min_effect),
            margin: a.margin.or(before.margin),
        })
    } else {
        None
    };
    let policy = match given {
        Some(p) => p,
        None => stored()?,
    };
    let r = report::build_with(&a.run, a.baseline.as_deref(), policy)?;
    if a.baseline.is_none() {
        if let Some(p) = given {
            p.store(&a.run)?;
        }
        export::write_all(&a.run, &r)?;
    }
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
