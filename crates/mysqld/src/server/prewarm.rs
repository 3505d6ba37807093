//! Reading a server's tables into its buffer pool before anything is measured on it.
//!
//! A benchmark round starts every server on a fresh copy of the dataset template, so its buffer
//! pool starts empty (pgoforge's my.cnf turns the buffer pool dump and load off) and InnoDB reads
//! each page from disk the first time a query needs it — with O_DIRECT, MySQL's and MariaDB's
//! default, past the page cache. A workload's short warm-up reads little of a dataset it touches
//! first: in MySQL 9.7's six-server run (docs/results/mysql-9.7-default) every tpcc cell, the
//! round's first look at the tpcc tables, began at about half its final throughput (first three
//! 2-s slices 0.61 of the cell's mean, the last 1.41) with the server mostly idle, waiting for its
//! reads; how long depends on the disk, so rounds and hosts differed. One scan of every index
//! right after the start makes every cell begin on a warm server, as a production one is.

use std::fs;
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result};
use oltp::proto::Conn;

use super::config::Engine;
use super::Server;

/// What [`Server::prewarm`] read.
#[derive(Clone, Debug, PartialEq)]
pub struct Prewarmed {
    pub tables: usize,
    /// Index scans made (every index of every table; a table without one: one scan).
    pub scans: usize,
    /// Pages InnoDB read from disk meanwhile (`Innodb_pages_read`, read-ahead included); for
    /// MyRocks, its block cache's misses (`Rocksdb_block_cache_miss`).
    pub disk_reads: u64,
    pub seconds: f64,
}

/// Why nothing was read.
#[derive(Clone, Debug, PartialEq)]
pub enum Skipped {
    /// The tablespaces are larger than [`MAX_POOL_SHARE_PCT`] of the buffer pool: scanning them
    /// would only evict each other.
    TooLarge { data_bytes: u64, pool_bytes: u64 },
}

/// The largest share of the buffer pool a prewarmed dataset may take: the rest is room for what
/// the workload adds (undo, new rows, the adaptive structures).
pub const MAX_POOL_SHARE_PCT: u64 = 80;

/// Whether `data_bytes` of tablespaces fit in a buffer pool of `pool_bytes` (at most
/// [`MAX_POOL_SHARE_PCT`] of it): the rule a server prewarms by, and a report's warm or cold.
pub fn fits_in_pool(data_bytes: u64, pool_bytes: u64) -> bool {
    data_bytes <= pool_bytes / 100 * MAX_POOL_SHARE_PCT
}

/// The schemas that are the server's own, never a dataset (information_schema has no directory
/// in the datadir; the others do).
const SYSTEM_SCHEMAS: [&str; 4] = ["mysql", "sys", "information_schema", "performance_schema"];

impl Server {
    /// Scans every index of every `engine` table outside the system schemas once, as the
    /// superuser, so the buffer pool (MyRocks: the block cache) holds the whole dataset; refused
    /// (as `Skipped`) when the dataset would not fit in it.
    pub fn prewarm(&self, engine: Engine) -> Result<std::result::Result<Prewarmed, Skipped>> {
        let t0 = Instant::now();
        let mut root = self.state.root()?;
        let (data_bytes, pool_var) = match engine {
            Engine::InnoDb => (
                dataset_bytes(&self.state.datadir)?,
                "innodb_buffer_pool_size",
            ),
            Engine::RocksDb => (
                rocksdb_bytes(&self.state.datadir)?,
                "rocksdb_block_cache_size",
            ),
        };
        let pool_bytes = number(&mut root, &format!("SELECT @@{pool_var}"))?;
        if !fits_in_pool(data_bytes, pool_bytes) {
            return Ok(Err(Skipped::TooLarge {
                data_bytes,
                pool_bytes,
            }));
        }
        let reads_before = reads_of(&mut root, engine)?;
        let system_list = SYSTEM_SCHEMAS.map(|n| format!("'{n}'")).join(",");
        let rows = root
            .query_rows(&format!(
                "SELECT t.TABLE_SCHEMA, t.TABLE_NAME, s.INDEX_NAME FROM information_schema.TABLES t \
                 LEFT JOIN information_schema.STATISTICS s \
                 ON s.TABLE_SCHEMA = t.TABLE_SCHEMA AND s.TABLE_NAME = t.TABLE_NAME \
                 WHERE UPPER(t.ENGINE) = UPPER('{}') AND t.TABLE_TYPE = 'BASE TABLE' \
                 AND t.TABLE_SCHEMA NOT IN ({system_list}) \
                 GROUP BY t.TABLE_SCHEMA, t.TABLE_NAME, s.INDEX_NAME \
                 ORDER BY t.TABLE_SCHEMA, t.TABLE_NAME, s.INDEX_NAME",
                engine.name()
            ))
            .context("prewarming the buffer pool: listing the tables")?;
        let mut tables = std::collections::BTreeSet::new();
        let mut scans = 0;
        for row in rows {
            let mut cols = row.into_iter();
            let (Some(Some(schema)), Some(Some(table))) = (cols.next(), cols.next()) else {
                continue;
            };
            let index = cols.next().flatten();
            root.query(&scan_sql(&schema, &table, index.as_deref()))
                .with_context(|| format!("prewarming {schema}.{table}"))?;
            tables.insert((schema, table));
            scans += 1;
        }
        Ok(Ok(Prewarmed {
            tables: tables.len(),
            scans,
            disk_reads: reads_of(&mut root, engine)?.saturating_sub(reads_before),
            seconds: t0.elapsed().as_secs_f64(),
        }))
    }
}

/// The size of the dataset's tablespaces: every `.ibd` file in the datadir's schema directories
/// but the server's own. Files, not information_schema's sizes: those come from index statistics,
/// which a freshly loaded table may not have yet.
fn dataset_bytes(datadir: &Path) -> Result<u64> {
    let mut total = 0;
    for schema in fs::read_dir(datadir).with_context(|| format!("reading {}", datadir.display()))? {
        let schema = schema?;
        let name = schema.file_name();
        let system = SYSTEM_SCHEMAS.contains(&name.to_string_lossy().as_ref());
        if system || !schema.file_type()?.is_dir() {
            continue;
        }
        for f in fs::read_dir(schema.path())? {
            let f = f?;
            if f.path().extension().is_some_and(|e| e == "ibd") {
                total += f.metadata()?.len();
            }
        }
    }
    Ok(total)
}

/// The size of MyRocks' data: the SST files of the datadir's `#rocksdb` directory (the server's
/// own system tables are InnoDB's and Aria's, not in it).
fn rocksdb_bytes(datadir: &Path) -> Result<u64> {
    let mut total = 0;
    for f in crate::infra::fs::files_under(&datadir.join("#rocksdb"), "sst")? {
        total += fs::metadata(&f)
            .with_context(|| format!("reading {}", f.display()))?
            .len();
    }
    Ok(total)
}

/// The engine's reads that missed its cache: InnoDB's pages read, MyRocks' block cache misses.
fn reads_of(root: &mut Conn, engine: Engine) -> Result<u64> {
    match engine {
        Engine::InnoDb => disk_reads(root),
        Engine::RocksDb => status(root, "Rocksdb_block_cache_miss"),
    }
}

/// The first column of a one-number query.
fn number(root: &mut Conn, sql: &str) -> Result<u64> {
    let v = root
        .query_value(sql)
        .with_context(|| format!("prewarming the buffer pool: {sql}"))?;
    v.as_deref()
        .and_then(|s| s.trim().parse().ok())
        .with_context(|| format!("prewarming the buffer pool: {sql} gave {v:?}, not a number"))
}

/// Pages InnoDB has read from disk since it started. SHOW STATUS, not a table: MySQL serves
/// status tables from the performance schema, which pgoforge's servers run without.
pub fn disk_reads(root: &mut Conn) -> Result<u64> {
    status(root, "Innodb_pages_read")
}

/// One numeric global status variable.
fn status(root: &mut Conn, name: &str) -> Result<u64> {
    let rows = root
        .query_rows(&format!("SHOW GLOBAL STATUS LIKE '{name}'"))
        .with_context(|| format!("reading {name}"))?;
    rows.into_iter()
        .next()
        .and_then(|r| r.into_iter().nth(1).flatten())
        .and_then(|v| v.parse().ok())
        .with_context(|| format!("the server reported no {name}"))
}

/// A count that reads all of one index (or of the table's clustered index when it has none
/// listed: InnoDB's hidden one).
fn scan_sql(schema: &str, table: &str, index: Option<&str>) -> String {
    let from = format!("{}.{}", quote(schema), quote(table));
    match index {
        Some(i) => format!("SELECT COUNT(*) FROM {from} FORCE INDEX ({})", quote(i)),
        None => format!("SELECT COUNT(*) FROM {from}"),
    }
}

/// An identifier in backticks, a backtick in it doubled: names come from the dataset, which may
/// be a user's own.
fn quote(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_index_is_forced_and_names_are_quoted() {
        assert_eq!(
            scan_sql("sbtest", "sbtest1", Some("PRIMARY")),
            "SELECT COUNT(*) FROM `sbtest`.`sbtest1` FORCE INDEX (`PRIMARY`)"
        );
        assert_eq!(
            scan_sql("a`b", "t; DROP TABLE x", None),
            "SELECT COUNT(*) FROM `a``b`.`t; DROP TABLE x`"
        );
    }
}
