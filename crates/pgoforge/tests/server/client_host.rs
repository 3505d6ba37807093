//! `--client-host`: the benchmark client on a host of its own, over ssh — tested for real on one
//! machine. The "client host" is a network namespace the test creates, reached over a veth pair
//! at addresses inside it, with a real sshd (OpenSSH) listening there on its own keys and config;
//! Debian's mariadbd runs here. pgoforge copies itself over ssh and drives every run from the
//! namespace: the servers' general logs show every benchmark connection arriving from the
//! client's address, never from this side. Killing the client host's sshd, or the remote client
//! itself, mid-run stops the benchmark with a clear error and leaves no process and no copied
//! binary behind. Everything the test starts or creates is removed again, pass or fail.

use crate::common;

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::sshd::{sh, SshHost};

/// The client host: a namespace with its sshd, reached as `client`.
struct ClientHost(SshHost);

impl std::ops::Deref for ClientHost {
    type Target = SshHost;
    fn deref(&self) -> &SshHost {
        &self.0
    }
}

impl ClientHost {
    fn start(tag: u32) -> ClientHost {
        ClientHost(SshHost::start(
            "cli",
            78,
            "client",
            tag,
            common::sshd::Options::default(),
        ))
    }

    /// Waits (bounded: 10 s) until no pgoforge runs in the namespace any more; `what` names the
    /// case in the failure.
    fn wait_until_client_gone(&self, what: &str) {
        self.wait_until_gone("pgoforge", what)
    }

    /// `pgoforge bench` of two names for Debian's mariadbd, driven from the client host, every
    /// server logging its connections to `general`.
    fn bench(&self, work: &Path, run: &Path, seconds: u32, general: &Path) -> Command {
        let mut a = common::tiny_bench(work, run, "oltp_point_select");
        a.retain(|x| !x.starts_with("--time="));
        a.extend([
            format!("--time={seconds}"),
            "--allow-noisy".into(),
            "--client-host=client".into(),
            format!("--ssh-config={}", self.ssh_config().display()),
            "--set=general_log=ON".into(),
            format!("--set=general_log_file={}", general.display()),
        ]);
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_pgoforge"));
        cmd.args(a);
        cmd
    }
}

#[test]
fn a_client_on_another_host_drives_every_run_over_tcp_from_its_own_address() {
    if !common::sshd::netns_allowed(
        "a_client_on_another_host_drives_every_run_over_tcp_from_its_own_address",
    ) {
        return;
    }
    let host = ClientHost::start(0);
    let t = tempfile::tempdir().unwrap();
    let run = t.path().join("r");
    let general = t.path().join("general.log");
    let before = host.copies("pgoforge-client.");
    let out = host
        .bench(t.path(), &run, 2, &general)
        .output()
        .expect("running pgoforge");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let plan = fs::read_to_string(run.join("plan.json")).unwrap();
    assert!(plan.contains("\"transport\": \"tcp\""), "{plan}");
    assert!(plan.contains("\"destination\": \"client\""), "{plan}");
    assert!(!plan.contains("ssh_config"), "{plan}");
    let recs = common::records(&run);
    assert_eq!(recs.len(), 2);
    for rec in &recs {
        assert_eq!(rec["result"]["server"]["transport"], "tcp", "{rec}");
        let endpoint = rec["result"]["server"]["endpoints"][0].as_str().unwrap();
        assert!(endpoint.contains(&host.host_ip), "{endpoint}");
        assert!(rec["result"]["transactions"].as_u64().unwrap() > 0, "{rec}");
        let rtt = rec["rtt_us"].as_f64().expect("a round trip per run");
        assert!(rtt > 0.0 && rtt < 100_000.0, "{rtt}");
        let from = rec["client"].as_str().expect("the client host per run");
        assert!(from.contains(&host.ns_ip), "{from}");
    }
    // Every benchmark connection came from the client host's address, none from this side.
    let log = fs::read_to_string(&general).unwrap();
    let from_client = format!("sbtest@{}", host.ns_ip);
    assert!(log.contains(&from_client), "{log}");
    assert!(!log.contains(&format!("sbtest@{}", host.host_ip)), "{log}");
    assert!(
        !log.contains("root@10."),
        "the superuser stays local:\n{log}"
    );
    let report = fs::read_to_string(run.join("report.txt")).unwrap();
    let line = report
        .lines()
        .find(|l| l.starts_with("Client: "))
        .unwrap_or_else(|| panic!("no client line:\n{report}"));
    assert!(
        line.contains("tcp from the client host client") && line.contains(&host.ns_ip),
        "{line}"
    );
    // Nothing stays on the client host: its process ended, its copy is removed.
    host.wait_until_client_gone("");
    assert_eq!(host.copies("pgoforge-client."), before);
    assert!(common::processes_mentioning(t.path()).is_empty());
}

#[test]
fn losing_the_client_host_mid_run_stops_with_a_clear_error_and_leaves_nothing() {
    if !common::sshd::netns_allowed(
        "losing_the_client_host_mid_run_stops_with_a_clear_error_and_leaves_nothing",
    ) {
        return;
    }
    for (tag, victim) in [(1, "sshd"), (2, "pgoforge")] {
        let host = ClientHost::start(tag);
        let t = tempfile::tempdir().unwrap();
        let run = t.path().join("r");
        let before = host.copies("pgoforge-client.");
        let mut child = host
            .bench(t.path(), &run, 30, &t.path().join("general.log"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Mid-run: the remote client is up and its first run has begun.
        let t0 = Instant::now();
        loop {
            let serving = !host.running("pgoforge").is_empty();
            let started = fs::read_dir(run.join("instances"))
                .map(|d| d.count() > 0)
                .unwrap_or(false);
            if serving && started {
                break;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(120),
                "the remote client never started"
            );
            assert!(child.try_wait().unwrap().is_none(), "pgoforge ended early");
            std::thread::sleep(Duration::from_millis(200));
        }
        std::thread::sleep(Duration::from_secs(3));
        for p in host.running(victim) {
            let _ = sh(&format!("kill -9 {p}"));
        }
        let t0 = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "pgoforge did not notice that {victim} died"
            );
            std::thread::sleep(Duration::from_millis(200));
        };
        let mut stderr = String::new();
        use std::io::Read;
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        assert_eq!(status.code(), Some(1), "{victim}: {status:?} {stderr}");
        assert!(
            stderr.contains("the benchmark client on client stopped")
                && stderr.contains("--resume"),
            "{victim}: {stderr}"
        );
        host.wait_until_client_gone(victim);
        let t0 = Instant::now();
        while host.copies("pgoforge-client.") != before {
            assert!(
                t0.elapsed() < Duration::from_secs(10),
                "{victim}: the copied binary stayed: {:?}",
                host.copies("pgoforge-client.")
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(
            common::processes_mentioning(t.path()).is_empty(),
            "{victim}: servers stayed: {:?}",
            common::processes_mentioning(t.path())
        );
    }
}

#[test]
fn an_unreachable_client_host_is_refused_before_any_server_starts() {
    let t = tempfile::tempdir().unwrap();
    let run = t.path().join("r");
    let mut a = common::tiny_bench(t.path(), &run, "oltp_point_select");
    // 192.0.2.0/24 is TEST-NET-1: never routed.
    a.push("--client-host=root@192.0.2.1".into());
    let r = common::pgoforge_with(a, &[]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("cannot reach the client host root@192.0.2.1 over ssh"),
        "{}",
        r.stderr
    );
    assert!(common::processes_mentioning(t.path()).is_empty());
    let mut bad = common::tiny_bench(t.path(), &t.path().join("r2"), "oltp_point_select");
    bad.extend(["--client-host=-oProxyCommand=x".into()]);
    let r = common::pgoforge_with(bad, &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    let mut both = common::tiny_bench(t.path(), &t.path().join("r3"), "oltp_point_select");
    both.extend(["--client-host=h".into(), "--transport=socket".into()]);
    let r = common::pgoforge_with(both, &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("leave out --transport socket"),
        "{}",
        r.stderr
    );
}
