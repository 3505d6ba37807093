//! Tables made by `pgoforge oltp prepare` work with real sysbench, and the reverse.

use crate::common;

use common::{field, oltp, sysbench};
use testsupport::TestServer;

fn show_create(srv: &TestServer, table: &str) -> String {
    srv.root()
        .unwrap()
        .query_rows(&format!("SHOW CREATE TABLE sbtest.{table}"))
        .unwrap()[0][1]
        .clone()
        .unwrap()
}

#[test]
fn pgoforge_prepare_then_sysbench_run() {
    let srv = TestServer::start().unwrap();
    let size = ["--table-size=2000", "--tables=2"];
    let p = oltp(&srv, "prepare", "oltp_read_write", &size);
    assert_eq!(p.code, 0, "{}{}", p.stdout, p.stderr);
    let r = sysbench(
        &srv,
        "oltp_read_write",
        "run",
        &[&size[..], &["--events=200", "--time=0"]].concat(),
    );
    assert_eq!(r.code, 0, "sysbench run failed:\n{}{}", r.stdout, r.stderr);
    assert_eq!(field(&r.stdout, "transactions:"), 200);
    assert_eq!(field(&r.stdout, "read:"), 200 * 14);
    for t in ["sbtest1", "sbtest2"] {
        assert_eq!(
            srv.count(&format!("SELECT COUNT(*) FROM sbtest.{t}"))
                .unwrap(),
            2000
        );
    }
    // sysbench's own cleanup drops what we created.
    let c = sysbench(&srv, "oltp_read_write", "cleanup", &size);
    assert_eq!(c.code, 0, "{}", c.stderr);
    assert_eq!(
        srv.count("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema='sbtest'")
            .unwrap(),
        0
    );
}

#[test]
fn sysbench_prepare_then_pgoforge_run_and_identical_schema() {
    let srv = TestServer::start().unwrap();
    let size = ["--table-size=1500", "--tables=1"];
    let p = sysbench(&srv, "oltp_read_write", "prepare", &size);
    assert_eq!(p.code, 0, "{}{}", p.stdout, p.stderr);
    let theirs = show_create(&srv, "sbtest1");
    let r = oltp(
        &srv,
        "run",
        "oltp_read_write",
        &[&size[..], &["--events=150", "--time=0"]].concat(),
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(field(&r.stdout, "transactions:"), 150);
    assert_eq!(field(&r.stdout, "write:"), 150 * 4);
    let upd = oltp(
        &srv,
        "run",
        "oltp_update_index",
        &[&size[..], &["--events=100", "--time=0"]].concat(),
    );
    assert_eq!(upd.code, 0, "{}", upd.stderr);

    // Our prepare produces the same table definition and row format as sysbench's.
    let c = oltp(&srv, "cleanup", "oltp_read_write", &size);
    assert_eq!(c.code, 0, "{}", c.stderr);
    let p = oltp(&srv, "prepare", "oltp_read_write", &size);
    assert_eq!(p.code, 0, "{}", p.stderr);
    assert_eq!(show_create(&srv, "sbtest1"), theirs);
    let lens = srv.value("SELECT CONCAT(MIN(LENGTH(c)),'/',MAX(LENGTH(c)),'/',MIN(LENGTH(pad)),'/',MAX(LENGTH(pad))) FROM sbtest.sbtest1").unwrap();
    assert_eq!(lens, "119/119/59/59");
}

#[test]
fn bulk_insert_tables_interoperate() {
    let srv = TestServer::start().unwrap();
    let p = sysbench(&srv, "bulk_insert", "prepare", &["--threads=2"]);
    assert_eq!(p.code, 0, "{}", p.stderr);
    let r = oltp(
        &srv,
        "run",
        "bulk_insert",
        &["--threads=2", "--events=5000", "--time=0"],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let n = srv
        .count(
            "SELECT (SELECT COUNT(*) FROM sbtest.sbtest1) + (SELECT COUNT(*) FROM sbtest.sbtest2)",
        )
        .unwrap();
    assert_eq!(n, 5000);
    let c = oltp(&srv, "cleanup", "bulk_insert", &["--threads=2"]);
    assert_eq!(c.code, 0, "{}", c.stderr);
    assert_eq!(
        srv.count("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema='sbtest'")
            .unwrap(),
        0
    );
}
