//! `pgoforge oltp` as a user runs it: output layout, JSON, usage errors and faults.

use crate::common;

use std::time::Duration;

use common::{field, oltp, pgoforge};
use regex::Regex;
use testsupport::TestServer;

#[test]
fn run_prints_sysbench_layout_and_writes_json() {
    let srv = TestServer::start().unwrap();
    // Both option spellings work.
    let p = oltp(&srv, "prepare", "oltp_read_only", &["--table_size=3000"]);
    assert_eq!(p.code, 0, "{}", p.stderr);
    assert!(p.stdout.contains("Creating table 'sbtest1'...\nInserting 3000 records into 'sbtest1'\nCreating a secondary index on 'sbtest1'..."), "{}", p.stdout);
    let w = oltp(&srv, "prewarm", "oltp_read_only", &["--table-size=3000"]);
    assert_eq!(w.code, 0, "{}", w.stderr);
    assert!(
        w.stdout.contains("Prewarming table sbtest1"),
        "{}",
        w.stdout
    );
    let json = srv.dir.path().join("result.json");
    let json_arg = format!("--json={}", json.display());
    let r = oltp(
        &srv,
        "run",
        "oltp_read_only",
        &[
            "--table-size=3000",
            "--threads=2",
            "--time=3",
            "--report-interval=1",
            "--percentile=99",
            "--histogram=on",
            &json_arg,
        ],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let out = &r.stdout;
    let interval = Regex::new(
        r"(?m)^\[ \ds \] thds: 2 tps: \d+\.\d\d qps: \d+\.\d\d \(r/w/o: \d+\.\d\d/0\.00/\d+\.\d\d\) lat \(ms,99%\): \d+\.\d\d err/s: 0\.00 reconn/s: 0\.00$",
    )
    .unwrap();
    let n_intervals = interval.find_iter(out).count();
    assert!((2..=3).contains(&n_intervals), "interval lines:\n{out}");
    for pattern in [
        r"(?m)^Number of threads: 2$",
        r"(?m)^Threads started!$",
        r"(?m)^Latency histogram \(values are in milliseconds\)$",
        r"(?m)^SQL statistics:$",
        r"(?m)^    transactions:                        \d+ +\(\d+\.\d\d per sec\.\)$",
        r"(?m)^    queries:                             \d+ +\(\d+\.\d\d per sec\.\)$",
        r"(?m)^    ignored errors:                      0      \(0\.00 per sec\.\)$",
        r"(?m)^    total time:                          \d\.\d{4}s$",
        r"(?m)^         min: {30,39}\d+\.\d\d$",
        r"(?m)^         99th percentile: {20,27}\d+\.\d\d$",
        r"(?m)^    events \(avg/stddev\):           \d+\.\d{4}/\d+\.\d\d$",
        r"(?m)^    p50: \d+\.\d{3}  p95: \d+\.\d{3}  p99: \d+\.\d{3}  p99\.9: \d+\.\d{3}  max: \d+\.\d{3}$",
    ] {
        assert!(
            Regex::new(pattern).unwrap().is_match(out),
            "missing {pattern} in:\n{out}"
        );
    }
    let tx = field(out, "transactions:");
    assert_eq!(field(out, "read:"), tx * 14);
    assert_eq!(field(out, "other:"), tx * 2);

    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(j["transactions"].as_u64().unwrap(), tx);
    assert_eq!(j["queries"]["read"].as_u64().unwrap(), tx * 14);
    assert_eq!(j["test"], "oltp_read_only");
    assert_eq!(j["server"]["transport"], "unix-socket");
    assert!(j["server"]["version"].as_str().unwrap().contains("MariaDB"));
    assert_eq!(j["settings"]["threads"], 2);
    assert_eq!(j["intervals"].as_array().unwrap().len(), n_intervals);
    assert!(j["latency"]["hdr"]["p99"].as_f64().unwrap() > 0.0);
    assert!(
        !std::fs::read_to_string(&json)
            .unwrap()
            .contains(&srv.password),
        "the password must not be stored"
    );
}

#[test]
fn tcp_stays_tcp() {
    let srv = TestServer::start().unwrap();
    let tcp = srv.tcp_args();
    let mut args = vec!["oltp", "prepare", "oltp_point_select", "--table-size=500"];
    args.extend(tcp.iter().map(String::as_str));
    assert_eq!(pgoforge(&args).code, 0);
    args[1] = "run";
    args.extend(["--events=50", "--time=0"]);
    let r = pgoforge(&args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("over tcp"), "{}", r.stdout);
}

#[test]
fn usage_errors_exit_2() {
    for (args, needle) in [
        (
            vec!["oltp", "run", "oltp_read_only", "--threads=0"],
            "at least 1",
        ),
        (
            vec!["oltp", "run", "oltp_nonsense"],
            "unknown test 'oltp_nonsense'",
        ),
        (
            vec!["oltp", "run", "oltp_read_only", "--rand-type=weird"],
            "unknown rand-type 'weird'",
        ),
        (
            vec!["oltp", "run", "oltp_read_only", "--time=0", "--events=0"],
            "--endless",
        ),
        (
            vec!["oltp", "run", "oltp_read_only", "--skip-trx=maybe"],
            "not a boolean",
        ),
        (
            vec!["oltp", "explode", "oltp_read_only"],
            "invalid value 'explode'",
        ),
    ] {
        let r = pgoforge(&args);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(needle), "{args:?}: {}", r.stderr);
    }
}

#[test]
fn unreachable_server_fails_within_5s_naming_it() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let p = port.to_string();
    for (args, needles) in [
        (
            vec![
                "oltp",
                "run",
                "oltp_read_only",
                "--mysql-host=127.0.0.1",
                "--mysql-port",
                &p,
            ],
            vec![
                format!("TCP 127.0.0.1:{port}"),
                "Connection refused".to_string(),
            ],
        ),
        (
            vec![
                "oltp",
                "run",
                "oltp_read_only",
                "--mysql-socket=/nonexistent/x.sock",
            ],
            vec![
                "unix socket /nonexistent/x.sock".to_string(),
                "No such file or directory".to_string(),
            ],
        ),
    ] {
        let r = pgoforge(&args);
        assert_eq!(r.code, 1, "{}", r.stderr);
        assert!(r.elapsed < Duration::from_secs(5));
        for n in needles {
            assert!(r.stderr.contains(&n), "missing '{n}' in: {}", r.stderr);
        }
    }
}

#[test]
fn wrong_credentials_and_missing_tables() {
    let srv = TestServer::start().unwrap();
    let r = pgoforge(&[
        "oltp",
        "run",
        "oltp_read_only",
        &format!("--mysql-socket={}", srv.socket.display()),
        "--mysql-user=sbtest",
        "--mysql-password=wrong",
    ]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("access denied for user 'sbtest'"),
        "{}",
        r.stderr
    );

    let r = oltp(&srv, "run", "oltp_read_only", &[]);
    assert_eq!(r.code, 1);
    assert!(
        r.stderr.contains("table 'sbtest1' does not exist"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("pgoforge oltp prepare oltp_read_only"),
        "{}",
        r.stderr
    );
}

#[test]
fn server_killed_mid_run_prints_statistics_so_far() {
    let mut srv = TestServer::start().unwrap();
    assert_eq!(
        oltp(&srv, "prepare", "oltp_point_select", &["--table-size=1000"]).code,
        0
    );
    let r = std::thread::scope(|scope| {
        let args = srv.socket_args();
        let h = scope.spawn(move || {
            let mut a = vec![
                "oltp",
                "run",
                "oltp_point_select",
                "--table-size=1000",
                "--time=30",
            ];
            a.extend(args.iter().map(String::as_str));
            pgoforge(&a)
        });
        std::thread::sleep(Duration::from_millis(1500));
        srv.kill();
        h.join().unwrap()
    });
    assert_eq!(r.code, 1, "{}", r.stdout);
    assert!(r.elapsed < Duration::from_secs(10));
    assert!(r.stderr.contains("lost connection"), "{}", r.stderr);
    assert!(r.stdout.contains("Statistics so far"), "{}", r.stdout);
    assert!(field(&r.stdout, "transactions:") > 0);
}
