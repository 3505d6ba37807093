//! Your own workload, replayed: the statements of a general or slow query log, or of a SQL file,
//! sent again per original connection, in order, looped for the run's length.
//!
//! An event is one statement. Connection `t` of `--threads` replays the original connections
//! `t, t + threads, …` one after the other (or, with more connections than the file has, the
//! original connection `t mod n`), so `--threads` equal to the file's connection count replays
//! each on its own. A statement that fails is counted by error code and the replay goes on with
//! the next one, since logs of real applications hold failing statements. Logs hold users' data:
//! results keep counts only (statements, errors by code, rows returned against rows logged),
//! never a statement's text or values.

pub mod options;
pub mod parse;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

pub use options::ReplayOptions;
pub use parse::{Format, ParseError, Statement, Workload};

use crate::script::{Cx, Flow};
use crate::settings::Settings;
use crate::tables::{connect, ctx, Log, SchemaError};

/// What a replay counted beyond sysbench's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayCounts {
    /// Original connections and statements in the file.
    pub sessions: usize,
    pub statements_in_file: usize,
    /// Failed statements by server error code.
    pub errors_by_code: BTreeMap<u16, u64>,
    /// Statements whose logged row count (slow logs) was compared with the rows returned, and
    /// those where the two differ.
    pub rows_checked: u64,
    pub rows_mismatched: u64,
}

impl ReplayCounts {
    pub fn merge(&mut self, other: &ReplayCounts) {
        for (code, n) in &other.errors_by_code {
            *self.errors_by_code.entry(*code).or_default() += n;
        }
        self.rows_checked += other.rows_checked;
        self.rows_mismatched += other.rows_mismatched;
    }
}

/// Where one connection is in its share of the file.
#[derive(Clone, Debug)]
pub struct Cursor {
    sessions: Vec<usize>,
    which: usize,
    pos: usize,
}

impl Cursor {
    /// Connection `tid`'s share of a file with `n` sessions among `threads` connections.
    pub fn new(tid: u32, threads: u32, n: usize) -> Cursor {
        let (tid, threads) = (tid as usize, threads as usize);
        let sessions = if threads >= n {
            vec![tid % n]
        } else {
            (tid..n).step_by(threads).collect()
        };
        Cursor {
            sessions,
            which: 0,
            pos: 0,
        }
    }

    /// The next statement, looping over the connection's sessions.
    pub fn next<'w>(&mut self, w: &'w Workload) -> &'w Statement {
        loop {
            let s = &w.sessions[self.sessions[self.which]];
            if self.pos < s.len() {
                self.pos += 1;
                return &s[self.pos - 1];
            }
            self.pos = 0;
            self.which = (self.which + 1) % self.sessions.len();
        }
    }
}

/// Runs one statement; compares the rows it returned with the logged count.
pub async fn run(stmt: Statement, cx: Cx) -> Flow {
    let r = cx.query(stmt.sql).await;
    if let Some(n) = stmt.rows_logged {
        cx.count_rows_checked(r.outcome.rows != n);
    }
    Flow::Done
}

/// Loads the file for a run.
pub fn load(s: &Settings) -> Result<Arc<Workload>, ParseError> {
    if s.replay.file.as_os_str().is_empty() {
        return Err(ParseError::Bad {
            path: "replay".into(),
            reason: "no workload file: give --replay-file=FILE (a general or slow query log, \
                     or SQL)"
                .into(),
        });
    }
    parse::read(&s.replay.file, s.replay.format).map(Arc::new)
}

/// `prepare replay`: runs the statements of `--replay-dataset` (a SQL file such as a mysqldump)
/// in order on one connection.
pub fn prepare(s: &Settings, log: Log) -> Result<(), SchemaError> {
    let Some(path) = &s.replay.dataset else {
        return Err(SchemaError::Unsupported(
            "prepare replay needs --replay-dataset=FILE (a SQL dump of the data the workload \
             runs against); without one, load your data yourself and just `run replay`"
                .into(),
        ));
    };
    let w = parse::read(path, Format::Sql).map_err(|e| SchemaError::Unsupported(e.to_string()))?;
    let mut conn = connect(s, 0)?;
    let total = w.statements();
    log(&format!(
        "Loading {} ({total} statements)...",
        path.display()
    ));
    for (i, st) in w.sessions.iter().flatten().enumerate() {
        conn.query_bytes(&st.sql).map_err(ctx(format!(
            "loading {}: statement {} of {total} failed (its text is not shown: a dump holds data)",
            path.display(),
            i + 1
        )))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(lens: &[usize]) -> Workload {
        Workload {
            format: Format::Sql,
            sessions: lens
                .iter()
                .enumerate()
                .map(|(s, n)| {
                    (0..*n)
                        .map(|i| Statement {
                            sql: format!("{s}.{i}").into_bytes(),
                            rows_logged: None,
                        })
                        .collect()
                })
                .collect(),
        }
    }

    fn take(c: &mut Cursor, w: &Workload, n: usize) -> Vec<String> {
        (0..n)
            .map(|_| String::from_utf8(c.next(w).sql.clone()).unwrap())
            .collect()
    }

    #[test]
    fn connections_share_the_sessions_in_order_and_loop() {
        let wl = w(&[2, 1, 3]);
        // As many connections as sessions: each replays its own, looping.
        let mut c = Cursor::new(2, 3, 3);
        assert_eq!(take(&mut c, &wl, 4), ["2.0", "2.1", "2.2", "2.0"]);
        // Fewer: connection 0 of 2 replays sessions 0 and 2, one after the other.
        let mut c = Cursor::new(0, 2, 3);
        assert_eq!(
            take(&mut c, &wl, 6),
            ["0.0", "0.1", "2.0", "2.1", "2.2", "0.0"]
        );
        // More: connection 4 of 5 replays session 1.
        let mut c = Cursor::new(4, 5, 3);
        assert_eq!(take(&mut c, &wl, 2), ["1.0", "1.0"]);
    }
}
