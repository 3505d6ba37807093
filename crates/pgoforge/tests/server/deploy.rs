//! The .deb as a DBA uses it, on Debian's own mariadb-server and its service script, inside a
//! throwaway overlay of this machine (tests/fixtures/deploy/isolated-root.sh): installed → the
//! service runs the optimized server with the data intact and Debian's plugins loading; removed →
//! Debian's binary is back; a .deb for another server version is refused with nothing changed; a
//! .deb whose server cannot start rolls back to Debian's. The real machine is checked unchanged.
//!
//! The "optimized" server is a stand-in (CI builds no server): a copy of Debian's mariadbd whose
//! version suffix is rewritten to `-pgo`, so that which binary the service runs is visible in
//! `VERSION()`, as with a real build's `-DMYSQL_SERVER_SUFFIX=-pgo`.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use pgoforge::builder::codegen::CpuLevel;
use pgoforge::package::cpu::CpuRequirement;
use pgoforge::package::{package, DebianSource, Manifest, PackageRequest};
use pgoforge::server::config::Engine;
use pgoforge::server::Layout;

use crate::common;

const DEBIAN_BINARY: &str = "/usr/sbin/mariadbd";

pub(crate) fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures/deploy")
        .join(name)
}

/// The fixture script copied into `dir`, the one path the isolated root shares with this
/// machine: the root mounts a fresh /tmp, which hides a clone that lives under /tmp.
pub(crate) fn fixture_in(dir: &Path, name: &str) -> PathBuf {
    let to = dir.join(name);
    fs::copy(fixture(name), &to).unwrap_or_else(|e| panic!("copying the fixture {name}: {e}"));
    to
}

/// `cmd` run by /bin/sh on this machine: its standard output, trimmed.
pub(crate) fn sh(cmd: &str) -> String {
    let out = Command::new("sh").args(["-c", cmd]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Runs the fixture `script` as root in a throwaway overlay of this machine
/// (isolated-root.sh), sharing only `shared` with it: the script is copied into `run` (under
/// `shared`) and called as `script run/observed ARGS...`. Returns what it observed (its
/// `key=value` lines) and its log (run/observed.log); a script that fails fails the test.
pub(crate) fn in_isolated_root(
    shared: &Path,
    run: &Path,
    script: &str,
    args: &[&std::ffi::OsStr],
) -> (BTreeMap<String, String>, String) {
    let out = run.join("observed");
    let st = Command::new("unshare")
        .args(["--mount", "--pid", "--fork", "--propagation", "private"])
        .arg(fixture("isolated-root.sh"))
        .arg(shared)
        .arg(fixture_in(run, script))
        .arg(&out)
        .args(args)
        .status()
        .expect("running unshare (util-linux)");
    let log = fs::read_to_string(run.join("observed.log")).unwrap_or_default();
    assert!(st.success(), "{script} failed:\n{log}");
    let seen = fs::read_to_string(&out)
        .unwrap()
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    (seen, log)
}

/// What the real machine looks like to the test: packages, diversions, the binary, services.
fn machine() -> Vec<String> {
    vec![
        sh("dpkg-query -W -f '${Package} ${Version} ${Status}\\n' 'mariadb-*' | sort"),
        sh("dpkg-divert --list | sort"),
        sh(&format!("sha256sum {DEBIAN_BINARY}")),
        sh("ls /usr/sbin | grep -c mariadbd"),
        sh("test -e /run/mysqld/mysqld.pid && echo pidfile || echo none"),
    ]
}

/// Debian's mariadbd with its version suffix (`-0+deb12u1`) replaced by `-pgo`, NUL-padded to the
/// same length in the binary's read-only data.
pub(crate) fn relabeled_server(dir: &Path) -> PathBuf {
    relabeled(Path::new(DEBIAN_BINARY), dir)
}

/// `binary` relabeled as [`relabeled_server`] does Debian's.
fn relabeled(binary: &Path, dir: &Path) -> PathBuf {
    let version = sh(&format!("{} --version", binary.display()));
    let full = version
        .split_whitespace()
        .nth(2)
        .expect("mariadbd --version names the version");
    let suffix = full
        .split_once("-MariaDB")
        .map(|(_, s)| s)
        .expect("a MariaDB version");
    assert!(suffix.len() >= 4, "Debian's version has a suffix: {full}");
    let mut bytes = fs::read(binary).unwrap();
    let needle: Vec<u8> = [suffix.as_bytes(), b"\0"].concat();
    let at = bytes
        .windows(needle.len())
        .position(|w| w == needle.as_slice())
        .expect("the suffix string in the binary");
    let mut patched = b"-pgo".to_vec();
    patched.resize(needle.len(), 0);
    bytes[at..at + needle.len()].copy_from_slice(&patched);
    let out = dir.join("mariadbd");
    fs::write(&out, bytes).unwrap();
    fs::set_permissions(&out, fs::Permissions::from_mode(0o755)).unwrap();
    wait_executable(&out);
    out
}

/// Waits until a file this process just wrote can be executed: a process that another test's
/// thread forks meanwhile holds the write descriptor until it execs, and exec then fails with
/// ETXTBSY ("Text file busy") — the server tier runs many tests at once.
pub(crate) fn wait_executable(p: &Path) {
    for _ in 0..100 {
        match Command::new(p).arg("--version").output() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) => {
                std::thread::sleep(std::time::Duration::from_millis(50))
            }
            _ => return,
        }
    }
    panic!("{} stayed busy (ETXTBSY) for 5 s", p.display());
}

/// A "server" (a real executable, built by gcc) that answers --version like the relabeled one
/// and fails to start.
pub(crate) fn broken_server(dir: &Path, version_line: &str) -> PathBuf {
    let c = dir.join("broken.c");
    fs::write(
        &c,
        format!(
            "#include <stdio.h>\n#include <string.h>\nint main(int argc, char **argv) {{\n  for (int i = 1; i < argc; i++) if (!strcmp(argv[i], \"--version\")) {{ puts(\"{version_line}\"); return 0; }}\n  fputs(\"cannot start\\n\", stderr);\n  return 1;\n}}\n"
        ),
    )
    .unwrap();
    let out = dir.join("mariadbd");
    let st = Command::new("gcc")
        .arg("-O2")
        .arg("-o")
        .arg(&out)
        .arg(&c)
        .status()
        .expect("running gcc");
    assert!(st.success());
    out
}

pub(crate) fn tarball(binary: &Path, name: &str, fits: &str, out: &Path) -> PathBuf {
    tarball_for_cpu(binary, name, fits, out, None)
}

/// A package tarball whose manifest says the binary was compiled for `cpu`.
pub(crate) fn tarball_for_cpu(
    binary: &Path,
    name: &str,
    fits: &str,
    out: &Path,
    cpu: Option<CpuRequirement>,
) -> PathBuf {
    tarball_with(binary, name, fits, out, cpu, Engine::InnoDb)
}

/// A package tarball of a run on `engine` (a plugin engine's plugin is Debian's, found beside
/// Debian's server, as a build's is beside the build's server).
pub(crate) fn tarball_with(
    binary: &Path,
    name: &str,
    fits: &str,
    out: &Path,
    cpu: Option<CpuRequirement>,
    engine: Engine,
) -> PathBuf {
    let layout = Layout::discover(Path::new(DEBIAN_BINARY), None, None);
    let manifest = Manifest {
        name: name.into(),
        server_version: pgoforge::server::Flavor::detect(binary).unwrap().version,
        variant: "pgo+lto".into(),
        recipe: "mariadb-10.11".into(),
        source: format!("Debian source package mariadb {fits} (bookworm)"),
        compiler: "stand-in".into(),
        profiles: vec!["compiler:0123456789abcdef".into()],
        // The source's date (its changelog's, for a Debian source): the package's one date.
        source_date_epoch: 1_763_632_800,
        debian_source: Some(DebianSource {
            package: "mariadb".into(),
            version: fits.into(),
            suite: "bookworm".into(),
        }),
        cpu,
        binary_sha256: String::new(),
        profile_provenance: None,
        engine,
        ..Manifest::default()
    };
    package(&PackageRequest {
        binary,
        layout: &layout,
        manifest: &manifest,
        out_dir: out,
    })
    .unwrap_or_else(|e| panic!("{e:#}"))
    .path
}

/// Debian's mariadbd of another release than the installed one (apt's lists name it; its binary
/// package downloads even when its source does not), unpacked from the mirror's .deb: the server
/// a run builds when the mirror serves an older source than the installed security release.
fn other_release_server(installed: &str, dir: &Path) -> (String, PathBuf) {
    let listed = sh("apt-cache madison mariadb-server-core");
    let other = pgoforge::source::release::parse_madison(&listed, "mariadb-server-core")
        .into_iter()
        .map(|r| r.version)
        .find(|v| v != installed)
        .unwrap_or_else(|| {
            panic!(
                "apt's lists name no mariadb-server-core but the installed {installed}: {listed}"
            )
        });
    let st = Command::new("apt-get")
        .current_dir(dir)
        .args(["download", "-q"])
        .arg(format!("mariadb-server-core={other}"))
        .status()
        .expect("running apt-get download");
    assert!(st.success(), "apt-get download mariadb-server-core={other}");
    let deb = fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "deb"))
        .expect("the downloaded .deb");
    let root = dir.join("root");
    let st = Command::new("dpkg-deb")
        .arg("-x")
        .arg(&deb)
        .arg(&root)
        .status()
        .unwrap();
    assert!(st.success());
    let bin = relabeled(&root.join("usr/sbin/mariadbd"), &dir.join("relabeled"));
    (other, bin)
}

/// `deb` repacked as a package for arm64 (its control file says so; nothing else changes but
/// the compression: gzip -1, as dpkg refuses it before unpacking anything, and xz -6 of the
/// 26 MB server is 19 s here).
fn other_architecture(deb: &Path, dir: &Path) -> PathBuf {
    let tree = dir.join("arch-tree");
    let out = dir.join("arm64.deb");
    let cmd = format!(
        "dpkg-deb -R {deb} {tree} && sed -i 's/^Architecture: .*/Architecture: arm64/' \
         {tree}/DEBIAN/control && dpkg-deb -Zgzip -z1 --root-owner-group -b {tree} {out} >/dev/null",
        deb = deb.display(),
        tree = tree.display(),
        out = out.display()
    );
    let st = Command::new("sh").args(["-c", &cmd]).status().unwrap();
    assert!(st.success(), "{cmd}");
    out
}

pub(crate) fn deb(tarball: &Path, out: &Path, extra: &[&str]) -> PathBuf {
    let mut args = vec![
        "package".to_string(),
        "deb".into(),
        tarball.display().to_string(),
        format!("--out={}", out.display()),
        "--json".into(),
    ];
    args.extend(extra.iter().map(|s| s.to_string()));
    let r = common::pgoforge(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    PathBuf::from(v["path"].as_str().unwrap())
}

#[test]
fn the_deb_takes_debians_place_and_gives_it_back() {
    assert!(
        pgoforge::infra::is_root(),
        "the deployment test installs packages in an isolated root: run it as root"
    );
    let _packages = crate::common::machine_packages();
    let fits = sh("dpkg-query -W -f '${Version}' mariadb-server-core");
    assert!(
        !fits.is_empty(),
        "Debian's mariadb-server-core is installed"
    );
    let before = machine();
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    for d in [
        "good",
        "broken",
        "debs",
        "wrong",
        "other",
        "other/relabeled",
        "cpu",
    ] {
        fs::create_dir(dir.join(d)).unwrap();
    }
    let good_bin = relabeled_server(&dir.join("good"));
    let version_line = sh(&format!("{} --version", good_bin.display()));
    assert!(version_line.contains("-MariaDB-pgo "), "{version_line}");
    let good = tarball(&good_bin, "mariadb-good", &fits, &dir.join("good"));
    let broken_bin = broken_server(&dir.join("broken"), &version_line);
    let broken = tarball(&broken_bin, "mariadb-broken", &fits, &dir.join("broken"));

    let good_deb = deb(&good, &dir.join("debs"), &[]);
    // A build of another release than the installed server (the main job's situation when the
    // mirror lists a security release whose source it does not serve): a real mariadbd of that
    // release, packaged as pgoforge packages a build of it. `package deb` says up front that it
    // does not fit this machine; dpkg refuses it.
    let (other, other_bin) = other_release_server(&fits, &dir.join("other"));
    let other_tar = tarball(&other_bin, "mariadb-other", &other, &dir.join("wrong"));
    let r = common::pgoforge(&[
        "package",
        "deb",
        &other_tar.display().to_string(),
        &format!("--out={}", dir.join("wrong").display()),
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "this .deb fits mariadb-server-core {other}, but the installed one is {fits}"
        )) && r.stderr.contains("dpkg will refuse it"),
        "{}",
        r.stderr
    );
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let wrong_deb = PathBuf::from(v["path"].as_str().unwrap());
    let broken_deb = deb(&broken, &dir.join("broken"), &[]);
    // The good .deb as if made for another architecture: dpkg refuses it.
    let arch_deb = other_architecture(&good_deb, &dir.join("wrong"));
    // Compiled for x86-64-v4 (the manifest says so): its preinst refuses a CPU without AVX-512.
    // Which CPU is a stand-in the test supplies (PGOFORGE_CPUINFO, which dpkg passes to the
    // package's scripts): one with v3's features only, one with v4's.
    let v4 = CpuRequirement::new(CpuLevel::V4, "");
    let cpu_tar = tarball_for_cpu(&good_bin, "mariadb-v4", &fits, &dir.join("cpu"), Some(v4));
    let cpu_deb = deb(&cpu_tar, &dir.join("cpu"), &[]);
    let cpuinfo = |level: CpuLevel, file: &str| {
        let p = dir.join("cpu").join(file);
        let flags = level.required_flags(&[]).join(" ");
        fs::write(
            &p,
            format!("processor\t: 0\nflags\t\t: fpu sse sse2 {flags}\n"),
        )
        .unwrap();
        p
    };
    let (lacking, having) = (
        cpuinfo(CpuLevel::V3, "v3.cpuinfo"),
        cpuinfo(CpuLevel::V4, "v4.cpuinfo"),
    );

    // The package says what it is, and lintian finds no error in it.
    let info = sh(&format!(
        "dpkg-deb --field {} Version Pre-Depends",
        good_deb.display()
    ));
    assert!(info.contains("+pgoforge+pgo+lto.01234567"), "{info}");
    assert!(
        info.contains(&format!("mariadb-server-core (>= {fits})")),
        "{info}"
    );
    let lint = Command::new("lintian")
        .args(["--fail-on", "error", "--tag-display-limit", "0"])
        .arg(&good_deb)
        .output()
        .expect("running lintian (apt-get install lintian)");
    assert!(
        lint.status.success(),
        "lintian: {}{}",
        String::from_utf8_lossy(&lint.stdout),
        String::from_utf8_lossy(&lint.stderr)
    );
    // A tampered tarball is refused before anything is built.
    let r = common::pgoforge(&[
        "package",
        "deb",
        &dir.join("good/mariadbd").display().to_string(),
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);

    let (seen, log) = in_isolated_root(
        dir,
        dir,
        "scenario.sh",
        &[
            &good_deb,
            &wrong_deb,
            &broken_deb,
            &cpu_deb,
            &lacking,
            &having,
            &arch_deb,
        ]
        .map(|p| p.as_os_str()),
    );
    let get = |k: &str| seen.get(k).cloned().unwrap_or_default();
    let ctx = format!("{seen:#?}\n{log}");
    assert_eq!(get("done"), "yes", "{ctx}");
    let debian_sha = get("before_binary_sha");
    let checksum = get("before_checksum");
    assert_eq!(get("before_rows"), "5000", "{ctx}");
    assert!(!checksum.is_empty() && checksum != "0", "{ctx}");
    assert!(!get("before_version").ends_with("-pgo"), "{ctx}");
    assert_eq!(get("before_exe"), DEBIAN_BINARY, "{ctx}");

    // Another release: refused by the package naming both releases, nothing changed, the
    // service still Debian's with the data as it was.
    assert_ne!(get("wrong_dpkg_exit"), "0", "{ctx}");
    assert_eq!(
        get("wrong_message"),
        format!("built from Debian's mariadb-server-core {other}, but this host has {fits}:"),
        "{ctx}"
    );
    assert_eq!(get("wrong_checksum"), checksum, "{ctx}");
    assert_eq!(get("wrong_status"), "not-installed", "{ctx}");
    assert_eq!(get("wrong_diversions"), "0", "{ctx}");
    assert_eq!(get("wrong_binary_sha"), debian_sha, "{ctx}");
    assert_eq!(get("wrong_version"), get("before_version"), "{ctx}");
    assert_eq!(get("wrong_audit"), "0", "{ctx}");

    // Another architecture: refused by dpkg, nothing changed.
    assert_ne!(get("arch_dpkg_exit"), "0", "{ctx}");
    assert!(
        get("arch_message").starts_with("package architecture (arm64) does not match system"),
        "{ctx}"
    );
    assert_eq!(get("arch_status"), "not-installed", "{ctx}");
    assert_eq!(get("arch_diversions"), "0", "{ctx}");
    assert_eq!(get("arch_binary_sha"), debian_sha, "{ctx}");
    assert_eq!(get("arch_audit"), "0", "{ctx}");

    // Installed: the service restarted on the optimized server, data and plugins intact.
    assert_eq!(get("good_dpkg_exit"), "0", "{ctx}");
    assert!(get("installed_version").ends_with("-pgo"), "{ctx}");
    assert_eq!(get("installed_exe"), "/usr/sbin/mariadbd-pgo", "{ctx}");
    assert_eq!(get("installed_checksum"), checksum, "{ctx}");
    assert_eq!(get("installed_diversions"), "1", "{ctx}");
    assert_eq!(get("installed_archive_rows"), "3", "{ctx}");
    assert_eq!(get("installed_status"), "installed", "{ctx}");
    assert!(
        get("installed_status_line").contains("runs the optimized server"),
        "{ctx}"
    );

    // Removed: Debian's binary back in place and running, data intact.
    assert_eq!(get("remove_dpkg_exit"), "0", "{ctx}");
    assert_eq!(get("removed_version"), get("before_version"), "{ctx}");
    assert_eq!(get("removed_exe"), DEBIAN_BINARY, "{ctx}");
    assert_eq!(get("removed_binary_sha"), debian_sha, "{ctx}");
    assert_eq!(get("removed_diversions"), "0", "{ctx}");
    assert_eq!(get("removed_checksum"), checksum, "{ctx}");
    assert_eq!(get("purge_dpkg_exit"), "0", "{ctx}");
    assert_eq!(get("purged_verify"), "0", "{ctx}");
    assert_eq!(get("purged_leftovers"), "0", "{ctx}");

    // A server that cannot start: rolled back — Debian's binary serves again, the optimized
    // one is disabled and says so — with dpkg and apt consistent (no half-configured package).
    assert_eq!(get("broken_dpkg_exit"), "0", "{ctx}");
    assert_eq!(get("broken_said"), "1", "{ctx}");
    assert_eq!(get("broken_version"), get("before_version"), "{ctx}");
    assert_eq!(get("broken_exe"), "/usr/sbin/mariadbd.distrib", "{ctx}");
    assert_eq!(get("broken_checksum"), checksum, "{ctx}");
    assert_eq!(get("broken_status"), "installed", "{ctx}");
    assert_eq!(get("broken_audit"), "0", "{ctx}");
    assert_eq!(get("broken_apt_check"), "0", "{ctx}");
    assert_eq!(get("broken_status_exit"), "1", "{ctx}");
    assert!(
        get("broken_status_line").contains("runs Debian's server")
            && get("broken_status_line").contains("disabled"),
        "{ctx}"
    );
    assert_eq!(get("broken_remove_exit"), "0", "{ctx}");
    assert_eq!(get("cleaned_binary_sha"), debian_sha, "{ctx}");
    assert_eq!(get("cleaned_diversions"), "0", "{ctx}");
    assert_eq!(get("cleaned_status"), "not-installed", "{ctx}");

    // Compiled for a CPU this one (the stand-in) lacks: dpkg refuses it, naming what is
    // missing, before anything changed; where the CPU has it, it installs, and a host that
    // later lacks the level runs Debian's binary (the check goes with the package).
    assert_eq!(get("cpu_dpkg_exit"), "1", "{ctx}");
    assert!(
        get("cpu_message").starts_with("this CPU lacks avx512bw avx512cd avx512dq avx512f"),
        "{ctx}"
    );
    assert_eq!(get("cpu_status"), "not-installed", "{ctx}");
    assert_eq!(get("cpu_diversions"), "0", "{ctx}");
    assert_eq!(get("cpu_binary_sha"), debian_sha, "{ctx}");
    assert_eq!(get("cpu_version"), get("before_version"), "{ctx}");
    assert_eq!(get("cpu_ok_dpkg_exit"), "0", "{ctx}");
    assert!(get("cpu_ok_version").ends_with("-pgo"), "{ctx}");
    assert_eq!(get("cpu_ok_check_exit"), "8", "{ctx}");
    assert!(
        get("cpu_lacking_choice").starts_with("debian this CPU lacks avx512"),
        "{ctx}"
    );
    assert_eq!(get("cpu_having_choice"), "optimized", "{ctx}");
    assert_eq!(get("cpu_ok_purge_exit"), "0", "{ctx}");
    assert_eq!(get("cpu_ok_check_gone"), "yes", "{ctx}");

    // And the real machine is as it was.
    assert_eq!(machine(), before);
}
