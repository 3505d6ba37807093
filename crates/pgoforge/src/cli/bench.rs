//! `pgoforge bench` and `pgoforge report`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use oltp::settings::TestName;
use pgoforge::bench::cachegrind::{self, CgPlan};
use pgoforge::bench::report;
use pgoforge::bench::run::{self, Contender, Plan};
use pgoforge::server::ServerConfig;

fn contender(s: &str) -> Result<Contender, String> {
    let (n, p) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}' is not NAME=PATH"))?;
    if n.is_empty() || n.contains(['/', ' ']) {
        return Err(format!("'{n}' is not a usable name (no spaces or slashes)"));
    }
    Ok(Contender {
        name: n.into(),
        binary: PathBuf::from(p),
        buffer_pool_mb: None,
    })
}

#[derive(Args)]
pub struct BenchArgs {
    /// The reference server, NAME=PATH.
    #[arg(long, value_parser = contender)]
    baseline: Contender,
    /// A server to compare with it, NAME=PATH (repeatable; e.g. a built variant or the distribution's).
    #[arg(long = "binary", value_parser = contender, required = true)]
    binaries: Vec<Contender>,
    /// Workloads, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "oltp_point_select,oltp_read_only,oltp_read_write"
    )]
    workloads: Vec<TestName>,
    /// Client thread counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "4")]
    threads: Vec<u32>,
    #[arg(long, default_value_t = 5)]
    rounds: u32,
    /// Seconds per measured run.
    #[arg(long, default_value_t = 30)]
    time: u64,
    /// Seconds of warm-up before each measured run.
    #[arg(long, default_value_t = 5)]
    warmup: u64,
    #[arg(long, default_value_t = 4)]
    tables: u32,
    #[arg(long = "table-size", default_value_t = 100_000)]
    table_size: u64,
    #[arg(long = "buffer-pool-mb", default_value_t = 2048)]
    buffer_pool_mb: u64,
    /// Sweep the buffer pool: run every contender at each size (MiB, comma-separated).
    #[arg(long = "sweep-buffer-pool-mb", value_delimiter = ',')]
    sweep_buffer_pool_mb: Vec<u64>,
    /// Do not pin server and client to disjoint CPUs.
    #[arg(long = "no-pin")]
    no_pin: bool,
    #[arg(long = "work-dir", default_value = "pgoforge-work")]
    work_dir: PathBuf,
    /// The run directory (default WORK/runs/<time>).
    #[arg(long)]
    run: Option<PathBuf>,
    /// Continue an interrupted run in --run.
    #[arg(long)]
    resume: bool,
    /// time: throughput over rounds; cachegrind: instructions, I1 misses and mispredicted branches
    /// per transaction, counted under valgrind (deterministic; single connection).
    #[arg(long, default_value = "time", value_parser = ["time", "cachegrind"])]
    measure: String,
    /// Measured transactions per workload with --measure cachegrind (0: 10000 point selects, 1000
    /// of the other workloads).
    #[arg(long, default_value_t = 0)]
    events: u64,
    /// Transactions before measuring with --measure cachegrind.
    #[arg(long = "warmup-events", default_value_t = 100)]
    warmup_events: u64,
}

pub fn bench_main(a: BenchArgs) -> Result<i32> {
    if a.rounds == 0 || a.time == 0 || a.threads.contains(&0) {
        super::usage_error("--rounds, --time and --threads must be at least 1");
    }
    let mut contenders = vec![a.baseline.clone()];
    contenders.extend(a.binaries.iter().cloned());
    if a.measure == "cachegrind" {
        return cachegrind_main(&a, contenders);
    }
    let mut plan = Plan {
        contenders,
        workloads: a.workloads.clone(),
        threads: a.threads.clone(),
        rounds: a.rounds,
        seconds: a.time,
        warmup_seconds: a.warmup,
        tables: a.tables,
        table_size: a.table_size,
        config: ServerConfig {
            buffer_pool_mb: a.buffer_pool_mb,
            ..ServerConfig::default()
        },
        pin: !a.no_pin,
        seed: 2026,
        label: String::new(),
    };
    plan.sweep_buffer_pool(&a.sweep_buffer_pool_mb);
    std::fs::create_dir_all(&a.work_dir)?;
    let work = std::fs::canonicalize(&a.work_dir)?;
    let dir = run_dir(&a, &work);
    pgoforge::pipeline::with_progress(
        true,
        "benchmark",
        true,
        &|l| eprintln!("  {l}"),
        |log, tick| run::run_with_progress(&plan, &work, &dir, a.resume, log, tick),
    )?;
    let r = report::build(&dir)?;
    report::write_all(&dir, &r)?;
    print!("{}", report::text(&r));
    println!("results and reports in {}", dir.display());
    Ok(0)
}

fn run_dir(a: &BenchArgs, work: &std::path::Path) -> PathBuf {
    match &a.run {
        Some(d) => d.clone(),
        None => work
            .join("runs")
            .join(format!("bench-{}", pgoforge::profile::now_secs())),
    }
}

fn cachegrind_main(a: &BenchArgs, contenders: Vec<Contender>) -> Result<i32> {
    let plan = CgPlan {
        contenders,
        workloads: a.workloads.clone(),
        events: a.events,
        warmup_events: a.warmup_events,
        tables: a.tables,
        table_size: a.table_size,
        config: ServerConfig {
            buffer_pool_mb: a.buffer_pool_mb,
            ..ServerConfig::default()
        },
    };
    std::fs::create_dir_all(&a.work_dir)?;
    let work = std::fs::canonicalize(&a.work_dir)?;
    let dir = run_dir(a, &work);
    let recs = cachegrind::measure(&plan, &work, &dir, a.resume, &|l| eprintln!("  {l}"))?;
    let md = cachegrind::markdown(&recs, &plan.contenders[0].name);
    std::fs::write(dir.join("cachegrind.md"), &md)?;
    print!("{md}");
    println!("results in {}", dir.display());
    Ok(0)
}

#[derive(Args)]
pub struct ReportArgs {
    /// A run directory made by `pgoforge bench`.
    run: PathBuf,
    /// What to print: text, md, json or csv (all are written into the run directory).
    #[arg(long, default_value = "text", value_parser = ["text", "md", "json", "csv"])]
    format: String,
    /// Compare with this contender instead of the run's baseline (e.g. pgo, to see what BOLT adds);
    /// printed only, the stored reports keep the run's baseline.
    #[arg(long)]
    baseline: Option<String>,
}

pub fn report_main(a: ReportArgs) -> Result<i32> {
    let cg_plan = cachegrind::plan_path(&a.run);
    if !run::plan_path(&a.run).exists() && cg_plan.exists() {
        let plan: CgPlan = serde_json::from_str(&std::fs::read_to_string(&cg_plan)?)?;
        let recs = cachegrind::read_records(&a.run)?;
        print!("{}", cachegrind::markdown(&recs, &plan.contenders[0].name));
        return Ok(0);
    }
    let r = match &a.baseline {
        Some(b) => report::build_against(&a.run, Some(b))?,
        None => {
            let r = report::build(&a.run)?;
            report::write_all(&a.run, &r)?;
            r
        }
    };
    let out = match a.format.as_str() {
        "md" => report::markdown(&r),
        "json" => serde_json::to_string_pretty(&r)?,
        "csv" => report::csv(&r),
        _ => report::text(&r),
    };
    print!("{out}");
    Ok(0)
}
