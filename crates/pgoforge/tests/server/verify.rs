//! A package tarball as a DBA deploys it on another host: `pgoforge package verify` checks it
//! (and fails a damaged, altered or dead one with exit status 6), and the README inside it is
//! followed to the letter — its commands taken from the README itself, with the paths moved to a
//! scratch prefix, `sudo` as `runuser` — the datadir initialized by the README's command, the
//! server started as the unit starts it (its `ExecStart`, as the `mysql` user), reached through
//! the package's my.cnf, and the unit accepted by `systemd-analyze verify`.
//!
//! The packaged server is Debian's mariadbd relabeled `-pgo` (deploy.rs; CI builds no server),
//! packaged as a MyRocks run's winner: with its engine's plugin (Debian's, from
//! mariadb-plugin-rocksdb, standing in for the one built beside a run's server), which the
//! started server must have loaded.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::pgoforge;
use crate::deploy::{broken_server, relabeled_server, tarball, tarball_with};
use pgoforge::server::config::Engine;

const NAME: &str = "mariadb-verify-pgo+lto-gcc-12";

fn sh(cmd: &str) -> (i32, String) {
    let out = Command::new("sh").args(["-c", cmd]).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

fn verify(pkg: &Path, extra: &[&str]) -> (i32, Value, String) {
    let p = pkg.display().to_string();
    let mut args = vec!["package", "verify", p.as_str(), "--json"];
    args.extend(extra);
    let r = pgoforge(&args);
    let v = serde_json::from_str(&r.stdout).unwrap_or(Value::Null);
    (r.code, v, r.stderr)
}

fn check<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name}: {v}"))
}

pub(crate) use crate::common::readme::{indented_lines, readme_step};

#[test]
fn a_package_is_verified_and_its_readme_runs_it_as_the_unit_would() {
    let t = tempfile::tempdir().unwrap();
    // The mysql user must reach the package and its datadir, as under /opt and /var/lib.
    fs::set_permissions(t.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let server = relabeled_server(t.path());
    let pkg = tarball_with(
        &server,
        NAME,
        "1:10.11.19-0+deb12u1",
        &t.path().join("out"),
        None,
        Engine::RocksDb,
    );

    let (code, v, err) = verify(&pkg, &[]);
    assert_eq!(code, 0, "{v}\n{err}");
    for c in ["hashes", "name", "version", "deployment files", "start"] {
        assert_eq!(check(&v, c)["ok"], true, "{c}: {v}");
    }
    let started = check(&v, "start")["detail"].as_str().unwrap();
    assert!(started.contains("-pgo"), "{started}");
    // The short start ran MyRocks from the package's own plugin.
    assert!(
        started.contains("a rocksdb table (its ha_rocksdb.so from the package)"),
        "{started}"
    );

    // Unpacked "at /opt": a scratch prefix, the README's sed applied to every path.
    let opt = t.path().join("opt");
    let var = t.path().join("var-lib-pgoforge-mariadb");
    let run = t.path().join("run-pgoforge-mariadb");
    fs::create_dir_all(&opt).unwrap();
    let (c, out) = sh(&format!(
        "tar --zstd -xf {} -C {}",
        pkg.display(),
        opt.display()
    ));
    assert_eq!(c, 0, "{out}");
    let root = opt.join(NAME);
    // The engine's plugin is packed (stripped of what loading does not need) and named by my.cnf.
    let plugin = root.join("lib/plugin/ha_rocksdb.so");
    let packed = fs::metadata(&plugin).expect("the package carries the MyRocks plugin");
    let debian = fs::metadata("/usr/lib/mysql/plugin/ha_rocksdb.so").unwrap();
    assert!(packed.len() > 1_000_000 && packed.len() <= debian.len());
    let manifest = fs::read_to_string(root.join("manifest.json")).unwrap();
    assert!(manifest.contains("\"engine\": \"rocksdb\""), "{manifest}");
    let moved = |text: &str| {
        text.replace(&format!("/opt/{NAME}"), &root.display().to_string())
            .replace("/var/lib/pgoforge-mariadb", &var.display().to_string())
            .replace("/run/pgoforge-mariadb", &run.display().to_string())
            .replace("sudo -u mysql ", "runuser -u mysql -- ")
            .replace("sudo ", "")
    };
    for f in ["etc/my.cnf", "systemd/pgoforge-mariadb.service"] {
        let p = root.join(f);
        fs::write(&p, moved(&fs::read_to_string(&p).unwrap())).unwrap();
    }
    // Edited configuration is reported, not failed; the server itself is untouched.
    let (code, v, _) = verify(&root, &["--no-start"]);
    assert_eq!(code, 6, "moved paths no longer fit /opt/NAME: {v}");
    assert!(check(&v, "hashes")["detail"].as_str().unwrap().contains(
        "changed since packaged (local edits?): etc/my.cnf, systemd/pgoforge-mariadb.service"
    ));
    assert_eq!(check(&v, "hashes")["ok"], true, "{v}");
    assert_eq!(check(&v, "deployment files")["ok"], false, "{v}");

    let readme = fs::read_to_string(root.join("README.md")).unwrap();
    for dir_step in readme_step(&readme, 2)
        .lines()
        .filter(|l| l.contains("install -d"))
    {
        let (c, out) = sh(&moved(dir_step));
        assert_eq!(c, 0, "{dir_step}: {out}");
    }
    let init = moved(&readme_step(&readme, 3));
    let (c, out) = sh(&init);
    assert_eq!(c, 0, "the README's initialization failed:\n{init}\n{out}");
    assert!(var.join("mysql").is_dir(), "{out}");

    // Started as the unit starts it: its ExecStart, as its User.
    let unit = fs::read_to_string(root.join("systemd/pgoforge-mariadb.service")).unwrap();
    let exec = unit
        .lines()
        .find_map(|l| l.strip_prefix("ExecStart="))
        .unwrap();
    assert!(unit.contains("User=mysql"));
    let (c, out) = sh(&format!(
        "systemd-analyze verify {}",
        root.join("systemd/pgoforge-mariadb.service").display()
    ));
    assert_eq!(c, 0, "{out}");
    let log = t.path().join("server.log");
    let log_file = fs::File::create(&log).unwrap();
    let mut child = Command::new("runuser")
        .args(["-u", "mysql", "--", "sh", "-c"])
        .arg(format!("exec {exec}"))
        .stdout(log_file.try_clone().unwrap())
        .stderr(log_file)
        .spawn()
        .unwrap();
    let sock = run.join("mysqld.sock");
    let t0 = Instant::now();
    while !sock.exists() && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(200));
    }
    let cnf = root.join("etc/my.cnf");
    let (c, out) = sh(&format!(
        "mariadb --defaults-file={} -u root -N -e 'SELECT VERSION(), CURRENT_USER(), @@port, @@bind_address; \
         SELECT SUPPORT FROM information_schema.ENGINES WHERE ENGINE = \"ROCKSDB\"; \
         SELECT @@plugin_dir'",
        cnf.display()
    ));
    let _ = sh(&format!("kill $(cat {})", run.join("mysqld.pid").display()));
    let stopped = child.wait().unwrap();
    assert_eq!(
        c,
        0,
        "{out}\n{}",
        fs::read_to_string(&log).unwrap_or_default()
    );
    assert!(
        out.contains("-pgo\troot@localhost\t3307\t127.0.0.1"),
        "{out}"
    );
    // MyRocks is there, loaded from the package's own plugin directory.
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.get(1), Some(&"YES"), "{out}");
    assert_eq!(
        lines.get(2).map(|d| d.trim_end_matches('/')),
        Some(root.join("lib/plugin").to_str().unwrap()),
        "{out}"
    );
    assert!(stopped.success(), "the server stops cleanly on SIGTERM");
}

#[test]
fn a_damaged_altered_or_dead_package_fails_verification_with_exit_6() {
    let t = tempfile::tempdir().unwrap();
    let server = relabeled_server(t.path());
    let pkg = tarball(&server, NAME, "1:10.11.19-0+deb12u1", &t.path().join("out"));
    let unpacked = |to: &str| -> PathBuf {
        let d = t.path().join(to);
        fs::create_dir_all(&d).unwrap();
        let (c, out) = sh(&format!(
            "tar --zstd -xf {} -C {}",
            pkg.display(),
            d.display()
        ));
        assert_eq!(c, 0, "{out}");
        d.join(NAME)
    };

    // A share file altered, and one added: both named.
    let root = unpacked("altered");
    let errmsg = root.join("share/mariadb/english/errmsg.sys");
    let mut bytes = fs::read(&errmsg).unwrap();
    bytes[100] ^= 0xff;
    fs::write(&errmsg, bytes).unwrap();
    fs::write(root.join("bin/extra"), "#!/bin/sh\n").unwrap();
    let (code, v, _) = verify(&root, &["--no-start"]);
    assert_eq!(code, 6, "{v}");
    let d = check(&v, "hashes")["detail"].as_str().unwrap().to_string();
    assert!(
        d.contains("share/mariadb/english/errmsg.sys differs")
            && d.contains("bin/extra is not in SHA256SUMS"),
        "{d}"
    );

    // A server that does not start: version fine, start failed.
    let dead_dir = t.path().join("dead");
    fs::create_dir_all(&dead_dir).unwrap();
    let line = sh(&format!("{} --version", server.display())).1;
    let dead = broken_server(&dead_dir, line.trim());
    let dead_pkg = tarball(
        &dead,
        NAME,
        "1:10.11.19-0+deb12u1",
        &t.path().join("out-dead"),
    );
    let (code, v, _) = verify(&dead_pkg, &[]);
    assert_eq!(code, 6, "{v}");
    assert_eq!(check(&v, "version")["ok"], true, "{v}");
    assert_eq!(check(&v, "start")["ok"], false, "{v}");

    // Not a package at all: refused (2), nothing to check.
    let junk = t.path().join("junk.tar.zst");
    fs::write(&junk, b"not an archive").unwrap();
    let r = pgoforge(&["package", "verify", junk.to_str().unwrap()]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    let r = pgoforge(&["package", "verify", "/nonexistent.tar.zst"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("does not exist"), "{}", r.stderr);
}
