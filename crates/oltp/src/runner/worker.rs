//! A worker thread: the per-connection state machine (send the next statement, take the reply
//! or the error, end the event) and the thread's start-up and result.

use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::counters::{bump, Counters, EventTally};
use super::schedule::{Claim, Shared};
use super::slot::{new_hdr, open, Slot, Status, WorkerOut};
use crate::proto::{encode_query, DbError, Expect, Reply};
use crate::result::ThreadStats;
use crate::rng::SbRng;
use crate::schema::BULK_PACKET_SIZE;
use crate::script::{Flow, Script, Step, StmtReply};
use crate::settings::{ClientIo, PsMode, TestName};
use crate::workload::{push_int, Draws, Op, StmtKind};

/// See [`Worker::due`].
pub(super) enum Due {
    Nothing,
    Step(Status),
    Overdue(DbError),
}

pub(super) struct Worker<'a> {
    pub(super) sh: &'a Shared,
    pub(super) c: &'a Counters,
    pub(super) hdr: Histogram<u64>,
    pub(super) min_ns: u64,
    pub(super) max_ns: u64,
    pub(super) sum_ns: u64,
}

impl<'a> Worker<'a> {
    pub(super) fn end_event(&mut self, slot: &mut Slot, now: Instant) {
        let ns = now.saturating_duration_since(slot.ev_start).as_nanos() as u64;
        let t = std::mem::take(&mut slot.tally);
        let pending = std::mem::take(&mut slot.pending);
        if self.sh.arrivals.is_some() {
            self.sh.in_flight.fetch_sub(1, Ordering::Relaxed);
        }
        slot.in_event = false;
        if !self.sh.measuring(now) {
            return;
        }
        slot.counted.merge(&pending);
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
    pub(super) fn advance(&mut self, slot: &mut Slot) -> Status {
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
            if slot.script.is_some() {
                match self.script_step(slot) {
                    Some(status) => return status,
                    None => {
                        let t = Instant::now();
                        self.end_event(slot, t);
                        now = Some(t);
                        continue;
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

    /// Runs a scripted event until it sends a statement (`Some(status)`) or completes (`None`).
    fn script_step(&mut self, slot: &mut Slot) -> Option<Status> {
        let w = &self.sh.w;
        loop {
            let script = slot.script.as_mut()?;
            if !script.is_running() {
                let cx = script.cx();
                match (&mut slot.replay, &w.replay) {
                    (Some(cursor), Some(file)) => {
                        script.start(crate::replay::run(cursor.next(file).clone(), cx));
                    }
                    _ => {
                        let txn = crate::tpcc::txn::draw(&w.settings, &mut slot.rng);
                        script.start(crate::tpcc::exec::run(txn, cx, w.settings.tpcc.splittable));
                    }
                }
            }
            match script.step() {
                Step::Send(sql) => {
                    let r = encode_query(slot.conn.out(), &sql)
                        .and_then(|_| slot.conn.send(Expect::Result));
                    return Some(match r {
                        Ok(()) => Status::Waiting,
                        Err(e) => self.on_error(slot, e),
                    });
                }
                Step::Finished(flow) => {
                    slot.tally.errors += script.take_errors();
                    let (checked, mismatched) = script.take_row_checks();
                    slot.pending.rows_checked += checked;
                    slot.pending.rows_mismatched += mismatched;
                    match flow {
                        Flow::Done => return None,
                        // A new transaction, drawn afresh, within the same event.
                        Flow::Restart => continue,
                    }
                }
            }
        }
    }

    pub(super) fn on_reply(&mut self, slot: &mut Slot, reply: Reply) -> Status {
        match reply {
            Reply::Done(o) => {
                if o.result_set {
                    slot.tally.reads += 1;
                } else if o.affected_rows > 0 {
                    slot.tally.writes += 1;
                } else {
                    slot.tally.others += 1;
                }
                if let Some(script) = slot.script.as_mut() {
                    let rows = slot.conn.take_rows();
                    script.deliver(StmtReply { outcome: o, rows });
                    return self.advance(slot);
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
                if slot.replay.is_some() {
                    // A replayed statement that fails is counted, and the replay goes on.
                    slot.tally.errors += 1;
                    *slot.pending.errors_by_code.entry(e.code).or_default() += 1;
                    if let Some(script) = slot.script.as_mut() {
                        script.abort();
                    }
                    let t = Instant::now();
                    self.end_event(slot, t);
                    return self.advance(slot);
                }
                if self.sh.w.settings.ignore_errors.contains(e.code) {
                    // sysbench restarts the whole event with new values; its clock keeps running.
                    slot.tally.errors += 1;
                    if let Some(script) = slot.script.as_mut() {
                        // sysbench-tpcc's before_restart_event hook rolls back first (rows
                        // captured before the error go when the next statement is sent).
                        let cx = script.cx();
                        script.start(crate::tpcc::exec::rollback_and_restart(cx));
                        return self.advance(slot);
                    }
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

    pub(super) fn on_error(&mut self, slot: &mut Slot, e: DbError) -> Status {
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
                    // The io_uring loop writes each command itself, the new connection's too.
                    slot.conn
                        .defer_sends(self.sh.w.settings.client_io == ClientIo::Uring);
                    break;
                }
                Err(_) => thread::sleep(Duration::from_millis(1)),
            }
        }
        slot.tally.reconnects += 1;
        slot.cursor = 0;
        if let Some(script) = slot.script.as_mut() {
            script.abort();
        }
        if slot.current == StmtKind::BulkRow {
            slot.bulk.truncate(slot.bulk_prefix_len);
            slot.bulk_rows = 0;
        }
        self.advance(slot)
    }

    /// The libmysqlclient call and statement text sysbench would name in its FATAL line.
    pub(super) fn describe(&self, slot: &Slot) -> (&'static str, String) {
        if slot.replay.is_some() {
            return (
                "mysql_drv_query",
                "a statement of the replayed file (text withheld: logs hold users' data)".into(),
            );
        }
        if let Some(script) = &slot.script {
            return ("mysql_drv_query", script.last_sql());
        }
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

    /// What an idle or waiting slot needs at `now`: nothing yet, its next step (its idle time is
    /// over), or the timeout of a reply that is overdue (a server that stalls with the socket
    /// open must not hang the run).
    pub(super) fn due(&mut self, slot: &mut Slot, now: Instant) -> Due {
        match slot.idle_until {
            Some(t) if t <= now => Due::Step(self.advance(slot)),
            Some(_) => Due::Nothing,
            None => match slot.conn.check_overdue(now) {
                Ok(()) => Due::Nothing,
                Err(e) => Due::Overdue(e),
            },
        }
    }

    /// Ends a slot whose connection is unusable or whose run is over.
    pub(super) fn abandon(&mut self, slot: &mut Slot) -> Status {
        if slot.in_event && self.sh.arrivals.is_some() {
            self.sh.in_flight.fetch_sub(1, Ordering::Relaxed);
        }
        slot.in_event = false;
        slot.finished = true;
        Status::Finished
    }

    /// sysbench's `thread_done`: flush a pending bulk insert, close statements.
    pub(super) fn finish(&mut self, slot: &mut Slot) {
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
}

pub(super) fn worker_main(
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
                    script: matches!(sh.w.settings.test, TestName::Tpcc | TestName::Replay)
                        .then(Script::default),
                    replay: sh.w.replay.as_ref().map(|f| {
                        crate::replay::Cursor::new(tid, sh.w.settings.threads, f.sessions.len())
                    }),
                    pending: Default::default(),
                    counted: Default::default(),
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
        let r = match sh.w.settings.client_io {
            ClientIo::Uring => worker.run_ring(&mut slots),
            ClientIo::Epoll if slots.len() == 1 => {
                worker.run_single(&mut slots[0]);
                Ok(())
            }
            ClientIo::Epoll => worker.run_many(&mut slots),
        };
        if let Err(e) = r {
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
        replay: slots
            .iter()
            .fold(crate::replay::ReplayCounts::default(), |mut a, s| {
                a.merge(&s.counted);
                a
            }),
    }
}
