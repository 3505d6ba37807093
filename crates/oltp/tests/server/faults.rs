//! Faults during a run: missing tables, SQL errors, a server that dies, reconnects.

use std::thread;
use std::time::{Duration, Instant};

use oltp::settings::{ClientIo, Settings, TestName};
use oltp::{Quiet, RunError};
use testsupport::TestServer;

fn settings(srv: &TestServer, test: TestName) -> Settings {
    let mut s = Settings::new(test);
    s.conn = srv.conn_socket();
    s.schema.table_size = 1000;
    s
}

/// The failure a run ended with: its FATAL message, error number and statistics so far.
fn failure(r: Result<oltp::RunResult, RunError>) -> (String, u16, oltp::RunResult) {
    match r {
        Err(RunError::Failed {
            message,
            code,
            partial,
        }) => (message, code, *partial),
        other => panic!("expected the run to fail, got {other:?}"),
    }
}

#[test]
fn run_before_prepare_names_the_missing_table() {
    let srv = TestServer::start().unwrap();
    let mut s = settings(&srv, TestName::OltpReadOnly);
    s.schema.tables = 2;
    // Only sbtest1 exists.
    let mut one = s.clone();
    one.schema.tables = 1;
    oltp::schema::prepare(&one, &|_| {}).unwrap();
    match oltp::run(&s, &mut Quiet) {
        Err(e @ RunError::MissingTable { .. }) => {
            let msg = e.to_string();
            assert!(
                msg.contains("'sbtest2'") && msg.contains("prepare"),
                "{msg}"
            );
        }
        other => panic!("expected a missing-table error, got {other:?}"),
    }
}

#[test]
fn a_non_ignored_sql_error_is_fatal_with_the_statement() {
    let srv = TestServer::start().unwrap();
    let mut s = settings(&srv, TestName::OltpInsert);
    s.schema.auto_inc = false;
    s.time_s = 0;
    s.events = 50;
    s.rand.seed = 7;
    oltp::schema::prepare(&s, &|_| {}).unwrap();
    oltp::run(&s, &mut Quiet).unwrap();
    // The same seed replays the same unique ids: the second run collides on the primary key.
    let (message, code, partial) = failure(oltp::run(&s, &mut Quiet));
    assert_eq!(code, 1062);
    assert!(
        message.starts_with("FATAL: mysql_drv_query() returned error 1062"),
        "{message}"
    );
    assert!(
        message.contains("for query 'INSERT INTO sbtest1 (id, k, c, pad) VALUES ("),
        "{message}"
    );
    assert!(!partial.complete);
    assert_eq!(
        srv.count("SELECT COUNT(*) FROM sbtest.sbtest1").unwrap(),
        50
    );
}

#[test]
fn listed_errors_restart_the_event() {
    let srv = TestServer::start().unwrap();
    let mut s = settings(&srv, TestName::OltpInsert);
    s.schema.auto_inc = false;
    s.time_s = 0;
    s.events = 30;
    s.rand.seed = 9;
    oltp::schema::prepare(&s, &|_| {}).unwrap();
    oltp::run(&s, &mut Quiet).unwrap();
    // Replaying the ids with 1062 ignored: every collision restarts the event with a fresh id.
    s.ignore_errors = "1062".parse().unwrap();
    let r = oltp::run(&s, &mut Quiet).unwrap();
    assert_eq!(r.transactions, 30);
    assert!(
        r.ignored_errors >= 30,
        "each replayed id collides once: {}",
        r.ignored_errors
    );
    assert_eq!(r.queries.write, 30);
    assert_eq!(
        srv.count("SELECT COUNT(*) FROM sbtest.sbtest1").unwrap(),
        60
    );
}

#[test]
fn server_death_stops_the_run_with_statistics_so_far() {
    let mut srv = TestServer::start().unwrap();
    let mut s = settings(&srv, TestName::OltpReadWrite);
    s.threads = 2;
    s.time_s = 30;
    oltp::schema::prepare(&s, &|_| {}).unwrap();
    let pid = srv.pid().unwrap();
    let t0 = Instant::now();
    let result = thread::scope(|scope| {
        let h = scope.spawn(|| oltp::run(&s, &mut Quiet));
        thread::sleep(Duration::from_millis(1500));
        srv.kill();
        h.join().unwrap()
    });
    assert!(
        t0.elapsed() < Duration::from_secs(10),
        "the run must stop soon after the server dies"
    );
    assert!(!testsupport::process_alive(pid));
    let (message, code, partial) = failure(result);
    assert!(matches!(code, 2013 | 2006), "{code}: {message}");
    assert!(message.contains("lost connection"), "{message}");
    assert!(partial.transactions > 0, "statistics so far are kept");
    assert!(!partial.complete);
}

/// For both client loops: the epoll one and the io_uring one (whose reads in flight end with the
/// connection and whose new connection must join the ring).
#[test]
fn listed_connection_errors_reconnect_and_count_reconnects() {
    let mut srv = TestServer::start().unwrap();
    for io in [ClientIo::Epoll, ClientIo::Uring] {
        let _alone = (io == ClientIo::Uring).then(crate::ring_tests);
        let mut s = settings(&srv, TestName::OltpPointSelect);
        s.time_s = 6;
        s.threads = 2;
        s.client_threads = 1;
        s.client_io = io;
        s.ignore_errors = "2013,2006,2002,2003".parse().unwrap();
        if io == ClientIo::Epoll {
            oltp::schema::prepare(&s, &|_| {}).unwrap();
        }
        let r = thread::scope(|scope| {
            let h = scope.spawn(|| oltp::run(&s, &mut Quiet));
            thread::sleep(Duration::from_millis(1500));
            srv.kill();
            thread::sleep(Duration::from_millis(500));
            srv.launch().unwrap();
            h.join().unwrap()
        })
        .expect("the run survives a restart when connection errors are listed");
        assert!(
            r.reconnects >= 2,
            "{io:?}: both connections reconnect: {}",
            r.reconnects
        );
        assert!(r.ignored_errors == 0);
        assert!(r.transactions > 100);
    }
}

/// A server that stops answering with its sockets open (SIGSTOP: a stuck server, a frozen VM)
/// ends the run with a timeout naming the limit, for a thread with one connection (blocking reads),
/// for one driving several (the epoll loop) and for the io_uring loop (its reads in flight
/// cancelled before the connection is given up) alike.
#[test]
fn a_stalled_server_ends_the_run_with_a_named_timeout_not_a_hang() {
    let srv = TestServer::start().unwrap();
    let pid = srv.pid().unwrap() as i32;
    oltp::schema::prepare(&settings(&srv, TestName::OltpPointSelect), &|_| {}).unwrap();
    for (client_threads, io) in [
        (2, ClientIo::Epoll),
        (1, ClientIo::Epoll),
        (1, ClientIo::Uring),
    ] {
        let _alone = (io == ClientIo::Uring).then(crate::ring_tests);
        let mut s = settings(&srv, TestName::OltpPointSelect);
        s.threads = 2;
        s.client_threads = client_threads;
        s.client_io = io;
        s.time_s = 60;
        s.conn.read_timeout_ms = 1500;
        let t0 = Instant::now();
        let result = thread::scope(|scope| {
            let h = scope.spawn(|| oltp::run(&s, &mut Quiet));
            thread::sleep(Duration::from_millis(1500));
            // SAFETY: signalling our own child server.
            unsafe { libc::kill(pid, libc::SIGSTOP) };
            let r = h.join().unwrap();
            unsafe { libc::kill(pid, libc::SIGCONT) };
            r
        });
        let took = t0.elapsed();
        assert!(
            took < Duration::from_secs(12),
            "{client_threads} client thread(s), {io:?}: the run must end soon after the limit, took {took:?}"
        );
        let (message, code, partial) = failure(result);
        assert_eq!(code, 2013, "{message}");
        assert!(
            message.contains("stalled") && message.contains("--mysql-read-timeout"),
            "{message}"
        );
        assert!(message.contains("1.5s"), "{message}");
        assert!(partial.transactions > 0, "statistics so far are kept");
        // The server is healthy again once continued.
        assert_eq!(srv.count("SELECT 1").unwrap(), 1);
    }
}
