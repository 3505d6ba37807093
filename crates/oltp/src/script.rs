//! Scripted events: an event written as straight-line `async` code whose statements depend on the
//! rows earlier statements returned (TPC-C's `d_next_o_id`, a customer found by name), driven by
//! the same event loop as the fixed-plan OLTP tests.
//!
//! The OLTP tests' events are fixed lists of statements, so the runner can walk them with a
//! cursor. A TPC-C transaction reads a value and writes with it, loops over what it read and
//! branches on it. Writing such a transaction as a hand-made state machine per statement is long
//! and easy to get wrong; written as `async` code it reads like the script it reproduces, and the
//! compiler builds the state machine. Nothing here is an async runtime: a [`Script`] is polled by
//! the runner's worker with a no-op waker. When it wants a statement sent it leaves the SQL in
//! its [`Exchange`] and returns `Pending`; the worker sends it, and once the reply is parsed it
//! stores the rows and polls again. A server error never reaches the script: the worker applies
//! sysbench's error policy (restart the event, or end the run) and drops the script.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use crate::proto::{Outcome, TextRow};

/// How a scripted event ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// The event is complete: it counts as one transaction.
    Done,
    /// Run the event again from the start with new draws (sysbench's restart after an ignorable
    /// error, once the rollback hook has run).
    Restart,
}

/// What one statement returned, as a script sees it.
#[derive(Debug, Default, Clone)]
pub struct StmtReply {
    pub outcome: Outcome,
    pub rows: Vec<TextRow>,
}

impl StmtReply {
    /// Column `col` of the first row, as sysbench's `con:query_row()` returns it (NULL and a
    /// missing row both give `None`).
    pub fn value(&self, col: usize) -> Option<&str> {
        self.rows.first().and_then(|r| r.get(col)?.as_deref())
    }
}

/// The mailbox between a script and the worker driving it.
#[derive(Default)]
pub struct Exchange {
    /// The statement the script waits on, not yet taken by the worker.
    request: Option<Vec<u8>>,
    /// The reply to the statement last sent, not yet taken by the script.
    reply: Option<StmtReply>,
    /// Errors the script counted itself (sysbench-tpcc's `sb_counter_inc(SB_CNT_ERROR)`).
    pub errors: u64,
    /// Row counts compared with a logged one (replay), and how many differed.
    pub rows_checked: u64,
    pub rows_mismatched: u64,
    /// The last statement's text, for error messages.
    pub last: Vec<u8>,
}

/// The handle a script uses to run statements.
#[derive(Clone)]
pub struct Cx(Rc<RefCell<Exchange>>);

impl Cx {
    /// Sends `sql` over the text protocol and waits for its reply.
    pub fn query(&self, sql: impl Into<Vec<u8>>) -> impl Future<Output = StmtReply> + '_ {
        {
            let mut ex = self.0.borrow_mut();
            ex.reply = None;
            ex.request = Some(sql.into());
        }
        std::future::poll_fn(move |_| match self.0.borrow_mut().reply.take() {
            Some(r) => Poll::Ready(r),
            None => Poll::Pending,
        })
    }

    /// Counts an error the workload itself decided on (not a server error).
    pub fn count_error(&self) {
        self.0.borrow_mut().errors += 1;
    }

    /// Counts a row count compared with the logged one, and whether they differed.
    pub fn count_rows_checked(&self, mismatched: bool) {
        let mut ex = self.0.borrow_mut();
        ex.rows_checked += 1;
        ex.rows_mismatched += mismatched as u64;
    }
}

type Body = Pin<Box<dyn Future<Output = Flow>>>;

/// One connection's scripted event in progress (or none), and the mailbox it shares.
pub struct Script {
    cx: Cx,
    body: Option<Body>,
}

/// What the worker does next for a scripted connection.
#[derive(Debug, PartialEq, Eq)]
pub enum Step {
    /// Send this statement (text protocol) and deliver its reply with [`Script::deliver`].
    Send(Vec<u8>),
    Finished(Flow),
}

impl Default for Script {
    fn default() -> Self {
        Script {
            cx: Cx(Rc::new(RefCell::new(Exchange::default()))),
            body: None,
        }
    }
}

impl Script {
    /// The handle to give an event's body.
    pub fn cx(&self) -> Cx {
        self.cx.clone()
    }

    pub fn is_running(&self) -> bool {
        self.body.is_some()
    }

    /// Starts an event; any event still in progress is dropped.
    pub fn start(&mut self, body: impl Future<Output = Flow> + 'static) {
        self.body = Some(Box::pin(body));
        let mut ex = self.cx.0.borrow_mut();
        ex.request = None;
        ex.reply = None;
    }

    /// Drops the event in progress (after a server error or a reconnect).
    pub fn abort(&mut self) {
        self.body = None;
    }

    /// Runs the event until it needs a statement sent or ends.
    pub fn step(&mut self) -> Step {
        let Some(body) = self.body.as_mut() else {
            return Step::Finished(Flow::Done);
        };
        let mut cx = Context::from_waker(Waker::noop());
        match body.as_mut().poll(&mut cx) {
            Poll::Ready(flow) => {
                self.body = None;
                Step::Finished(flow)
            }
            Poll::Pending => {
                let mut ex = self.cx.0.borrow_mut();
                match ex.request.take() {
                    Some(sql) => {
                        ex.last.clone_from(&sql);
                        Step::Send(sql)
                    }
                    // Only `Cx::query` suspends a body; anything else is a bug in the script.
                    None => panic!("a scripted event waited on something other than a statement"),
                }
            }
        }
    }

    /// Hands the reply of the statement last sent to the waiting event.
    pub fn deliver(&mut self, reply: StmtReply) {
        self.cx.0.borrow_mut().reply = Some(reply);
    }

    /// Errors the script counted since the last call.
    pub fn take_errors(&mut self) -> u64 {
        std::mem::take(&mut self.cx.0.borrow_mut().errors)
    }

    /// Row comparisons since the last call: (checked, mismatched).
    pub fn take_row_checks(&mut self) -> (u64, u64) {
        let mut ex = self.cx.0.borrow_mut();
        (
            std::mem::take(&mut ex.rows_checked),
            std::mem::take(&mut ex.rows_mismatched),
        )
    }

    /// The last statement sent, as text.
    pub fn last_sql(&self) -> String {
        String::from_utf8_lossy(&self.cx.0.borrow().last).into_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(v: &str) -> StmtReply {
        StmtReply {
            outcome: Outcome {
                result_set: true,
                rows: 1,
                ..Outcome::default()
            },
            rows: vec![vec![Some(v.to_string())]],
        }
    }

    #[test]
    fn a_later_statement_uses_a_value_read_by_an_earlier_one() {
        let mut s = Script::default();
        let cx = s.cx();
        s.start(async move {
            let r = cx.query("SELECT d_next_o_id FROM district1").await;
            let next: u32 = r.value(0).and_then(|v| v.parse().ok()).unwrap_or(0);
            cx.query(format!("UPDATE district1 SET d_next_o_id = {}", next + 1))
                .await;
            if next > 100 {
                cx.count_error();
            }
            Flow::Done
        });
        assert_eq!(
            s.step(),
            Step::Send(b"SELECT d_next_o_id FROM district1".to_vec())
        );
        // Polling again before the reply arrived must not advance the script.
        s.deliver(reply("3001"));
        assert_eq!(
            s.step(),
            Step::Send(b"UPDATE district1 SET d_next_o_id = 3002".to_vec())
        );
        s.deliver(StmtReply::default());
        assert_eq!(s.step(), Step::Finished(Flow::Done));
        assert_eq!(s.take_errors(), 1);
        assert_eq!(s.take_errors(), 0);
        assert!(!s.is_running());
        assert_eq!(s.last_sql(), "UPDATE district1 SET d_next_o_id = 3002");
    }

    #[test]
    fn an_aborted_event_leaves_nothing_behind() {
        let mut s = Script::default();
        let cx = s.cx();
        s.start(async move {
            cx.query("BEGIN").await;
            Flow::Done
        });
        assert!(matches!(s.step(), Step::Send(_)));
        s.abort();
        assert_eq!(s.step(), Step::Finished(Flow::Done));
        let cx = s.cx();
        s.start(async move {
            cx.query("ROLLBACK").await;
            Flow::Restart
        });
        assert_eq!(s.step(), Step::Send(b"ROLLBACK".to_vec()));
        s.deliver(StmtReply::default());
        assert_eq!(s.step(), Step::Finished(Flow::Restart));
    }
}
