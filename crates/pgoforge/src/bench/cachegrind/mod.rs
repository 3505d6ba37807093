//! Deterministic measurement (`pgoforge bench --measure cachegrind`): each contender's server runs
//! under valgrind's cachegrind, which counts instructions and simulates the caches and branch
//! predictors, so the figures repeat where wall-clock throughput on a shared VM does not.
//!
//! Each cell (contender × workload) starts the server twice from the same dataset template, each
//! time under cachegrind: once for the warm-up plus the measured events, once for the warm-up
//! followed by as long idle as the measured events took, both single-connection with the same seed.
//! The difference of the two counts divided by the measured events is the cost per transaction:
//! start-up, dataset warm-up and shutdown cancel out, and so does the server's timer-driven
//! background work (which grows with wall time, and under valgrind wall time is long). The cache
//! geometry is fixed (not the host's), so figures compare across machines.
//!
//! The replay workload (the user's own statements) is measured the same way; its event is one
//! statement, and by default the measured events are whole passes over the file ([`replay_events`]).

use std::collections::HashMap;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use oltp::settings::{Settings, TestName};
use serde::{Deserialize, Serialize};

use super::plan::Contender;
use crate::server::{template, Flavor, ServerConfig, ServerSpec};

mod events;
mod records;
mod valgrind;

use events::auto_events_of;
pub use events::{auto_events, replay_events, REPLAY_MIN_EVENTS};
pub use records::{
    parse_counts, per_txn, read_records, read_skipped, records_path, skipped_path, CgRecord,
    CgSkip, Counts, PerTxn,
};
use valgrind::{measurable, valgrind_settings};

/// The simulated caches: 32 KiB 8-way L1s and an 8 MiB 16-way last level, 64-byte lines.
pub const CACHES: [&str; 3] = ["--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64"];

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CgPlan {
    /// The first is the baseline.
    pub contenders: Vec<Contender>,
    pub workloads: Vec<TestName>,
    /// Measured transactions per cell; 0: [`auto_events`].
    pub events: u64,
    /// Transactions run before measuring (in both runs of a cell).
    pub warmup_events: u64,
    pub tables: u32,
    pub table_size: u64,
    pub config: ServerConfig,
    /// The replay workload's file and data, when `workloads` holds it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<template::Replay>,
}

/// The OLTP tables (count, rows) a run's cachegrind measurement loads for the benchmark `spec`:
/// one table of 10 000 rows, which keeps servers under valgrind quick to warm — except that a
/// replay without data of its own runs against the OLTP tables, and must find the tables it found
/// in the timed run.
pub fn oltp_tables_for(spec: &super::spec::BenchSpec) -> (u32, u64) {
    let replay_on_oltp_tables = spec.workloads.contains(&TestName::Replay)
        && spec
            .replay
            .as_ref()
            .is_some_and(|r| r.options.dataset.is_none() && r.options.datadir.is_none());
    match replay_on_oltp_tables {
        true => (spec.tables, spec.table_size),
        false => (1, 10_000),
    }
}

/// A new measurement directory gets the plan; an existing one must hold the same plan and is
/// continued only when asked to.
fn open_measurement(plan: &CgPlan, dir: &Path, resume: bool) -> Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let pp = plan_path(dir);
    let Ok(old) = fs::read_to_string(&pp) else {
        return crate::infra::fs::write_json(&pp, plan);
    };
    let old: CgPlan =
        serde_json::from_str(&old).with_context(|| format!("reading {}", pp.display()))?;
    if !resume || old != *plan {
        bail!(
            "{} already holds a cachegrind measurement{}; choose another --run",
            dir.display(),
            if resume {
                " with a different plan"
            } else {
                " (pass --resume to continue it)"
            }
        );
    }
    Ok(())
}

/// One contender on one workload: the warm-up plus the measured events, then the warm-up plus as
/// long idle, and their difference per transaction.
#[allow(clippy::too_many_arguments)]
fn measure_one(
    plan: &CgPlan,
    c: &Contender,
    w: TestName,
    tpl: &Path,
    spec: &ServerSpec,
    dir: &Path,
    log: &dyn Fn(&str),
) -> Result<CgRecord> {
    // tpcc at its default size, like the OLTP tables' small one: quick to warm under valgrind.
    let mut s = template::run_settings(
        w,
        plan.tables,
        plan.table_size,
        Default::default(),
        plan.config.engine,
        plan.replay.as_ref(),
    );
    s.threads = 1;
    s.time_s = 0;
    s.rand.seed = 7;
    let events = match plan.events {
        0 => auto_events_of(w, &s)?,
        n => n,
    };
    let inst = dir.join("instances").join(format!("{}-{w}", c.name));
    log(&format!(
        "cachegrind: {} {w}: warm-up + {events} events",
        c.name
    ));
    let Measured {
        counts: long,
        functions: long_fns,
        took,
        failed,
    } = run_once(
        tpl,
        spec,
        &inst,
        &s,
        plan.warmup_events,
        events,
        Duration::ZERO,
    )
    .with_context(|| format!("{} {w} under cachegrind", c.name))?;
    log(&format!(
        "cachegrind: {} {w}: warm-up + {:.1} s idle",
        c.name,
        took.as_secs_f64()
    ));
    let Measured {
        counts: short,
        functions: short_fns,
        ..
    } = run_once(tpl, spec, &inst, &s, plan.warmup_events, 0, took)
        .with_context(|| format!("{} {w} under cachegrind", c.name))?;
    let _ = fs::remove_dir_all(&inst);
    let rec = CgRecord {
        contender: c.name.clone(),
        workload: w,
        events,
        per_txn: per_txn(&short, &long, events),
        short,
        long,
        failed_statements: failed,
        functions: super::hot_functions::per_txn(&short_fns, &long_fns, events),
    };
    if let Some(n) = failed.filter(|n| *n > 0) {
        // Counted, not fatal (a logged application's statements fail too), but the figures then
        // include the error paths, which the user should know.
        log(&format!(
            "cachegrind: {} {w}: {n} of {events} measured statements failed",
            c.name
        ));
    }
    log(&format!(
        "cachegrind: {} {w}: {:.0} instructions, {:.0} I1 misses, {:.0} mispredicts per transaction",
        c.name, rec.per_txn.instructions, rec.per_txn.i1_misses, rec.per_txn.mispredicts
    ));
    Ok(rec)
}

/// One server's run under cachegrind: its totals, its instructions per function, how long the
/// measured part (or the idle) took, and a replay's failed statements.
struct Measured {
    counts: Counts,
    functions: HashMap<String, u64>,
    took: Duration,
    failed: Option<u64>,
}

fn run_once(
    tpl: &Path,
    spec: &ServerSpec,
    inst: &Path,
    settings: &Settings,
    warmup: u64,
    measured: u64,
    idle: Duration,
) -> Result<Measured> {
    let _ = fs::remove_dir_all(inst);
    fs::create_dir_all(inst)?;
    let out_file = inst.join("cachegrind.out");
    let mut spec = spec.clone();
    spec.wrapper = vec![
        "valgrind".into(),
        "--tool=cachegrind".into(),
        "--cache-sim=yes".into(),
        "--branch-sim=yes".into(),
        format!("--cachegrind-out-file={}", out_file.display()),
    ];
    spec.wrapper.extend(CACHES.iter().map(|s| s.to_string()));
    let server_dir = inst.join("server");
    let mut srv = template::start_copy(tpl, &spec, &server_dir)?;
    let mut s = settings.clone();
    s.conn = srv.state.conn_settings();
    if warmup > 0 {
        s.events = warmup;
        oltp::run(&s, &mut oltp::Quiet).map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    let t0 = Instant::now();
    let mut failed = None;
    if measured > 0 {
        s.events = measured;
        let r = oltp::run(&s, &mut oltp::Quiet).map_err(|e| anyhow::anyhow!("{e}"))?;
        failed = r.replay.map(|c| c.errors_by_code.values().sum());
    }
    std::thread::sleep(idle);
    let took = t0.elapsed();
    srv.stop()?;
    let text = fs::read_to_string(&out_file).with_context(|| {
        format!(
            "reading {} (cachegrind writes it when the server exits)",
            out_file.display()
        )
    })?;
    Ok(Measured {
        counts: parse_counts(&text)?,
        functions: super::hot_functions::parse(&text),
        took,
        failed,
    })
}

pub fn plan_path(dir: &Path) -> PathBuf {
    dir.join("cachegrind-plan.json")
}

/// Measures every cell of `plan` into `dir/cachegrind.jsonl`. With `resume`, continues a
/// measurement of the same plan already there (its cells are kept); a different plan is refused.
pub fn measure(
    plan: &CgPlan,
    work_dir: &Path,
    dir: &Path,
    resume: bool,
    log: &dyn Fn(&str),
) -> Result<Vec<CgRecord>> {
    crate::infra::tools::require("valgrind", "--measure cachegrind")?;
    open_measurement(plan, dir, resume)?;
    let mut done = read_records(dir)?;
    super::run_dir::drop_torn_tail(&records_path(dir))?;
    let mut out = OpenOptions::new()
        .create(true)
        .append(true)
        .open(records_path(dir))?;
    let data = template::datasets(
        &plan.workloads,
        plan.tables,
        plan.table_size,
        Default::default(),
        plan.config.engine,
        plan.replay.as_ref(),
    );
    let base = ServerSpec {
        config: plan.config.clone(),
        // Under valgrind a server starts and stops many times slower.
        start_timeout: Duration::from_secs(600),
        stop_timeout: Duration::from_secs(600),
        ..ServerSpec::new(&plan.contenders[0].binary)
    };
    let tpl = template::ensure(work_dir, &base, &data)?;
    let mut skipped = read_skipped(dir)?;
    for c in &plan.contenders {
        let missing = plan.workloads.iter().any(|w| {
            !done
                .iter()
                .any(|r| r.contender == c.name && r.workload == *w)
        });
        if !missing || skipped.iter().any(|s| s.contender == c.name) {
            continue;
        }
        let binary = match measurable(&c.binary, log) {
            Ok(b) => b,
            Err(reason) => {
                log(&format!("cachegrind: {} not measured: {reason}", c.name));
                skipped.push(CgSkip {
                    contender: c.name.clone(),
                    reason,
                });
                crate::infra::fs::write_json(&skipped_path(dir), &skipped)?;
                continue;
            }
        };
        let flavor = Flavor::detect(&c.binary)?;
        let mut spec = ServerSpec {
            binary,
            ..base.clone()
        };
        spec.config.extra.extend(valgrind_settings(
            &c.binary,
            &flavor,
            plan.config.buffer_pool_mb,
        )?);
        for &w in &plan.workloads {
            if done
                .iter()
                .any(|r| r.contender == c.name && r.workload == w)
            {
                continue;
            }
            let rec = measure_one(plan, c, w, &tpl, &spec, dir, log)?;
            writeln!(out, "{}", serde_json::to_string(&rec)?)?;
            out.sync_data()?;
            done.push(rec);
        }
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replay_without_data_of_its_own_is_measured_on_the_benchmarks_tables() {
        use crate::bench::spec::BenchSpec;
        let mut spec = BenchSpec::standard();
        assert_eq!(oltp_tables_for(&spec), (1, 10_000));
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("w.sql");
        fs::write(&file, "SELECT c FROM sbtest3 WHERE id = 5;\n").unwrap();
        let replay = |dataset: Option<PathBuf>| {
            template::Replay::new(oltp::replay::ReplayOptions {
                file: file.clone(),
                dataset,
                ..Default::default()
            })
            .unwrap()
        };
        spec.workloads.push(TestName::Replay);
        spec.replay = Some(replay(None));
        assert_eq!(oltp_tables_for(&spec), (4, 100_000));
        // With its own dump the statements need nothing of the OLTP tables.
        let dump = dir.path().join("d.sql");
        fs::write(&dump, "CREATE TABLE t (id INT PRIMARY KEY);\n").unwrap();
        spec.replay = Some(replay(Some(dump)));
        assert_eq!(oltp_tables_for(&spec), (1, 10_000));
    }
}
