//! One contender's server started for a round, and one measured run against it: what the
//! benchmark's rounds and the thread probe before them ([`super::saturate`]) both do.

use std::path::Path;

use anyhow::{Context, Result};
use oltp::settings::TestName;
use oltp::RunResult;

use super::client::Client;
use super::load::{Guard, Load, Meter};
use super::plan::{BenchPlan, Contender};
use crate::server::{template, ServerSpec};

/// What every server start and measured run of one benchmark invocation shares, the thread probe
/// and the rounds alike: the plan, the dataset template, the servers' common spec, the run
/// directory, the client and its CPUs, the busy-machine guard, the log.
#[derive(Clone, Copy)]
pub struct Bench<'a> {
    pub plan: &'a BenchPlan,
    pub tpl: &'a Path,
    pub base_spec: &'a ServerSpec,
    pub dir: &'a Path,
    pub client_cpus: &'a [usize],
    pub client: &'a Client,
    pub guard: Guard,
    pub log: &'a dyn Fn(&str),
}

/// Starts `c`'s server for `round` on the template's dataset, in the contender's own instance
/// directory under the run directory (kept from round to round, removed when the benchmark
/// ends), its buffer pool holding the whole dataset before any cell ([`crate::server::prewarm`]: a cold pool made the round's first
/// cell of a workload climb through its slices).
pub fn start_contender(
    c: &Contender,
    base_spec: ServerSpec,
    tpl: &Path,
    dir: &Path,
    round: u32,
    log: &dyn Fn(&str),
) -> Result<crate::server::Server> {
    let mut spec = ServerSpec {
        binary: c.binary.clone(),
        ..base_spec
    };
    if let Some(mb) = c.buffer_pool_mb {
        spec.config.buffer_pool_mb = mb;
    }
    // The last round's datadir, with only the files its server wrote restored from the template:
    // a copy of the whole dataset for every server and round cost as much as the round's cells
    // at seed 004's 7.7 GB, and read-only rounds write next to nothing (docs/bench/dataset-reset.md).
    let inst = instances_dir(dir).join(&c.name);
    let (srv, restored) = template::start_synced(tpl, &spec, &inst)
        .with_context(|| format!("starting {}", c.name))?;
    log(&format!(
        "round {round}: {}'s datadir: {} file(s) restored from the template ({} MiB)",
        c.name,
        restored.files,
        restored.bytes >> 20
    ));
    let cache = spec.config.engine.cache();
    let warm = srv
        .prewarm(spec.config.engine)
        .with_context(|| format!("reading the dataset into {}'s {cache}", c.name))?;
    match warm {
        // What it costs, once: every round does the same.
        Ok(w) if round == 1 => log(&format!(
            "round 1: {}'s {cache} prewarmed: {} tables ({} index scans), {} {}, {:.1} s",
            c.name,
            w.tables,
            w.scans,
            w.disk_reads,
            spec.config.engine.cache_reads(),
            w.seconds
        )),
        Ok(_) => {}
        Err(crate::server::prewarm::Skipped::TooLarge {
            data_bytes,
            pool_bytes,
        }) => log(&format!(
            "round {round}: {} starts cold: its dataset ({} MiB) does not fit in {}% of the {cache} \
             ({} MiB; {})",
            c.name,
            data_bytes >> 20,
            crate::server::prewarm::MAX_POOL_SHARE_PCT,
            pool_bytes >> 20,
            crate::bench::budget::pool_flag(c.buffer_pool_mb.is_some())
        )),
    }
    Ok(srv)
}

/// Where the contenders' datadirs live during a benchmark.
pub fn instances_dir(dir: &Path) -> std::path::PathBuf {
    dir.join("instances")
}

/// A warm-up of `warmup` seconds, then `seconds` measured (none: the warm-up alone).
#[allow(clippy::too_many_arguments)]
pub fn measure_for(
    plan: &BenchPlan,
    c: &Contender,
    srv: &crate::server::Server,
    w: TestName,
    t: u32,
    client_cpus: &[usize],
    client: &Client,
    warmup: u64,
    seconds: u64,
) -> Result<(RunResult, Option<Load>)> {
    let mut s = plan.spec.run_settings(w, plan.config.engine);
    s.conn = client.conn(srv);
    s.threads = t;
    s.client_cpus = client_cpus.to_vec();
    s.rand.seed = 0;
    s.report_interval_s = 1;
    s.ignore_errors = oltp::settings::IgnoreErrors::survivable();
    if warmup > 0 {
        s.time_s = warmup;
        let r = client
            .run(&s)
            .map_err(|e| anyhow::anyhow!("warm-up of {} {w}: {e:#}", c.name))?;
        if seconds == 0 {
            return Ok((r, None));
        }
    }
    s.time_s = seconds;
    let meter = Meter::start(srv.state.pid);
    let r = client
        .run(&s)
        .map_err(|e| anyhow::anyhow!("{} {w} {t} threads: {e:#}", c.name))?;
    // Which vCPUs each side had, for how busy it was: pinned apart, the client's set and the
    // rest; otherwise the whole machine each. A client on another host is not read here.
    let all = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    let pinned = client_cpus.len() as u32;
    let local = matches!(client, Client::Local { .. });
    let load = meter.and_then(|m| m.stop()).map(|l| Load {
        server_vcpus: Some(if pinned > 0 {
            all.saturating_sub(pinned).max(1)
        } else {
            all
        }),
        client_vcpus: local.then_some(if pinned > 0 { pinned } else { all }),
        ..l
    });
    Ok((r, load))
}
