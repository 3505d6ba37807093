//! Every test type against a real server, checked by its effects: rows, sums, counters.

use oltp::histogram::{bucket_of, bucket_value};
use oltp::settings::{PsMode, Settings, TestName};
use oltp::{Quiet, RunResult};
use testsupport::TestServer;

const ROWS: u64 = 2000;

pub(crate) fn settings(srv: &TestServer, test: TestName, events: u64) -> Settings {
    let mut s = Settings::new(test);
    s.conn = srv.conn_socket();
    s.schema.table_size = ROWS;
    s.time_s = 0;
    s.events = events;
    s.rand.seed = 42;
    s
}

fn prepare(s: &Settings) {
    oltp::schema::prepare(s, &|_| {}).expect("prepare");
}

fn run(s: &Settings) -> RunResult {
    let r = oltp::run(s, &mut Quiet).expect("run");
    assert!(r.complete);
    r
}

fn rows(srv: &TestServer, table: &str) -> i64 {
    srv.count(&format!("SELECT COUNT(*) FROM sbtest.{table}"))
        .unwrap()
}

/// Counters equal the per-event composition times the events.
fn assert_counts(r: &RunResult, events: u64, (rd, wr, ot): (u64, u64, u64)) {
    assert_eq!(r.transactions, events, "events");
    assert_eq!(r.ignored_errors, 0, "no errors expected single-threaded");
    assert_eq!(
        (r.queries.read, r.queries.write, r.queries.other),
        (rd * events, wr * events, ot * events)
    );
    assert_eq!(r.queries.total, (rd + wr + ot) * events);
}

#[test]
fn prepare_creates_sysbench_tables_and_rows() {
    let srv = TestServer::start().unwrap();
    let mut s = settings(&srv, TestName::OltpReadWrite, 0);
    s.schema.tables = 3;
    s.threads = 2;
    prepare(&s);
    for t in 1..=3 {
        assert_eq!(rows(&srv, &format!("sbtest{t}")), ROWS as i64);
        let ddl = srv
            .root()
            .unwrap()
            .query_rows(&format!("SHOW CREATE TABLE sbtest.sbtest{t}"))
            .unwrap()[0][1]
            .clone()
            .unwrap();
        assert!(ddl.contains(&format!("KEY `k_{t}` (`k`)")), "{ddl}");
        assert!(
            ddl.contains("PRIMARY KEY (`id`)") && ddl.contains("ENGINE=InnoDB"),
            "{ddl}"
        );
    }
    // Row format: c = 10 groups of 11 digits, pad = 5 groups; ids 1..N; k within 1..N.
    let bad = srv
        .count(&format!(
            "SELECT COUNT(*) FROM sbtest.sbtest1 WHERE c NOT REGEXP '^([0-9]{{11}}-){{9}}[0-9]{{11}}$' OR pad NOT REGEXP '^([0-9]{{11}}-){{4}}[0-9]{{11}}$' OR k < 1 OR k > {ROWS}"
        ))
        .unwrap();
    assert_eq!(bad, 0);
    assert_eq!(
        srv.count("SELECT MAX(id) FROM sbtest.sbtest1").unwrap(),
        ROWS as i64
    );
    // The default distribution (special) concentrates k around the middle.
    let hot = srv
        .count("SELECT COUNT(*) FROM sbtest.sbtest1 WHERE k BETWEEN 990 AND 1010")
        .unwrap();
    assert!(hot > ROWS as i64 / 2, "special distribution hot set: {hot}");
    // Prepare is reproducible: the same seed gives the same data whatever the thread count.
    let checksum = || {
        srv.root()
            .unwrap()
            .query_rows("CHECKSUM TABLE sbtest.sbtest1")
            .unwrap()[0][1]
            .clone()
            .unwrap()
    };
    let sum1 = checksum();
    oltp::schema::cleanup(&s, &|_| {}).unwrap();
    s.threads = 1;
    prepare(&s);
    assert_eq!(checksum(), sum1);
    oltp::schema::cleanup(&s, &|_| {}).unwrap();
    assert_eq!(
        srv.count("SELECT COUNT(*) FROM information_schema.tables WHERE table_schema='sbtest'")
            .unwrap(),
        0
    );
}

#[test]
fn point_select_read_only_and_ranges() {
    let srv = TestServer::start().unwrap();
    let s = settings(&srv, TestName::OltpPointSelect, 300);
    prepare(&s);
    let r = run(&s);
    assert_counts(&r, 300, (1, 0, 0));
    assert!((r.tps() - r.qps()).abs() < 1e-6);

    let s = settings(&srv, TestName::OltpReadOnly, 100);
    assert_counts(&run(&s), 100, (14, 0, 2));

    let mut s = settings(&srv, TestName::OltpReadOnly, 50);
    s.trx.range_selects = false;
    s.trx.skip_trx = true;
    s.trx.point_selects = 3;
    assert_counts(&run(&s), 50, (3, 0, 0));

    for test in [TestName::SelectRandomPoints, TestName::SelectRandomRanges] {
        let s = settings(&srv, test, 120);
        assert_counts(&run(&s), 120, (1, 0, 0));
    }
    assert_eq!(
        rows(&srv, "sbtest1"),
        ROWS as i64,
        "read-only tests must not change data"
    );
}

#[test]
fn read_write_and_write_only_keep_row_counts() {
    let srv = TestServer::start().unwrap();
    let mut s = settings(&srv, TestName::OltpReadWrite, 150);
    s.schema.tables = 2;
    prepare(&s);
    assert_counts(&run(&s), 150, (14, 4, 2));
    // A new seed per run: replaying a stream could rewrite a row with the value it already has.
    let mut s2 = Settings {
        test: TestName::OltpWriteOnly,
        ..s.clone()
    };
    s2.rand.seed = 43;
    assert_counts(&run(&s2), 150, (0, 4, 2));
    for t in ["sbtest1", "sbtest2"] {
        assert_eq!(
            rows(&srv, t),
            ROWS as i64,
            "delete+insert of the same id keeps {t}'s size"
        );
    }
    // The text protocol gives the same composition.
    let mut s3 = s.clone();
    s3.ps_mode = PsMode::Disable;
    s3.rand.seed = 44;
    assert_counts(&run(&s3), 150, (14, 4, 2));
}

#[test]
fn update_index_adds_one_to_k_per_event() {
    let srv = TestServer::start().unwrap();
    let s = settings(&srv, TestName::OltpUpdateIndex, 400);
    prepare(&s);
    let before = srv.count("SELECT SUM(k) FROM sbtest.sbtest1").unwrap();
    assert_counts(&run(&s), 400, (0, 1, 0));
    let after = srv.count("SELECT SUM(k) FROM sbtest.sbtest1").unwrap();
    assert_eq!(after - before, 400);
}

#[test]
fn update_non_index_changes_c_and_nothing_else() {
    let srv = TestServer::start().unwrap();
    let s = settings(&srv, TestName::OltpUpdateNonIndex, 200);
    prepare(&s);
    let k_before = srv.count("SELECT SUM(k) FROM sbtest.sbtest1").unwrap();
    let c_before = srv
        .value("SELECT MD5(GROUP_CONCAT(c ORDER BY id)) FROM sbtest.sbtest1")
        .unwrap();
    assert_counts(&run(&s), 200, (0, 1, 0));
    assert_eq!(
        srv.count("SELECT SUM(k) FROM sbtest.sbtest1").unwrap(),
        k_before
    );
    assert_ne!(
        srv.value("SELECT MD5(GROUP_CONCAT(c ORDER BY id)) FROM sbtest.sbtest1")
            .unwrap(),
        c_before
    );
}

#[test]
fn insert_adds_rows_with_server_and_client_ids() {
    let srv = TestServer::start().unwrap();
    let mut s = settings(&srv, TestName::OltpInsert, 250);
    s.schema.tables = 2;
    prepare(&s);
    assert_counts(&run(&s), 250, (0, 1, 0));
    assert_eq!(
        rows(&srv, "sbtest1") + rows(&srv, "sbtest2"),
        2 * ROWS as i64 + 250
    );

    // --auto-inc=off: prepare leaves the tables empty, ids come from the unique generator.
    oltp::schema::cleanup(&s, &|_| {}).unwrap();
    s.schema.auto_inc = false;
    prepare(&s);
    assert_eq!(rows(&srv, "sbtest1") + rows(&srv, "sbtest2"), 0);
    assert_counts(&run(&s), 250, (0, 1, 0));
    assert_eq!(rows(&srv, "sbtest1") + rows(&srv, "sbtest2"), 250);
}

#[test]
fn delete_counts_writes_then_others_once_rows_are_gone() {
    let srv = TestServer::start().unwrap();
    let mut s = settings(&srv, TestName::OltpDelete, 3000);
    s.schema.table_size = 100;
    s.rand.rand_type = oltp::rng::RandType::Uniform;
    prepare(&s);
    let r = run(&s);
    assert_eq!(r.transactions, 3000);
    assert_eq!(r.queries.read, 0);
    assert_eq!(r.queries.write + r.queries.other, 3000);
    assert!(
        r.queries.other > 0,
        "deleting already deleted ids must count as other"
    );
    assert_eq!(100 - rows(&srv, "sbtest1"), r.queries.write as i64);
}

#[test]
fn bulk_insert_loads_one_table_per_connection() {
    let srv = TestServer::start().unwrap();
    let mut s = settings(&srv, TestName::BulkInsert, 120_000);
    s.threads = 2;
    s.client_threads = 2;
    prepare(&s);
    let r = run(&s);
    assert_eq!(r.transactions, 120_000);
    let total = rows(&srv, "sbtest1") + rows(&srv, "sbtest2");
    assert_eq!(total, 120_000, "every event is one row");
    // Rows are numbered 1.. per table, as sysbench's cursize.
    assert_eq!(
        srv.count("SELECT MAX(id) FROM sbtest.sbtest1").unwrap(),
        rows(&srv, "sbtest1")
    );
    // 512 KiB buffers hold tens of thousands of "(n,n)" rows: few statements for many events.
    assert!(
        r.queries.write >= 2 && r.queries.write < 20,
        "{:?}",
        r.queries
    );
}

#[test]
fn many_connections_over_several_event_loops_keep_the_counts_exact() {
    let srv = TestServer::start().unwrap();
    let mut s = settings(&srv, TestName::OltpReadOnly, 400);
    s.threads = 6;
    s.client_threads = 2;
    s.conn = srv.conn_tcp();
    prepare(&s);
    let r = run(&s);
    assert_counts(&r, 400, (14, 0, 2));
    assert_eq!(r.threads.len(), 6);
    assert_eq!(r.threads.iter().map(|t| t.events).sum::<u64>(), 400);
    assert_eq!(r.server.transport, "tcp");
    // Deadlocks may be retried, but every event completes exactly once.
    let mut s = settings(&srv, TestName::OltpReadWrite, 300);
    s.threads = 4;
    let r = run(&s);
    assert_eq!(r.transactions, 300);
    assert!(r.queries.write >= 4 * 300);
}

#[test]
fn latency_figures_follow_sysbench_rules() {
    let srv = TestServer::start().unwrap();
    let mut s = settings(&srv, TestName::OltpPointSelect, 2000);
    s.percentile = 99;
    prepare(&s);
    let r = run(&s);
    let l = &r.latency;
    let p = l.percentile.expect("percentile enabled");
    // The percentile is a point of the 1024-bucket log grid.
    assert!(
        (bucket_value(bucket_of(p)) - p).abs() < 1e-12,
        "{p} is not on the grid"
    );
    assert!(l.min <= l.avg && l.avg <= l.max && p <= l.max * 1.02);
    assert!((l.avg * r.transactions as f64 - l.sum).abs() < 1e-6 * l.sum.max(1.0));
    // HDR percentiles are ordered and agree with the grid value within its 1.8 % bucket width.
    let h = &l.hdr;
    assert!(h.p50 <= h.p95 && h.p95 <= h.p99 && h.p99 <= h.p999 && h.p999 <= h.max);
    assert!(
        (h.p99 - p).abs() / p < 0.05,
        "hdr p99 {} vs sysbench p99 {p}",
        h.p99
    );
    assert_eq!(
        r.histogram.iter().map(|(_, c)| c).sum::<u64>(),
        r.transactions
    );
    // Single connection: fairness has no spread, and busy time equals the latency sum.
    assert_eq!(r.fairness.events_stddev, 0.0);
    assert!((r.fairness.time_avg_s * 1000.0 - l.sum).abs() < 1.0);
}

#[test]
fn time_limit_intervals_rate_and_warmup() {
    let srv = TestServer::start().unwrap();
    let mut s = settings(&srv, TestName::OltpPointSelect, 0);
    prepare(&s);
    s.events = 0;
    s.time_s = 3;
    s.report_interval_s = 1;
    s.rate = 300;
    s.threads = 2;
    s.warmup_time_s = 1;
    struct Count(usize, bool);
    impl oltp::Observer for Count {
        fn started(&mut self) {
            self.1 = true;
        }
        fn interval(&mut self, _: &oltp::result::Interval) {
            self.0 += 1;
        }
    }
    let mut seen = Count(0, false);
    let t0 = std::time::Instant::now();
    let r = oltp::run(&s, &mut seen).unwrap();
    let wall = t0.elapsed().as_secs_f64();
    assert!(seen.1);
    assert!(
        (3.0..4.5).contains(&r.total_time_s),
        "measured time {}",
        r.total_time_s
    );
    assert!((4.0..10.0).contains(&wall), "warm-up + time, wall {wall}");
    assert_eq!(seen.0, r.intervals.len());
    assert_eq!(r.intervals.len(), 3, "{:?}", r.intervals);
    let iv = &r.intervals[0];
    assert_eq!(iv.threads, 2);
    assert!(iv.queue_length.is_some() && iv.concurrency.is_some());
    // Poisson arrivals at 300/s: the achieved rate is close to the target.
    assert!(
        (240.0..360.0).contains(&r.tps()),
        "tps {} at --rate=300",
        r.tps()
    );
}

/// A run of N seconds reports N intervals, the last ending at the deadline: the workers stopping
/// at the deadline must not race the reporter out of its last report (several committed runs
/// had lost it).
#[test]
fn every_second_of_a_timed_run_is_reported() {
    let srv = TestServer::start().unwrap();
    let mut s = settings(&srv, TestName::OltpPointSelect, 0);
    prepare(&s);
    s.events = 0;
    s.time_s = 2;
    s.report_interval_s = 1;
    s.threads = 2;
    for attempt in 0..6 {
        let r = run(&s);
        let at: Vec<f64> = r.intervals.iter().map(|i| i.at_s).collect();
        assert_eq!(at, vec![1.0, 2.0], "attempt {attempt}: {:?}", r.intervals);
        assert!(r.intervals.iter().all(|i| i.tps > 0.0), "{:?}", r.intervals);
    }
}
