//! One connection's state: where it is in its current event, what it has drawn and counted; and
//! how a connection is opened and its statements prepared.

use std::time::Instant;

use hdrhistogram::Histogram;

use super::counters::EventTally;
use crate::proto::{Conn, DbError};
use crate::replay::ReplayCounts;
use crate::result::ThreadStats;
use crate::rng::SbRng;
use crate::script::Script;
use crate::settings::{PsMode, Settings, TestName};
use crate::workload::{kinds, Draws, Handle, StmtKind, StmtTable, Workload};

/// One connection and where it is in its current event.
pub(super) struct Slot {
    pub(super) tid: u32,
    pub(super) conn: Conn,
    pub(super) rng: SbRng,
    pub(super) stmts: StmtTable,
    pub(super) draws: Draws,
    pub(super) cursor: usize,
    pub(super) in_event: bool,
    pub(super) ev_start: Instant,
    pub(super) tally: EventTally,
    pub(super) current: StmtKind,
    pub(super) events: u64,
    pub(super) busy_ns: u64,
    pub(super) bulk: Vec<u8>,
    pub(super) bulk_prefix_len: usize,
    pub(super) bulk_rows: u64,
    pub(super) bulk_next: u64,
    pub(super) finished: bool,
    pub(super) idle_until: Option<Instant>,
    /// Driven by an epoll loop (non-blocking socket) rather than blocking reads.
    pub(super) event_loop: bool,
    /// The socket is not (yet, or after a reconnect no longer) in the epoll set.
    pub(super) needs_register: bool,
    /// A scripted workload's event in progress (tpcc, replay); `None` for the fixed-plan tests.
    pub(super) script: Option<Script>,
    /// Where this connection is in the replayed file.
    pub(super) replay: Option<crate::replay::Cursor>,
    /// Replay counts of the event in progress, and of the measured events.
    pub(super) pending: ReplayCounts,
    pub(super) counted: ReplayCounts,
}

pub(super) enum Status {
    Waiting,
    Idle(Instant),
    Finished,
}

/// When the first of `slots` needs the worker again without a reply: its idle time ends, or the
/// reply it waits for is overdue (a server that stalls with the socket open must not hang the
/// run). `None`: nothing but a reply will.
pub(super) fn next_wake(slots: &[Slot]) -> Option<Instant> {
    slots
        .iter()
        .filter(|s| !s.finished)
        .filter_map(|s| s.idle_until.or_else(|| s.conn.reply_due()))
        .min()
}

/// What a worker hands back when its connections are done.
pub(super) struct WorkerOut {
    pub(super) threads: Vec<(u32, ThreadStats)>,
    pub(super) hdr: Histogram<u64>,
    pub(super) min_ns: u64,
    pub(super) max_ns: u64,
    pub(super) sum_ns: u64,
    pub(super) replay: ReplayCounts,
}

pub(super) fn new_hdr() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid HDR bounds")
}

/// Connects connection `tid` and prepares its statements as sysbench's `thread_init` does.
pub(super) fn open(w: &Workload, tid: u32) -> Result<(Conn, StmtTable), DbError> {
    let s = &w.settings;
    let mut conn = Conn::connect(&s.conn.for_connection(tid as usize))?;
    if s.test == TestName::Tpcc {
        tpcc_session(s, &mut conn)?;
    }
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

/// sysbench-tpcc's `db_connection_init`: the isolation level through whichever of
/// `tx_isolation`/`transaction_isolation` the server has, foreign-key checks off, autocommit off.
/// The connection then keeps every reply's rows: the transactions read them.
fn tpcc_session(s: &Settings, conn: &mut Conn) -> Result<(), DbError> {
    let var = conn
        .query_value("SHOW VARIABLES LIKE 't%_isolation'")?
        .ok_or_else(|| {
            DbError::Protocol(
                "the server has neither tx_isolation nor transaction_isolation".into(),
            )
        })?;
    conn.query(&format!(
        "SET SESSION {var}='{}'",
        s.tpcc.trx_level.mysql_value()
    ))?;
    conn.query("SET FOREIGN_KEY_CHECKS=0")?;
    conn.query("SET autocommit=0")?;
    conn.capture_rows(true);
    Ok(())
}
