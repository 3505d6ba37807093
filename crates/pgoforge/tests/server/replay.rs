//! `pgoforge oltp … replay`: logs recorded from a real MariaDB (general and slow query logs) and a
//! SQL dump, replayed against it; counts checked exactly, hostile files refused, no statement text
//! in the output.

use std::fs;
use std::path::{Path, PathBuf};

use crate::common;

use common::{field, oltp};
use testsupport::TestServer;

/// What the "application" runs on two connections; two of its statements fail.
fn application(srv: &TestServer) {
    let mut a = oltp::proto::Conn::connect(&srv.conn_socket().for_connection(0)).unwrap();
    let mut b = oltp::proto::Conn::connect(&srv.conn_socket().for_connection(0)).unwrap();
    a.query("SELECT v FROM app WHERE id = 5").unwrap();
    b.query("SELECT id\n  FROM app\n  WHERE id < 10").unwrap();
    a.query("SELECT COUNT(*) FROM app").unwrap();
    a.query("UPDATE app SET v = 'seven' WHERE id = 7").unwrap();
    assert!(a.query("SELECT secret_column FROM missing_table").is_err());
    assert!(b.query("INSERT INTO app VALUES (1, 'dup')").is_err());
}

fn record(srv: &TestServer, kind: &str, file: &Path) {
    let mut root = srv.root().unwrap();
    root.query("SET GLOBAL log_output='FILE'").unwrap();
    if kind == "general" {
        root.query(&format!("SET GLOBAL general_log_file='{}'", file.display()))
            .unwrap();
        root.query("SET GLOBAL general_log=ON").unwrap();
    } else {
        root.query("SET GLOBAL long_query_time=0").unwrap();
        root.query(&format!(
            "SET GLOBAL slow_query_log_file='{}'",
            file.display()
        ))
        .unwrap();
        root.query("SET GLOBAL slow_query_log=ON").unwrap();
    }
    application(srv);
    if kind == "slow" {
        // The server writes a statement's slow-log entry after the client has its answer: the
        // two connections' last statements may still be on their way (seen under load: 5 of 6).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !fs::read_to_string(file)
            .is_ok_and(|t| t.contains("missing_table") && t.contains("VALUES (1, 'dup')"))
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
    // A fresh connection, so that only the switch-off itself is logged from it.
    let mut root = srv.root().unwrap();
    let var = if kind == "general" {
        "general_log"
    } else {
        "slow_query_log"
    };
    root.query(&format!("SET GLOBAL {var}=OFF")).unwrap();
}

/// The replay workload's records in a benchmark run dir.
fn replay_results(run: &Path) -> Vec<serde_json::Value> {
    common::records(run)
        .into_iter()
        .filter(|v| v["workload"] == "replay")
        .collect()
}

fn json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&fs::read_to_string(path).unwrap()).unwrap()
}

/// A plain SQL dump of the `app` table with `rows` rows (`id`, `'v<id>'`), written to
/// `dir/dump.sql`: the replay's own data.
fn app_dump(dir: &Path, rows: usize) -> PathBuf {
    let dump = dir.join("dump.sql");
    let values: Vec<String> = (1..=rows).map(|i| format!("({i},'v{i}')")).collect();
    fs::write(
        &dump,
        format!(
            "CREATE TABLE app (id INT PRIMARY KEY, v VARCHAR(20));\nINSERT INTO app VALUES {};\n",
            values.join(",")
        ),
    )
    .unwrap();
    dump
}

#[test]
fn recorded_logs_replay_with_exact_counts_and_no_statement_text() {
    let srv = TestServer::start().unwrap();
    let dir = srv.dir.path();
    // The dataset, as a SQL file loaded by `prepare replay`.
    let dump = dir.join("dump.sql");
    let rows: Vec<String> = (1..=100).map(|i| format!("({i},'v{i}')")).collect();
    fs::write(
        &dump,
        format!(
            "-- a dump\nCREATE TABLE app (id INT PRIMARY KEY, v VARCHAR(20));\n/*!40000 ALTER TABLE app DISABLE KEYS */;\nINSERT INTO app VALUES {};\n",
            rows.join(",")
        ),
    )
    .unwrap();
    let p = oltp(
        &srv,
        "prepare",
        "replay",
        &[&format!("--replay-dataset={}", dump.display())],
    );
    assert_eq!(p.code, 0, "{}{}", p.stdout, p.stderr);
    assert_eq!(srv.count("SELECT COUNT(*) FROM sbtest.app").unwrap(), 100);

    for kind in ["general", "slow"] {
        let log = dir.join(format!("{kind}.log"));
        record(&srv, kind, &log);
        let parsed = oltp::replay::parse::read(&log, oltp::replay::Format::Auto).unwrap();
        // The application's six statements on two connections; the general log also has the
        // switch-off on a third (the slow log writes a statement when it ends, by then off).
        let (stmts, sessions) = if kind == "general" { (7, 3) } else { (6, 2) };
        assert_eq!(parsed.statements(), stmts, "{kind}: {parsed:?}");
        assert_eq!(parsed.sessions.len(), sessions, "{kind}");
        // One connection replays every session in order: twice through the file exactly.
        let out = dir.join(format!("{kind}.json"));
        let r = oltp(
            &srv,
            "run",
            "replay",
            &[
                &format!("--replay-file={}", log.display()),
                "--threads=1",
                &format!("--events={}", 2 * stmts),
                "--time=0",
                &format!("--json={}", out.display()),
            ],
        );
        assert_eq!(r.code, 0, "{kind}: {}{}", r.stdout, r.stderr);
        assert_eq!(field(&r.stdout, "transactions:"), 2 * stmts as u64);
        let v = json(&out);
        let c = &v["replay"];
        assert_eq!(c["sessions"], sessions);
        assert_eq!(c["statements_in_file"], stmts);
        // Twice each: the missing table, the duplicate key, and (general log) SET GLOBAL without
        // the privilege.
        assert_eq!(c["errors_by_code"]["1146"], 2, "{kind}: {c}");
        assert_eq!(c["errors_by_code"]["1062"], 2, "{kind}: {c}");
        let denied = if kind == "general" { 2 } else { 0 };
        assert_eq!(
            c["errors_by_code"]["1227"].as_u64().unwrap_or(0),
            denied,
            "{kind}: {c}"
        );
        assert_eq!(v["ignored_errors"], 4 + denied);
        // Reads: 3 SELECTs a pass; the UPDATE changed a row once (then 0 rows: "other").
        assert_eq!(v["queries"]["read"], 6);
        if kind == "slow" {
            // The slow log's Rows_sent of the four statements that succeed, compared each time.
            assert_eq!(c["rows_checked"], 8, "{c}");
            assert_eq!(c["rows_mismatched"], 0, "{c}");
        } else {
            assert_eq!(c["rows_checked"], 0);
        }
        // Logs hold users' data: neither the output nor the result quotes a statement.
        for text in [&r.stdout, &r.stderr, &fs::read_to_string(&out).unwrap()] {
            assert!(
                !text.contains("secret_column") && !text.contains("seven"),
                "{kind}: {text}"
            );
        }
        assert!(r.stdout.contains("errors by code:"), "{}", r.stdout);
    }

    // Several connections: each replays its own original connection.
    let r = oltp(
        &srv,
        "run",
        "replay",
        &[
            &format!("--replay-file={}", dir.join("general.log").display()),
            "--threads=3",
            "--time=2",
        ],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(field(&r.stdout, "transactions:") > 30);

    // Hostile and truncated files: a clear refusal (exit 2) naming the file, nothing run.
    let slow = fs::read(dir.join("slow.log")).unwrap();
    let cut = dir.join("cut.log");
    let end = slow.len() - 8;
    fs::write(&cut, &slow[..end]).unwrap();
    let garbage = dir.join("garbage.bin");
    fs::write(
        &garbage,
        (0..4096u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect::<Vec<u8>>(),
    )
    .unwrap();
    for (file, why) in [
        (&cut, "does not end with ';'"),
        (&garbage, "truncated?"),
        (&dir.join("nope.log"), "cannot read the workload file"),
    ] {
        let r = oltp(
            &srv,
            "run",
            "replay",
            &[&format!("--replay-file={}", file.display()), "--time=1"],
        );
        assert_eq!(r.code, 2, "{}: {}{}", file.display(), r.stdout, r.stderr);
        assert!(r.stderr.contains(why), "{}: {}", file.display(), r.stderr);
        assert!(
            r.stderr.contains(&file.display().to_string()),
            "{}",
            r.stderr
        );
    }
    let r = oltp(&srv, "run", "replay", &["--time=1"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("--replay-file"), "{}", r.stderr);
}

/// Replay as a benchmark and a training workload: the dump goes into the dataset template, every
/// run replays the file against a fresh copy of it, and a training phase replays it too.
#[test]
fn a_replay_is_a_benchmark_and_a_training_workload_on_its_own_data() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let dump = app_dump(dir, 50);
    // Without the dump's table every statement would fail with 1146.
    let file = dir.join("workload.sql");
    fs::write(
        &file,
        "SELECT v FROM app WHERE id = 5;\nSELECT COUNT(*) FROM app;\nUPDATE app SET v = 'changed' WHERE id = 7;\n",
    )
    .unwrap();
    let work = dir.join("work");
    let run = dir.join("run");
    let bench = |workloads: &str, extra: &[&str]| {
        common::pgoforge_with(common::tiny_bench(&work, &run, workloads), extra)
    };
    let r = bench(
        "oltp_point_select,replay",
        &[
            &format!("--replay-file={}", file.display()),
            &format!("--replay-dataset={}", dump.display()),
        ],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let replays = replay_results(&run);
    assert_eq!(replays.len(), 2, "one replay run per contender");
    for v in &replays {
        let res = &v["result"];
        assert!(res["transactions"].as_u64().unwrap() > 10, "{res}");
        assert_eq!(res["replay"]["statements_in_file"], 3, "{res}");
        assert_eq!(
            res["replay"]["errors_by_code"],
            serde_json::json!({}),
            "the dump's table is in every copy: {res}"
        );
    }
    let templates = crate::common::names_in(&work.join("datasets"));
    assert!(
        templates.iter().any(|n| n.contains("+replay")),
        "{templates:?}"
    );
    // The plan keys the file by content: the digests are in plan.json.
    let plan: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(run.join("plan.json")).unwrap()).unwrap();
    assert_eq!(plan["replay"]["file_sha256"].as_str().unwrap().len(), 64);
    assert!(fs::read_to_string(run.join("report.md"))
        .unwrap()
        .contains("| replay |"));
    // No file, or a file that is not a workload: refused before anything runs (exit 2).
    let r = bench("replay", &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("needs --replay-file"), "{}", r.stderr);
    let cut = dir.join("cut.sql");
    fs::write(&cut, "SELECT 1;\nSELECT v FROM app WHERE").unwrap();
    let r = bench("replay", &[&format!("--replay-file={}", cut.display())]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("has no closing ';'"), "{}", r.stderr);

    // A training phase replays the file on the template's copy of the dump.
    use pgoforge::profile::train::{dataset_template, run_mix_from, start_for_mix, Mix, Phases};
    let mut spec = pgoforge::server::ServerSpec::new(testsupport::MARIADBD);
    spec.config.buffer_pool_mb = 64;
    spec.config.redo_log_mb = 32;
    let mix = Mix {
        tables: 1,
        table_size: 100,
        phases: "replay:2:2".parse::<Phases>().unwrap().0,
        replay: Some(
            pgoforge::server::template::Replay::new(oltp::replay::ReplayOptions {
                file: file.clone(),
                format: oltp::replay::Format::Auto,
                dataset: Some(dump.clone()),
                datadir: None,
            })
            .unwrap(),
        ),
        engine: Default::default(),
    };
    mix.check().unwrap();
    let (tpl, _) = dataset_template(&work, &spec, &mix).unwrap();
    assert!(
        tpl.to_string_lossy().contains("+replay"),
        "{}",
        tpl.display()
    );
    let log = |_: &str| {};
    let mut srv = start_for_mix(&spec, &dir.join("inst"), Some(&tpl), &log).unwrap();
    run_mix_from(&srv.state, &mix, Some(&tpl), &log).unwrap();
    let v = srv
        .state
        .root()
        .unwrap()
        .query_value("SELECT v FROM sbtest.app WHERE id = 7")
        .unwrap();
    srv.stop().unwrap();
    assert_eq!(v.as_deref(), Some("changed"), "the phase replayed the file");
    let no_file = Mix {
        replay: None,
        ..mix
    };
    assert!(no_file.check().unwrap_err().contains("--replay-file"));
}

/// Hashes every file under `dir` by content: proof that nothing in it was written.
fn content_digest(dir: &Path) -> Vec<(String, String)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                files.push((rel, pgoforge::infra::fs::sha256_file(&p).unwrap()));
            }
        }
    }
    files.sort();
    files
}

/// A replay against a DBA's own datadir: refused while a server runs on it, then copied into the
/// template (whose accounts pgoforge makes without knowing the datadir's), replayed on fresh
/// copies with no error, and the datadir itself left byte for byte as it was.
#[test]
fn a_replay_runs_on_a_copy_of_a_datadir_that_is_never_written() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let mut spec = pgoforge::server::ServerSpec::new(testsupport::MARIADBD);
    spec.config.buffer_pool_mb = 64;
    spec.config.redo_log_mb = 32;
    let mut src = pgoforge::server::Server::create(&spec, &dir.join("theirs")).unwrap();
    let datadir = src.state.datadir.clone();
    {
        let mut root = src.state.root().unwrap();
        for sql in [
            "CREATE DATABASE shop",
            "CREATE TABLE shop.items (id INT PRIMARY KEY, qty INT NOT NULL)",
            "USE shop",
            "INSERT INTO items SELECT seq, 0 FROM seq_1_to_50",
        ] {
            root.query(sql).unwrap();
        }
    }
    let file = dir.join("workload.sql");
    fs::write(
        &file,
        "USE shop;\nSELECT qty FROM items WHERE id = 5;\nUPDATE items SET qty = qty + 1 WHERE id = 7;\nSELECT COUNT(*) FROM items;\n",
    )
    .unwrap();
    let work = dir.join("work");
    let bench = |run: &str, extra: &[&str]| {
        let mut a = common::tiny_bench(&work, &dir.join(run), "oltp_point_select,replay");
        a.push(format!("--replay-file={}", file.display()));
        common::pgoforge_with(a, extra)
    };
    let with_datadir = format!("--replay-datadir={}", datadir.display());
    // A running server's datadir would be copied torn: refused before anything runs.
    let r = bench("live", &[&with_datadir]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("a server is running on"), "{}", r.stderr);
    assert!(!work.join("datasets").exists());
    // Its superuser becomes one pgoforge cannot log in as, then the server stops.
    src.state
        .root()
        .unwrap()
        .query("ALTER USER root@localhost IDENTIFIED VIA mysql_native_password USING PASSWORD('not-ours')")
        .unwrap();
    src.stop().unwrap();
    let before = content_digest(&datadir);

    let r = bench("run", &[&with_datadir]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let replays = replay_results(&dir.join("run"));
    assert_eq!(replays.len(), 2, "one replay run per contender");
    for v in &replays {
        let res = &v["result"];
        assert!(res["transactions"].as_u64().unwrap() > 10, "{res}");
        assert_eq!(
            res["replay"]["errors_by_code"],
            serde_json::json!({}),
            "shop.items is in every copy and the benchmark user may use it: {res}"
        );
    }
    let template = fs::read_dir(work.join("datasets"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().contains("+datadir"))
        .expect("a template made from the datadir");
    assert!(template.join("data/shop/items.ibd").is_file());
    assert!(template.join("data/sbtest/sbtest1.ibd").is_file());
    let plan = json(&dir.join("run/plan.json"));
    assert_eq!(
        plan["replay"]["datadir_fingerprint"]
            .as_str()
            .unwrap()
            .len(),
        64
    );
    assert_eq!(content_digest(&datadir), before, "the datadir was written");

    // Not a datadir, or both kinds of data at once: usage errors.
    let r = bench("bad", &[&format!("--replay-datadir={}", dir.display())]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("is not a server's datadir"),
        "{}",
        r.stderr
    );
    let r = bench(
        "both",
        &[
            &with_datadir,
            &format!("--replay-dataset={}", file.display()),
        ],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
}

/// The user's own statements under cachegrind: the cell runs on the template with the replay's
/// dump, whole passes over the file are measured (every statement as often as logged), and a
/// failing statement is counted, not hidden.
#[test]
fn a_replay_is_measured_under_cachegrind_in_whole_passes_over_the_file() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let dump = app_dump(dir, 200);
    // Four statements, one of which always fails (1146: no such table).
    let file = dir.join("workload.sql");
    fs::write(
        &file,
        "SELECT v FROM app WHERE id = 5;\nSELECT COUNT(*) FROM app WHERE v LIKE 'v1%';\n\
         UPDATE app SET v = 'changed' WHERE id = 7;\nSELECT x FROM not_there;\n",
    )
    .unwrap();
    let work = dir.join("work");
    let run = dir.join("cg");
    let r = common::pgoforge(&[
        "bench",
        "--measure=cachegrind",
        &format!("--baseline=debian={}", testsupport::MARIADBD),
        &format!("--binary=again={}", testsupport::MARIADBD),
        "--workloads=replay",
        &format!("--replay-file={}", file.display()),
        &format!("--replay-dataset={}", dump.display()),
        "--warmup-events=10",
        // 500 passes over the file: the method needs no more to count the statements alike
        // (the default, 10 000 events, doubled the test's time under valgrind).
        "--events=2000",
        "--tables=1",
        "--table-size=100",
        "--buffer-pool-mb=64",
        "--redo-log-mb=32",
        &format!("--work-dir={}", work.display()),
        &format!("--run={}", run.display()),
    ]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let recs = pgoforge::bench::cachegrind::read_records(&run).unwrap();
    assert_eq!(recs.len(), 2, "{recs:?}");
    // One binary under two names: the same statements cost the same, within cachegrind's noise.
    let (a, b) = (recs[0].per_txn.instructions, recs[1].per_txn.instructions);
    assert!((a / b - 1.0).abs() < 0.05, "{a} vs {b}");
    let rec = &recs[0];
    assert_eq!(rec.workload, oltp::settings::TestName::Replay);
    assert_eq!(
        rec.events, 2_000,
        "500 passes over the file's four statements"
    );
    // Only the statement on the missing table fails: the dump's table is in the copy.
    assert_eq!(rec.failed_statements, Some(500), "{rec:?}");
    let p = &rec.per_txn;
    // A statement through the parser, the optimizer and InnoDB is tens of thousands of
    // instructions at least; the warm-up and start-up are subtracted, not counted.
    assert!(p.instructions > 10_000.0, "{p:?}");
    assert!(p.branches > p.mispredicts && p.mispredicts > 0.0, "{p:?}");
    assert!(rec.long.ir > rec.short.ir, "{rec:?}");
    assert!(
        fs::read_dir(work.join("datasets")).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains("+replay")),
        "the cell ran on a template holding the dump"
    );
    let md = fs::read_to_string(run.join("cachegrind.md")).unwrap();
    assert!(md.contains("| replay |"), "{md}");
    // The plan keeps the replay (by content), so a resumed measurement continues the same one.
    let plan = json(&pgoforge::bench::cachegrind::plan_path(&run));
    assert_eq!(plan["replay"]["file_sha256"].as_str().unwrap().len(), 64);
}
