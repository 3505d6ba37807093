//! `scripts/install-test-deps.sh` — the README's test command's first half — beside a database it
//! did not start: the server keeps running and keeps its rows (the script used to end with
//! `pkill -x mariadbd`, which shut down whatever MariaDB ran on the machine, a user's included).

use std::path::Path;
use std::process::Command;

use testsupport::{process_alive, TestServer};

#[test]
fn the_install_script_leaves_a_server_it_did_not_start_running() {
    assert!(
        pgoforge::infra::is_root(),
        "scripts/install-test-deps.sh installs packages: run the server tier as root"
    );
    let _packages = crate::common::machine_packages();
    let srv = TestServer::start().unwrap();
    let pid = srv.pid().expect("the server's pid");
    let mut c = srv.root().unwrap();
    c.query("CREATE TABLE sbtest.keep (id INT PRIMARY KEY) ENGINE=InnoDB")
        .unwrap();
    c.query("INSERT INTO sbtest.keep SELECT seq FROM sbtest.seq_1_to_1000")
        .unwrap();
    drop(c);

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/install-test-deps.sh");
    let out = Command::new("bash")
        .arg(&script)
        .output()
        .expect("running scripts/install-test-deps.sh");
    let log = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{log}");
    assert!(
        log.contains("test dependencies installed"),
        "the script's summary line: {log}"
    );
    assert!(
        !log.contains(&format!("pid {pid}")),
        "the script named the test's server as one to stop: {log}"
    );
    assert!(
        process_alive(pid),
        "the server the script did not start is gone: {log}\n{}",
        srv.log_tail()
    );
    assert_eq!(srv.count("SELECT COUNT(*) FROM sbtest.keep").unwrap(), 1000);
}
