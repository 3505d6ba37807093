//! `run`: connections driven by a few event-loop threads, timed and counted as sysbench does.
//!
//! sysbench gives every connection an OS thread that blocks in `recv` after each statement; most
//! of its client CPU goes to those sleeps and wake-ups. Here one thread drives many connections
//! through epoll (a thread with a single connection simply blocks), so the client takes less CPU
//! from the server it measures. The semantics stay sysbench's: one event at a time per connection,
//! statements in order, the same draws, counters, error policy, time and event limits.

mod assemble;
mod counters;
mod event_loop;
mod intervals;
mod ring;
mod schedule;
mod slot;
mod worker;

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Barrier, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::proto::{Conn, DbError};
use crate::result::{Interval, RunResult, ServerSide};
use crate::rng::SbRng;
use crate::schema::{missing_tables, table_names};
use crate::settings::Settings;
use crate::workload::Workload;

use assemble::assemble;
use counters::Counters;
use intervals::report_intervals;
use schedule::{Arrivals, Shared, Timing};
use slot::WorkerOut;
use worker::worker_main;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Connecting or preparing statements failed before the clock started.
    #[error("{0}")]
    Setup(DbError),
    #[error("table '{table}' does not exist in database '{db}': run `pgoforge oltp prepare {test}` with the same --tables/--table-size (and connection options) first")]
    MissingTable {
        table: String,
        db: String,
        test: String,
    },
    /// The workload file of a replay cannot be used.
    #[error("{0}")]
    Replay(#[from] crate::replay::ParseError),
    /// The run started and was stopped by an error; `partial` holds the statistics so far.
    #[error("{message}")]
    Failed {
        message: String,
        code: u16,
        partial: Box<RunResult>,
    },
}

/// Hears about a run as it happens (the CLI prints; training and benchmarking may stay silent).
pub trait Observer {
    /// Every connection is up and the clock starts.
    fn started(&mut self) {}
    /// A `--report-interval` report.
    fn interval(&mut self, _interval: &Interval) {}
}

/// An observer that ignores everything.
pub struct Quiet;
impl Observer for Quiet {}

/// Runs the workload of `settings` against a prepared database and returns what was measured.
pub fn run(settings: &Settings, observer: &mut dyn Observer) -> Result<RunResult, RunError> {
    let seed = run_seed(settings);
    // A bad workload file is refused before any server is asked anything.
    let replay = if settings.test == crate::settings::TestName::Replay {
        Some(crate::replay::load(settings)?)
    } else {
        None
    };
    let server = server_side(settings)?;
    let sh = shared(settings, seed, replay.clone());
    let nworkers = settings.effective_client_threads() as usize;
    let counters: Vec<Counters> = (0..nworkers).map(|_| Counters::default()).collect();
    let mut intervals = Vec::new();
    let (outs, end) = drive(&sh, settings, &counters, &mut intervals, observer);
    let outs = outs.map_err(RunError::Setup)?;
    let timing = sh.timing();
    let total = end
        .saturating_duration_since(timing.measure_from)
        .as_secs_f64();
    let mut result = assemble(settings, seed, server, &counters, outs, intervals, total);
    if let (Some(w), Some(r)) = (&replay, result.replay.as_mut()) {
        r.sessions = w.sessions.len();
        r.statements_in_file = w.statements();
    }
    let failure = sh.failure.lock().expect("failure lock").take();
    match failure {
        None => Ok(result),
        Some((message, code)) => Err(RunError::Failed {
            message,
            code,
            partial: Box::new(RunResult {
                complete: false,
                ..result
            }),
        }),
    }
}

/// The run's seed: `--rand-seed`, or the clock's when it is 0 (sysbench's rule).
fn run_seed(settings: &Settings) -> u64 {
    if settings.rand.seed == 0 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    } else {
        settings.rand.seed
    }
}

/// The server as the run reports it, asked once before any worker starts: its version, and
/// that the test's tables are there.
fn server_side(settings: &Settings) -> Result<ServerSide, RunError> {
    let mut ctl = Conn::connect(&settings.conn.for_connection(0)).map_err(RunError::Setup)?;
    let version = ctl.server_info().version.clone();
    let missing = missing_tables(&mut ctl, &table_names(settings)).map_err(RunError::Setup)?;
    if let Some(table) = missing.into_iter().next() {
        return Err(RunError::MissingTable {
            table,
            db: settings.conn.db.clone(),
            test: settings.test.to_string(),
        });
    }
    let endpoints = settings.conn.endpoints();
    Ok(ServerSide {
        version,
        transport: endpoints[0].transport().to_string(),
        endpoints: endpoints.iter().map(|e| e.to_string()).collect(),
        tls: false,
    })
}

/// What the workers share: the workload, the clock, the stop flag, the arrivals of a fixed
/// `--rate`, the first failure.
fn shared(
    settings: &Settings,
    seed: u64,
    replay: Option<std::sync::Arc<crate::replay::parse::Workload>>,
) -> Shared {
    let mut w = Workload::new(settings.clone(), seed);
    w.replay = replay;
    let rate = settings.rate;
    Shared {
        w,
        timing: OnceLock::new(),
        stop: AtomicBool::new(false),
        started: AtomicU64::new(0),
        in_flight: AtomicI64::new(0),
        arrivals: (rate > 0).then(|| {
            Mutex::new(Arrivals {
                next: Instant::now(),
                rng: SbRng::new(seed, u64::MAX),
                rate: rate as f64,
            })
        }),
        failure: Mutex::new(None),
        seed,
    }
}

/// Starts the workers, waits until every connection is up, starts the clock, reports the
/// intervals until they are done, and returns what each measured (or the first set-up error)
/// and when the run ended.
fn drive(
    sh: &Shared,
    settings: &Settings,
    counters: &[Counters],
    intervals: &mut Vec<Interval>,
    observer: &mut dyn Observer,
) -> (Result<Vec<WorkerOut>, DbError>, Instant) {
    let nworkers = counters.len();
    let go = Barrier::new(nworkers + 1);
    let (ready_tx, ready_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    thread::scope(|scope| {
        let handles: Vec<_> = (0..nworkers)
            .map(|wi| {
                let tids: Vec<u32> = (0..settings.threads)
                    .filter(|t| *t as usize % nworkers == wi)
                    .collect();
                let (ready, done, c, go) = (ready_tx.clone(), done_tx.clone(), &counters[wi], &go);
                thread::Builder::new()
                    .name(format!("oltp-worker-{wi}"))
                    .spawn_scoped(scope, move || {
                        let out = worker_main(sh, c, tids, ready, go);
                        let _ = done.send(());
                        out
                    })
                    .expect("spawning a worker thread")
            })
            .collect();
        drop(done_tx);
        let mut setup_error = None;
        for _ in 0..nworkers {
            if let Ok(Err(e)) = ready_rx.recv() {
                setup_error.get_or_insert(e);
            }
        }
        let start = Instant::now();
        let measure_from = start + Duration::from_secs(settings.warmup_time_s);
        let deadline =
            (settings.time_s > 0).then(|| measure_from + Duration::from_secs(settings.time_s));
        let _ = sh.timing.set(Timing {
            measure_from,
            deadline,
        });
        if let Some(arr) = &sh.arrivals {
            arr.lock().expect("arrivals lock").next = start;
        }
        if setup_error.is_some() {
            sh.stop.store(true, Ordering::Relaxed);
        }
        go.wait();

        if setup_error.is_none() {
            observer.started();
            report_intervals(
                sh, settings, counters, &done_rx, nworkers, intervals, observer,
            );
        }
        let outs: Vec<WorkerOut> = handles
            .into_iter()
            .map(|h| h.join().expect("worker thread panicked"))
            .collect();
        (setup_error.map_or(Ok(outs), Err), Instant::now())
    })
}
