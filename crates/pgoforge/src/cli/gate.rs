//! `pgoforge gate`: checks that optimized binaries compute what the baseline computes: the quick
//! CHECKSUM gate, then (`--gate mtr|full`) the server's own regression tests from the baseline's
//! build tree.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;
use pgoforge::gate::{GateMode, GateWorkload};
use pgoforge::infra::exit::{ExitStatus, Refuse};
use pgoforge::pipeline::stage::Ctx;
use pgoforge::pipeline::stages::{GateStage, MtrStage};
use pgoforge::pipeline::Tracker;
use pgoforge::recipe::Recipe;

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
    /// quick (the seeded workload and CHECKSUM TABLE), mtr (then the recipe's subset of the
    /// server's own regression tests, run from the baseline's build tree), full (then whole suites).
    #[arg(long, default_value = "quick", value_parser = |s: &str| s.parse::<GateMode>())]
    gate: GateMode,
    /// The recipe naming the MTR tests and tools (with --gate mtr|full).
    #[arg(long, default_value = pgoforge::recipe::DEFAULT)]
    recipe: String,
    /// MTR tests instead of the recipe's subset, comma-separated suite.test names.
    #[arg(long = "mtr-suite", value_delimiter = ',')]
    mtr_suite: Option<Vec<String>>,
    /// Print the result as JSON.
    #[arg(long)]
    json: bool,
}

/// The candidates as the gate's keys identify them (by path).
fn candidate_identities(a: &GateArgs) -> Vec<(String, String)> {
    a.candidates
        .iter()
        .map(|(n, p)| (n.clone(), p.display().to_string()))
        .collect()
}

/// The MTR step for a baseline inside its build tree: the build directory is the baseline's path
/// less the recipe's binary path, the test files are the source tree's (CMake's cache names it).
fn mtr_stage<'a>(a: &'a GateArgs, recipe: &'a Recipe) -> Result<Option<MtrStage<'a>>> {
    if a.gate == GateMode::Quick {
        if a.mtr_suite.is_some() {
            bail!("--mtr-suite names MTR tests, but --gate quick runs none; add --gate mtr");
        }
        return Ok(None);
    }
    let Some(spec) = recipe.mtr.as_ref() else {
        bail!(
            "--gate {}: recipe {} names no MTR tests (no [mtr] section); use --gate quick or a recipe with one",
            a.gate,
            recipe.name
        );
    };
    let baseline = std::fs::canonicalize(&a.baseline)
        .with_context(|| format!("--baseline {}", a.baseline.display()))?;
    let rel = Path::new(&recipe.build.binary);
    let build_dir = baseline
        .to_str()
        .and_then(|b| b.strip_suffix(rel.to_str()?))
        .map(|d| PathBuf::from(d.trim_end_matches('/')))
        .filter(|d| d.join("CMakeCache.txt").is_file())
        .with_context(|| {
            format!(
                "--gate mtr runs MTR from the baseline's build tree, but {} is not <build dir>/{} \
                 of a CMake build; give the baseline's binary inside its build directory",
                baseline.display(),
                rel.display()
            )
        })?;
    let cache = std::fs::read_to_string(build_dir.join("CMakeCache.txt"))
        .with_context(|| format!("reading {}/CMakeCache.txt", build_dir.display()))?;
    let source = cache
        .lines()
        .find_map(|l| l.strip_prefix("CMAKE_HOME_DIRECTORY:INTERNAL="))
        .context("CMakeCache.txt names no source directory (CMAKE_HOME_DIRECTORY)")?;
    let (tests, args) = spec.selection(a.gate, a.mtr_suite.as_deref());
    let mut identities = vec![("baseline".to_string(), baseline.display().to_string())];
    identities.extend(candidate_identities(a));
    Ok(Some(MtrStage {
        spec,
        mode: a.gate,
        tests,
        args,
        source_dir: PathBuf::from(source),
        build_dir,
        server_rel: rel.to_path_buf(),
        baseline,
        baseline_name: "baseline".into(),
        candidates: a.candidates.clone(),
        // `pgoforge gate` runs MTR on whatever it is given.
        not_run: Vec::new(),
        identities,
        // The gate command's tables are InnoDB's (it has no --engine), so MTR keeps the
        // baseline's plugins.
        engine: Default::default(),
    }))
}

pub fn main(a: GateArgs) -> Result<i32> {
    let recipe = Recipe::load(&a.recipe).refused()?;
    // Checked before any server starts.
    let mtr = mtr_stage(&a, &recipe).refused()?;
    pgoforge::server::Flavor::detect(&a.baseline)
        .map_err(|e| anyhow::anyhow!("--baseline: {e:#}"))
        .refused()?;
    for (name, bin) in &a.candidates {
        pgoforge::server::Flavor::detect(bin)
            .map_err(|e| anyhow::anyhow!("--candidate {name}: {e:#}"))
            .refused()?;
    }
    let (work, _lock) = a.work.locked()?;
    let reporter = super::reporter(a.json);
    let cx = Ctx {
        work: &work,
        reporter: reporter.as_ref(),
    };
    let config = a.server.config();
    let identities = candidate_identities(&a);
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
    let mtr = match &mtr {
        Some(stage) => Some(Tracker::ephemeral().run(stage, &cx)?),
        None => None,
    };
    if a.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({ "checksums": sums, "mtr": mtr }))?
        );
        return Ok(if mtr.as_ref().is_some_and(|g| !g.regressions.is_empty()) {
            ExitStatus::GateStopped.code()
        } else {
            0
        });
    }
    for s in &sums {
        let t: Vec<String> = s.tables.iter().map(|(t, v)| format!("{t}={v}")).collect();
        println!("{}: {}", s.binary.display(), t.join(" "));
    }
    println!(
        "quick gate passed: {} binaries give the baseline's CHECKSUM TABLE values after the seeded writes",
        a.candidates.len()
    );
    let Some(g) = mtr else { return Ok(0) };
    for line in g.report_lines() {
        println!("mtr: {line}");
    }
    if g.regressions.is_empty() {
        println!(
            "mtr gate passed: no test that passes on the baseline fails on a candidate (results in {}/gate/mtr)",
            work.display()
        );
        Ok(0)
    } else {
        for r in &g.regressions {
            eprintln!(
                "--- {} on {} ({}):\n{}",
                r.test,
                r.variant,
                r.outcome,
                r.detail.trim_end()
            );
        }
        eprintln!(
            "mtr gate failed: {} stopped by tests that pass on the baseline",
            g.stopped().join(", ")
        );
        Ok(ExitStatus::GateStopped.code())
    }
}
