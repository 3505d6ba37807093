//! What everything that creates and loads tables shares — sysbench's sbtest tables (schema.rs),
//! tpcc's (tpcc/load.rs), a replay's dump (replay/): the connections, the error with its context,
//! the progress log, the bulk-insert size and the work spread over connections. Below all of
//! them, so none imports another back.

use std::thread;

use crate::proto::{Conn, DbError};
use crate::settings::Settings;

/// sysbench's client buffer for multi-row INSERTs.
pub const BULK_PACKET_SIZE: usize = 512 * 1024;

/// Receives the progress lines sysbench prints ("Creating table 'sbtest1'...").
pub type Log<'a> = &'a (dyn Fn(&str) + Sync);

#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error("{context}: {source}")]
    Db {
        context: String,
        #[source]
        source: DbError,
    },
    #[error("{0}")]
    Unsupported(String),
}

pub(crate) fn ctx(context: impl Into<String>) -> impl FnOnce(DbError) -> SchemaError {
    let context = context.into();
    move |source| SchemaError::Db { context, source }
}

pub(crate) fn connect(s: &Settings, i: usize) -> Result<Conn, SchemaError> {
    let opts = s.conn.for_connection(i);
    Conn::connect(&opts).map_err(ctx("connecting"))
}

/// Runs `work(conn, table)` for every table, table t on connection (t-1) % threads.
pub(crate) fn per_table<F>(s: &Settings, tables: u32, work: F) -> Result<(), SchemaError>
where
    F: Fn(&mut Conn, u32) -> Result<(), SchemaError> + Sync,
{
    let workers = s.threads.min(tables).max(1);
    thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let work = &work;
                scope.spawn(move || -> Result<(), SchemaError> {
                    let mut conn = connect(s, w as usize)?;
                    let mut t = w + 1;
                    while t <= tables {
                        work(&mut conn, t)?;
                        t += workers;
                    }
                    Ok(())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("prepare worker panicked"))
            .collect::<Result<Vec<()>, _>>()
            .map(|_| ())
    })
}
