//! Running a benchmark: contenders × workloads × thread counts × rounds, interleaved.
//!
//! Every round starts each contender from a fresh copy of one prepared datadir template, runs a
//! warm-up and then each cell, in a new random contender order per round, so that drift hits all
//! alike; with a target interval width ([`super::adaptive`]) rounds are added until it is met.
//! Each measured run's full driver result is appended to results.jsonl as soon as it ends;
//! an interrupted benchmark keeps what finished and `resume` continues it.

use std::collections::HashSet;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;

use anyhow::{bail, Context, Result};
use oltp::settings::TestName;

use super::client::Client;
use super::load::{wait_until_quiet, Guard};
use super::measure::{measure_for, start_contender, Bench};
use super::order::round_order;
use super::plan::BenchPlan;
use super::run_dir::{
    self, by_round, drop_torn_tail, open_run_dir, read_plan, read_records, results_path, Record,
};
use crate::infra::exit::Refuse;
use crate::server::{cpu, template, ServerSpec};

/// Runs the plan into `dir` (created if needed); with `resume`, continues a run already there.
pub fn benchmark_quietly(
    plan: &BenchPlan,
    work_dir: &Path,
    dir: &Path,
    resume: bool,
    guard: Guard,
    log: &dyn Fn(&str),
) -> Result<()> {
    benchmark(plan, work_dir, dir, resume, guard, log, &|_, _| {})
}

/// As [`benchmark_quietly`], calling `tick(done, total)` with the count of measured runs (resumed ones included)
/// before the first and after each one.
pub fn benchmark(
    plan: &BenchPlan,
    work_dir: &Path,
    dir: &Path,
    resume: bool,
    guard: Guard,
    log: &dyn Fn(&str),
    tick: &dyn Fn(u64, u64),
) -> Result<()> {
    let plan = as_run(plan, dir, resume, log)?;
    let (server_cpus, client_cpus) = pinned_cpus(&plan);
    // A client on another host is reached (and refused, if it cannot be) before any server.
    let client = Client::open(&plan.spec, log)?;
    let base_spec = client.server_spec(ServerSpec {
        config: plan.config.clone(),
        cpus: server_cpus,
        ..ServerSpec::new(&plan.contenders[0].binary)
    });
    log("preparing the dataset template");
    let (tpl, _) = template::ensure_logged(
        work_dir,
        &base_spec,
        &plan.spec.datasets(plan.config.engine),
        log,
    )?;
    let bench = Bench {
        plan: &plan,
        tpl: &tpl,
        base_spec: &base_spec,
        dir,
        client_cpus: &client_cpus,
        client: &client,
        guard,
        log,
    };
    let (plan, probe) = choose_threads(plan.clone(), &bench)?;
    let plan = &plan;
    open_run_dir(plan, dir, resume)?;
    if let Some(p) = probe {
        crate::infra::fs::write_json(&super::saturate::Saturation::path(dir), &p)?;
    }
    let done = recorded_cells(dir)?;
    if done.is_empty() {
        adopt_noise_floor(work_dir, dir, log)?;
    }
    let per_round = runs_per_round(plan);
    let rounds_recorded = done.iter().map(|d| d.0).max().unwrap_or(0);
    let mut total = per_round * plan.spec.rounds.max(rounds_recorded) as u64;
    let mut measured = done.len() as u64;
    tick(measured, total);
    let mut out = OpenOptions::new()
        .create(true)
        .append(true)
        .open(results_path(dir))?;
    let started = std::time::Instant::now();
    let mut rounds_here = 0u32;
    // The host's own noise is checked once per invocation, on its first OLTP run.
    let mut noise_checked = false;
    let rounds = Rounds {
        bench: Bench { plan, ..bench },
        done: &done,
    };
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
        let all_done = round_recorded(plan, &done, round);
        if !all_done {
            wait_until_quiet(guard.patience, guard.allow_busy, log)?;
        }
        if let Some(slice) = plan.spec.slice_seconds {
            let order = round_order(plan.contenders.len(), round, plan.seed, plan.order_scheme);
            let written =
                sliced_round(&rounds, round, &order, slice, &mut noise_checked, &mut out)?;
            measured += written;
            tick(measured, total);
        } else {
            plain_round(
                &rounds,
                round,
                &mut noise_checked,
                &mut out,
                (&mut measured, total, tick),
            )?;
        }
        if !all_done {
            rounds_here += 1;
        }
    }
    // The contenders' datadirs, kept from round to round, are a dataset each: not kept after.
    let _ = fs::remove_dir_all(super::measure::instances_dir(dir));
    Ok(())
}

/// The plan as this invocation runs it: a resumed benchmark keeps the thread counts its first
/// invocation chose, and is sliced only where every server fits in memory at once
/// (bench/design.rs). A directory holding another benchmark is refused here, before the
/// template and the probe; a new benchmark's estimate is logged.
fn as_run(plan: &BenchPlan, dir: &Path, resume: bool, log: &dyn Fn(&str)) -> Result<BenchPlan> {
    check_contenders(plan).refused()?;
    let earlier = resume.then(|| read_plan(dir)).flatten();
    let plan = super::saturate::adopt(plan, earlier.as_ref());
    let (plan, why) = super::design::as_run(&plan, earlier.as_ref(), super::design::available_mb());
    if let Some(why) = why {
        log(&why);
    }
    if !resume && run_dir::plan_path(dir).exists() {
        open_run_dir(&plan, dir, resume)?;
    }
    if recorded_cells(dir)?.is_empty() {
        log(&super::estimate::sentence(&plan.spec, &plan.server_pools()));
    }
    Ok(plan)
}

/// The plan with its client threads chosen per workload, when it asks for that and has none yet
/// (a resumed benchmark has them), and the probe that chose them.
fn choose_threads(
    plan: BenchPlan,
    env: &Bench,
) -> Result<(BenchPlan, Option<super::saturate::Saturation>)> {
    if !plan.spec.saturate || plan.spec.threads_per_workload() {
        return Ok((plan, None));
    }
    (env.log)("choosing the client threads per workload (probe)");
    fs::create_dir_all(env.dir).with_context(|| format!("creating {}", env.dir.display()))?;
    let probe = super::saturate::run(env)?;
    let mut plan = plan;
    plan.spec.chosen_threads = probe.chosen();
    Ok((plan, Some(probe)))
}

/// The cells already in the run directory's results (a torn last line dropped first): what a
/// resumed benchmark does not measure again.
fn recorded_cells(dir: &Path) -> Result<HashSet<(u32, String, TestName, u32)>> {
    drop_torn_tail(&results_path(dir))?;
    Ok(read_records(dir)?
        .into_iter()
        .map(|r| (r.round, r.contender, r.workload, r.threads))
        .collect())
}

/// Measured runs in one round: every contender on every workload at every thread count.
fn runs_per_round(plan: &BenchPlan) -> u64 {
    plan.contenders.len() as u64 * plan.spec.cells().len() as u64
}

/// The server's and the client's CPUs when the plan pins them (and the machine can be split).
fn pinned_cpus(plan: &BenchPlan) -> (Option<Vec<usize>>, Vec<usize>) {
    match (plan.pin, cpu::split()) {
        (true, Some((s, c))) => (Some(s), c),
        _ => (None, Vec::new()),
    }
}

/// What every round of one benchmark invocation shares: the invocation's [`Bench`] and the cells
/// already recorded.
#[derive(Clone, Copy)]
struct Rounds<'a> {
    bench: Bench<'a>,
    done: &'a HashSet<(u32, String, TestName, u32)>,
}

/// Whether every cell of `round` is in the results already (a resumed run skips it).
fn round_recorded(
    plan: &BenchPlan,
    done: &HashSet<(u32, String, TestName, u32)>,
    round: u32,
) -> bool {
    let cells = plan.spec.cells();
    plan.contenders.iter().all(|c| {
        cells
            .iter()
            .all(|&(w, t)| done.contains(&(round, c.name.clone(), w, t)))
    })
}

/// Copies the machine's noise floor into a new run directory: the floor in force when a
/// benchmark ran judges its report, not a later one — and only when it was measured on this
/// host, since noise is the host's.
fn adopt_noise_floor(work_dir: &Path, dir: &Path, log: &dyn Fn(&str)) -> Result<()> {
    let floor = super::calibrate::path(work_dir);
    let copy = super::calibrate::copy_in_run_dir(dir);
    if !floor.is_file() || copy.exists() {
        return Ok(());
    }
    let here = super::environment::Host::probe().fingerprint;
    match super::calibrate::read(&floor)? {
        Some(cal) if cal.measured_on(&here) => {
            fs::copy(&floor, &copy)
                .with_context(|| format!("copying {} into {}", floor.display(), dir.display()))?;
        }
        Some(cal) => log(&format!(
            "the noise floor in {} was measured on {} (this host is {here}): not applied; \
             `pgoforge calibrate` measures this host's",
            floor.display(),
            cal.host
                .as_deref()
                .unwrap_or("a host pgoforge did not fingerprint yet")
        )),
        None => {}
    }
    Ok(())
}

/// One round of the plain design: each contender in the round's order started on its own copy
/// of the template, its cells not yet recorded measured one after the other, each record written
/// (and `tick`ed) as it ends; the host's noise checked on the invocation's first OLTP run.
fn plain_round(
    rounds: &Rounds,
    round: u32,
    noise_checked: &mut bool,
    out: &mut fs::File,
    (measured, total, tick): (&mut u64, u64, &dyn Fn(u64, u64)),
) -> Result<()> {
    let Rounds {
        bench:
            Bench {
                plan,
                tpl,
                base_spec,
                dir,
                client_cpus,
                client,
                guard,
                log,
            },
        done,
    } = *rounds;
    for (position, &ci) in round_order(plan.contenders.len(), round, plan.seed, plan.order_scheme)
        .iter()
        .enumerate()
    {
        let c = &plan.contenders[ci];
        let cells: Vec<(TestName, u32)> = plan
            .spec
            .cells()
            .into_iter()
            .filter(|(w, t)| !done.contains(&(round, c.name.clone(), *w, *t)))
            .collect();
        if cells.is_empty() {
            continue;
        }
        let mut srv = start_contender(c, base_spec.clone(), tpl, dir, round, log)?;
        client.admit(&srv)?;
        let rtt_us = client.round_trip_us(&client.conn(&srv))?;
        for (w, t) in cells {
            let (r, load) = measure_for(
                plan,
                c,
                &srv,
                w,
                t,
                client_cpus,
                client,
                plan.spec.warmup_seconds,
                plan.spec.seconds,
            )?;
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
                slice: None,
                rtt_us,
                client: client.origin(),
            };
            writeln!(out, "{}", serde_json::to_string(&rec)?)?;
            out.sync_data()?;
            *measured += 1;
            tick(*measured, total);
            if !*noise_checked && super::report::is_steady(w) {
                *noise_checked = true;
                // After the record is written: the same command resumes from here.
                if let Some(cv) = super::report::per_second_cv(&rec.result) {
                    let steal = rec.load.as_ref().map(|l| l.steal_share);
                    check_host_noise(cv, steal, guard, false, log)?;
                }
            }
        }
        srv.stop().with_context(|| format!("stopping {}", c.name))?;
    }
    Ok(())
}

/// Every comparison the plan makes, with the throughput recorded so far.
fn tps_series(plan: &BenchPlan, records: &[Record]) -> Vec<super::adaptive::Series> {
    let tps = |name: &str, w: TestName, t: u32| by_round(records, name, w, t, &|r| r.result.tps());
    let mut out = Vec::new();
    for c in &plan.contenders {
        let base = plan.baseline_for(c);
        if base.name == c.name {
            continue;
        }
        for (w, t) in plan.spec.cells() {
            out.push(super::adaptive::Series {
                label: format!("{} {w} {t} thr", c.name),
                baseline: tps(&base.name, w, t),
                contender: tps(&c.name, w, t),
            });
        }
    }
    out
}

/// A baseline and at least one other, each named once, each binary present.
fn check_contenders(plan: &BenchPlan) -> Result<()> {
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

/// Per-second throughput varying more than this within an OLTP run (coefficient of variation)
/// marks a host too noisy to benchmark on: the committed runs measured about 3 % on a quiet VM
/// and 14 % on a noisy one of the same CPU model (docs/bench/trust.md).
pub const NOISY_CV: f64 = 0.08;

/// Stops the benchmark (exit status 5) when the run's per-second throughput is too erratic,
/// unless `--allow-noisy`; says so either way. `sliced`: measured on the slices of the sliced
/// design, which is this host's remedy already — a noisy host is then said, never refused.
/// `steal`: the share of CPU time the hypervisor took meanwhile, which names the likely cause.
fn check_host_noise(
    cv: f64,
    steal: Option<f64>,
    guard: Guard,
    sliced: bool,
    log: &dyn Fn(&str),
) -> Result<()> {
    let which = if sliced {
        "the first cell's slices"
    } else {
        "the first run"
    };
    if cv <= NOISY_CV {
        log(&format!(
            "host noise: per-second throughput varied {:.1}% within {which} (quiet)",
            cv * 100.0
        ));
        return Ok(());
    }
    let cause = match steal {
        Some(s) if s >= super::steal::NOTABLE => format!(
            "; the hypervisor took {:.1}% of the CPU meanwhile (steal: the host's other VMs or work)",
            s * 100.0
        ),
        _ => String::new(),
    };
    let what = format!(
        "this host is noisy: per-second throughput varied {:.1}% within {which} (more \
         than {:.0}%; a quiet host shows about 3%){cause}",
        cv * 100.0,
        NOISY_CV * 100.0
    );
    if sliced {
        log(&format!(
            "{what}; the sliced design lets seconds-scale noise hit every contender alike \
             (docs/bench/trust.md), and the A/A control, if any, shows what is left"
        ));
        return Ok(());
    }
    let what = format!("{what}, so every interval will be wide and small differences unprovable");
    if guard.allow_noisy {
        log(&format!("{what}; measuring anyway (--allow-noisy)"));
        return Ok(());
    }
    Err(crate::infra::exit::Stop::Noisy {
        cv,
        message: format!(
            "{what}. Stopped after the first run (kept: the same command resumes). Benchmark on a \
             quieter host or later; or leave out --slice 0 (the default sliced design: on such a \
             host 4x less scatter per round, docs/bench/trust.md); or pass --allow-noisy to \
             measure anyway"
        ),
    }
    .into())
}

/// One round of the sliced design: every contender's server started at once (each on its own copy
/// of the template), and for each cell, after a warm-up of each, the client alternates between
/// them every `slice` seconds (the order rotating slice by slice) until each has run the cell's
/// seconds; so seconds-scale noise hits all contenders alike. The slices of a cell are written
/// together when the cell is complete (a killed round loses that cell only); the report averages
/// a round's slices, so pairing stays by round and the server-start component is sampled once
/// per round, as in the plain design. Returns the (round, contender, cell)s written.
fn sliced_round(
    rounds: &Rounds,
    round: u32,
    order: &[usize],
    slice: u64,
    noise_checked: &mut bool,
    out: &mut fs::File,
) -> Result<u64> {
    let Rounds {
        bench:
            Bench {
                plan,
                tpl,
                base_spec,
                dir,
                client_cpus,
                client,
                guard,
                log,
            },
        done,
    } = *rounds;
    let cells: Vec<(TestName, u32)> = plan
        .spec
        .cells()
        .into_iter()
        .filter(|(w, t)| {
            plan.contenders
                .iter()
                .any(|c| !done.contains(&(round, c.name.clone(), *w, *t)))
        })
        .collect();
    if cells.is_empty() {
        return Ok(0);
    }
    let mut servers = Vec::new();
    for &ci in order {
        let srv = start_contender(
            &plan.contenders[ci],
            base_spec.clone(),
            tpl,
            dir,
            round,
            log,
        )?;
        client.admit(&srv)?;
        let rtt_us = client.round_trip_us(&client.conn(&srv))?;
        servers.push((ci, srv, rtt_us));
    }
    let slices = (plan.spec.seconds / slice).max(1);
    let mut written = 0;
    for (w, t) in cells {
        if plan.spec.warmup_seconds > 0 {
            for (ci, srv, _) in &servers {
                let c = &plan.contenders[*ci];
                measure_for(
                    plan,
                    c,
                    srv,
                    w,
                    t,
                    client_cpus,
                    client,
                    plan.spec.warmup_seconds,
                    0,
                )?;
            }
        }
        let mut recs = Vec::new();
        for k in 0..slices {
            for position in 0..servers.len() {
                // Rotate who goes first, slice by slice.
                let (ci, srv, rtt_us) = &servers[(position + k as usize) % servers.len()];
                let c = &plan.contenders[*ci];
                let (r, load) = measure_for(plan, c, srv, w, t, client_cpus, client, 0, slice)?;
                recs.push(Record {
                    round,
                    position,
                    contender: c.name.clone(),
                    workload: w,
                    threads: t,
                    result: r,
                    load,
                    slice: Some(k as u32),
                    rtt_us: *rtt_us,
                    client: client.origin(),
                });
            }
        }
        // A cell a crash left half-written keeps what it has: only the missing contenders'
        // slices are added, so nothing is counted twice.
        let missing = |name: &str| !done.contains(&(round, name.to_string(), w, t));
        for rec in recs.iter().filter(|r| missing(&r.contender)) {
            writeln!(out, "{}", serde_json::to_string(rec)?)?;
        }
        out.sync_data()?;
        // A slice is too short for a per-second spread; a contender's slices of the cell taken
        // together are not (the report's measure, [`super::report::run_cvs`]). Not a warm-up:
        // a cold server's climbing throughput would read as noise.
        if !*noise_checked && super::report::is_steady(w) {
            *noise_checked = check_sliced_noise(&recs, guard, log)?;
        }
        log(&format!(
            "round {round}/{}: {w} {t} thr: {} slices of {slice} s per contender",
            plan.spec.rounds, slices
        ));
        written += plan.contenders.iter().filter(|c| missing(&c.name)).count() as u64;
    }
    for (ci, mut srv, _) in servers {
        srv.stop()
            .with_context(|| format!("stopping {}", plan.contenders[ci].name))?;
    }
    Ok(written)
}

/// The host-noise check on one sliced cell: its contenders' slices taken together; whether there
/// was enough to judge.
fn check_sliced_noise(recs: &[Record], guard: Guard, log: &dyn Fn(&str)) -> Result<bool> {
    let cvs = super::report::run_cvs(recs);
    if cvs.is_empty() {
        return Ok(false);
    }
    let steals: Vec<f64> = recs
        .iter()
        .filter_map(|r| r.load.as_ref().map(|l| l.steal_share))
        .collect();
    let steal = (!steals.is_empty()).then(|| super::stats::mean(&steals));
    check_host_noise(super::stats::median(&cvs), steal, guard, true, log)?;
    Ok(true)
}
