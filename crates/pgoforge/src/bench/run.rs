//! Running a benchmark: contenders × workloads × thread counts × rounds, interleaved.
//!
//! Every round starts each contender from a fresh copy of one prepared datadir template, runs a
//! warm-up and then each cell, in a new random contender order per round, so that drift hits all
//! alike; with a target interval width ([`super::adaptive`]) rounds are added until it is met.
//! Each measured run's full driver result is appended to results.jsonl as soon as it ends;
//! an interrupted benchmark keeps what finished and `resume` continues it.

use std::collections::HashSet;
use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use oltp::rng::SbRng;
use oltp::settings::{Settings, TestName};
use oltp::RunResult;
use serde::{Deserialize, Serialize};

use super::load::{wait_until_quiet, Load, Meter};
use super::spec::BenchSpec;
use crate::server::{cpu, template, ServerConfig, ServerSpec};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Contender {
    pub name: String,
    pub binary: PathBuf,
    /// A buffer pool size for this contender (a settings sweep); the plan's otherwise.
    #[serde(default)]
    pub buffer_pool_mb: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// The first is the baseline every other is compared with.
    pub contenders: Vec<Contender>,
    /// Flattened: plan.json keeps the fields (and their order) it always had.
    #[serde(flatten)]
    pub spec: BenchSpec,
    pub config: ServerConfig,
    /// Pin server and client to disjoint CPU sets when the machine has two or more CPUs.
    pub pin: bool,
    /// Seeds the per-round contender order.
    pub seed: u64,
    /// Free text recorded with the results (recipe, flags, source hash...).
    pub label: String,
    /// How round orders are made: 0 (plans written before this field) an independent shuffle per
    /// round; 1 balanced blocks ([`round_order`]). Absent from plans that have 0, so they keep
    /// their hash (and run directory).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub order_scheme: u32,
    /// Contenders compared for reference only (not built by the run, never the winner).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reference_only: Vec<String>,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// The order scheme new plans use.
pub const BALANCED_ORDERS: u32 = 1;

/// A seed for a new benchmark's round orders, from the kernel's random source.
pub fn fresh_seed() -> u64 {
    let b: [u8; 8] = crate::infra::random_bytes().unwrap_or_default();
    // Never 0 (the clock's seed in the driver's convention); a read failure still varies.
    u64::from_le_bytes(b) ^ crate::infra::time::now_secs() | 1
}

impl Plan {
    /// The contender `c` is compared with: the first one with the same server settings.
    pub fn baseline_for(&self, c: &Contender) -> &Contender {
        self.contenders
            .iter()
            .find(|b| b.buffer_pool_mb == c.buffer_pool_mb)
            .unwrap_or(&self.contenders[0])
    }

    /// Each contender once per buffer pool size, named `name@bpN`.
    pub fn sweep_buffer_pool(&mut self, sizes: &[u64]) {
        if sizes.is_empty() {
            return;
        }
        let base = std::mem::take(&mut self.contenders);
        for &mb in sizes {
            for c in &base {
                self.contenders.push(Contender {
                    name: format!("{}@bp{mb}", c.name),
                    binary: c.binary.clone(),
                    buffer_pool_mb: Some(mb),
                });
            }
        }
    }
}

/// The machine and the builds, recorded when the benchmark starts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    pub cpu: String,
    pub cpus: usize,
    pub kernel: String,
    pub server_versions: std::collections::BTreeMap<String, String>,
    /// For contenders pgoforge built: recipe, variant, compiler, flags, source hash.
    #[serde(default)]
    pub builds: std::collections::BTreeMap<String, String>,
}

impl Environment {
    pub fn probe(plan: &Plan) -> Environment {
        let cpu = fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|c| {
                c.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split(':').nth(1))
                    .map(|s| s.trim().to_string())
            })
            .unwrap_or_default();
        let kernel = fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
            .to_string();
        let mut builds = std::collections::BTreeMap::new();
        for c in &plan.contenders {
            // A pgoforge build: WORK/builds/<name>/build.json above the binary.
            let record = c
                .binary
                .ancestors()
                .find_map(|d| fs::read_to_string(d.join("build.json")).ok());
            if let Some(b) =
                record.and_then(|t| serde_json::from_str::<crate::builder::BuildOutput>(&t).ok())
            {
                builds.insert(
                    c.name.clone(),
                    format!(
                        "{} {} with {}; flags: {} | {}; source {}",
                        b.recipe,
                        b.variant,
                        b.compiler.version,
                        b.flags.cflags.join(" "),
                        b.flags.ldflags.join(" "),
                        &b.source_hash[..12.min(b.source_hash.len())]
                    ),
                );
            }
        }
        Environment {
            cpu,
            cpus: cpu::online(),
            kernel,
            server_versions: Default::default(),
            builds,
        }
    }
}

/// One line of results.jsonl.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub round: u32,
    /// Position of the contender in this round's order (0 = ran first).
    pub position: usize,
    pub contender: String,
    pub workload: TestName,
    pub threads: u32,
    pub result: RunResult,
    /// The machine around the measured run (absent in results recorded before it was sampled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load: Option<Load>,
}

/// What the benchmark does when the machine is busy.
#[derive(Clone, Copy, Debug)]
pub struct Guard {
    /// Measure anyway (the report still flags disturbed runs).
    pub allow_busy: bool,
    /// How long to wait for a busy machine to calm down before giving up.
    pub patience: std::time::Duration,
}

impl Guard {
    /// Wait up to 10 minutes for quiet, then refuse.
    pub fn strict() -> Guard {
        Guard {
            allow_busy: false,
            patience: std::time::Duration::from_secs(600),
        }
    }

    /// Measure whatever else runs (tests, which share the machine with other tests).
    pub fn allow_busy() -> Guard {
        Guard {
            allow_busy: true,
            patience: std::time::Duration::ZERO,
        }
    }
}

/// The run directory's plan.json: what was asked, so a resume or a report knows.
pub fn plan_path(dir: &Path) -> PathBuf {
    dir.join("plan.json")
}

pub fn results_path(dir: &Path) -> PathBuf {
    dir.join("results.jsonl")
}

/// Reads results.jsonl; a torn last line (a crash mid-write) is ignored, any other bad line is an error.
pub fn read_records(dir: &Path) -> Result<Vec<Record>> {
    let p = results_path(dir);
    let f = match File::open(&p) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("opening {}", p.display())),
    };
    let lines: Vec<String> = BufReader::new(f).lines().collect::<Result<_, _>>()?;
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Record>(l) {
            Ok(r) => out.push(r),
            Err(_) if i + 1 == lines.len() => break,
            Err(e) => bail!(
                "{} line {} is corrupted ({e}); nothing was overwritten",
                p.display(),
                i + 1
            ),
        }
    }
    Ok(out)
}

/// Cuts a line left half-written by a crash, so that appending continues a well-formed file.
fn drop_torn_tail(p: &Path) -> Result<()> {
    let Ok(text) = fs::read_to_string(p) else {
        return Ok(());
    };
    if text.is_empty() || text.ends_with('\n') {
        return Ok(());
    }
    let keep = text.rfind('\n').map_or(0, |i| i + 1);
    let f = OpenOptions::new().write(true).open(p)?;
    f.set_len(keep as u64)?;
    Ok(())
}

fn shuffle(v: &mut [usize], rng: &mut SbRng) {
    for i in (1..v.len()).rev() {
        let j = rng.uniform(0, i as u32) as usize;
        v.swap(i, j);
    }
}

/// Round `round`'s contender order under `scheme` (seeded, so a resume repeats it).
///
/// Balanced (scheme 1): rounds come in blocks of `n`; each block uses the `n` rotations of one
/// random permutation (a cyclic Latin square) in a random row order, so within every complete block
/// each contender runs once in each position — no contender is always first or last — and which
/// contender follows which still varies. Scheme 0: an independent shuffle per round, as plans made
/// before balancing were run.
pub fn round_order(n: usize, round: u32, seed: u64, scheme: u32) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..n).collect();
    if scheme == 0 {
        let mut rng = SbRng::new(seed, round as u64 + 1);
        shuffle(&mut idx, &mut rng);
        return idx;
    }
    if n == 0 {
        return idx;
    }
    let r = (round.max(1) - 1) as usize;
    let (block, row) = (r / n, r % n);
    let mut rng = SbRng::new(seed, 1_000_003 + block as u64);
    shuffle(&mut idx, &mut rng);
    let mut rows: Vec<usize> = (0..n).collect();
    shuffle(&mut rows, &mut rng);
    let k = rows[row];
    (0..n).map(|i| idx[(i + k) % n]).collect()
}

/// The benchmark's dataset (the template's shape; each run then sets its test and threads).
fn dataset(plan: &Plan) -> Settings {
    template::oltp_dataset(plan.spec.tables, plan.spec.table_size)
}

/// Runs the plan into `dir` (created if needed); with `resume`, continues a run already there.
pub fn run(
    plan: &Plan,
    work_dir: &Path,
    dir: &Path,
    resume: bool,
    guard: Guard,
    log: &dyn Fn(&str),
) -> Result<()> {
    run_with_progress(plan, work_dir, dir, resume, guard, log, &|_, _| {})
}

/// As [`run`], calling `tick(done, total)` with the count of measured runs (resumed ones included)
/// before the first and after each one.
pub fn run_with_progress(
    plan: &Plan,
    work_dir: &Path,
    dir: &Path,
    resume: bool,
    guard: Guard,
    log: &dyn Fn(&str),
    tick: &dyn Fn(u64, u64),
) -> Result<()> {
    check_contenders(plan)?;
    open_run_dir(plan, dir, resume)?;
    drop_torn_tail(&results_path(dir))?;
    let done: HashSet<(u32, String, TestName, u32)> = read_records(dir)?
        .into_iter()
        .map(|r| (r.round, r.contender, r.workload, r.threads))
        .collect();
    let floor = super::calibrate::path(work_dir);
    let copy = super::calibrate::run_copy(dir);
    if floor.is_file() && !copy.exists() && done.is_empty() {
        // The floor in force when this benchmark ran judges its report, not a later one.
        fs::copy(&floor, &copy)
            .with_context(|| format!("copying {} into {}", floor.display(), dir.display()))?;
    }
    let per_round = plan.contenders.len() as u64
        * plan.spec.workloads.len() as u64
        * plan.spec.threads.len() as u64;
    let rounds_recorded = done.iter().map(|d| d.0).max().unwrap_or(0);
    let mut total = per_round * plan.spec.rounds.max(rounds_recorded) as u64;
    let mut measured = done.len() as u64;
    tick(measured, total);
    let (server_cpus, client_cpus) = match (plan.pin, cpu::split()) {
        (true, Some((s, c))) => (Some(s), c),
        _ => (None, Vec::new()),
    };
    let base_spec = ServerSpec {
        config: plan.config.clone(),
        cpus: server_cpus,
        ..ServerSpec::new(&plan.contenders[0].binary)
    };
    log("preparing the dataset template");
    let tpl = template::ensure(work_dir, &base_spec, &dataset(plan))?;
    let mut out = OpenOptions::new()
        .create(true)
        .append(true)
        .open(results_path(dir))?;
    let started = std::time::Instant::now();
    let mut rounds_here = 0u32;
    for round in 1.. {
        let any_done = done.iter().any(|d| d.0 == round);
        if round > plan.spec.rounds && !any_done {
            // Between complete rounds only: a round begun is always finished.
            let series = tps_series(plan, &read_records(dir)?);
            match super::adaptive::next(
                &plan.spec,
                &series,
                round - 1,
                started.elapsed(),
                rounds_here,
            ) {
                super::adaptive::Next::Stop(why) => {
                    log(&format!("benchmark done: {why}"));
                    break;
                }
                super::adaptive::Next::Another => {
                    total = total.max(per_round * round as u64);
                    tick(measured, total);
                }
            }
        }
        let all_done = plan.contenders.iter().all(|c| {
            plan.spec.workloads.iter().all(|&w| {
                plan.spec
                    .threads
                    .iter()
                    .all(|&t| done.contains(&(round, c.name.clone(), w, t)))
            })
        });
        if !all_done {
            wait_until_quiet(guard.patience, guard.allow_busy, log)?;
        }
        for (position, &ci) in
            round_order(plan.contenders.len(), round, plan.seed, plan.order_scheme)
                .iter()
                .enumerate()
        {
            let c = &plan.contenders[ci];
            let cells: Vec<(TestName, u32)> = plan
                .spec
                .workloads
                .iter()
                .flat_map(|&w| plan.spec.threads.iter().map(move |&t| (w, t)))
                .filter(|(w, t)| !done.contains(&(round, c.name.clone(), *w, *t)))
                .collect();
            if cells.is_empty() {
                continue;
            }
            let mut spec = ServerSpec {
                binary: c.binary.clone(),
                ..base_spec.clone()
            };
            if let Some(mb) = c.buffer_pool_mb {
                spec.config.buffer_pool_mb = mb;
            }
            let inst = dir.join("instances").join(format!("r{round}-{}", c.name));
            let _ = fs::remove_dir_all(&inst);
            let mut srv = template::start_copy(&tpl, &spec, &inst)
                .with_context(|| format!("starting {}", c.name))?;
            for (w, t) in cells {
                let (r, load) = measure(plan, c, &srv, w, t, &client_cpus)?;
                if let Some(l) = load.as_ref().filter(|l| l.disturbed()) {
                    log(&format!(
                        "round {round}: {} {w} {t} thr was disturbed: other processes used {:.0}% of the CPU",
                        c.name,
                        l.other_share * 100.0
                    ));
                }
                log(&format!(
                    "round {round}/{}: {} {w} {t} thr: {:.0} tps",
                    plan.spec.rounds,
                    c.name,
                    r.tps()
                ));
                let rec = Record {
                    round,
                    position,
                    contender: c.name.clone(),
                    workload: w,
                    threads: t,
                    result: r,
                    load,
                };
                writeln!(out, "{}", serde_json::to_string(&rec)?)?;
                out.sync_data()?;
                measured += 1;
                tick(measured, total);
            }
            srv.stop().with_context(|| format!("stopping {}", c.name))?;
            let _ = fs::remove_dir_all(&inst);
        }
        if !all_done {
            rounds_here += 1;
        }
    }
    Ok(())
}

/// One contender's `metric` on one cell (workload `w`, `t` threads), round by round.
pub fn by_round(
    records: &[Record],
    name: &str,
    w: TestName,
    t: u32,
    metric: &dyn Fn(&Record) -> f64,
) -> Vec<(u32, f64)> {
    let mut v: Vec<(u32, f64)> = records
        .iter()
        .filter(|r| r.contender == name && r.workload == w && r.threads == t)
        .map(|r| (r.round, metric(r)))
        .collect();
    v.sort_by_key(|x| x.0);
    v
}

/// Every comparison the plan makes, with the throughput recorded so far.
fn tps_series(plan: &Plan, records: &[Record]) -> Vec<super::adaptive::Series> {
    let tps = |name: &str, w: TestName, t: u32| by_round(records, name, w, t, &|r| r.result.tps());
    let mut out = Vec::new();
    for c in &plan.contenders {
        let base = plan.baseline_for(c);
        if base.name == c.name {
            continue;
        }
        for &w in &plan.spec.workloads {
            for &t in &plan.spec.threads {
                out.push(super::adaptive::Series {
                    label: format!("{} {w} {t} thr", c.name),
                    baseline: tps(&base.name, w, t),
                    contender: tps(&c.name, w, t),
                });
            }
        }
    }
    out
}

/// A baseline and at least one other, each named once, each binary present.
fn check_contenders(plan: &Plan) -> Result<()> {
    if plan.contenders.len() < 2 {
        bail!("a benchmark needs at least two contenders (a baseline and one to compare)");
    }
    let mut names = HashSet::new();
    for c in &plan.contenders {
        if !names.insert(&c.name) {
            bail!("contender name '{}' is given twice", c.name);
        }
        // Every one is recognised as a server before the first round: a wrong path found
        // after an hour of rounds costs the hour.
        crate::server::Flavor::detect(&c.binary)
            .map_err(|e| anyhow::anyhow!("contender {}: {e:#}", c.name))?;
    }
    Ok(())
}

/// A new run directory gets the plan and the environment; an existing one must hold the same
/// plan, and is continued only when asked to.
fn open_run_dir(plan: &Plan, dir: &Path, resume: bool) -> Result<()> {
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let pp = plan_path(dir);
    if !pp.exists() {
        crate::infra::fs::write_json(&dir.join("environment.json"), &Environment::probe(plan))?;
        // The plan last: a directory with a plan is a benchmark.
        return crate::infra::fs::write_json(&pp, plan);
    }
    let old: Plan = serde_json::from_str(&fs::read_to_string(&pp)?)
        .with_context(|| format!("reading {}", pp.display()))?;
    if !resume {
        bail!(
            "{} already holds a benchmark; pass --resume to continue it or choose another --run",
            dir.display()
        );
    }
    if old != *plan {
        bail!(
            "--resume: {} holds a benchmark with a different plan; start a new --run instead",
            dir.display()
        );
    }
    Ok(())
}

/// One measured run of workload `w` at `t` client threads against a started server, after its
/// warm-up, with the machine's load while it ran.
fn measure(
    plan: &Plan,
    c: &Contender,
    srv: &crate::server::Server,
    w: TestName,
    t: u32,
    client_cpus: &[usize],
) -> Result<(RunResult, Option<Load>)> {
    let mut s = dataset(plan);
    s.test = w;
    s.conn = srv.state.conn_settings();
    s.threads = t;
    s.client_cpus = client_cpus.to_vec();
    s.rand.seed = 0;
    s.report_interval_s = 1;
    s.ignore_errors = oltp::settings::IgnoreErrors::survivable();
    if plan.spec.warmup_seconds > 0 {
        s.time_s = plan.spec.warmup_seconds;
        oltp::run(&s, &mut oltp::Quiet)
            .map_err(|e| anyhow::anyhow!("warm-up of {} {w}: {e}", c.name))?;
    }
    s.time_s = plan.spec.seconds;
    let meter = Meter::start(srv.state.pid);
    let r = oltp::run(&s, &mut oltp::Quiet)
        .map_err(|e| anyhow::anyhow!("{} {w} {t} threads: {e}", c.name))?;
    Ok((r, meter.and_then(|m| m.stop())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_round_has_every_contender_once_in_a_new_order() {
        let orders: Vec<Vec<usize>> = (1..=6).map(|r| round_order(3, r, 9, 0)).collect();
        for o in &orders {
            let mut s = o.clone();
            s.sort();
            assert_eq!(s, vec![0, 1, 2]);
        }
        assert!(
            orders.windows(2).any(|w| w[0] != w[1]),
            "orders vary between rounds"
        );
        assert_eq!(
            round_order(3, 2, 9, 0),
            orders[1],
            "seeded: a resume repeats the order"
        );
    }

    #[test]
    fn balanced_orders_put_every_contender_in_every_position_equally_often() {
        for n in [2usize, 3, 4, 5] {
            for seed in [1u64, 2, 2026, 987_654_321] {
                let rounds = 2 * n as u32;
                let mut count = vec![vec![0u32; n]; n];
                let mut distinct = std::collections::HashSet::new();
                for r in 1..=rounds {
                    let o = round_order(n, r, seed, BALANCED_ORDERS);
                    let mut s = o.clone();
                    s.sort();
                    assert_eq!(s, (0..n).collect::<Vec<_>>(), "a permutation");
                    for (pos, &c) in o.iter().enumerate() {
                        count[c][pos] += 1;
                    }
                    distinct.insert(o);
                }
                assert!(
                    count.iter().flatten().all(|&k| k == 2),
                    "n={n} seed={seed}: {count:?}"
                );
                assert!(distinct.len() >= n, "every row of the square is used");
                assert_eq!(
                    round_order(n, 3, seed, 1),
                    round_order(n, 3, seed, 1),
                    "a resume repeats the order"
                );
            }
        }
        // Different seeds give different designs.
        let a: Vec<_> = (1..=4).map(|r| round_order(4, r, 1, 1)).collect();
        let b: Vec<_> = (1..=4).map(|r| round_order(4, r, 2, 1)).collect();
        assert_ne!(a, b);
        assert!(fresh_seed() != fresh_seed());
    }

    #[test]
    fn a_buffer_pool_sweep_compares_like_with_like() {
        let c = |n: &str| Contender {
            name: n.into(),
            binary: "/x".into(),
            buffer_pool_mb: None,
        };
        let mut p = Plan {
            contenders: vec![c("base"), c("pgo")],
            spec: BenchSpec {
                workloads: vec![TestName::OltpReadOnly],
                threads: vec![1],
                rounds: 1,
                seconds: 1,
                warmup_seconds: 0,
                tables: 1,
                table_size: 10,
                ..BenchSpec::standard()
            },
            config: ServerConfig::default(),
            pin: false,
            seed: 1,
            label: String::new(),
            order_scheme: 0,
            reference_only: Vec::new(),
        };
        p.sweep_buffer_pool(&[512, 2048]);
        let names: Vec<&str> = p.contenders.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            vec!["base@bp512", "pgo@bp512", "base@bp2048", "pgo@bp2048"]
        );
        assert_eq!(p.baseline_for(&p.contenders[3]).name, "base@bp2048");
        assert_eq!(p.baseline_for(&p.contenders[1]).name, "base@bp512");
    }
}
