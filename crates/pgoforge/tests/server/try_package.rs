//! `pgoforge try PACKAGE` (issue 71, item 3): a package benchmarked against this host's own
//! mariadbd with the A/A control, the gain said for this host; on a busy host it measures and
//! says what the load did, and with --wait-for-idle it gives up (exit 75) instead. The package
//! is the stand-in (Debian's binary relabeled): the same code on both sides, so the test checks
//! the mechanics and the sentences, not a gain.

use std::fs;
use std::process::{Child, Command};

use crate::common;
use crate::deploy::{relabeled_server, sh, tarball};

/// Short cells: the mechanics, not a measurement.
const SHORT: &[&str] = &[
    "--",
    "--workloads=point_select",
    "--threads=2",
    "--rounds=2",
    "--time=2",
    "--warmup=1",
    "--tables=1",
    "--table-size=2000",
    "--buffer-pool-mb=128",
    "--redo-log-mb=32",
];

/// Two busy loops (this machine has 2 vCPUs): a production host's load, stopped on drop.
struct Load(Vec<Child>);

impl Load {
    fn start() -> Load {
        Load(
            (0..2)
                .map(|_| {
                    Command::new("sh")
                        .args(["-c", "while :; do :; done"])
                        .spawn()
                        .unwrap()
                })
                .collect(),
        )
    }
}

impl Drop for Load {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn try_benchmarks_a_package_against_this_hosts_server_and_says_what_load_did() {
    let fits = sh("dpkg-query -W -f '${Version}' mariadb-server-core");
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    fs::create_dir(dir.join("pkg")).unwrap();
    let bin = relabeled_server(&dir.join("pkg"));
    let pkg = tarball(&bin, "mariadb-try-pgo+lto", &fits, &dir.join("pkg"));
    let work = dir.join("work");
    let try_args = |extra: &[&str]| {
        let mut a = vec![
            "try".to_string(),
            pkg.display().to_string(),
            format!("--work-dir={}", work.display()),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a.extend(SHORT.iter().map(|s| s.to_string()));
        a
    };
    let run =
        |args: Vec<String>| common::pgoforge(&args.iter().map(String::as_str).collect::<Vec<_>>());

    let r = run(try_args(&[]));
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(r.stdout.contains("On this host:"), "{}", r.stdout);
    assert!(
        r.stdout.contains("against /usr/sbin/mariadbd"),
        "{}",
        r.stdout
    );
    for who in ["the package", "A/A control"] {
        assert!(
            r.stdout
                .lines()
                .any(|l| l.contains("point_select") && l.contains(who)),
            "{who}:\n{}",
            r.stdout
        );
    }
    // The same code on both sides, 2 rounds: no significant difference, said with why.
    assert!(
        r.stdout.contains("no significant difference"),
        "{}",
        r.stdout
    );

    // Beside a production-like load: measured anyway, and the summary says what that means.
    let load = Load::start();
    let busy = run(try_args(&[]));
    assert_eq!(busy.code, 0, "{}{}", busy.stdout, busy.stderr);
    assert!(
        busy.stdout.contains("The host was busy during"),
        "{}",
        busy.stdout
    );
    // Waiting for a quiet host instead gives up with 75 when it stays busy.
    let mut waiting = try_args(&["--wait-for-idle"]);
    waiting.push("--busy-wait=3".into());
    let refused = run(waiting);
    drop(load);
    assert_eq!(refused.code, 75, "{}{}", refused.stdout, refused.stderr);

    // Bad input: a missing package, and an option try sets itself.
    let missing = run(vec![
        "try".into(),
        dir.join("nope.tar.zst").display().to_string(),
        format!("--work-dir={}", work.display()),
    ]);
    assert_eq!(missing.code, 2, "{}", missing.stderr);
    assert!(missing.stderr.contains("nope.tar.zst does not exist"));
}
