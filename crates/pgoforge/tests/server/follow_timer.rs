//! The shipped timer and service (contrib/systemd/) on a Debian 12 booted by systemd: both units
//! pass `systemd-analyze verify`, the timer is enabled and scheduled, the service runs pgoforge
//! with FOLLOW_ARGS from /etc/default/pgoforge-follow and its outcome lands in the journal; a
//! cycle refused for bad input (no repository) fails the unit with pgoforge's exit status 2,
//! and one that finds another cycle running (exit 75) does not (SuccessExitStatus).

use std::path::Path;

use crate::common::booted::{self, Booted};

fn contrib(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../contrib/systemd")
        .join(name)
}

#[test]
fn the_follow_timer_runs_the_cycle_under_systemd_and_the_journal_keeps_its_outcome() {
    assert!(
        pgoforge::infra::is_root(),
        "booting a container needs root: run the server tier as root"
    );
    let fits = crate::deploy::sh("dpkg-query -W -f '${Version}' mariadb-server-core");
    let t = tempfile::tempdir().unwrap();
    let mut b = Booted::boot(&booted::tree(&fits), &t.path().join("container"));
    b.copy_in(
        Path::new(env!("CARGO_BIN_EXE_pgoforge")),
        "/usr/local/bin/pgoforge",
    );
    for unit in ["pgoforge-follow.service", "pgoforge-follow.timer"] {
        b.copy_in(&contrib(unit), &format!("/etc/systemd/system/{unit}"));
    }
    let sh = |cmd: &str| {
        let (code, out) = b.sh(cmd);
        assert_eq!(code, 0, "{cmd}: {out}");
        out
    };
    sh("chmod 755 /usr/local/bin/pgoforge");
    sh("systemd-analyze verify /etc/systemd/system/pgoforge-follow.service /etc/systemd/system/pgoforge-follow.timer");
    sh("systemctl daemon-reload && systemctl enable --now pgoforge-follow.timer");
    let timers = sh("systemctl list-timers --all --no-pager pgoforge-follow.timer");
    assert!(timers.contains("pgoforge-follow.service"), "{timers}");
    assert_eq!(
        sh("systemctl is-enabled pgoforge-follow.timer").trim(),
        "enabled"
    );

    // A repository that is not one: pgoforge's exit 2, a failed unit, the reason in the journal.
    sh("mkdir -p /srv/notarepo && echo mine > /srv/notarepo/notes.txt");
    sh("printf 'FOLLOW_ARGS=--repo /srv/notarepo\\n' > /etc/default/pgoforge-follow");
    let (code, _) = b.sh("systemctl start pgoforge-follow.service");
    assert_ne!(code, 0, "the cycle was refused");
    let status = sh("systemctl show -p ExecMainStatus -p Result pgoforge-follow.service");
    assert!(status.contains("ExecMainStatus=2"), "{status}");
    assert!(status.contains("Result=exit-code"), "{status}");
    let journal = sh("journalctl -u pgoforge-follow.service --no-pager -o cat");
    assert!(journal.contains("is not a repository"), "{journal}");
    assert_eq!(sh("cat /srv/notarepo/notes.txt").trim(), "mine");
    assert_eq!(
        sh("ls /srv/notarepo").trim(),
        "notes.txt",
        "nothing written there"
    );

    // Another cycle holds the work dir: exit 75, which the unit counts as success.
    sh("systemctl reset-failed pgoforge-follow.service");
    sh("mkdir -p /var/lib/pgoforge/follow");
    let (code, out) = b.sh(
        "flock /var/lib/pgoforge/follow/.pgoforge.lock systemctl start pgoforge-follow.service",
    );
    assert_eq!(code, 0, "exit 75 is not a failure of the unit: {out}");
    let status = sh("systemctl show -p ExecMainStatus -p Result pgoforge-follow.service");
    assert!(status.contains("ExecMainStatus=75"), "{status}");
    assert!(status.contains("Result=success"), "{status}");
    let journal = sh("journalctl -u pgoforge-follow.service --no-pager -o cat");
    assert!(
        journal.contains("another follow cycle is running"),
        "{journal}"
    );
    b.poweroff();
}
