//! Debian's mariadbd driven through pgoforge's server module: initialize, start, OLTP, stop, templates,
//! and every failure case, each checked against the process table and the work dir.

use crate::common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use oltp::settings::{Settings, TestName};
use pgoforge::infra::pid_alive as alive;
use pgoforge::server::{template, Server, ServerSpec};

const MARIADBD: &str = "/usr/sbin/mariadbd";

fn spec() -> ServerSpec {
    let mut s = ServerSpec::new(MARIADBD);
    s.config.buffer_pool_mb = 128;
    s.config.redo_log_mb = 32;
    s
}

/// Live (non-zombie) processes whose command line mentions `dir`.
fn workload(conn: oltp::settings::ConnSettings, events: u64) -> Settings {
    let mut s = Settings::new(TestName::OltpReadWrite);
    s.conn = conn;
    s.schema.table_size = 1000;
    s.time_s = 0;
    s.events = events;
    s
}

#[test]
fn init_start_oltp_and_clean_stop() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("inst");
    let mut srv = Server::create(&spec(), &dir).unwrap();
    let st = srv.state.clone();
    assert!(alive(st.pid));
    assert_eq!(st.flavor.family, pgoforge::server::Family::MariaDb);

    // Private run dir, loopback only, no remote or passwordless-TCP root.
    let run_mode = fs::metadata(st.socket.parent().unwrap())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(run_mode, 0o700);
    let mut root = st.root().unwrap();
    assert_eq!(
        root.query_value("SELECT @@bind_address").unwrap().unwrap(),
        "127.0.0.1"
    );
    let hosts = root
        .query_rows("SELECT CONCAT(user,'@',host) FROM mysql.global_priv ORDER BY 1")
        .unwrap();
    let hosts: Vec<String> = hosts.into_iter().filter_map(|r| r[0].clone()).collect();
    assert!(hosts.iter().all(|h| !h.ends_with("@%")), "{hosts:?}");
    assert!(
        hosts.contains(&"sbtest@127.0.0.1".to_string())
            && hosts.contains(&"sbtest@localhost".to_string())
    );
    assert!(
        !hosts
            .iter()
            .any(|h| h.starts_with("root@") && !h.ends_with("@localhost")),
        "{hosts:?}"
    );
    assert_eq!(st.credentials.password.len(), 36);

    // The OLTP driver works over both transports with the generated account.
    for conn in [st.conn_settings(), st.tcp_settings()] {
        let s = workload(conn, 50);
        oltp::schema::cleanup(&s, &|_| {}).unwrap();
        oltp::schema::prepare(&s, &|_| {}).unwrap();
        let r = oltp::run(&s, &mut oltp::Quiet).unwrap();
        assert_eq!(r.transactions, 50);
        assert_eq!(r.queries.write, 200);
    }
    srv.stop().unwrap();
    assert!(!alive(st.pid));
    assert!(common::processes_mentioning(work.path()).is_empty());
    assert!(
        srv.log_tail(5).contains("Shutdown complete"),
        "{}",
        srv.log_tail(5)
    );

    // Restart on the same datadir: data and credentials kept.
    let mut again = Server::start(&spec(), &dir).unwrap();
    assert_eq!(again.state.credentials, st.credentials);
    let n = again
        .state
        .root()
        .unwrap()
        .query_value("SELECT COUNT(*) FROM sbtest.sbtest1")
        .unwrap()
        .unwrap();
    assert_eq!(n, "1000");
    again.stop().unwrap();
    assert!(common::processes_mentioning(work.path()).is_empty());
}

#[test]
fn templates_give_identical_fresh_copies() {
    let work = tempfile::tempdir().unwrap();
    let mut ds = Settings::new(TestName::OltpReadWrite);
    ds.schema.table_size = 2000;
    ds.schema.tables = 2;
    ds.rand.seed = 5;
    let t0 = std::time::Instant::now();
    let tpl = template::ensure(work.path(), &spec(), std::slice::from_ref(&ds)).unwrap();
    let first = t0.elapsed();
    assert!(tpl.join("data/sbtest/sbtest2.ibd").is_file());
    assert!(
        !tpl.join("run").exists()
            && !work.path().join("datasets").read_dir().unwrap().any(|e| e
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "building"))
    );
    // Reused at once.
    let t1 = std::time::Instant::now();
    assert_eq!(
        template::ensure(work.path(), &spec(), std::slice::from_ref(&ds)).unwrap(),
        tpl
    );
    assert!(t1.elapsed() < first / 4);

    let mut sums = Vec::new();
    let mut passwords = Vec::new();
    for i in 0..2 {
        let mut srv =
            template::start_copy(&tpl, &spec(), &work.path().join(format!("copy{i}"))).unwrap();
        let mut root = srv.state.root().unwrap();
        assert_eq!(
            root.query_value("SELECT COUNT(*) FROM sbtest.sbtest2")
                .unwrap()
                .unwrap(),
            "2000"
        );
        sums.push(root.query_rows("CHECKSUM TABLE sbtest.sbtest1").unwrap()[0][1].clone());
        passwords.push(srv.state.credentials.password.clone());
        // Change the copy; the template must not see it.
        let s = workload(srv.state.conn_settings(), 30);
        oltp::run(&s, &mut oltp::Quiet).unwrap();
        srv.stop().unwrap();
    }
    assert_eq!(sums[0], sums[1], "every copy starts from identical data");
    assert_ne!(
        passwords[0], passwords[1],
        "each copy gets its own password"
    );

    // A copy used again (a benchmark's next round) gets back the template's data, restoring
    // only the files its last server wrote: the written tables after writes, not after reads.
    let copy = work.path().join("copy0");
    let table = |name: &str| {
        fs::metadata(tpl.join("data/sbtest").join(name))
            .unwrap()
            .len()
    };
    let (mut srv, restored) = template::start_synced(&tpl, &spec(), &copy).unwrap();
    let tables = |r: &pgoforge::infra::fs::Synced| {
        r.largest
            .iter()
            .filter(|(name, _)| name.starts_with("sbtest/"))
            .count()
    };
    assert!(
        restored.bytes >= table("sbtest1.ibd") && tables(&restored) > 0,
        "the written tables come back: {restored:?}"
    );
    let sum = |srv: &Server| {
        srv.state
            .root()
            .unwrap()
            .query_rows("CHECKSUM TABLE sbtest.sbtest1")
            .unwrap()[0][1]
            .clone()
    };
    assert_eq!(sum(&srv), sums[0], "the template's data again");
    let mut reads = workload(srv.state.conn_settings(), 200);
    reads.test = TestName::OltpPointSelect;
    reads.threads = 2;
    oltp::run(&reads, &mut oltp::Quiet).unwrap();
    srv.stop().unwrap();
    let (srv, restored) = template::start_synced(&tpl, &spec(), &copy).unwrap();
    // The server's own files (its redo log, system tablespace, the rotated password's table)
    // are written at every start; the tables only read are left alone.
    assert!(
        restored.files > 0 && tables(&restored) == 0,
        "after reads only the server's own files are restored: {restored:?}"
    );
    assert_eq!(sum(&srv), sums[0]);
    drop(srv);
    assert!(common::processes_mentioning(work.path()).is_empty());
}

/// Pages InnoDB has read from disk so far.
fn pages_read(srv: &Server) -> u64 {
    pgoforge::server::prewarm::disk_reads(&mut srv.state.root().unwrap()).unwrap()
}

#[test]
fn prewarm_reads_every_index_so_a_workload_then_reads_nothing_from_disk() {
    let work = tempfile::tempdir().unwrap();
    let mut ds = Settings::new(TestName::OltpReadOnly);
    ds.schema.table_size = 20_000;
    ds.schema.tables = 2;
    let tpl = template::ensure(work.path(), &spec(), std::slice::from_ref(&ds)).unwrap();
    let run = |srv: &Server| {
        let mut s = ds.clone();
        s.conn = srv.state.conn_settings();
        s.time_s = 0;
        s.events = 500;
        oltp::run(&s, &mut oltp::Quiet).unwrap();
    };

    // A fresh copy starts cold: the workload reads its pages from disk.
    let mut cold = template::start_copy(&tpl, &spec(), &work.path().join("cold")).unwrap();
    let before = pages_read(&cold);
    run(&cold);
    let cold_reads = pages_read(&cold) - before;
    assert!(
        cold_reads > 100,
        "a cold copy reads from disk: {cold_reads}"
    );
    cold.stop().unwrap();

    // Prewarmed: the scans read the tables (both, each through its primary key and k_1), and
    // the same workload then finds every page in the buffer pool.
    let mut warm = template::start_copy(&tpl, &spec(), &work.path().join("warm")).unwrap();
    let w = warm
        .prewarm(pgoforge::server::config::Engine::InnoDb)
        .unwrap()
        .expect("2 small tables fit in 128 MiB");
    assert_eq!((w.tables, w.scans), (2, 4), "{w:?}");
    assert!(w.disk_reads > 100, "the scans read the cold tables: {w:?}");
    let before = pages_read(&warm);
    run(&warm);
    // Not exactly none: InnoDB's own background work (purge, statistics) may read a page.
    let warm_reads = pages_read(&warm) - before;
    eprintln!("pages read by the workload: cold {cold_reads}, prewarmed {warm_reads}");
    assert!(
        warm_reads * 10 <= cold_reads,
        "the prewarmed copy read {warm_reads} pages, the cold one {cold_reads}"
    );
    warm.stop().unwrap();

    // A buffer pool the tablespaces do not fit in 80 % of: not scanned, and said why.
    let mut small = spec();
    small.config.buffer_pool_mb = 6;
    let mut tight = template::start_copy(&tpl, &small, &work.path().join("tight")).unwrap();
    match tight
        .prewarm(pgoforge::server::config::Engine::InnoDb)
        .unwrap()
    {
        Err(pgoforge::server::prewarm::Skipped::TooLarge {
            data_bytes,
            pool_bytes,
        }) => assert!(
            data_bytes > pool_bytes / 100 * pgoforge::server::prewarm::MAX_POOL_SHARE_PCT
                && pool_bytes <= 8 << 20
        ),
        Ok(w) => panic!("prewarmed a dataset larger than the pool: {w:?}"),
    }
    tight.stop().unwrap();
    assert!(common::processes_mentioning(work.path()).is_empty());
}

#[test]
fn missing_or_foreign_binaries_are_refused() {
    let work = tempfile::tempdir().unwrap();
    let e = Server::create(
        &ServerSpec::new("/nonexistent/mariadbd"),
        &work.path().join("a"),
    )
    .err()
    .unwrap();
    assert!(
        format!("{e:#}").contains("/nonexistent/mariadbd does not exist"),
        "{e:#}"
    );
    let e = Server::create(&ServerSpec::new("/bin/true"), &work.path().join("b"))
        .err()
        .unwrap();
    assert!(
        format!("{e:#}").contains("/bin/true is not a MySQL-family server"),
        "{e:#}"
    );
    let e = Server::create(&ServerSpec::new("/bin/ls"), &work.path().join("c"))
        .err()
        .unwrap();
    assert!(
        format!("{e:#}").contains("not a MySQL-family server"),
        "{e:#}"
    );
    assert!(!work.path().join("a").exists() && !work.path().join("b").exists());
}

#[test]
fn a_port_in_use_is_named() {
    let work = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let mut s = spec();
    s.port = Some(port);
    let e = Server::create(&s, &work.path().join("p")).err().unwrap();
    assert!(
        format!("{e:#}").contains(&format!("port {port} on 127.0.0.1 is in use")),
        "{e:#}"
    );
    assert!(common::processes_mentioning(work.path()).is_empty());
    assert!(!work.path().join("p/data").exists());
}

#[test]
fn an_unwritable_datadir_is_named() {
    // Root ignores file modes, so use a place no one can write: a path below a regular file.
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("file");
    fs::write(&file, "").unwrap();
    let e = Server::create(&spec(), &file.join("inst")).err().unwrap();
    let msg = format!("{e:#}");
    assert!(
        msg.contains(&file.join("inst").display().to_string()) && msg.contains("Not a directory"),
        "{msg}"
    );
    assert!(common::processes_mentioning(work.path()).is_empty());
}

#[test]
fn a_bad_option_fails_with_the_error_log_and_leaves_no_datadir() {
    let work = tempfile::tempdir().unwrap();
    let mut s = spec();
    s.config.extra = vec!["innodb_no_such_option = 1".into()];
    let dir = work.path().join("bad");
    let e = Server::create(&s, &dir).err().unwrap();
    let msg = format!("{e:#}");
    assert!(
        msg.contains("unknown variable 'innodb_no_such_option=1'"),
        "{msg}"
    );
    assert!(!dir.join("data").exists(), "no half-initialized datadir");
    assert!(!dir.join("data.initializing").exists());
    assert!(common::processes_mentioning(work.path()).is_empty());

    // A good datadir started with a bad option: the crash at start-up is reported with the log.
    let good = work.path().join("good");
    Server::create(&spec(), &good).unwrap().stop().unwrap();
    let e = Server::start(&s, &good).err().unwrap();
    let msg = format!("{e:#}");
    assert!(
        msg.contains("exited during start-up") && msg.contains("unknown variable"),
        "{msg}"
    );
    assert!(common::processes_mentioning(work.path()).is_empty());
}

#[test]
fn a_server_killed_while_running_is_an_error_on_stop() {
    let work = tempfile::tempdir().unwrap();
    let mut srv = Server::create(&spec(), &work.path().join("k")).unwrap();
    // SAFETY: killing the server this test started.
    unsafe { libc::kill(srv.state.pid as i32, libc::SIGKILL) };
    std::thread::sleep(Duration::from_millis(200));
    let e = srv.stop().expect_err("stopping a killed server must fail");
    let msg = format!("{e:#}");
    assert!(
        msg.contains("killed by signal 9") && msg.contains("profile is not written"),
        "{msg}"
    );
    assert!(common::processes_mentioning(work.path()).is_empty());
}

#[test]
fn dropping_a_handle_stops_its_server() {
    let work = tempfile::tempdir().unwrap();
    let pid = {
        let srv = Server::create(&spec(), &work.path().join("d")).unwrap();
        srv.state.pid
    };
    assert!(!alive(pid));
    assert!(common::processes_mentioning(work.path()).is_empty());
}

#[test]
fn cli_start_status_stop() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path().to_str().unwrap();
    let r = common::pgoforge(&[
        "server",
        "start",
        "--work-dir",
        w,
        "--name",
        "m",
        "--binary",
        MARIADBD,
        "--buffer-pool-mb",
        "128",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("is running (pid") && r.stdout.contains("pgoforge oltp prepare"),
        "{}",
        r.stdout
    );
    let status = common::pgoforge(&["server", "status", "--work-dir", w, "--name", "m", "--json"]);
    assert_eq!(status.code, 0);
    let v: serde_json::Value = serde_json::from_str(&status.stdout).unwrap();
    assert_eq!(v["running"], true);
    let pid = v["pid"].as_u64().unwrap() as u32;
    let sock = v["socket"].as_str().unwrap().to_string();
    let pw = v["credentials"]["password"].as_str().unwrap().to_string();
    // The printed way to connect works.
    let p = common::pgoforge(&[
        "oltp",
        "prepare",
        "oltp_point_select",
        "--table-size=100",
        &format!("--mysql-socket={sock}"),
        &format!("--mysql-password={pw}"),
    ]);
    assert_eq!(p.code, 0, "{}", p.stderr);
    let s = common::pgoforge(&["server", "stop", "--work-dir", w, "--name", "m"]);
    assert_eq!(s.code, 0, "{}", s.stderr);
    assert!(!alive(pid));
    let status = common::pgoforge(&["server", "status", "--work-dir", w, "--name", "m"]);
    assert_eq!(status.code, 3);
    assert!(status.stdout.contains("not running"));
    let again = common::pgoforge(&["server", "stop", "--work-dir", w, "--name", "m"]);
    assert_eq!(again.code, 1);
    assert!(again.stderr.contains("is not running"), "{}", again.stderr);
    assert!(common::processes_mentioning(work.path()).is_empty());
}

#[test]
fn a_server_that_dies_during_its_bootstrap_is_reported_not_a_silent_exit() {
    // The bootstrap SQL is fed through a pipe; a server that rejects its configuration exits
    // before reading it. pgoforge used to die of SIGPIPE (exit 141, no message) and leave
    // data.initializing behind.
    let work = tempfile::tempdir().unwrap();
    let w = work.path().to_str().unwrap();
    let r = common::pgoforge(&[
        "server",
        "start",
        "--work-dir",
        w,
        "--binary",
        MARIADBD,
        "--buffer-pool-mb",
        "128",
        "--set",
        "innodb_bogus_option=1",
    ]);
    assert_eq!(r.code, 1, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("innodb_bogus_option"), "{}", r.stderr);
    let left: Vec<String> = std::fs::read_dir(work.path().join("servers/manual"))
        .map(|d| {
            d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    assert!(
        !left.iter().any(|n| n.starts_with("data")),
        "no datadir, finished or half-made: {left:?}"
    );
    assert!(common::processes_mentioning(work.path()).is_empty());
}

#[test]
fn long_work_dirs_get_a_private_socket_dir_and_cpus_are_pinned() {
    let work = tempfile::tempdir().unwrap();
    let deep = work
        .path()
        .join("a-rather-long-directory-name-for-a-work-dir")
        .join("and-another-level-of-nesting-here")
        .join("inst");
    let mut s = spec();
    s.cpus = Some(vec![0]);
    let mut srv = Server::create(&s, &deep).unwrap();
    let sock = srv.state.socket.clone();
    assert!(
        sock.to_string_lossy().starts_with("/tmp/pgoforge-") && sock.as_os_str().len() < 100,
        "{}",
        sock.display()
    );
    assert_eq!(
        fs::metadata(sock.parent().unwrap())
            .unwrap()
            .permissions()
            .mode()
            & 0o777,
        0o700
    );
    let status = fs::read_to_string(format!("/proc/{}/status", srv.state.pid)).unwrap();
    let allowed = status
        .lines()
        .find(|l| l.starts_with("Cpus_allowed_list:"))
        .unwrap();
    assert_eq!(allowed.split_whitespace().last(), Some("0"), "{allowed}");
    srv.stop().unwrap();
    assert!(
        !sock.parent().unwrap().exists(),
        "the socket dir is removed with the server"
    );
    assert!(common::processes_mentioning(work.path()).is_empty());
    // Detached (`pgoforge server start`), then stopped by its state file alone
    // (`pgoforge server stop`): the socket dir goes too.
    let srv = Server::create(&spec(), &deep.with_file_name("detached")).unwrap();
    let log = srv.error_log().to_path_buf();
    let state = srv.detach();
    let sock = state.socket.clone();
    assert!(sock.parent().unwrap().is_dir());
    pgoforge::server::stop_by_pid(&state, Duration::from_secs(60), &log).unwrap();
    assert!(
        !sock.parent().unwrap().exists(),
        "the socket dir of a detached server is removed when it is stopped"
    );
}

#[test]
fn a_server_that_does_not_stop_in_time_is_killed_and_reported() {
    let work = tempfile::tempdir().unwrap();
    let mut s = spec();
    // No real server shuts down within a millisecond: the kill path is taken.
    s.stop_timeout = Duration::from_millis(1);
    let mut srv = Server::create(&s, &work.path().join("slow")).unwrap();
    let pid = srv.state.pid;
    let e = srv.stop().expect_err("a kill must be reported");
    let msg = format!("{e:#}");
    assert!(
        msg.contains("did not stop within") && msg.contains("no profile written"),
        "{msg}"
    );
    assert!(!alive(pid));
    assert!(common::processes_mentioning(work.path()).is_empty());
}

#[test]
fn a_server_whose_first_setup_was_interrupted_is_refused_not_started_with_void_credentials() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("inst");
    let mut srv = Server::create(&spec(), &dir).unwrap();
    assert!(srv.state.accounts_ready);
    srv.stop().unwrap();
    drop(srv);
    // The state a kill between the first start and the account creation leaves: the datadir is
    // initialized, the recorded benchmark user was never created.
    let state_path = dir.join("state.json");
    let mut st: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&state_path).unwrap()).unwrap();
    st["accounts_ready"] = serde_json::Value::Bool(false);
    fs::write(&state_path, st.to_string()).unwrap();
    let e = match Server::start(&spec(), &dir) {
        Ok(_) => panic!("started a server whose accounts were never created"),
        Err(e) => format!("{e:#}"),
    };
    assert!(
        e.contains("interrupted") && e.contains("remove the directory"),
        "{e}"
    );
    assert!(common::processes_mentioning(work.path()).is_empty());
    // A state written before the field existed reads as complete.
    st.as_object_mut().unwrap().remove("accounts_ready");
    fs::write(&state_path, st.to_string()).unwrap();
    let mut srv = Server::start(&spec(), &dir).unwrap();
    assert!(srv.state.accounts_ready);
    srv.stop().unwrap();
}
