//! The .deb on a booted Debian 12 whose init is systemd (issue 70, item 2): Debian's
//! mariadb-server started by its own `mariadb.service` (Type=notify, the mysql user, Debian's
//! /etc/mysql and nothing else on its command line), with rows in it and MyRocks loaded by
//! Debian's configuration; then the optimized .deb installed, the service restarted, the
//! container rebooted; a server that cannot start rolled back under systemd, said in the
//! journal; the package purged. Booted by `systemd-nspawn -b` on a tree made from this
//! machine's apt sources (tests/common/booted.rs).
//!
//! Two servers are tried. The stand-in (always): Debian's own mariadbd of the installed release
//! with its version suffix rewritten to `-pgo` — Debian-shaped by construction, so it shows the
//! package's mechanics under systemd, not that a build of ours starts there. A real build
//! (where `PGOFORGE_TEST_DEB_MARIADBD` names a mariadbd built by the default recipe, else NOT
//! RUN): the binary pgoforge ships, started exactly as Debian's unit starts it, beside Debian's
//! packages of the release it was built from.

use std::fs;
use std::path::{Path, PathBuf};

use crate::common::booted::{self, Booted};
use crate::deploy::{broken_server, deb, relabeled_server, sh as host, tarball};

/// What the test asks the container, each a one-line value.
struct Seen<'a>(&'a Booted);

impl Seen<'_> {
    fn q(&self, sql: &str) -> String {
        self.0
            .sh(&format!("mariadb -NBe \"{sql}\""))
            .1
            .trim()
            .to_string()
    }
    fn active(&self) -> String {
        self.0
            .sh("systemctl is-active mariadb")
            .1
            .trim()
            .to_string()
    }
    /// The executable of the service's MainPID, as systemd reports the pid.
    fn main_exe(&self) -> String {
        self.0
            .sh("readlink /proc/$(systemctl show -p MainPID --value mariadb)/exe")
            .1
            .trim()
            .trim_end_matches(" (deleted)")
            .to_string()
    }
    /// The plugins loaded from a library (Debian's configuration loads them).
    fn plugins(&self) -> String {
        self.q(
            "SELECT GROUP_CONCAT(PLUGIN_NAME ORDER BY PLUGIN_NAME) FROM information_schema.PLUGINS \
             WHERE PLUGIN_LIBRARY IS NOT NULL AND PLUGIN_STATUS = 'ACTIVE'",
        )
    }
    fn checksum(&self) -> String {
        self.q("CHECKSUM TABLE deploy.t")
            .split_whitespace()
            .last()
            .unwrap_or_default()
            .to_string()
    }
}

/// The Debian version of `mariadb-server-core` whose upstream release is the binary's.
fn debian_release_of(binary: &Path) -> String {
    let version = host(&format!("{} --version", binary.display()));
    let upstream = version
        .split_whitespace()
        .nth(2)
        .and_then(|v| v.split('-').next())
        .unwrap_or_else(|| panic!("{} --version: {version}", binary.display()))
        .to_string();
    let listed = host("apt-cache madison mariadb-server-core");
    pgoforge::source::release::parse_madison(&listed, "mariadb-server-core")
        .into_iter()
        .map(|r| r.version)
        .find(|v| {
            v.split_once(':')
                .map_or(v.as_str(), |(_, r)| r)
                .starts_with(&format!("{upstream}-"))
        })
        .unwrap_or_else(|| panic!("apt lists no mariadb-server-core {upstream}: {listed}"))
}

/// Boots Debian with its mariadb-server at `fits`, installs the .deb of `binary`, and checks
/// it under systemd; `broken` (a server that cannot start) checks the rollback.
fn scenario(binary: &Path, fits: &str, dir: &Path, broken: Option<&Path>) {
    let tree = booted::tree(fits);
    let good = deb(
        &tarball(binary, "mariadb-systemd", fits, &dir.join("good")),
        &dir.join("good"),
        &[],
    );
    // A build without the recipe's `-pgo` suffix (a baseline) is told apart by its path alone.
    let labeled = host(&format!("{} --version", binary.display())).contains("-MariaDB-pgo ");
    let mut b = Booted::boot(&tree, &dir.join("container"));
    let s = Seen(&b);
    assert_eq!(s.active(), "active", "Debian's service after boot");
    assert_eq!(s.main_exe(), "/usr/sbin/mariadbd");
    assert_eq!(
        b.sh("systemctl show -p Type --value mariadb").1.trim(),
        "notify"
    );
    s.q("CREATE DATABASE deploy");
    s.q("CREATE TABLE deploy.t (id INT PRIMARY KEY, v CHAR(32)) ENGINE=InnoDB");
    s.q("INSERT INTO deploy.t SELECT seq, MD5(seq) FROM deploy.seq_1_to_10000");
    s.q("CREATE TABLE deploy.r (id INT PRIMARY KEY) ENGINE=ROCKSDB");
    s.q("INSERT INTO deploy.r SELECT seq FROM deploy.seq_1_to_100");
    let checksum = s.checksum();
    let plugins = s.plugins();
    assert!(plugins.contains("ROCKSDB"), "{plugins}");
    assert_eq!(s.q("SELECT COUNT(*) FROM deploy.t"), "10000");

    b.copy_in(&good, "/root/good.deb");
    let (code, out) = b.sh("dpkg -i /root/good.deb");
    assert_eq!(code, 0, "{out}");
    let optimized = |b: &Booted, when: &str| {
        let s = Seen(b);
        assert_eq!(s.active(), "active", "{when}");
        assert_eq!(s.main_exe(), "/usr/sbin/mariadbd-pgo", "{when}");
        assert_eq!(s.q("SELECT VERSION()").ends_with("-pgo"), labeled, "{when}");
        assert_eq!(s.q("SELECT COUNT(*) FROM deploy.t"), "10000", "{when}");
        assert_eq!(s.checksum(), checksum, "{when}");
        assert_eq!(s.q("SELECT COUNT(*) FROM deploy.r"), "100", "{when}");
        assert_eq!(s.plugins(), plugins, "{when}");
        let (code, line) = b.sh("mariadb-pgo-status");
        assert_eq!(code, 0, "{when}: {line}");
        assert!(line.contains("runs the optimized server"), "{when}: {line}");
    };
    optimized(&b, "installed");
    let (code, out) = b.sh("systemctl restart mariadb");
    assert_eq!(code, 0, "{out}");
    optimized(&b, "after systemctl restart");
    b.reboot();
    optimized(&b, "after a reboot");

    if let Some(broken) = broken {
        let bad = deb(
            &tarball(broken, "mariadb-broken", fits, &dir.join("broken")),
            &dir.join("broken"),
            &[],
        );
        b.copy_in(&bad, "/root/broken.deb");
        let (code, out) = b.sh("dpkg -i /root/broken.deb");
        assert_eq!(code, 0, "a rollback leaves dpkg consistent: {out}");
        assert!(out.contains("rolling back"), "{out}");
        let s = Seen(&b);
        assert_eq!(s.active(), "active", "after the rollback");
        assert_eq!(s.main_exe(), "/usr/sbin/mariadbd.distrib");
        assert_eq!(s.checksum(), checksum);
        assert_eq!(b.sh("dpkg --audit").1.trim(), "");
        let (code, line) = b.sh("mariadb-pgo-status");
        assert_eq!(code, 1, "{line}");
        assert!(line.contains("disabled"), "{line}");
        let journal = b.sh("journalctl -u mariadb --no-pager -o cat").1;
        assert!(
            journal.contains("mariadb-server-pgo: running Debian's server")
                && journal.contains("disabled"),
            "the journal says which binary runs and why:\n{journal}"
        );
    }

    let (code, out) = b.sh("dpkg --purge mariadb-server-pgo");
    assert_eq!(code, 0, "{out}");
    let s = Seen(&b);
    assert_eq!(s.active(), "active", "after the purge");
    assert_eq!(s.main_exe(), "/usr/sbin/mariadbd");
    assert!(!s.q("SELECT VERSION()").ends_with("-pgo"));
    assert_eq!(s.checksum(), checksum);
    assert_eq!(s.plugins(), plugins);
    assert_eq!(
        b.sh("dpkg --verify mariadb-server-core mariadb-server")
            .1
            .trim(),
        ""
    );
    assert_eq!(b.sh("dpkg-divert --list | grep -c pgo").1.trim(), "0");
    assert_eq!(b.sh("dpkg --audit").1.trim(), "");
    b.reboot();
    let s = Seen(&b);
    assert_eq!(s.active(), "active", "Debian's after a reboot");
    assert_eq!(s.main_exe(), "/usr/sbin/mariadbd");
    assert_eq!(s.checksum(), checksum);
    b.poweroff();
}

fn need_root() {
    assert!(
        pgoforge::infra::is_root(),
        "the systemd tests boot a container (systemd-nspawn): run them as root"
    );
}

#[test]
fn the_deb_runs_under_systemd_on_a_booted_debian_and_gives_debians_back() {
    need_root();
    let fits = host("dpkg-query -W -f '${Version}' mariadb-server-core");
    assert!(
        !fits.is_empty(),
        "Debian's mariadb-server-core is installed"
    );
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    for d in ["good", "broken"] {
        fs::create_dir(dir.join(d)).unwrap();
    }
    let bin = relabeled_server(&dir.join("good"));
    let line = host(&format!("{} --version", bin.display()));
    let broken = broken_server(&dir.join("broken"), &line);
    scenario(&bin, &fits, dir, Some(&broken));
}

#[test]
fn a_real_build_starts_as_debians_unit_starts_it() {
    need_root();
    let Some(binary) = std::env::var_os("PGOFORGE_TEST_DEB_MARIADBD").map(PathBuf::from) else {
        eprintln!(
            "NOT RUN: a_real_build_starts_as_debians_unit_starts_it — set \
             PGOFORGE_TEST_DEB_MARIADBD to a mariadbd built by the default recipe (CI builds no \
             server)"
        );
        return;
    };
    let fits = debian_release_of(&binary);
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    fs::create_dir(dir.join("good")).unwrap();
    scenario(&binary, &fits, dir, None);
}

/// The indented command lines under a README heading (`## Roll back`), up to the next heading.
fn readme_section(readme: &str, heading: &str) -> String {
    let start = readme
        .find(heading)
        .unwrap_or_else(|| panic!("README has {heading}"));
    let rest = &readme[start + heading.len()..];
    let end = rest.find("\n## ").unwrap_or(rest.len());
    crate::verify::indented_lines(&rest[..end])
}

/// The package tarball's README followed to the letter on the booted Debian (as root: `sudo`
/// dropped, `sudo -u mysql` as `runuser`): its own unit runs the optimized server beside
/// Debian's service, through restarts and a reboot, and its roll-back leaves Debian's alone.
#[test]
fn the_tarballs_readme_runs_it_under_systemd_beside_debians_service() {
    need_root();
    let fits = host("dpkg-query -W -f '${Version}' mariadb-server-core");
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    fs::create_dir(dir.join("pkg")).unwrap();
    let bin = relabeled_server(&dir.join("pkg"));
    let name = "mariadb-unit-pgo+lto-clang-22";
    let pkg = tarball(&bin, name, &fits, &dir.join("pkg"));
    let readme = host(&format!(
        "tar --zstd -xOf {} {name}/README.md",
        pkg.display()
    ));
    let letter = crate::common::readme::as_root;
    let unit = "pgoforge-mariadb.service";

    let mut b = Booted::boot(&booted::tree(&fits), &dir.join("container"));
    b.copy_in(&pkg, &format!("/root/{name}.tar.zst"));
    for step in [2, 3, 4] {
        let cmds = letter(&crate::verify::readme_step(&readme, step));
        let (code, out) = b.sh(&script(&cmds));
        assert_eq!(code, 0, "README step {step}:\n{cmds}\n{out}");
    }
    let ours = |b: &Booted, when: &str| {
        let (_, active) = b.sh(&format!("systemctl is-active {unit}"));
        assert_eq!(active.trim(), "active", "{when}");
        let (_, exe) = b.sh(&format!(
            "readlink /proc/$(systemctl show -p MainPID --value {unit})/exe"
        ));
        assert_eq!(exe.trim(), format!("/opt/{name}/bin/mariadbd"), "{when}");
        // Beside Debian's own service, which never stopped.
        assert_eq!(Seen(b).active(), "active", "{when}: Debian's service");
        assert_eq!(Seen(b).main_exe(), "/usr/sbin/mariadbd", "{when}");
    };
    ours(&b, "started by the README");
    // Step 5's connection, as root through the socket.
    let connect = readme_step_line(&readme, 5);
    let sql = |b: &Booted, q: &str| {
        let (code, out) = b.sh(&format!("{} -NBe \"{q}\"", letter(&connect)));
        assert_eq!(code, 0, "{connect}: {out}");
        out.trim().to_string()
    };
    assert!(sql(&b, "SELECT VERSION()").ends_with("-pgo"));
    sql(&b, "CREATE DATABASE unit");
    sql(
        &b,
        "CREATE TABLE unit.t (id INT PRIMARY KEY) ENGINE=InnoDB; INSERT INTO unit.t SELECT seq FROM unit.seq_1_to_5000",
    );
    let (code, out) = b.sh(&format!("systemctl restart {unit}"));
    assert_eq!(code, 0, "{out}");
    ours(&b, "after systemctl restart");
    b.reboot();
    ours(&b, "after a reboot (the unit is enabled)");
    assert_eq!(sql(&b, "SELECT COUNT(*) FROM unit.t"), "5000");

    let back = letter(&readme_section(&readme, "## Roll back"));
    let (code, out) = b.sh(&script(&back));
    assert_eq!(code, 0, "README roll back:\n{back}\n{out}");
    let (_, state) = b.sh(&format!("systemctl is-active {unit}"));
    assert_ne!(state.trim(), "active", "the unit is gone");
    assert_eq!(
        b.sh(&format!("test -e /etc/systemd/system/{unit}; echo $?"))
            .1
            .trim(),
        "1"
    );
    assert_eq!(
        Seen(&b).active(),
        "active",
        "Debian's service after the roll back"
    );
    assert_eq!(Seen(&b).main_exe(), "/usr/sbin/mariadbd");
    b.poweroff();
}

/// README lines run as a user pastes them into a shell in /root, stopping at the first failure.
fn script(cmds: &str) -> String {
    format!("cd /root && sh -e <<'PGOFORGE_README'\n{cmds}\nPGOFORGE_README")
}

/// The first command line of README step `n` (its comment dropped).
fn readme_step_line(readme: &str, n: u32) -> String {
    crate::verify::readme_step(readme, n)
        .lines()
        .next()
        .map(|l| l.split(" #").next().unwrap_or(l).trim().to_string())
        .unwrap_or_else(|| panic!("README step {n} has a command"))
}
