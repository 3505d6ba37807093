//! pgoforge against a real MySQL server — one that CI cannot have (Debian 12 ships no MySQL, and a
//! mysqld build takes an hour here). Runs when PGOFORGE_TEST_MYSQLD names a mysqld binary, e.g. a
//! baseline built by `pgoforge build --recipe mysql-9.7`; says loudly that it did not run otherwise.
//! The protocol paths themselves are tested in CI against bytes recorded from such a server
//! (crates/oltp/tests/fast/mysql_captures.rs).

use crate::common;

use common::pgoforge;

fn mysqld() -> Option<String> {
    match std::env::var("PGOFORGE_TEST_MYSQLD") {
        Ok(p) if !p.is_empty() => {
            assert!(
                std::path::Path::new(&p).is_file(),
                "PGOFORGE_TEST_MYSQLD={p} is not a file"
            );
            Some(p)
        }
        _ => {
            // Straight to the process's stderr: the test harness would hide a captured eprintln!
            // of a passing test.
            use std::io::Write;
            let _ = writeln!(
                std::io::stderr(),
                "\n*** NOT RUN: no MySQL server to test against. Set PGOFORGE_TEST_MYSQLD to a mysqld \
                 binary (e.g. pgoforge-work/builds/mysql-9.7-baseline-*/build/runtime_output_directory/mysqld) \
                 to run the MySQL server tests. ***\n"
            );
            None
        }
    }
}

#[test]
fn a_mysql_server_starts_serves_oltp_over_socket_and_tcp_and_logs_no_deprecation() {
    let Some(bin) = mysqld() else { return };
    let t = tempfile::tempdir().unwrap();
    let work = t.path().to_str().unwrap();
    let r = pgoforge(&[
        "server",
        "start",
        "--binary",
        &bin,
        "--work-dir",
        work,
        "--buffer-pool-mb",
        "256",
    ]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let st = pgoforge(&["server", "status", "--work-dir", work, "--json"]);
    let state: serde_json::Value = serde_json::from_str(&st.stdout).unwrap();
    let socket = state["socket"].as_str().unwrap().to_string();
    let port = state["port"].as_u64().unwrap().to_string();
    let pw = state["credentials"]["password"]
        .as_str()
        .unwrap()
        .to_string();
    let root_pw = state["credentials"]["root_password"].as_str().unwrap();
    assert!(root_pw.len() >= 24, "MySQL's root gets a random password");
    let cnf = std::fs::read_to_string(
        std::path::Path::new(state["instance_dir"].as_str().unwrap()).join("my.cnf"),
    )
    .unwrap();
    for want in [
        "bind-address = 127.0.0.1",
        "innodb_redo_log_capacity",
        "skip-log-bin",
        "performance_schema = OFF",
    ] {
        assert!(cnf.contains(want), "{want} in\n{cnf}");
    }
    let base = [
        "--mysql-user=sbtest".to_string(),
        format!("--mysql-password={pw}"),
        "--tables=2".into(),
        "--table-size=1000".into(),
    ];
    let sock = [vec![format!("--mysql-socket={socket}")], base.to_vec()].concat();
    let tcp = [
        vec![
            "--mysql-host=127.0.0.1".to_string(),
            format!("--mysql-port={port}"),
        ],
        base.to_vec(),
    ]
    .concat();
    let run = |cmd: &str, test: &str, extra: &[String]| {
        let mut a = vec!["oltp".to_string(), cmd.into(), test.into()];
        a.extend(extra.iter().cloned());
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        pgoforge(&a)
    };
    let r = run("prepare", "oltp_read_write", &sock);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // Over TCP first, so caching_sha2_password's full authentication (RSA) is exercised before the
    // socket login caches the password.
    for conn in [&tcp, &sock] {
        let mut a = conn.clone();
        a.extend(["--time=3".to_string(), "--threads=2".into()]);
        let r = run("run", "oltp_read_write", &a);
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        assert!(
            common::field(&r.stdout, "transactions:") > 10,
            "{}",
            r.stdout
        );
    }
    let log = std::fs::read_to_string(
        std::path::Path::new(state["instance_dir"].as_str().unwrap()).join("error.log"),
    )
    .unwrap_or_default();
    let deprecated: Vec<&str> = log
        .lines()
        .filter(|l| l.to_ascii_lowercase().contains("deprecated"))
        .collect();
    assert!(
        deprecated.is_empty(),
        "deprecation warnings:\n{}",
        deprecated.join("\n")
    );
    let r = pgoforge(&["server", "stop", "--work-dir", work]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
}

#[test]
fn a_packaged_mysql_runs_where_it_is_unpacked_with_no_library_from_its_build_tree() {
    let Some(bin) = mysqld() else { return };
    use pgoforge::package::{package, Manifest, PackageRequest};
    use pgoforge::server::Layout;
    let bin = std::path::PathBuf::from(bin);
    let t = tempfile::tempdir().unwrap();
    let layout = Layout::discover(&bin, None, None);
    assert!(layout.build_dir.is_some(), "a build-tree mysqld");
    let manifest = Manifest {
        name: "mysql-test-package".into(),
        server_version: String::new(),
        variant: "baseline".into(),
        recipe: "mysql-9.7".into(),
        source: String::new(),
        source_hash: String::new(),
        compiler: String::new(),
        cflags: vec![],
        ldflags: vec![],
        cmake_defs: vec![],
        profiles: vec![],
        bolt_flags: vec![],
        gains: vec![],
        gains_against: None,
        pgoforge_version: String::new(),
        source_date_epoch: 0,
        binary_note: String::new(),
        debian_source: None,
        cpu: None,
        binary_sha256: String::new(),
        profile_provenance: None,
        engine: Default::default(),
        runtime_packages: vec![],
    };
    let p = package(&PackageRequest {
        binary: &bin,
        layout: &layout,
        manifest: &manifest,
        out_dir: &t.path().join("out"),
    })
    .unwrap_or_else(|e| panic!("{e:#}"));
    let unpack = t.path().join("elsewhere");
    std::fs::create_dir_all(&unpack).unwrap();
    let st = std::process::Command::new("tar")
        .arg("--zstd")
        .arg("-xf")
        .arg(&p.path)
        .arg("-C")
        .arg(&unpack)
        .status()
        .unwrap();
    assert!(st.success());
    let root = unpack.join("mysql-test-package");
    let sums = std::process::Command::new("sha256sum")
        .args(["-c", "--quiet", "SHA256SUMS"])
        .current_dir(&root)
        .status()
        .unwrap();
    assert!(sums.success(), "SHA256SUMS verify");
    let packaged = root.join("bin/mysqld");
    // Every library it loads comes from the system or the package, none from the build tree.
    let ldd = std::process::Command::new("ldd")
        .arg(&packaged)
        .output()
        .unwrap();
    let ldd = String::from_utf8_lossy(&ldd.stdout);
    let tree = layout.build_dir.unwrap();
    assert!(!ldd.contains(tree.to_str().unwrap()), "{ldd}");
    // A mysqld that links libraries of its build tree (bundled ICU, the recipe before
    // 2026-12-01) gets them in lib/ and the manifest says so; with Debian's ICU and protobuf it
    // links none, and they come from the system.
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("manifest.json")).unwrap())
            .unwrap();
    let note = m["binary_note"].as_str().unwrap();
    let bundled = root.join("lib").is_dir();
    assert_eq!(
        bundled,
        note.contains("libraries from the build tree in lib/"),
        "{note}"
    );
    let icu_from = if bundled {
        format!("{}/bin/../lib/libicuuc", root.display())
    } else {
        "/lib/x86_64-linux-gnu/libicuuc".to_string()
    };
    assert!(ldd.contains(&icu_from), "{ldd}");
    // On a plain Debian 12, the README's step 2 installs what the server lacks there (Debian's
    // ICU and protobuf, which the manifest names), and it runs.
    if !bundled {
        let named = m["runtime_packages"].to_string();
        assert!(named.contains("libicu"), "{named}");
        assert!(named.contains("libprotobuf"), "{named}");
    }
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let plain = crate::common::plain_debian::follow_step_2(
        &p.path,
        "mysql-test-package",
        "mysqld",
        &readme,
        &t.path().join("plain"),
    );
    assert!(
        !plain.missing_before.is_empty() && plain.missing_after.is_empty(),
        "{}",
        plain.log
    );
    assert!(plain.version.contains("9.7"), "{}", plain.log);
    // And it serves.
    let work = t.path().join("w");
    let w = work.to_str().unwrap();
    let r = pgoforge(&[
        "server",
        "start",
        "--binary",
        packaged.to_str().unwrap(),
        "--work-dir",
        w,
        "--buffer-pool-mb",
        "256",
    ]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let st = pgoforge(&["server", "status", "--work-dir", w, "--json"]);
    let state: serde_json::Value = serde_json::from_str(&st.stdout).unwrap();
    let r = pgoforge(&[
        "oltp",
        "prepare",
        "oltp_point_select",
        "--table-size=1000",
        &format!("--mysql-socket={}", state["socket"].as_str().unwrap()),
        &format!(
            "--mysql-password={}",
            state["credentials"]["password"].as_str().unwrap()
        ),
    ]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let r = pgoforge(&["server", "stop", "--work-dir", w]);
    assert_eq!(r.code, 0, "{}", r.stderr);
}

/// MySQL's MTR takes the server and every client from one directory (MTR_BINDIR): the gate hands
/// it a shadow of the baseline's build directory whose mysqld is the binary under test. A wrong
/// setting injected into the baseline's mysqld (a wrapper) must be caught by MySQL's own tests,
/// named, with its diff; the baseline itself must pass them.
#[test]
fn mysqls_own_tests_stop_a_mysqld_that_computes_differently() {
    let Some(bin) = mysqld() else { return };
    let bin = std::fs::canonicalize(bin).unwrap();
    let build = bin
        .parent()
        .and_then(|d| d.parent())
        .filter(|b| b.join("CMakeCache.txt").is_file());
    let Some(build) = build else {
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "\n*** NOT RUN: the MTR gate needs a mysqld inside its build tree \
             (<build>/runtime_output_directory/mysqld); {} is not. ***\n",
            bin.display()
        );
        return;
    };
    let t = tempfile::tempdir().unwrap();
    let broken = t.path().join("broken-mysqld");
    std::fs::write(
        &broken,
        format!(
            "#!/bin/sh\nexec {} \"$@\" --div-precision-increment=2\n",
            bin.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&broken, std::fs::Permissions::from_mode(0o755)).unwrap();
    let work = t.path().join("work");
    let r = pgoforge(&[
        "gate",
        "--gate=mtr",
        "--recipe=mysql-9.7",
        "--mtr-suite=main.func_math,main.case",
        "--baseline",
        bin.to_str().unwrap(),
        "--candidate",
        &format!("broken={}", broken.display()),
        "--work-dir",
        work.to_str().unwrap(),
        "--buffer-pool-mb",
        "256",
        "--json",
    ]);
    // 3: the gate stopped a variant.
    assert_eq!(r.code, 3, "the gate fails:\n{}{}", r.stdout, r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let g: pgoforge::gate::mtr::MtrGate = serde_json::from_value(v["mtr"].clone()).unwrap();
    // Both binaries ran both tests; the baseline passed them; only the broken one regressed.
    assert_eq!(g.runs.len(), 2);
    for run in &g.runs {
        assert_eq!(run.tests.len(), 2, "{}: {:?}", run.name, run.tests);
    }
    let base = &g.runs[0];
    assert_eq!(
        base.count(pgoforge::gate::mtr::TestOutcome::Pass),
        2,
        "{:?}",
        base.tests
    );
    assert!(g.baseline_failures.is_empty(), "{:?}", g.baseline_failures);
    let regressed: Vec<&str> = g.regressions.iter().map(|r| r.test.as_str()).collect();
    assert!(regressed.contains(&"main.func_math"), "{regressed:?}");
    assert!(g.regressions.iter().all(|r| r.variant == "broken"));
    let diff = &g.regressions[0].detail;
    assert!(diff.lines().any(|l| l.starts_with('+')), "{diff}");
    // The shadow the broken binary ran in: its mysqld is the wrapper, its clients the build's.
    let shadow = work.join("gate/mtr/candidate0/server/runtime_output_directory");
    assert_eq!(std::fs::read_link(shadow.join("mysqld")).unwrap(), broken);
    assert_eq!(
        std::fs::read_link(shadow.join("mysqltest")).unwrap(),
        build.join("runtime_output_directory/mysqltest")
    );
    // The findings are kept with the run (MySQL writes the reject into the vardir's logs), the
    // datadirs MTR keeps of failing tests are not.
    let kept = common::paths_under(&work.join("gate/mtr"));
    assert!(
        kept.iter()
            .any(|p| p.file_name().is_some_and(|n| n == "func_math.reject")),
        "func_math.reject kept"
    );
    assert!(
        !kept
            .iter()
            .any(|p| p.file_name().is_some_and(|n| n == "data")),
        "no datadir left in the gate's directory"
    );
    // Nothing left in the shared source tree's test directories.
    let cache = std::fs::read_to_string(build.join("CMakeCache.txt")).unwrap();
    let source = cache
        .lines()
        .find_map(|l| l.strip_prefix("CMAKE_HOME_DIRECTORY:INTERNAL="))
        .unwrap();
    let rejects: Vec<_> = common::paths_under(&std::path::Path::new(source).join("mysql-test"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "reject"))
        .collect();
    assert!(rejects.is_empty(), "{rejects:?}");
}

#[test]
fn tpcc_and_a_replayed_general_log_run_on_mysql() {
    let Some(bin) = mysqld() else { return };
    let t = tempfile::tempdir().unwrap();
    let work = t.path().to_str().unwrap();
    let r = pgoforge(&["server", "start", "--binary", &bin, "--work-dir", work]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // A started server is detached: stop it whether the test passes or fails.
    struct Stop<'a>(&'a str);
    impl Drop for Stop<'_> {
        fn drop(&mut self) {
            let _ = pgoforge(&["server", "stop", "--work-dir", self.0]);
        }
    }
    let _stop = Stop(work);
    let st = pgoforge(&["server", "status", "--work-dir", work, "--json"]);
    let state: serde_json::Value = serde_json::from_str(&st.stdout).unwrap();
    let socket = state["socket"].as_str().unwrap().to_string();
    let cred = &state["credentials"];
    let conn = |user: &str, pw: &str| {
        oltp::proto::Conn::connect(&oltp::proto::ConnectOptions {
            endpoint: oltp::proto::Endpoint::Socket(socket.clone().into()),
            user: user.into(),
            password: pw.into(),
            database: Some("sbtest".into()),
            connect_timeout: std::time::Duration::from_secs(5),
            read_timeout: std::time::Duration::from_secs(60),
        })
        .unwrap()
    };
    let pw = cred["password"].as_str().unwrap().to_string();
    let args = |cmd: &str, test: &str, extra: &[&str]| {
        let mut a = vec![
            "oltp".to_string(),
            cmd.into(),
            test.into(),
            format!("--mysql-socket={socket}"),
            "--mysql-user=sbtest".into(),
            format!("--mysql-password={pw}"),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        pgoforge(&a)
    };
    // tpcc: MySQL has transaction_isolation (no tx_isolation); the script's session set-up finds it.
    let scale = ["--scale=1", "--tables=1"];
    let r = args("prepare", "tpcc", &[&scale[..], &["--threads=2"]].concat());
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    // The consistency checks answer in seconds: without the ANALYZE at the end of prepare, check
    // 10 ran over 600 s on MySQL 9.7.2 (stale statistics, a hash join per customer).
    let r = args("check", "tpcc", &scale);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.stdout.matches("PASSED").count(), 10, "{}", r.stdout);
    let r = args(
        "run",
        "tpcc",
        &[&scale[..], &["--threads=2", "--events=200", "--time=0"]].concat(),
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert_eq!(common::field(&r.stdout, "transactions:"), 200);

    // A general log in MySQL's format (ISO times), recorded and replayed with exact counts.
    let log = t.path().join("general.log");
    let mut root = conn("root", cred["root_password"].as_str().unwrap());
    root.query("SET GLOBAL log_output='FILE'").unwrap();
    root.query(&format!("SET GLOBAL general_log_file='{}'", log.display()))
        .unwrap();
    root.query("SET GLOBAL general_log=ON").unwrap();
    let mut app = conn("sbtest", &pw);
    app.query("SELECT COUNT(*) FROM item1").unwrap();
    app.query("SELECT i_price\n  FROM item1\n  WHERE i_id = 7")
        .unwrap();
    assert!(app.query("SELECT * FROM no_such_table").is_err());
    drop(app);
    root.query("SET GLOBAL general_log=OFF").unwrap();
    let parsed = oltp::replay::parse::read(&log, oltp::replay::Format::Auto).unwrap();
    assert_eq!(parsed.format, oltp::replay::Format::General);
    // The application's three statements, and root's switch-off on its own connection.
    assert_eq!(parsed.statements(), 4, "{parsed:?}");
    let out = t.path().join("replay.json");
    let r = args(
        "run",
        "replay",
        &[
            &format!("--replay-file={}", log.display()),
            "--threads=1",
            "--events=8",
            "--time=0",
            &format!("--json={}", out.display()),
        ],
    );
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(v["replay"]["errors_by_code"]["1146"], 2, "{}", v["replay"]);
    assert_eq!(v["queries"]["read"], 4);
}
