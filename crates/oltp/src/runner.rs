//! `run`: connections driven by a few event-loop threads, timed and counted as sysbench does.
//!
//! sysbench gives every connection an OS thread that blocks in `recv` after each statement; most
//! of its client CPU goes to those sleeps and wake-ups. Here one thread drives many connections
//! through epoll (a thread with a single connection simply blocks), so the client takes less CPU
//! from the server it measures. The semantics stay sysbench's: one event at a time per connection,
//! statements in order, the same draws, counters, error policy, time and event limits.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Barrier, Mutex, OnceLock};
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;

use crate::histogram::{bucket_value, LogHistogram, SharedHistogram};
use crate::proto::{encode_query, Conn, DbError, Reply};
use crate::result::{
    Fairness, HdrPercentiles, Interval, Latency, Queries, RunResult, ServerSide, ThreadStats,
};
use crate::rng::SbRng;
use crate::schema::{missing_tables, table_names, BULK_PACKET_SIZE};
use crate::settings::{PsMode, Settings};
use crate::workload::{kinds, push_int, Draws, Handle, Op, StmtKind, StmtTable, Workload};

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
    /// The run started and was stopped by an error; `partial` holds the statistics so far.
    #[error("{message}")]
    Failed {
        message: String,
        code: u16,
        partial: Box<RunResult>,
    },
}

/// When measurement starts and stops.
struct Timing {
    measure_from: Instant,
    deadline: Option<Instant>,
}

/// Poisson arrivals for `--rate`: the schedule is drawn on demand and claimed by idle connections.
struct Arrivals {
    next: Instant,
    rng: SbRng,
    rate: f64,
}

impl Arrivals {
    fn advance(&mut self) {
        let u = self.rng.unit();
        let dt = -(1.0 - u).ln() / self.rate;
        self.next += Duration::from_secs_f64(dt);
    }
}

/// Limit of sysbench's event queue in `--rate` mode.
const RATE_QUEUE_LIMIT: u64 = 131_072;

struct Shared {
    w: Workload,
    timing: OnceLock<Timing>,
    stop: AtomicBool,
    started: AtomicU64,
    in_flight: AtomicI64,
    arrivals: Option<Mutex<Arrivals>>,
    failure: Mutex<Option<(String, u16)>>,
    seed: u64,
}

enum Claim {
    Go(Instant),
    Wait(Instant),
    Stop,
}

impl Shared {
    fn timing(&self) -> &Timing {
        self.timing
            .get()
            .expect("timing is set before workers are released")
    }

    fn take_budget(&self) -> bool {
        let limit = self.w.settings.events;
        limit == 0 || self.started.fetch_add(1, Ordering::Relaxed) < limit
    }

    /// May a connection start another event, and with what start time?
    fn claim(&self, now: Instant) -> Claim {
        if self.stop.load(Ordering::Relaxed) {
            return Claim::Stop;
        }
        let deadline = self.timing().deadline;
        if deadline.is_some_and(|d| now >= d) {
            return Claim::Stop;
        }
        if let Some(arr) = &self.arrivals {
            let mut a = arr.lock().expect("arrivals lock");
            if a.next > now {
                let wake = deadline.map_or(a.next, |d| a.next.min(d));
                return Claim::Wait(wake);
            }
            if !self.take_budget() {
                return Claim::Stop;
            }
            let t = a.next;
            a.advance();
            self.in_flight.fetch_add(1, Ordering::Relaxed);
            return Claim::Go(t);
        }
        if !self.take_budget() {
            return Claim::Stop;
        }
        Claim::Go(now)
    }

    fn fail(&self, message: String, code: u16) {
        let mut f = self.failure.lock().expect("failure lock");
        if f.is_none() {
            *f = Some((message, code));
        }
        self.stop.store(true, Ordering::Relaxed);
    }

    fn measuring(&self, now: Instant) -> bool {
        now >= self.timing().measure_from
    }
}

/// Counters one worker thread writes and the reporter reads.
#[derive(Default)]
struct Counters {
    events: AtomicU64,
    reads: AtomicU64,
    writes: AtomicU64,
    others: AtomicU64,
    errors: AtomicU64,
    reconnects: AtomicU64,
    hist: SharedHistogram,
}

#[inline]
fn bump(c: &AtomicU64, n: u64) {
    // Single writer: a load and a store, no locked instruction.
    if n > 0 {
        c.store(c.load(Ordering::Relaxed) + n, Ordering::Relaxed);
    }
}

#[derive(Clone, Copy, Default)]
struct Snapshot {
    events: u64,
    reads: u64,
    writes: u64,
    others: u64,
    errors: u64,
    reconnects: u64,
}

impl Counters {
    fn snapshot(&self) -> Snapshot {
        Snapshot {
            events: self.events.load(Ordering::Relaxed),
            reads: self.reads.load(Ordering::Relaxed),
            writes: self.writes.load(Ordering::Relaxed),
            others: self.others.load(Ordering::Relaxed),
            errors: self.errors.load(Ordering::Relaxed),
            reconnects: self.reconnects.load(Ordering::Relaxed),
        }
    }
}

fn sum(snaps: impl Iterator<Item = Snapshot>) -> Snapshot {
    snaps.fold(Snapshot::default(), |a, b| Snapshot {
        events: a.events + b.events,
        reads: a.reads + b.reads,
        writes: a.writes + b.writes,
        others: a.others + b.others,
        errors: a.errors + b.errors,
        reconnects: a.reconnects + b.reconnects,
    })
}

/// Per-event tallies, added to the shared counters when the event ends.
#[derive(Default)]
struct EventTally {
    reads: u64,
    writes: u64,
    others: u64,
    errors: u64,
    reconnects: u64,
}

/// One connection and where it is in its current event.
struct Slot {
    tid: u32,
    conn: Conn,
    rng: SbRng,
    stmts: StmtTable,
    draws: Draws,
    cursor: usize,
    in_event: bool,
    ev_start: Instant,
    tally: EventTally,
    current: StmtKind,
    events: u64,
    busy_ns: u64,
    bulk: Vec<u8>,
    bulk_prefix_len: usize,
    bulk_rows: u64,
    bulk_next: u64,
    finished: bool,
    idle_until: Option<Instant>,
    /// Driven by an epoll loop (non-blocking socket) rather than blocking reads.
    event_loop: bool,
    /// The socket is not (yet, or after a reconnect no longer) in the epoll set.
    needs_register: bool,
}

enum Status {
    Waiting,
    Idle(Instant),
    Finished,
}

/// What a worker hands back when its connections are done.
struct WorkerOut {
    threads: Vec<(u32, ThreadStats)>,
    hdr: Histogram<u64>,
    min_ns: u64,
    max_ns: u64,
    sum_ns: u64,
}

fn new_hdr() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid HDR bounds")
}

/// Connects connection `tid` and prepares its statements as sysbench's `thread_init` does.
fn open(w: &Workload, tid: u32) -> Result<(Conn, StmtTable), DbError> {
    let s = &w.settings;
    let mut conn = Conn::connect(&s.conn.for_connection(tid as usize))?;
    let mut stmts = StmtTable::new(kinds(&w.plan), s.schema.tables);
    let mut handles = Vec::new();
    for (_, _, sql) in stmts.statements(s) {
        let h = if s.ps_mode == PsMode::Disable {
            Handle::text(&sql)
        } else {
            match conn.prepare(&sql) {
                Ok(p) => Handle::Prepared(p, false),
                // ER_UNSUPPORTED_PS: sysbench silently emulates such statements as text.
                Err(DbError::Server(e)) if e.code == 1295 => Handle::text(&sql),
                Err(e) => return Err(e),
            }
        };
        handles.push(h);
    }
    stmts.set(handles);
    Ok((conn, stmts))
}

struct Worker<'a> {
    sh: &'a Shared,
    c: &'a Counters,
    hdr: Histogram<u64>,
    min_ns: u64,
    max_ns: u64,
    sum_ns: u64,
}

impl<'a> Worker<'a> {
    fn end_event(&mut self, slot: &mut Slot, now: Instant) {
        let ns = now.saturating_duration_since(slot.ev_start).as_nanos() as u64;
        let t = std::mem::take(&mut slot.tally);
        if self.sh.arrivals.is_some() {
            self.sh.in_flight.fetch_sub(1, Ordering::Relaxed);
        }
        slot.in_event = false;
        if !self.sh.measuring(now) {
            return;
        }
        let c = self.c;
        bump(&c.reads, t.reads);
        bump(&c.writes, t.writes);
        bump(&c.others, t.others);
        bump(&c.errors, t.errors);
        bump(&c.reconnects, t.reconnects);
        c.hist.record_ms(ns as f64 / 1e6);
        bump(&c.events, 1);
        self.hdr.saturating_record(ns.max(1));
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
        self.sum_ns += ns;
        slot.events += 1;
        slot.busy_ns += ns;
    }

    /// Runs the slot's steps until it waits for the server, must idle, or is done.
    fn advance(&mut self, slot: &mut Slot) -> Status {
        let w = &self.sh.w;
        let mut now: Option<Instant> = None;
        loop {
            if !slot.in_event {
                let t = *now.get_or_insert_with(Instant::now);
                match self.sh.claim(t) {
                    Claim::Go(start) => {
                        slot.in_event = true;
                        slot.ev_start = start;
                        slot.cursor = 0;
                    }
                    Claim::Wait(until) => return Status::Idle(until),
                    Claim::Stop => {
                        self.finish(slot);
                        return Status::Finished;
                    }
                }
            }
            let Some(&op) = w.plan.get(slot.cursor) else {
                let t = Instant::now();
                self.end_event(slot, t);
                now = Some(t);
                continue;
            };
            match op {
                Op::Stmt(StmtKind::BulkRow) => {
                    let mut row = Vec::with_capacity(24);
                    row.push(b'(');
                    push_int(&mut row, slot.bulk_next as i64 + 1);
                    row.push(b',');
                    push_int(&mut row, slot.bulk_next as i64 + 1);
                    row.push(b')');
                    let sep = (slot.bulk_rows > 0) as usize;
                    if slot.bulk.len() + row.len() + 1 + sep > BULK_PACKET_SIZE
                        && slot.bulk_rows > 0
                    {
                        slot.current = StmtKind::BulkRow;
                        let r = encode_query(slot.conn.out(), &slot.bulk)
                            .and_then(|_| slot.conn.send(crate::proto::Expect::Result));
                        if let Err(e) = r {
                            return self.on_error(slot, e);
                        }
                        return Status::Waiting;
                    }
                    if sep == 1 {
                        slot.bulk.push(b',');
                    }
                    slot.bulk.extend_from_slice(&row);
                    slot.bulk_rows += 1;
                    slot.bulk_next += 1;
                    slot.cursor += 1;
                }
                Op::Stmt(kind) => {
                    slot.current = kind;
                    let out = slot.conn.out();
                    let r = w
                        .encode(
                            kind,
                            slot.tid,
                            &mut slot.draws,
                            &mut slot.rng,
                            &mut slot.stmts,
                            out,
                        )
                        .and_then(|expect| slot.conn.send(expect));
                    if let Err(e) = r {
                        return self.on_error(slot, e);
                    }
                    return Status::Waiting;
                }
                draw => {
                    w.draw(draw, &mut slot.draws, &mut slot.rng);
                    slot.cursor += 1;
                }
            }
        }
    }

    fn on_reply(&mut self, slot: &mut Slot, reply: Reply) -> Status {
        match reply {
            Reply::Done(o) => {
                if o.result_set {
                    slot.tally.reads += 1;
                } else if o.affected_rows > 0 {
                    slot.tally.writes += 1;
                } else {
                    slot.tally.others += 1;
                }
                if slot.current == StmtKind::BulkRow {
                    // A full buffer went out; the step runs again and starts a new one.
                    slot.bulk.truncate(slot.bulk_prefix_len);
                    slot.bulk_rows = 0;
                } else {
                    slot.cursor += 1;
                }
                self.advance(slot)
            }
            Reply::Error(e) => {
                if self.sh.w.settings.ignore_errors.contains(e.code) {
                    // sysbench restarts the whole event with new values; its clock keeps running.
                    slot.tally.errors += 1;
                    slot.cursor = 0;
                    return self.advance(slot);
                }
                let (func, query) = self.describe(slot);
                self.sh.fail(
                    format!(
                        "FATAL: {func}() returned error {} ({}) for query '{query}'",
                        e.code, e.message
                    ),
                    e.code,
                );
                self.abandon(slot)
            }
            Reply::Prepared(_) => {
                self.on_error(slot, DbError::Protocol("unexpected prepare reply".into()))
            }
        }
    }

    fn on_error(&mut self, slot: &mut Slot, e: DbError) -> Status {
        let s = &self.sh.w.settings;
        let code = e.code();
        if !(e.is_connection_loss() && s.ignore_errors.contains(code)) {
            let (func, query) = self.describe(slot);
            self.sh.fail(
                format!("FATAL: {func}() returned error {code} ({e}) for query '{query}'"),
                code,
            );
            return self.abandon(slot);
        }
        // A listed connection error: reconnect, re-prepare and restart the event, as sysbench.
        loop {
            let now = Instant::now();
            let late = self.sh.timing().deadline.is_some_and(|d| now >= d);
            if self.sh.stop.load(Ordering::Relaxed) || late {
                return self.abandon(slot);
            }
            match open(&self.sh.w, slot.tid) {
                Ok((conn, stmts)) => {
                    slot.conn = conn;
                    slot.stmts = stmts;
                    if slot.event_loop {
                        if let Err(e) = slot.conn.set_nonblocking(true) {
                            self.sh.fail(format!("FATAL: {e}"), e.code());
                            return self.abandon(slot);
                        }
                        slot.needs_register = true;
                    }
                    break;
                }
                Err(_) => thread::sleep(Duration::from_millis(1)),
            }
        }
        slot.tally.reconnects += 1;
        slot.cursor = 0;
        if slot.current == StmtKind::BulkRow {
            slot.bulk.truncate(slot.bulk_prefix_len);
            slot.bulk_rows = 0;
        }
        self.advance(slot)
    }

    /// The libmysqlclient call and statement text sysbench would name in its FATAL line.
    fn describe(&self, slot: &Slot) -> (&'static str, String) {
        let kind = slot.current;
        match kind {
            StmtKind::BulkRow => {
                let text = String::from_utf8_lossy(&slot.bulk[..slot.bulk.len().min(200)]);
                ("mysql_drv_query", format!("{text}..."))
            }
            StmtKind::TextInsert => ("mysql_drv_query", slot.draws.last_text()),
            _ => {
                let table = slot.draws.table;
                if self.sh.w.settings.ps_mode == PsMode::Disable {
                    ("mysql_drv_query", slot.draws.last_text())
                } else {
                    ("mysql_stmt_execute", kind.sql(table, &self.sh.w.settings))
                }
            }
        }
    }

    /// Ends a slot whose connection is unusable or whose run is over.
    fn abandon(&mut self, slot: &mut Slot) -> Status {
        if slot.in_event && self.sh.arrivals.is_some() {
            self.sh.in_flight.fetch_sub(1, Ordering::Relaxed);
        }
        slot.in_event = false;
        slot.finished = true;
        Status::Finished
    }

    /// sysbench's `thread_done`: flush a pending bulk insert, close statements.
    fn finish(&mut self, slot: &mut Slot) {
        slot.finished = true;
        if slot.bulk_rows > 0 && !self.sh.stop.load(Ordering::Relaxed) {
            let sql = String::from_utf8_lossy(&slot.bulk).into_owned();
            match slot.conn.query(&sql) {
                Ok(o) if o.affected_rows > 0 => bump(&self.c.writes, 1),
                Ok(_) => bump(&self.c.others, 1),
                Err(e) => self.sh.fail(
                    format!(
                        "FATAL: mysql_drv_query() returned error {} ({e}) while flushing bulk rows",
                        e.code()
                    ),
                    e.code(),
                ),
            }
            slot.bulk_rows = 0;
        }
        let ids: Vec<u32> = slot.stmts.prepared_ids().collect();
        for id in ids {
            let _ = slot.conn.close_statement(id);
        }
    }

    fn run_single(&mut self, slot: &mut Slot) {
        let mut status = self.advance(slot);
        loop {
            status = match status {
                Status::Finished => return,
                Status::Idle(until) => {
                    thread::sleep(until.saturating_duration_since(Instant::now()));
                    self.advance(slot)
                }
                Status::Waiting => match slot.conn.recv() {
                    Ok(Some(reply)) => self.on_reply(slot, reply),
                    Ok(None) => Status::Waiting,
                    Err(e) => self.on_error(slot, e),
                },
            };
        }
    }

    fn run_many(&mut self, slots: &mut [Slot]) -> Result<(), String> {
        use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
        // SAFETY: epoll_create1 returns a new descriptor we own (or -1).
        let raw = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if raw < 0 {
            return Err(format!(
                "epoll_create1: {}",
                std::io::Error::last_os_error()
            ));
        }
        // SAFETY: `raw` is a fresh descriptor owned by nobody else; closed on every return path.
        let ep_owned = unsafe { OwnedFd::from_raw_fd(raw) };
        let ep = ep_owned.as_raw_fd();
        // Records where the slot now stands, and (re-)registers a socket opened by a reconnect. A
        // closed socket leaves the epoll set by itself; its successor may reuse the same number.
        let settle = |slot: &mut Slot, idx: usize, st: Status| -> Result<(), String> {
            slot.idle_until = match st {
                Status::Idle(t) => Some(t),
                _ => None,
            };
            if slot.needs_register && !slot.finished {
                let mut ev = libc::epoll_event {
                    events: libc::EPOLLIN as u32,
                    u64: idx as u64,
                };
                // SAFETY: valid epoll and socket descriptors; ev lives across the call.
                if unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, slot.conn.fd(), &mut ev) } < 0
                {
                    return Err(format!("epoll_ctl: {}", std::io::Error::last_os_error()));
                }
                slot.needs_register = false;
            }
            Ok(())
        };
        for slot in slots.iter_mut() {
            slot.conn.set_nonblocking(true).map_err(|e| e.to_string())?;
            slot.event_loop = true;
            slot.needs_register = true;
        }
        for (idx, slot) in slots.iter_mut().enumerate() {
            settle(slot, idx, Status::Waiting)?;
            let st = self.advance(slot);
            settle(slot, idx, st)?;
        }
        let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; slots.len().min(256)];
        while !slots.iter().all(|s| s.finished) {
            // Wake for the next idle slot, or for the first reply that would be overdue (a
            // server that stalls with the socket open must not hang the run).
            let timeout = slots
                .iter()
                .filter(|s| !s.finished)
                .filter_map(|s| s.idle_until.or_else(|| s.conn.reply_due()))
                .min()
                .map_or(-1, |t| {
                    let d = t.saturating_duration_since(Instant::now());
                    d.as_micros().div_ceil(1000) as i32
                });
            // SAFETY: `events` is a valid buffer of the given length.
            let n =
                unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), events.len() as i32, timeout) };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(format!("epoll_wait: {e}"));
            }
            for ev in &events[..n as usize] {
                let idx = ev.u64 as usize;
                let slot = &mut slots[idx];
                if slot.finished || slot.idle_until.is_some() {
                    continue;
                }
                let st = match slot.conn.recv() {
                    Ok(Some(reply)) => self.on_reply(slot, reply),
                    Ok(None) => continue,
                    Err(e) => self.on_error(slot, e),
                };
                settle(slot, idx, st)?;
            }
            let now = Instant::now();
            for (idx, slot) in slots.iter_mut().enumerate() {
                if slot.finished {
                    continue;
                }
                let st = match slot.idle_until {
                    Some(t) if t <= now => self.advance(slot),
                    Some(_) => continue,
                    None => match slot.conn.check_overdue(now) {
                        Ok(()) => continue,
                        Err(e) => self.on_error(slot, e),
                    },
                };
                settle(slot, idx, st)?;
            }
        }
        Ok(())
    }
}

fn worker_main(
    sh: &Shared,
    c: &Counters,
    tids: Vec<u32>,
    ready: mpsc::Sender<Result<(), DbError>>,
    go: &Barrier,
) -> WorkerOut {
    let mut slots = Vec::new();
    let mut setup: Result<(), DbError> = Ok(());
    if !sh.w.settings.client_cpus.is_empty() {
        if let Err(e) = crate::affinity::pin_current(&sh.w.settings.client_cpus) {
            setup = Err(DbError::Protocol(format!(
                "pinning the client to CPUs {:?}: {e}",
                sh.w.settings.client_cpus
            )));
        }
    }
    for &tid in tids.iter().take(if setup.is_ok() { usize::MAX } else { 0 }) {
        match open(&sh.w, tid) {
            Ok((conn, stmts)) => {
                let prefix = format!("INSERT INTO sbtest{} VALUES", tid + 1).into_bytes();
                slots.push(Slot {
                    tid,
                    conn,
                    rng: SbRng::new(sh.seed, tid as u64 + 1),
                    stmts,
                    draws: Draws::default(),
                    cursor: 0,
                    in_event: false,
                    ev_start: Instant::now(),
                    tally: EventTally::default(),
                    current: StmtKind::Begin,
                    events: 0,
                    busy_ns: 0,
                    bulk_prefix_len: prefix.len(),
                    bulk: prefix,
                    bulk_rows: 0,
                    bulk_next: 0,
                    finished: false,
                    idle_until: None,
                    event_loop: false,
                    needs_register: false,
                });
            }
            Err(e) => {
                setup = Err(e);
                break;
            }
        }
    }
    let _ = ready.send(setup);
    go.wait();
    let mut worker = Worker {
        sh,
        c,
        hdr: new_hdr(),
        min_ns: u64::MAX,
        max_ns: 0,
        sum_ns: 0,
    };
    if !sh.stop.load(Ordering::Relaxed) {
        if slots.len() == 1 {
            worker.run_single(&mut slots[0]);
        } else if let Err(e) = worker.run_many(&mut slots) {
            sh.fail(format!("FATAL: event loop failed: {e}"), 0);
        }
    }
    WorkerOut {
        threads: slots
            .iter()
            .map(|s| {
                (
                    s.tid,
                    ThreadStats {
                        events: s.events,
                        time_s: s.busy_ns as f64 / 1e9,
                    },
                )
            })
            .collect(),
        hdr: worker.hdr,
        min_ns: worker.min_ns,
        max_ns: worker.max_ns,
        sum_ns: worker.sum_ns,
    }
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
    let seed = if settings.rand.seed == 0 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64)
    } else {
        settings.rand.seed
    };
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
    drop(ctl);

    let endpoints = settings.conn.endpoints();
    let server = ServerSide {
        version,
        transport: endpoints[0].transport().to_string(),
        endpoints: endpoints.iter().map(|e| e.to_string()).collect(),
        tls: false,
    };
    let mut sh = Shared {
        w: Workload::new(settings.clone(), seed),
        timing: OnceLock::new(),
        stop: AtomicBool::new(false),
        started: AtomicU64::new(0),
        in_flight: AtomicI64::new(0),
        arrivals: None,
        failure: Mutex::new(None),
        seed,
    };
    let nworkers = settings.effective_client_threads() as usize;
    let counters: Vec<Counters> = (0..nworkers).map(|_| Counters::default()).collect();
    let go = Barrier::new(nworkers + 1);
    let (ready_tx, ready_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let mut intervals = Vec::new();

    let rate = settings.rate;
    if rate > 0 {
        sh.arrivals = Some(Mutex::new(Arrivals {
            next: Instant::now(),
            rng: SbRng::new(seed, u64::MAX),
            rate: rate as f64,
        }));
    }
    let sh = &sh;

    let (outs, end) = thread::scope(|scope| {
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
                sh,
                settings,
                &counters,
                &done_rx,
                nworkers,
                &mut intervals,
                observer,
            );
        }
        let outs: Vec<WorkerOut> = handles
            .into_iter()
            .map(|h| h.join().expect("worker thread panicked"))
            .collect();
        (setup_error.map_or(Ok(outs), Err), Instant::now())
    });
    let outs = outs.map_err(RunError::Setup)?;
    let timing = sh.timing();
    let total = end
        .saturating_duration_since(timing.measure_from)
        .as_secs_f64();
    let result = assemble(settings, seed, server, &counters, outs, intervals, total);
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

/// The reporter: wakes on an absolute grid, turns counter deltas into interval lines.
fn report_intervals(
    sh: &Shared,
    s: &Settings,
    counters: &[Counters],
    done: &mpsc::Receiver<()>,
    nworkers: usize,
    out: &mut Vec<Interval>,
    observer: &mut dyn Observer,
) {
    let timing = sh.timing();
    let every = Duration::from_secs(s.report_interval_s);
    let mut finished = 0;
    let mut prev = Snapshot::default();
    let mut prev_hist = LogHistogram::default();
    let mut prev_t = timing.measure_from;
    let mut k = 1u32;
    // Builds the interval from the previous report to `now` and hands it on.
    let mut emit = |now: Instant| {
        let snap = sum(counters.iter().map(Counters::snapshot));
        let mut hist = LogHistogram::default();
        for c in counters {
            hist.add(&c.hist.snapshot());
        }
        let dt = now.saturating_duration_since(prev_t).as_secs_f64();
        let rate = |a: u64, b: u64| if dt > 0.0 { (a - b) as f64 / dt } else { 0.0 };
        let (queue_length, concurrency) = match &sh.arrivals {
            Some(arr) => {
                let a = arr.lock().expect("arrivals lock");
                let mut probe = Arrivals {
                    next: a.next,
                    rng: a.rng.clone(),
                    rate: a.rate,
                };
                drop(a);
                let mut q = 0;
                while probe.next <= now && q < RATE_QUEUE_LIMIT {
                    probe.advance();
                    q += 1;
                }
                (
                    Some(q),
                    Some(sh.in_flight.load(Ordering::Relaxed).max(0) as u64),
                )
            }
            None => (None, None),
        };
        let iv = Interval {
            at_s: now
                .saturating_duration_since(timing.measure_from)
                .as_secs_f64()
                .round(),
            threads: s.threads,
            tps: rate(snap.events, prev.events),
            qps: rate(
                snap.reads + snap.writes + snap.others,
                prev.reads + prev.writes + prev.others,
            ),
            reads_per_s: rate(snap.reads, prev.reads),
            writes_per_s: rate(snap.writes, prev.writes),
            others_per_s: rate(snap.others, prev.others),
            latency_ms: if s.percentile > 0 {
                hist.since(&prev_hist).percentile(s.percentile as f64)
            } else {
                0.0
            },
            errors_per_s: rate(snap.errors, prev.errors),
            reconnects_per_s: rate(snap.reconnects, prev.reconnects),
            queue_length,
            concurrency,
        };
        if now >= timing.measure_from {
            observer.interval(&iv);
            out.push(iv);
        }
        prev = snap;
        prev_hist = hist;
        prev_t = now;
    };
    while finished < nworkers {
        let wait = if s.report_interval_s == 0 {
            Duration::from_secs(3600)
        } else {
            (timing.measure_from + every * k).saturating_duration_since(Instant::now())
        };
        match done.recv_timeout(wait) {
            Ok(()) => finished += 1,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if s.report_interval_s == 0 {
                    continue;
                }
                k += 1;
                emit(Instant::now());
            }
        }
    }
    // The workers stop at the deadline, the reporter wakes at the same instant: when the workers
    // win, the last interval (up to the deadline) was never reported. Report it, ending at the
    // deadline, so a run of N seconds has N intervals.
    if let (Some(deadline), false) = (timing.deadline, s.report_interval_s == 0) {
        let last_due = timing.measure_from + every * (k - 1);
        if last_due < deadline && deadline.saturating_duration_since(last_due) >= every / 2 {
            emit(deadline.min(Instant::now()));
        }
    }
}

fn assemble(
    s: &Settings,
    seed: u64,
    server: ServerSide,
    counters: &[Counters],
    outs: Vec<WorkerOut>,
    intervals: Vec<Interval>,
    total_time_s: f64,
) -> RunResult {
    let snap = sum(counters.iter().map(Counters::snapshot));
    let mut hist = LogHistogram::default();
    for c in counters {
        hist.add(&c.hist.snapshot());
    }
    let mut hdr = new_hdr();
    let (mut min_ns, mut max_ns, mut sum_ns) = (u64::MAX, 0, 0);
    let mut threads = Vec::new();
    for o in outs {
        let _ = hdr.add(&o.hdr);
        min_ns = min_ns.min(o.min_ns);
        max_ns = max_ns.max(o.max_ns);
        sum_ns += o.sum_ns;
        threads.extend(o.threads);
    }
    threads.sort_by_key(|(tid, _)| *tid);
    let threads: Vec<ThreadStats> = threads.into_iter().map(|(_, t)| t).collect();
    let events = snap.events;
    let ms = |ns: u64| ns as f64 / 1e6;
    let hq = |q: f64| {
        if events == 0 {
            0.0
        } else {
            ms(hdr.value_at_quantile(q))
        }
    };
    let n = threads.len().max(1) as f64;
    let ev_avg = threads.iter().map(|t| t.events as f64).sum::<f64>() / n;
    let ev_sd = (threads
        .iter()
        .map(|t| (t.events as f64 - ev_avg).powi(2))
        .sum::<f64>()
        / n)
        .sqrt();
    let tm_avg = threads.iter().map(|t| t.time_s).sum::<f64>() / n;
    let tm_sd = (threads
        .iter()
        .map(|t| (t.time_s - tm_avg).powi(2))
        .sum::<f64>()
        / n)
        .sqrt();
    RunResult {
        tool: format!("pgoforge-oltp {}", env!("CARGO_PKG_VERSION")),
        test: s.test.to_string(),
        settings: s.clone(),
        seed,
        server,
        queries: Queries {
            read: snap.reads,
            write: snap.writes,
            other: snap.others,
            total: snap.reads + snap.writes + snap.others,
        },
        transactions: events,
        ignored_errors: snap.errors,
        reconnects: snap.reconnects,
        total_time_s,
        latency: Latency {
            min: if events == 0 { 0.0 } else { ms(min_ns) },
            avg: if events == 0 {
                0.0
            } else {
                ms(sum_ns) / events as f64
            },
            max: ms(max_ns),
            sum: ms(sum_ns),
            percentile: (s.percentile > 0).then(|| hist.percentile(s.percentile as f64)),
            hdr: HdrPercentiles {
                p50: hq(0.50),
                p95: hq(0.95),
                p99: hq(0.99),
                p999: hq(0.999),
                max: if events == 0 { 0.0 } else { ms(hdr.max()) },
            },
        },
        fairness: Fairness {
            events_avg: ev_avg,
            events_stddev: ev_sd,
            time_avg_s: tm_avg,
            time_stddev_s: tm_sd,
        },
        threads,
        intervals,
        histogram: hist
            .counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| (bucket_value(i), *c))
            .collect(),
        complete: true,
    }
}
