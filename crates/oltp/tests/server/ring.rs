//! The io_uring client loop (`--client-io=uring`) against a real server: the same counts and
//! effects as the epoll loop, large commands and replies split across reads and writes, and the
//! ring really in use (its descriptor open in this process while the run goes on).

use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use oltp::settings::{ClientIo, Settings, TestName};
use oltp::{Quiet, RunResult};
use testsupport::TestServer;

/// The workload tests' settings, driven by the ring.
fn settings(srv: &TestServer, test: TestName, events: u64) -> Settings {
    let mut s = crate::workloads::settings(srv, test, events);
    s.client_io = ClientIo::Uring;
    s
}

/// How many io_uring descriptors this process has open now.
fn rings_open() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| std::fs::read_link(e.path()).ok())
                .filter(|l| l.to_string_lossy().contains("io_uring"))
                .count()
        })
        .unwrap_or(0)
}

/// Runs `s`, and reports the most io_uring descriptors seen open while it ran.
fn run_watched(s: &Settings) -> (RunResult, usize) {
    let done = AtomicBool::new(false);
    thread::scope(|scope| {
        let watcher = scope.spawn(|| {
            let mut most = 0;
            while !done.load(Ordering::Relaxed) {
                most = most.max(rings_open());
                thread::sleep(Duration::from_millis(2));
            }
            most
        });
        let r = oltp::run(s, &mut Quiet).expect("run");
        done.store(true, Ordering::Relaxed);
        (r, watcher.join().unwrap())
    })
}

#[test]
fn the_ring_loop_keeps_every_count_exact_and_uses_one_ring_per_client_thread() {
    let _alone = crate::ring_tests();
    let srv = TestServer::start().unwrap();
    let mut s = settings(&srv, TestName::OltpReadOnly, 3000);
    s.threads = 6;
    s.client_threads = 2;
    oltp::schema::prepare(&s, &|_| {}).unwrap();
    let (r, rings) = run_watched(&s);
    assert!(r.complete);
    // oltp_read_only: 10 point selects, 4 ranges of 100 rows (replies of several KiB, often read
    // in more than one piece), BEGIN and COMMIT.
    assert_eq!(r.transactions, 3000);
    assert_eq!((r.queries.read, r.queries.other), (14 * 3000, 2 * 3000));
    assert_eq!(r.threads.iter().map(|t| t.events).sum::<u64>(), 3000);
    assert_eq!(
        rings, 2,
        "one ring per client thread, seen while the run went on"
    );

    // One connection alone goes through the ring too (the epoll path reads it blocking).
    let mut s = settings(&srv, TestName::OltpPointSelect, 2000);
    s.conn = srv.conn_tcp();
    let (r, rings) = run_watched(&s);
    assert_eq!((r.transactions, r.queries.read), (2000, 2000));
    assert_eq!(r.server.transport, "tcp");
    assert_eq!(rings, 1);

    // Writes land: every event of oltp_read_write commits its four changes.
    let mut s = settings(&srv, TestName::OltpReadWrite, 300);
    s.threads = 4;
    let before = srv.count("SELECT SUM(k) FROM sbtest.sbtest1").unwrap();
    let (r, _) = run_watched(&s);
    assert_eq!(r.transactions, 300);
    assert!(r.queries.write >= 4 * 300, "{:?}", r.queries);
    assert_ne!(
        srv.count("SELECT SUM(k) FROM sbtest.sbtest1").unwrap(),
        before,
        "the index updates changed k"
    );
}

#[test]
fn commands_of_half_a_mebibyte_go_whole_through_the_ring() {
    let _alone = crate::ring_tests();
    let srv = TestServer::start().unwrap();
    // bulk_insert sends 512 KiB INSERTs: far more than a socket takes at once.
    let mut s = settings(&srv, TestName::BulkInsert, 120_000);
    s.threads = 2;
    s.client_threads = 1;
    oltp::schema::prepare(&s, &|_| {}).unwrap();
    let (r, rings) = run_watched(&s);
    assert_eq!(r.transactions, 120_000);
    assert_eq!(rings, 1);
    let total = srv.count("SELECT COUNT(*) FROM sbtest.sbtest1").unwrap()
        + srv.count("SELECT COUNT(*) FROM sbtest.sbtest2").unwrap();
    assert_eq!(total, 120_000, "every event is one row");
    assert!(
        r.queries.write >= 2 && r.queries.write < 20,
        "{:?}",
        r.queries
    );
}
