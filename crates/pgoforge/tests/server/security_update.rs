//! Debian's next security release of MariaDB on a host that runs the optimized .deb, with apt's
//! real solver and dpkg (issue 70, item 3): a modelled next release — every package of Debian's
//! mariadb source installed here, repacked at the next Debian revision with its relations
//! renamed to it (tests/fixtures/deploy/next-release.sh) — is published in a local repository,
//! the host's only apt source, and installed inside a throwaway overlay of this machine
//! (tests/fixtures/deploy/isolated-root.sh) the way a host installs updates: `apt-get upgrade`,
//! and unattended-upgrades. Nothing is kept back, dpkg stays consistent, and Debian's new binary
//! serves (never the old optimized one beside the new release's files) until a
//! mariadb-server-pgo built for the new release is published, which the same upgrade then
//! installs and runs. The real machine is checked unchanged.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::path::Path;
use std::process::Command;

use crate::deploy::{deb, fixture, in_isolated_root, relabeled_server, sh, tarball};

/// The next Debian revision of `v`: its last number one higher (`1:10.11.19-0+deb12u1` →
/// `1:10.11.19-0+deb12u2`), as Debian numbers a security update of the same upstream release.
fn next_revision(v: &str) -> String {
    let digits = v.len() - v.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    assert!(digits > 0, "{v} ends in a number");
    let (head, n) = v.split_at(v.len() - digits);
    format!("{head}{}", n.parse::<u64>().unwrap() + 1)
}

#[test]
fn next_revisions_sort_after_the_release_and_its_optimized_build() {
    let x = "1:10.11.19-0+deb12u1";
    let y = next_revision(x);
    assert_eq!(y, "1:10.11.19-0+deb12u2");
    let ours = format!("{x}+pgoforge+pgo+lto.01234567");
    for (lo, hi) in [
        (x, y.as_str()),
        (ours.as_str(), y.as_str()),
        (x, ours.as_str()),
    ] {
        let st = Command::new("dpkg")
            .args(["--compare-versions", lo, "lt", hi])
            .status()
            .expect("running dpkg");
        assert!(st.success(), "{lo} < {hi}");
    }
}

fn machine() -> Vec<String> {
    vec![
        sh("dpkg-query -W -f '${Package} ${Version} ${Status}\\n' 'mariadb-*' | sort"),
        sh("dpkg-divert --list | sort"),
        sh("sha256sum /usr/sbin/mariadbd"),
        sh("cat /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null | sha256sum"),
        sh("ls /etc/apt/apt.conf.d"),
    ]
}

/// Runs security-update.sh in MODE inside an isolated root; what it observed, its log as `log`.
fn scenario(
    dir: &Path,
    mode: &str,
    good: &Path,
    pool: &Path,
    next: &Path,
) -> BTreeMap<String, String> {
    let run = dir.join(mode);
    fs::create_dir(&run).unwrap();
    // The test's directory is the one path the isolated root shares: the packages and the
    // script are under it.
    let (mut seen, log) = in_isolated_root(
        dir,
        &run,
        "security-update.sh",
        &[
            OsStr::new(mode),
            good.as_os_str(),
            pool.as_os_str(),
            next.as_os_str(),
        ],
    );
    seen.insert("log".into(), log);
    seen
}

#[test]
fn debians_next_release_installs_beside_the_optimized_deb_and_a_matching_build_takes_over() {
    assert!(
        pgoforge::infra::is_root(),
        "the security-update test installs packages in an isolated root: run it as root"
    );
    let _packages = crate::common::machine_packages();
    let fits = sh("dpkg-query -W -f '${Version}' mariadb-server-core");
    assert!(
        !fits.is_empty(),
        "Debian's mariadb-server-core is installed"
    );
    let next = next_revision(&fits);
    let before = machine();
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    for d in ["good", "next", "pool"] {
        fs::create_dir(dir.join(d)).unwrap();
    }
    let bin = relabeled_server(&dir.join("good"));
    let good = deb(
        &tarball(&bin, "mariadb-good", &fits, &dir.join("good")),
        &dir.join("good"),
        &[],
    );
    let next_deb = deb(
        &tarball(&bin, "mariadb-next", &next, &dir.join("next")),
        &dir.join("next"),
        &[],
    );
    let made = Command::new(fixture("next-release.sh"))
        .arg(dir.join("pool"))
        .arg(&fits)
        .arg(&next)
        .output()
        .expect("running next-release.sh");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let pool = dir.join("pool/pool");
    for p in ["mariadb-server-core", "mariadb-server", "mariadb-client"] {
        let f = pool.join(format!("{p}_next.deb"));
        assert_eq!(
            sh(&format!("dpkg-deb --field {} Version", f.display())),
            next,
            "{p}"
        );
    }

    for mode in ["apt", "unattended"] {
        let seen = scenario(dir, mode, &good, &pool, &next_deb);
        let get = |k: &str| seen.get(k).cloned().unwrap_or_default();
        let ctx = format!("{mode}: {seen:#?}");
        assert_eq!(get("done"), "yes", "{ctx}");
        let checksum = get("before_checksum");
        assert_eq!(get("before_rows"), "10000", "{ctx}");

        // The optimized server runs beside the release it was built from.
        assert_eq!(get("good_dpkg_exit"), "0", "{ctx}");
        assert_eq!(get("installed_exe"), "/usr/sbin/mariadbd-pgo", "{ctx}");
        assert!(get("installed_version").ends_with("-pgo"), "{ctx}");
        assert_eq!(get("installed_status_exit"), "0", "{ctx}");
        assert!(
            get("installed_status_line").contains("runs the optimized server"),
            "{ctx}"
        );

        // Debian's next release: installed with nothing kept back, dpkg consistent, Debian's
        // new binary serving, the optimized package still installed and saying why it waits.
        assert_eq!(get("debian_upgrade_exit"), "0", "{ctx}");
        assert_eq!(get("debian_kept_back"), "0", "{ctx}");
        assert_eq!(get("debian_pending"), "0 0", "{ctx}");
        assert_eq!(get("debian_audit"), "0", "{ctx}");
        assert_eq!(get("debian_core"), next, "{ctx}");
        assert_eq!(get("debian_versions"), format!("{next} "), "{ctx}");
        assert_eq!(get("debian_exe"), "/usr/sbin/mariadbd.distrib", "{ctx}");
        assert!(!get("debian_version").ends_with("-pgo"), "{ctx}");
        assert!(get("debian_pgo").ends_with(" installed"), "{ctx}");
        assert!(
            get("debian_pgo").starts_with(&format!("{fits}+pgoforge")),
            "{ctx}"
        );
        assert_eq!(get("debian_status_exit"), "1", "{ctx}");
        let line = get("debian_status_line");
        assert!(
            line.contains("runs Debian's server")
                && line.contains(&format!("mariadb-server-core is {next}"))
                && line.contains(&format!("built from {fits}")),
            "{ctx}"
        );
        assert_eq!(get("debian_checksum"), checksum, "{ctx}");

        // The optimized build of the next release, published: the same upgrade installs it
        // and the service runs it, with every row.
        assert_eq!(get("next_upgrade_exit"), "0", "{ctx}");
        assert_eq!(get("next_kept_back"), "0", "{ctx}");
        assert_eq!(get("next_pending"), "0 0", "{ctx}");
        assert_eq!(get("next_audit"), "0", "{ctx}");
        assert!(
            get("next_pgo").starts_with(&format!("{next}+pgoforge")),
            "{ctx}"
        );
        assert_eq!(get("next_exe"), "/usr/sbin/mariadbd-pgo", "{ctx}");
        assert!(get("next_version").ends_with("-pgo"), "{ctx}");
        assert_eq!(get("next_status_exit"), "0", "{ctx}");
        assert_eq!(get("next_rows"), "10001", "{ctx}");
    }
    assert_eq!(machine(), before, "the real machine changed");
}
