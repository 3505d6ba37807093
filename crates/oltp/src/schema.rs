//! `prepare`, `prewarm` and `cleanup`: the sbtest tables, created and loaded as sysbench does.
//!
//! Same DDL text, same row format, 512 KiB multi-row INSERTs that autocommit, the `k` index built
//! after the load, tables spread over `--threads` connections. One difference on purpose: each
//! table's rows come from a generator seeded by the table number (and `--rand-seed`), so a prepare
//! is reproducible whatever the thread count.

use crate::proto::{Conn, DbError};
use crate::rng::{Distribution, SbRng};
use crate::settings::{Settings, TestName};
use crate::workload::{push_int, C_TEMPLATE, PAD_TEMPLATE};

use crate::tables::{connect, ctx, per_table};
pub use crate::tables::{Log, SchemaError, BULK_PACKET_SIZE};

/// The tables a test works on.
pub fn table_names(s: &Settings) -> Vec<String> {
    let n = match s.test {
        TestName::Tpcc => return crate::tpcc::table_names(s.schema.tables),
        // The user's own tables: the replay does not know them.
        TestName::Replay => return Vec::new(),
        TestName::BulkInsert => s.threads,
        TestName::SelectRandomPoints | TestName::SelectRandomRanges => 1,
        _ => s.schema.tables,
    };
    (1..=n).map(|i| format!("sbtest{i}")).collect()
}

/// The CREATE TABLE text sysbench sends for table `n`.
pub fn create_table_sql(s: &Settings, n: u32) -> String {
    if s.test == TestName::BulkInsert {
        return format!(
            "\n        CREATE TABLE IF NOT EXISTS sbtest{n} (\n          id INTEGER NOT NULL,\n          k INTEGER DEFAULT '0' NOT NULL,\n          PRIMARY KEY (id))"
        )
        .trim_start_matches('\n')
        .to_string();
    }
    let id_def = if s.schema.auto_inc {
        "INTEGER NOT NULL AUTO_INCREMENT"
    } else {
        "INTEGER NOT NULL"
    };
    let index = if s.schema.secondary {
        "KEY xid"
    } else {
        "PRIMARY KEY"
    };
    format!(
        "CREATE TABLE sbtest{n}(\n  id {id_def},\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL,\n  {index} (id)\n) /*! ENGINE = {} */ ",
        s.schema.storage_engine
    )
}

pub fn prepare(s: &Settings, log: Log) -> Result<(), SchemaError> {
    if s.test == TestName::Tpcc {
        return crate::tpcc::load::prepare(s, log);
    }
    if s.test == TestName::Replay {
        return crate::replay::prepare(s, log);
    }
    if s.test == TestName::BulkInsert {
        let mut conn = connect(s, 0)?;
        for i in 1..=s.threads {
            log(&format!("Creating table 'sbtest{i}'..."));
            conn.query(&create_table_sql(s, i))
                .map_err(ctx(format!("creating table sbtest{i}")))?;
        }
        return Ok(());
    }
    let rows = s.rows_to_load();
    per_table(s, s.schema.tables, |conn, t| {
        log(&format!("Creating table 'sbtest{t}'..."));
        conn.query(&create_table_sql(s, t))
            .map_err(ctx(format!("creating table sbtest{t}")))?;
        if rows > 0 {
            log(&format!("Inserting {rows} records into 'sbtest{t}'"));
        }
        load_rows(s, conn, t, rows)?;
        if s.schema.create_secondary {
            log(&format!("Creating a secondary index on 'sbtest{t}'..."));
            conn.query(&format!("CREATE INDEX k_{t} ON sbtest{t}(k)"))
                .map_err(ctx(format!("creating index k_{t}")))?;
        }
        Ok(())
    })
}

fn load_rows(s: &Settings, conn: &mut Conn, t: u32, rows: u64) -> Result<(), SchemaError> {
    let prefix = if s.schema.auto_inc {
        format!("INSERT INTO sbtest{t}(k, c, pad) VALUES")
    } else {
        format!("INSERT INTO sbtest{t}(id, k, c, pad) VALUES")
    };
    let dist = Distribution::new(&s.rand);
    let mut rng = SbRng::new(s.rand.seed, 0x7461_626c_6500_0000 | t as u64);
    let size = s.schema.table_size as u32;
    let mut buf = Vec::with_capacity(BULK_PACKET_SIZE);
    buf.extend_from_slice(prefix.as_bytes());
    let mut in_batch = 0u64;
    let (mut c, mut pad, mut row) = (Vec::new(), Vec::new(), Vec::with_capacity(200));
    let flush = |conn: &mut Conn, buf: &mut Vec<u8>| -> Result<(), SchemaError> {
        let sql = std::str::from_utf8(buf).expect("generated SQL is ASCII");
        conn.query(sql)
            .map_err(ctx(format!("inserting rows into sbtest{t}")))?;
        buf.truncate(prefix.len());
        Ok(())
    };
    for i in 1..=rows {
        rng.fill_template(C_TEMPLATE, &mut c);
        rng.fill_template(PAD_TEMPLATE, &mut pad);
        let k = dist.sample(&mut rng, 1, size);
        row.clear();
        row.push(b'(');
        if !s.schema.auto_inc {
            push_int(&mut row, i as i64);
            row.extend_from_slice(b", ");
        }
        push_int(&mut row, k as i64);
        row.extend_from_slice(b", '");
        row.extend_from_slice(&c);
        row.extend_from_slice(b"', '");
        row.extend_from_slice(&pad);
        row.extend_from_slice(b"')");
        if buf.len() + row.len() + 1 + (in_batch > 0) as usize > BULK_PACKET_SIZE {
            flush(conn, &mut buf)?;
            in_batch = 0;
        }
        if in_batch > 0 {
            buf.push(b',');
        }
        buf.extend_from_slice(&row);
        in_batch += 1;
    }
    if in_batch > 0 {
        flush(conn, &mut buf)?;
    }
    Ok(())
}

pub fn prewarm(s: &Settings, log: Log) -> Result<(), SchemaError> {
    if matches!(s.test, TestName::Tpcc | TestName::Replay) {
        return Err(SchemaError::Unsupported(format!(
            "{} has no prewarm command; run it briefly instead",
            s.test
        )));
    }
    let tables = table_names(s).len() as u32;
    per_table(s, tables, |conn, t| {
        conn.query("SET tmp_table_size=2*1024*1024*1024")
            .map_err(ctx("setting tmp_table_size"))?;
        conn.query("SET max_heap_table_size=2*1024*1024*1024")
            .map_err(ctx("setting max_heap_table_size"))?;
        log(&format!("Prewarming table sbtest{t}"));
        let size = s.schema.table_size;
        for sql in [
            format!("ANALYZE TABLE sbtest{t}"),
            format!(
                "SELECT AVG(id) FROM (SELECT * FROM sbtest{t} FORCE KEY (PRIMARY) LIMIT {size}) t"
            ),
            format!(
                "SELECT COUNT(*) FROM (SELECT * FROM sbtest{t} WHERE k LIKE '%0%' LIMIT {size}) t"
            ),
        ] {
            conn.query(&sql)
                .map_err(ctx(format!("prewarming sbtest{t}")))?;
        }
        Ok(())
    })
}

pub fn cleanup(s: &Settings, log: Log) -> Result<(), SchemaError> {
    if s.test == TestName::Tpcc {
        return crate::tpcc::load::cleanup(s, log);
    }
    if s.test == TestName::Replay {
        return Err(SchemaError::Unsupported(
            "cleanup does not apply to replay: its tables are your data; drop them yourself".into(),
        ));
    }
    let mut conn = connect(s, 0)?;
    for name in table_names(s) {
        log(&format!("Dropping table '{name}'..."));
        conn.query(&format!("DROP TABLE IF EXISTS {name}"))
            .map_err(ctx(format!("dropping {name}")))?;
    }
    Ok(())
}

/// The tables of `names` that do not exist in the connection's database.
pub fn missing_tables(conn: &mut Conn, names: &[String]) -> Result<Vec<String>, DbError> {
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let list: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
    let rows = conn.query_rows(&format!(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name IN ({})",
        list.join(",")
    ))?;
    let present: Vec<String> = rows
        .into_iter()
        .filter_map(|r| r.into_iter().next().flatten())
        .map(|n| n.to_lowercase())
        .collect();
    Ok(names
        .iter()
        .filter(|n| !present.contains(&n.to_lowercase()))
        .cloned()
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ddl_is_sysbench_text() {
        let s = Settings::new(TestName::OltpReadWrite);
        assert_eq!(
            create_table_sql(&s, 3),
            "CREATE TABLE sbtest3(\n  id INTEGER NOT NULL AUTO_INCREMENT,\n  k INTEGER DEFAULT '0' NOT NULL,\n  c CHAR(120) DEFAULT '' NOT NULL,\n  pad CHAR(60) DEFAULT '' NOT NULL,\n  PRIMARY KEY (id)\n) /*! ENGINE = innodb */ "
        );
        let mut s = Settings::new(TestName::OltpReadWrite);
        s.schema.auto_inc = false;
        s.schema.secondary = true;
        let ddl = create_table_sql(&s, 1);
        assert!(ddl.contains("id INTEGER NOT NULL,") && ddl.contains("KEY xid (id)"));
    }
}
