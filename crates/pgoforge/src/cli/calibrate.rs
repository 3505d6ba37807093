//! `pgoforge calibrate`: the machine's noise floor, one server benchmarked against itself (A/A),
//! and what it means: the smallest effect a benchmark here can detect, and the rounds and
//! minutes a 2 % difference needs.

use std::cell::Cell;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Result;
use clap::Args;
use pgoforge::bench::calibrate::{self, AaCell, Calibration, A, A_AGAIN};
use pgoforge::bench::export::document::calibration_table;
use pgoforge::bench::export::{self, markdown};
use pgoforge::bench::order::OrderScheme;
use pgoforge::bench::plan::{self, BenchPlan, Contender};
use pgoforge::bench::report;
use pgoforge::bench::run;
use pgoforge::events::{log_to, tick_to};
use pgoforge::infra::exit::Refuse;

use super::args::{BenchSpecArgs, GuardArgs, RunDirArgs, ServerConfigArgs, WorkDirArgs};

/// Rounds of a calibration unless --rounds says otherwise: enough for the scatter to be
/// estimated within about ±25 % (a standard deviation from n values is good to ~1/√(2(n−1))).
const ROUNDS: u32 = 10;

#[derive(Args)]
pub struct CalibrateArgs {
    /// The server to benchmark against itself (e.g. a baseline build, or /usr/sbin/mariadbd).
    #[arg(long)]
    binary: PathBuf,
    #[command(flatten)]
    spec: BenchSpecArgs,
    #[command(flatten)]
    server: ServerConfigArgs,
    #[command(flatten)]
    guard: GuardArgs,
    /// Do not pin server and client to disjoint CPUs.
    #[arg(long = "no-pin")]
    no_pin: bool,
    #[command(flatten)]
    work: WorkDirArgs,
    #[command(flatten)]
    run_dir: RunDirArgs,
    /// The seed of the round orders [a fresh one].
    #[arg(long)]
    seed: Option<u64>,
    /// Print the calibration as JSON.
    #[arg(long)]
    json: bool,
}

pub fn main(a: CalibrateArgs) -> Result<i32> {
    let mut spec = a.spec.spec(false);
    if !a.spec.rounds_given() {
        spec.rounds = ROUNDS;
    }
    if let Err(e) = spec.check() {
        super::usage_error(e);
    }
    if spec.target_ci_pct.is_some() {
        super::usage_error("--target-ci does not apply to a calibration: it measures the scatter over a fixed number of rounds (--rounds)");
    }
    // Before the work dir is locked or anything is prepared.
    pgoforge::server::Flavor::detect(&a.binary)
        .map_err(|e| anyhow::anyhow!("--binary {}: {e:#}", a.binary.display()))
        .refused()?;
    let (work, _lock) = a.work.locked()?;
    let dir = a.run_dir.dir(&work, "calibrate")?;
    let resume = a.run_dir.resume;
    // A resumed calibration keeps its design, and the wall time its runs took when measured.
    let earlier = super::bench::resumed_design(&dir, resume);
    let earlier_wall = calibrate::read(&calibrate::copy_in_run_dir(&dir))
        .ok()
        .flatten()
        .filter(|c| resume && c.binary == a.binary)
        .map(|c| c.wall_seconds_per_run);
    let plan = aa_plan(&a, spec, earlier.as_ref().map(|e| e.seed));
    let reporter = super::reporter(a.json);
    let started = Instant::now();
    // (when, runs done) at the first tick (before the dataset is prepared), and at the first and
    // the latest run finished here: a run's wall time is measured between finished runs, so it
    // includes server starts but not the one-off preparation.
    let at_start = Cell::new(None::<u64>);
    let (first, last) = (Cell::new(None), Cell::new(None::<(Instant, u64)>));
    let tick = tick_to(reporter.as_ref(), "calibrate");
    run::benchmark(
        &plan,
        &work,
        &dir,
        resume,
        a.guard.guard(),
        &log_to(reporter.as_ref(), "calibrate"),
        &|done, total| {
            match at_start.get() {
                None => at_start.set(Some(done)),
                Some(s) if done > s && last.get().is_none_or(|(_, n)| done > n) => {
                    let now = (Instant::now(), done);
                    first.set(first.get().or(Some(now)));
                    last.set(Some(now));
                }
                Some(_) => {}
            }
            tick(done, total);
        },
    )?;
    let r = report::build(&dir)?;
    export::write_all(&dir, &r)?;
    let measured_here = last
        .get()
        .map_or(0, |(_, n)| n.saturating_sub(at_start.get().unwrap_or(n)));
    let per_run = match (first.get(), last.get(), earlier_wall) {
        (Some((t0, n0)), Some((t1, n1)), _) if n1 > n0 => {
            (t1 - t0).as_secs_f64() / (n1 - n0) as f64
        }
        // Nothing measured here: the wall time recorded when the runs were measured.
        (_, _, Some(w)) if measured_here == 0 => w,
        // One run: its time includes the preparation, the best figure there is.
        _ => started.elapsed().as_secs_f64() / measured_here.max(1) as f64,
    };
    let cal = Calibration::from_cells(
        &a.binary,
        plan.spec.seconds,
        plan.spec.warmup_seconds,
        per_run,
        aa_cells(&r),
    );
    pgoforge::infra::fs::write_json(&calibrate::copy_in_run_dir(&dir), &cal)?;
    pgoforge::infra::fs::write_json(&calibrate::path(&work), &cal)?;
    let md = markdown::table(&calibration_table(&cal));
    pgoforge::infra::fs::write_atomic(&dir.join("calibration.md"), &md)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&cal)?);
        return Ok(0);
    }
    print_floor(&a, &plan, per_run, &md, &r, &work);
    println!("results and reports in {}", dir.display());
    Ok(0)
}

/// The benchmark of one binary against itself: `a` and `a-again`, interleaved in a Williams
/// design (a resumed calibration keeps its seed).
fn aa_plan(
    a: &CalibrateArgs,
    spec: pgoforge::bench::spec::BenchSpec,
    earlier_seed: Option<u64>,
) -> BenchPlan {
    let same = |name: &str| Contender {
        name: name.into(),
        binary: a.binary.clone(),
        buffer_pool_mb: None,
    };
    BenchPlan {
        contenders: vec![same(A), same(A_AGAIN)],
        spec,
        config: a.server.config(),
        pin: !a.no_pin,
        seed: a.seed.or(earlier_seed).unwrap_or_else(plan::fresh_seed),
        label: "calibration: A/A".into(),
        order_scheme: OrderScheme::Williams,
        reference_only: Vec::new(),
        trained_on: Vec::new(),
        training: Vec::new(),
        aa_control: None,
    }
}

/// Each cell's A/A pair: `a-again` against `a` as the report judged it, with both rounds.
fn aa_cells(r: &report::Report) -> Vec<AaCell<'_>> {
    r.cells
        .iter()
        .filter(|c| c.contender == A_AGAIN)
        .filter_map(|again| {
            let aa = again.tps_vs_baseline.as_ref()?;
            let a = r.cells.iter().find(|b| {
                b.contender == A && b.workload == again.workload && b.threads == again.threads
            })?;
            Some(AaCell {
                workload: &again.workload,
                threads: again.threads,
                a: &a.tps_rounds,
                a_again: &again.tps_rounds,
                aa,
            })
        })
        .collect()
}

/// The floor as the terminal shows it, with what made it and what "detectable" means.
fn print_floor(
    a: &CalibrateArgs,
    plan: &BenchPlan,
    per_run: f64,
    md: &str,
    r: &report::Report,
    work: &std::path::Path,
) {
    println!(
        "noise floor of {} against itself: {} rounds, runs of {} s after {} s of warm-up \
         ({:.0} s of wall time per run with server starts)",
        a.binary.display(),
        plan.spec.rounds,
        plan.spec.seconds,
        plan.spec.warmup_seconds,
        per_run
    );
    print!("{md}");
    // What made the floor what it is: the host's per-second noise and the CPU it lost to steal.
    for line in export::host_sentences(r) {
        println!("{line}");
    }
    println!(
        "\"detectable\": the smallest true change reported with 80% power under the rule \
         reports apply (the exact test at 5%, Holm, the 2% minimum change; simulated), and in \
         brackets the same at the ends of the floor's own 95% interval (a default run: 8 \
         rounds, 6 comparisons under Holm). Saved as {}; later benchmarks in this work dir flag \
         runs that scatter more than {}x this floor.",
        calibrate::path(work).display(),
        calibrate::UNSTABLE_OVER_FLOOR
    );
}
