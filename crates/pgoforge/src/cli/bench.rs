//! `pgoforge bench`: servers side by side (interleaved rounds, statistics, reports), or their
//! per-transaction counts under cachegrind.

use anyhow::Result;
use clap::{Args, ValueEnum};
use pgoforge::bench::cachegrind::{self, CgPlan};
use pgoforge::bench::export::document::cachegrind_table;
use pgoforge::bench::export::{self, markdown, text::text};
use pgoforge::bench::order::OrderScheme;
use pgoforge::bench::plan::{self, BenchPlan, Contender};
use pgoforge::bench::report;
use pgoforge::bench::{run, run_dir};
use pgoforge::events::{log_to, tick_to};

use pgoforge::server::config::Engine;
use pgoforge::server::ServerConfig;

use super::args::{
    contender, BenchSpecArgs, GuardArgs, RunDirArgs, ServerConfigArgs, SweepArgs, WorkDirArgs,
};

pub(super) fn parse_engine(s: &str) -> Result<Engine, String> {
    s.parse()
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Measure {
    /// Throughput and latency over interleaved rounds.
    Time,
    /// Instructions, I1 misses and mispredicted branches per transaction, counted under valgrind
    /// (deterministic; single connection).
    Cachegrind,
}

#[derive(Args)]
pub struct BenchArgs {
    /// The reference server, NAME=PATH.
    #[arg(long, value_parser = contender)]
    baseline: Contender,
    /// A server to compare with it, NAME=PATH (repeatable; e.g. a built variant or the distribution's).
    #[arg(long = "binary", value_parser = contender, required = true)]
    binaries: Vec<Contender>,
    #[command(flatten)]
    spec: BenchSpecArgs,
    #[command(flatten)]
    server: ServerConfigArgs,
    #[command(flatten)]
    guard: GuardArgs,
    /// The engine of the benchmark's tables: innodb, or rocksdb (MyRocks, loaded from the
    /// plugin beside each server: a build tree's storage/rocksdb, an installed lib/mysql/plugin);
    /// the buffer pool's memory becomes MyRocks' block cache.
    #[arg(long, default_value = "innodb", value_parser = parse_engine)]
    engine: Engine,
    #[command(flatten)]
    sweep: SweepArgs,
    /// Do not pin server and client to disjoint CPUs.
    #[arg(long = "no-pin")]
    no_pin: bool,
    #[command(flatten)]
    work: WorkDirArgs,
    #[command(flatten)]
    run_dir: RunDirArgs,
    #[arg(long, value_enum, default_value_t = Measure::Time)]
    measure: Measure,
    /// Measured transactions per workload with --measure cachegrind (0: 10000 point selects, 1000
    /// of the other workloads; a replay: whole passes over its file, at least 10000 statements).
    #[arg(long, default_value_t = 0)]
    events: u64,
    /// Transactions before measuring with --measure cachegrind.
    #[arg(long = "warmup-events", default_value_t = 100)]
    warmup_events: u64,
    /// The seed of the round orders, to replay a benchmark's design [a fresh one].
    #[arg(long)]
    seed: Option<u64>,
    /// Leave out the A/A control. By default the baseline is served again (`baseline-again`,
    /// interleaved like every contender, never a claim) and the report states this benchmark's
    /// own noise and the smallest change it could detect; it costs one contender's share of the
    /// time. (Not with --measure cachegrind, whose counts have no such noise. In a
    /// --sweep-buffer-pool-mb the control runs at the first size only.)
    #[arg(long = "no-aa")]
    no_aa: bool,
    /// The A/A control, asked for explicitly (the default): refused with what cannot have one.
    #[arg(long, hide = true)]
    aa: bool,
    /// Print the report as JSON (progress events go to stderr as JSON lines).
    #[arg(long)]
    json: bool,
}

/// The plan of the benchmark being resumed in `dir`: continuing it must not draw a new seed or
/// order scheme (one begun plain stays plain: bench/design.rs, `as_run`).
pub(super) fn resumed_design(dir: &std::path::Path, resume: bool) -> Option<BenchPlan> {
    resume.then(|| run_dir::read_plan(dir)).flatten()
}

pub fn main(a: BenchArgs) -> Result<i32> {
    a.spec.check_ssh_config(false);
    let spec = a.spec.spec(false);
    if let Err(e) = spec.check() {
        super::usage_error(e);
    }
    let mut contenders = vec![a.baseline.clone()];
    contenders.extend(a.binaries.iter().cloned());
    // The default A/A control, left out (and said) where it cannot be; asked for explicitly there,
    // refused.
    let control = !a.no_aa && a.measure == Measure::Time;
    if !a.no_aa && !control && !a.aa {
        eprintln!(
            "note: no A/A control in this benchmark (--measure cachegrind counts instructions, \
             which do not scatter like time): the report cannot state its own noise"
        );
    }
    if control {
        if contenders.iter().any(|c| c.name == plan::AA_CONTROL) {
            super::usage_error(format!(
                "the A/A control runs as {}; name yours otherwise (or leave the control out with --no-aa)",
                plan::AA_CONTROL
            ));
        }
        contenders.push(Contender {
            name: plan::AA_CONTROL.into(),
            ..a.baseline.clone()
        });
    }
    let config = ServerConfig {
        engine: a.engine,
        ..a.server.config()
    };
    // A server without the engine's plugin is refused before anything starts.
    for c in &contenders {
        let layout = pgoforge::server::Layout::discover(&c.binary, None, None);
        if let Err(e) = layout.engine_plugin_dir(a.engine, &c.binary) {
            super::usage_error(format!("{}: {e:#}", c.name));
        }
    }
    let (work, _lock) = a.work.locked()?;
    let dir = a.run_dir.dir(&work, "bench")?;
    let resume = a.run_dir.resume;
    let reporter = super::reporter(a.json);
    if a.measure == Measure::Cachegrind {
        let plan = CgPlan {
            contenders,
            workloads: spec.workloads.clone(),
            events: a.events,
            warmup_events: a.warmup_events,
            tables: spec.tables,
            table_size: spec.table_size,
            config: config.clone(),
            replay: spec.replay.clone(),
        };
        let recs = cachegrind::measure(
            &plan,
            &work,
            &dir,
            resume,
            &log_to(reporter.as_ref(), "cachegrind"),
        )?;
        let md = markdown::table(&cachegrind_table(&recs, &plan.contenders[0].name));
        pgoforge::infra::fs::write_atomic(&dir.join("cachegrind.md"), &md)?;
        if a.json {
            println!("{}", serde_json::to_string_pretty(&recs)?);
        } else {
            print!("{md}");
            println!("results in {}", dir.display());
        }
        return Ok(0);
    }
    let resumed = resumed_design(&dir, resume);
    let mut plan = BenchPlan {
        contenders,
        spec,
        config: config.clone(),
        pin: !a.no_pin,
        seed: a
            .seed
            .or(resumed.as_ref().map(|r| r.seed))
            .unwrap_or_else(plan::fresh_seed),
        label: String::new(),
        order_scheme: resumed.map_or(OrderScheme::Williams, |r| r.order_scheme),
        reference_only: Vec::new(),
        trained_on: Vec::new(),
        training: Vec::new(),
        aa_control: control.then(|| plan::AA_CONTROL.into()),
    };
    sweep_and_rounds(&mut plan, &a.sweep.buffer_pool_mb, !a.spec.rounds_given());
    check_budget(&plan, &work);
    let secs = pgoforge::bench::estimate::wall_time(&plan.spec, &plan.server_pools()).as_secs();
    if let Some(e) = a.guard.too_long(secs) {
        super::usage_error(e);
    }
    run::benchmark(
        &plan,
        &work,
        &dir,
        resume,
        a.guard.guard(),
        &log_to(reporter.as_ref(), "benchmark"),
        &tick_to(reporter.as_ref(), "benchmark"),
    )?;
    let r = report::build(&dir)?;
    export::write_all(&dir, &r)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
        return Ok(0);
    }
    print!("{}", text(&r));
    println!("results and reports in {}", dir.display());
    Ok(0)
}

/// The plan's buffer-pool sweep (refused, exit 2, where it cannot run), and unless `--rounds`
/// was given the rounds its comparisons need.
fn sweep_and_rounds(plan: &mut BenchPlan, sizes: &[u64], choose_rounds: bool) {
    let names = plan.contenders.iter().map(|c| c.name.as_str());
    if let Some(e) = plan::sweep_refusal(names, sizes) {
        super::usage_error(e);
    }
    plan.sweep_buffer_pool(sizes);
    if choose_rounds {
        // Every contender beyond the first of each buffer pool size is compared with it; the
        // other sizes' baselines are compared with nothing, as the control.
        let uncompared = usize::from(plan.aa_control.is_some()) + sizes.len().max(1) - 1;
        let n = plan.contenders.len();
        plan.spec = plan
            .spec
            .clone()
            .with_rounds_for(n, uncompared, plan.order_scheme);
    }
}

/// Refuses (exit 2) a benchmark whose dataset copies or largest buffer pool this machine cannot
/// hold, before any server starts.
fn check_budget(plan: &BenchPlan, work: &std::path::Path) {
    use pgoforge::bench::budget;
    let Some(m) = budget::Machine::probe(work) else {
        return;
    };
    // The largest pool a contender runs with is the one that must fit (in a sweep every
    // contender has its own, and the plan's default is then no server's).
    let mut config = plan.config.clone();
    config.buffer_pool_mb = plan
        .server_pools()
        .into_iter()
        .max()
        .unwrap_or(config.buffer_pool_mb);
    let flag = budget::pool_flag(plan.contenders.iter().any(|c| c.buffer_pool_mb.is_some()));
    if let Err(e) = budget::check(&plan.spec, &config, plan.contenders.len(), &m, flag) {
        super::usage_error(e);
    }
}
