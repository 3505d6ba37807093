//! The protocol client against a real MariaDB: transports, authentication, failures.

use std::time::{Duration, Instant};

use oltp::proto::{Conn, ConnectOptions, DbError, Endpoint, Param};
use testsupport::TestServer;

#[test]
fn socket_and_tcp_connect_and_report_the_server() {
    let srv = TestServer::start().unwrap();
    for opts in [
        srv.conn_socket().for_connection(0),
        srv.conn_tcp().for_connection(0),
    ] {
        let mut c = Conn::connect(&opts).unwrap();
        assert!(
            c.server_info().version.contains("MariaDB"),
            "{:?}",
            c.server_info()
        );
        assert!(!c.server_info().version.starts_with("5.5.5-"));
        // The server sees the transport we meant: TCP stays TCP (no silent switch to the socket).
        let host = c
            .query_value(
                "SELECT host FROM information_schema.processlist WHERE id = CONNECTION_ID()",
            )
            .unwrap()
            .unwrap();
        match opts.endpoint {
            Endpoint::Socket(_) => assert_eq!(host, "localhost"),
            Endpoint::Tcp { .. } => assert!(host.starts_with("127.0.0.1:"), "{host}"),
        }
        let rows = c
            .query_rows("SELECT 1, NULL, 'x' UNION ALL SELECT 2, 'y', 'z'")
            .unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0], vec![Some("1".into()), None, Some("x".into())]);
        // The session uses sysbench's client collation.
        assert_eq!(
            c.query_value("SELECT @@collation_connection")
                .unwrap()
                .unwrap(),
            "utf8mb4_general_ci"
        );
    }
}

#[test]
fn prepared_statements_count_rows_and_changes() {
    let srv = TestServer::start().unwrap();
    let mut c = Conn::connect(&srv.conn_socket().for_connection(0)).unwrap();
    c.query("CREATE TABLE t (id INT PRIMARY KEY, c CHAR(10))")
        .unwrap();
    let ins = c.prepare("INSERT INTO t VALUES (?, ?)").unwrap();
    assert_eq!(ins.params, 2);
    for i in 1..=5 {
        let o = c
            .execute(&ins, &[Param::Int(i), Param::Str(b"abc")])
            .unwrap();
        assert_eq!(o.affected_rows, 1);
        assert!(!o.result_set);
    }
    let sel = c
        .prepare("SELECT c FROM t WHERE id BETWEEN ? AND ?")
        .unwrap();
    // Repeated executions exercise MariaDB's cached metadata (no column definitions resent).
    for (lo, hi, n) in [(1, 3, 3), (4, 9, 2), (7, 9, 0), (1, 5, 5)] {
        let o = c.execute(&sel, &[Param::Int(lo), Param::Int(hi)]).unwrap();
        assert!(o.result_set);
        assert_eq!(o.rows, n);
    }
    let upd = c.prepare("UPDATE t SET c=? WHERE id=?").unwrap();
    assert_eq!(
        c.execute(&upd, &[Param::Str(b"abc"), Param::Int(1)])
            .unwrap()
            .affected_rows,
        0
    );
    assert_eq!(
        c.execute(&upd, &[Param::Str(b"new"), Param::Int(1)])
            .unwrap()
            .affected_rows,
        1
    );
    match c.execute(&ins, &[Param::Int(1), Param::Str(b"dup")]) {
        Err(DbError::Server(e)) => assert_eq!(e.code, 1062),
        other => panic!("expected a duplicate-key error, got {other:?}"),
    }
    // A multi-statement query returns after its last result.
    c.query("SELECT 1; SELECT 2").unwrap();
    assert_eq!(
        c.query_value("SELECT COUNT(*) FROM t").unwrap().unwrap(),
        "5"
    );
}

#[test]
fn wrong_password_is_access_denied_for_that_user() {
    let srv = TestServer::start().unwrap();
    let mut opts = srv.conn_tcp().for_connection(0);
    opts.password = "wrong".into();
    match Conn::connect(&opts) {
        Err(e @ DbError::AccessDenied { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains("access denied for user 'sbtest'"), "{msg}");
            assert_eq!(e.code(), 1045);
        }
        Err(e) => panic!("expected access denied, got {e}"),
        Ok(_) => panic!("connected with a wrong password"),
    }
}

#[test]
fn unreachable_server_fails_fast_naming_the_endpoint_and_os_error() {
    // A port nothing listens on, and a socket path that does not exist.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    for (endpoint, needle) in [
        (
            Endpoint::Tcp {
                host: "127.0.0.1".into(),
                port,
            },
            format!("TCP 127.0.0.1:{port}"),
        ),
        (
            Endpoint::Socket("/nonexistent/mysqld.sock".into()),
            "unix socket /nonexistent/mysqld.sock".to_string(),
        ),
    ] {
        let t0 = Instant::now();
        let err = Conn::connect(&ConnectOptions {
            endpoint,
            user: "sbtest".into(),
            password: "x".into(),
            database: None,
            connect_timeout: Duration::from_secs(4),
            read_timeout: oltp::proto::conn::DEFAULT_READ_TIMEOUT,
        })
        .err()
        .expect("connecting to nothing must fail");
        assert!(t0.elapsed() < Duration::from_secs(5));
        let msg = err.to_string();
        assert!(msg.contains(&needle), "{msg}");
        assert!(msg.contains("os error"), "{msg}");
    }
}

#[test]
fn a_silent_listener_times_out_within_the_connect_timeout() {
    // Accepts TCP connections but never sends a greeting.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let t0 = Instant::now();
    let err = Conn::connect(&ConnectOptions {
        endpoint: Endpoint::Tcp {
            host: "127.0.0.1".into(),
            port,
        },
        user: "u".into(),
        password: String::new(),
        database: None,
        connect_timeout: Duration::from_secs(2),
        read_timeout: oltp::proto::conn::DEFAULT_READ_TIMEOUT,
    })
    .err()
    .expect("no greeting must fail");
    assert!(t0.elapsed() < Duration::from_secs(4), "{:?}", t0.elapsed());
    assert!(err.to_string().contains("sent no handshake"), "{err}");
    drop(l);
}
