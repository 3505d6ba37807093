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
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use oltp::settings::{Settings, TestName};
use serde::{Deserialize, Serialize};

use super::plan::Contender;
use crate::server::{template, Family, Flavor, ServerConfig, ServerSpec};

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

/// [`auto_events`], and for a replay (`s` holding its file) [`replay_events`].
fn auto_events_of(w: TestName, s: &Settings) -> Result<u64> {
    if w != TestName::Replay {
        return Ok(auto_events(w));
    }
    let file = oltp::replay::load(s).map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(replay_events(file.statements() as u64))
}

/// Statements measured of a replay file of `n`: whole passes over the file (so that every
/// statement weighs as often as it was logged), as many as make at least [`REPLAY_MIN_EVENTS`]
/// statements — the noise of a server's start-up and background work (about a million
/// instructions) would swamp a short file's few statements — and a file longer than that once.
pub fn replay_events(n: u64) -> u64 {
    match n {
        0 => REPLAY_MIN_EVENTS,
        n => n * REPLAY_MIN_EVENTS.div_ceil(n),
    }
}

/// As many statements as the point-select cells measure.
pub const REPLAY_MIN_EVENTS: u64 = 10_000;

/// Measured transactions enough to make the run-to-run noise of a server's start-up and
/// background work (about a million instructions here) a fraction of a percent: ~400 M
/// instructions for a point select (~40 k each), ~2 G for the multi-statement transactions.
pub fn auto_events(w: TestName) -> u64 {
    match w {
        TestName::OltpPointSelect | TestName::SelectRandomPoints => 10_000,
        // About 30 statements a transaction, several times read_write's work each.
        TestName::Tpcc => 300,
        _ => 1_000,
    }
}

/// Cachegrind's totals (its `events:` names).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    pub ir: u64,
    pub i1mr: u64,
    pub ilmr: u64,
    pub dr: u64,
    pub d1mr: u64,
    pub dlmr: u64,
    pub dw: u64,
    pub d1mw: u64,
    pub dlmw: u64,
    pub bc: u64,
    pub bcm: u64,
    pub bi: u64,
    pub bim: u64,
}

/// Per-transaction costs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PerTxn {
    pub instructions: f64,
    pub i1_misses: f64,
    pub d1_misses: f64,
    pub ll_misses: f64,
    pub branches: f64,
    pub mispredicts: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CgRecord {
    pub contender: String,
    pub workload: TestName,
    pub events: u64,
    /// The warm-up-only run and the measured run.
    pub short: Counts,
    pub long: Counts,
    pub per_txn: PerTxn,
    /// A replay's statements that failed in the measured run (absent for the other workloads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_statements: Option<u64>,
    /// The costliest functions per transaction (absent from measurements made before they were
    /// kept).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub functions: Vec<super::hot_functions::FnCost>,
}

/// Reads the `events:` and `summary:` lines of a cachegrind output file.
pub fn parse_counts(text: &str) -> Result<Counts> {
    let events: Vec<&str> = text
        .lines()
        .find_map(|l| l.strip_prefix("events:"))
        .context("no 'events:' line in the cachegrind output")?
        .split_whitespace()
        .collect();
    let summary: Vec<u64> = text
        .lines()
        .find_map(|l| l.strip_prefix("summary:"))
        .context("no 'summary:' line in the cachegrind output (did the server exit cleanly?)")?
        .split_whitespace()
        .map(|v| v.parse::<u64>())
        .collect::<Result<_, _>>()
        .context("a non-numeric summary in the cachegrind output")?;
    if events.len() != summary.len() {
        bail!(
            "cachegrind output: {} events but {} totals",
            events.len(),
            summary.len()
        );
    }
    let mut c = Counts::default();
    for (e, v) in events.iter().zip(summary) {
        let slot = match *e {
            "Ir" => &mut c.ir,
            "I1mr" => &mut c.i1mr,
            "ILmr" => &mut c.ilmr,
            "Dr" => &mut c.dr,
            "D1mr" => &mut c.d1mr,
            "DLmr" => &mut c.dlmr,
            "Dw" => &mut c.dw,
            "D1mw" => &mut c.d1mw,
            "DLmw" => &mut c.dlmw,
            "Bc" => &mut c.bc,
            "Bcm" => &mut c.bcm,
            "Bi" => &mut c.bi,
            "Bim" => &mut c.bim,
            _ => continue,
        };
        *slot = v;
    }
    if c.ir == 0 || c.bc == 0 {
        bail!("cachegrind counted no instructions or branches: was it run with --cache-sim=yes --branch-sim=yes?");
    }
    Ok(c)
}

/// (long − short) / events for each figure.
pub fn per_txn(short: &Counts, long: &Counts, events: u64) -> PerTxn {
    let d = |a: u64, b: u64| (b as f64 - a as f64) / events as f64;
    PerTxn {
        instructions: d(short.ir, long.ir),
        i1_misses: d(short.i1mr, long.i1mr),
        d1_misses: d(short.d1mr + short.d1mw, long.d1mr + long.d1mw),
        ll_misses: d(
            short.ilmr + short.dlmr + short.dlmw,
            long.ilmr + long.dlmr + long.dlmw,
        ),
        branches: d(short.bc + short.bi, long.bc + long.bi),
        mispredicts: d(short.bcm + short.bim, long.bcm + long.bim),
    }
}

pub fn records_path(dir: &Path) -> PathBuf {
    dir.join("cachegrind.jsonl")
}

/// A contender valgrind cannot run, and why: measured without it, named in the report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CgSkip {
    pub contender: String,
    pub reason: String,
}

pub fn skipped_path(dir: &Path) -> PathBuf {
    dir.join("cachegrind-skipped.json")
}

/// The contenders a measurement in `dir` could not run under valgrind (none when it has no such
/// file).
pub fn read_skipped(dir: &Path) -> Result<Vec<CgSkip>> {
    let p = skipped_path(dir);
    match fs::read_to_string(&p) {
        Ok(text) => serde_json::from_str(&text).with_context(|| format!("reading {}", p.display())),
        Err(_) => Ok(Vec::new()),
    }
}

/// Why valgrind cannot run a binary as it is.
#[derive(Debug, PartialEq)]
enum Unrunnable {
    /// It gives up on the debug information (Debian 12's valgrind 3.19 on clang 22's DWARF 5 in a
    /// server-sized binary): a copy without it runs the same code.
    DebugInfo,
    /// Anything else, in words (an instruction valgrind does not implement).
    Other(String),
}

/// Whether valgrind can run `binary` at all (its `--version`, under `--tool=none`): a binary
/// built with `-march=native` on a CPU with AVX-512 carries instructions valgrind does not
/// implement, and dies of SIGILL in its static constructors; one built by clang 22 carries debug
/// information valgrind 3.19 cannot read.
fn runs_under_valgrind(binary: &Path) -> Result<(), Unrunnable> {
    let out = match Command::new("valgrind")
        .arg("--tool=none")
        .arg(binary)
        .arg("--version")
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            return Err(Unrunnable::Other(format!(
                "valgrind could not be started: {e}"
            )))
        }
    };
    let err = String::from_utf8_lossy(&out.stderr);
    if unreadable_debuginfo(&err) {
        return Err(Unrunnable::DebugInfo);
    }
    unrunnable(&err).map_or(Ok(()), |r| Err(Unrunnable::Other(r)))
}

/// valgrind's words when it stops on debug information it cannot read.
fn unreadable_debuginfo(stderr: &str) -> bool {
    stderr.contains("debuginfo reader") && stderr.contains("Giving up")
}

/// The binary valgrind runs for `binary`: itself, or — when valgrind gives up on its debug
/// information — a copy beside it (so its share files are found alike) without the debug
/// sections (`objcopy --strip-debug`: the same code, hence the same counts), made once and again
/// only when the binary is newer. Err: why neither runs.
fn measurable(binary: &Path, log: &dyn Fn(&str)) -> Result<PathBuf, String> {
    match runs_under_valgrind(binary) {
        Ok(()) => return Ok(binary.to_path_buf()),
        Err(Unrunnable::Other(r)) => return Err(r),
        Err(Unrunnable::DebugInfo) => {}
    }
    let copy = without_debug_info(binary)?;
    log(&format!(
        "cachegrind: valgrind cannot read the debug information of {} (clang's DWARF 5?); \
         measuring {} instead, the same code without it",
        binary.display(),
        copy.display()
    ));
    match runs_under_valgrind(&copy) {
        Ok(()) => Ok(copy),
        Err(Unrunnable::DebugInfo) => Err(
            "valgrind cannot read its debug information, even with the debug sections removed"
                .into(),
        ),
        Err(Unrunnable::Other(r)) => Err(r),
    }
}

/// `BINARY.nodebug` beside `binary`: its copy without debug sections (kept while newer).
fn without_debug_info(binary: &Path) -> Result<PathBuf, String> {
    let mut name = binary.as_os_str().to_owned();
    name.push(".nodebug");
    let copy = PathBuf::from(name);
    let mtime = |p: &Path| fs::metadata(p).and_then(|m| m.modified()).ok();
    if let (Some(c), Some(b)) = (mtime(&copy), mtime(binary)) {
        if c >= b {
            return Ok(copy);
        }
    }
    let mut tmp = copy.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let out = Command::new("objcopy")
        .arg("--strip-debug")
        .arg(binary)
        .arg(&tmp)
        .output()
        .map_err(|e| {
            format!("objcopy could not be started to remove the debug information: {e}")
        })?;
    if !out.status.success() {
        let _ = fs::remove_file(&tmp);
        return Err(format!(
            "objcopy --strip-debug {} failed: {}",
            binary.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    fs::rename(&tmp, &copy).map_err(|e| format!("renaming {} into place: {e}", tmp.display()))?;
    Ok(copy)
}

/// valgrind's words for an instruction it cannot execute, as a reason; None when there are none.
fn unrunnable(stderr: &str) -> Option<String> {
    // (-q leaves out the first of these lines; the second is there either way.)
    let mark = |l: &str| l.contains("Unrecognised instruction") || l.contains("Illegal opcode at");
    let at = stderr.lines().find(|l| mark(l))?;
    let bytes = stderr
        .lines()
        .find_map(|l| l.split("unhandled instruction bytes: ").nth(1))
        .unwrap_or("");
    let func = stderr
        .lines()
        .skip_while(|l| !mark(l))
        .nth(1)
        .and_then(|l| l.split(": ").nth(1))
        .and_then(|f| f.split(" (in ").next())
        .unwrap_or("");
    // 0x62 opens an EVEX-encoded instruction: AVX-512.
    let evex = bytes.starts_with("0x62");
    Some(format!(
        "valgrind cannot execute its instructions ({}{}{}){}",
        at.rsplit("== ")
            .next()
            .unwrap_or(at)
            .trim_start_matches("valgrind: ")
            .trim()
            .trim_end_matches('.'),
        if func.is_empty() { "" } else { " in " },
        func,
        if evex {
            ": AVX-512 (EVEX-encoded), which -march=native emits on this CPU and valgrind does not implement"
        } else {
            ""
        }
    ))
}

pub fn read_records(dir: &Path) -> Result<Vec<CgRecord>> {
    let p = records_path(dir);
    let Ok(text) = fs::read_to_string(&p) else {
        return Ok(Vec::new());
    };
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut out = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        match serde_json::from_str(l) {
            Ok(r) => out.push(r),
            // A line torn by a crash mid-write, as in results.jsonl: cut before appending.
            Err(_) if i + 1 == lines.len() && !text.ends_with('\n') => break,
            Err(e) => {
                return Err(e).with_context(|| {
                    format!("{} line {}: not a cachegrind record", p.display(), i + 1)
                })
            }
        }
    }
    Ok(out)
}

/// The options a server needs to run under valgrind: no io_uring/libaio (valgrind does not
/// emulate them) and, where the server reserves address space for buffer pool growth, a
/// reservation no larger than the pool.
fn valgrind_settings(binary: &Path, flavor: &Flavor, buffer_pool_mb: u64) -> Result<Vec<String>> {
    let mut extra = vec!["innodb_use_native_aio = 0".to_string()];
    if flavor.family == Family::MariaDb {
        let help = Command::new(binary)
            .args(["--no-defaults", "--verbose", "--help"])
            .output()
            .with_context(|| format!("running {} --help", binary.display()))?;
        if String::from_utf8_lossy(&help.stdout).contains("innodb-buffer-pool-size-max") {
            extra.push(format!("innodb_buffer_pool_size_max = {buffer_pool_mb}M"));
        }
    }
    Ok(extra)
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
    fn a_torn_last_record_is_skipped_and_cut_and_any_other_bad_line_is_an_error() {
        let dir = std::env::temp_dir().join(format!("pgoforge-cg-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let p = records_path(&dir);
        fs::write(&p, "{\"contender\": \"pg").unwrap();
        assert!(read_records(&dir).unwrap().is_empty());
        crate::bench::run_dir::drop_torn_tail(&p).unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "");
        // A whole line that does not parse is corruption, not a crash's tail.
        fs::write(&p, "not a record\n").unwrap();
        let e = format!("{:#}", read_records(&dir).unwrap_err());
        assert!(e.contains("line 1: not a cachegrind record"), "{e}");
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn valgrind_giving_up_on_debug_information_is_told_apart() {
        // valgrind 3.19's words for MariaDB built by clang 22 (DWARF 5).
        let stderr = "### unhandled dwarf2 abbrev form code 0x25\n\
            ==1== Valgrind: debuginfo reader: Possibly corrupted debuginfo file.\n\
            ==1== Valgrind: I can't recover.  Giving up.  Sorry.\n";
        assert!(unreadable_debuginfo(stderr));
        assert_eq!(unrunnable(stderr), None);
        // Complaints it survives are no reason (a small clang binary: it runs).
        assert!(!unreadable_debuginfo(
            "### unhandled dwarf2 abbrev form code 0x1b\n"
        ));
    }

    #[test]
    fn a_copy_without_debug_information_runs_the_same_and_is_made_once() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("t");
        fs::copy("/bin/true", &bin).unwrap();
        let copy = without_debug_info(&bin).unwrap();
        assert_eq!(copy, dir.path().join("t.nodebug"));
        assert!(Command::new(&copy).status().unwrap().success());
        let made = fs::metadata(&copy).unwrap().modified().unwrap();
        assert_eq!(without_debug_info(&bin).unwrap(), copy);
        assert_eq!(fs::metadata(&copy).unwrap().modified().unwrap(), made);
        assert!(!dir.path().join("t.nodebug.tmp").exists());
        let e = without_debug_info(&dir.path().join("absent")).unwrap_err();
        assert!(e.contains("objcopy --strip-debug"), "{e}");
    }

    #[test]
    fn an_instruction_valgrind_cannot_execute_is_named() {
        // valgrind 3.19's words for mysqld built with -march=native on an AVX-512 CPU.
        let stderr = "vex amd64->IR: unhandled instruction bytes: 0x62 0xE1 0xFD 0x8 0x6E 0xC1 0x48 0x8D 0x5 0x86\n\
            vex amd64->IR:   REX=0 REX.W=0 REX.R=0 REX.X=0 REX.B=0\n\
            ==7011== valgrind: Unrecognised instruction at address 0xa9b4ad.\n\
            ==7011==    at 0xA9B4AD: _sub_I_65535_0.0 (in /w/build/runtime_output_directory/mysqld)\n\
            ==7011==    by 0x5A39375: __libc_start_main@@GLIBC_2.34 (libc-start.c:145)\n";
        let r = unrunnable(stderr).unwrap();
        assert!(
            r.starts_with("valgrind cannot execute its instructions (Unrecognised instruction at address 0xa9b4ad in _sub_I_65535_0.0)"),
            "{r}"
        );
        assert!(r.contains("AVX-512"), "{r}");
        assert_eq!(
            unrunnable("==1== Memcheck, a memory error detector\n"),
            None
        );
    }

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

    #[test]
    fn a_replay_is_measured_in_whole_passes_of_at_least_ten_thousand_statements() {
        assert_eq!(replay_events(4), 10_000);
        assert_eq!(replay_events(3), 10_002);
        assert_eq!(replay_events(7_000), 14_000);
        assert_eq!(replay_events(10_000), 10_000);
        assert_eq!(replay_events(25_001), 25_001);
        assert_eq!(replay_events(0), REPLAY_MIN_EVENTS);
    }

    #[test]
    fn parses_cachegrind_totals_and_subtracts() {
        let a = "desc: I1 cache: 32768 B, 64 B, 8-way associative\ncmd: x\nevents: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw Bc Bcm Bi Bim\nfl=a\n1 2 3\nsummary: 1000 10 1 300 20 2 100 5 1 200 9 10 1\n";
        let b = "events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw Bc Bcm Bi Bim\nsummary: 3000 30 3 900 60 6 300 15 3 600 29 30 3\n";
        let (x, y) = (parse_counts(a).unwrap(), parse_counts(b).unwrap());
        assert_eq!((x.ir, x.bim, y.d1mw), (1000, 1, 15));
        let p = per_txn(&x, &y, 10);
        assert_eq!(p.instructions, 200.0);
        assert_eq!(p.i1_misses, 2.0);
        assert_eq!(p.mispredicts, 2.2);
        assert_eq!(p.branches, 42.0);
        assert!(parse_counts("events: Ir\n").is_err());
        assert!(parse_counts("events: Ir Bc\nsummary: 0 0\n").is_err());
    }
}
