//! A package compiled for a CPU level carries the level and its check: the tarball's
//! `bin/cpu-check` (which the systemd unit runs before the server) and `package verify` refuse a
//! CPU without the level's features with exit status 8, naming them, and pass one with them.
//! The CPUs are stand-ins the test supplies (/proc/cpuinfo's format, or bare flags), not old
//! hardware; the server is Debian's mariadbd relabeled, packaged as a build would be.

use std::fs;
use std::path::Path;
use std::process::Command;

use pgoforge::builder::codegen::CpuLevel;
use pgoforge::package::cpu::CpuRequirement;

use crate::common;
use crate::deploy::{relabeled_server, tarball_for_cpu};

fn untar(pkg: &Path, into: &Path) -> std::path::PathBuf {
    fs::create_dir_all(into).unwrap();
    let st = Command::new("tar")
        .args(["--zstd", "-xf"])
        .arg(pkg)
        .arg("-C")
        .arg(into)
        .status()
        .unwrap();
    assert!(st.success());
    into.join("mariadb-v4")
}

#[test]
fn a_package_for_a_cpu_level_refuses_a_cpu_without_it_with_exit_8() {
    let t = tempfile::tempdir().unwrap();
    let bin = relabeled_server(t.path());
    let fits = "1:10.11.18-0+deb12u1";
    let v4 = CpuRequirement::new(CpuLevel::V4, "");
    let pkg = tarball_for_cpu(&bin, "mariadb-v4", fits, &t.path().join("out"), Some(v4));
    let root = untar(&pkg, &t.path().join("unpacked"));

    // The manifest, the check beside the server, the unit and the README all say it.
    let manifest: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(root.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["cpu"]["level"], "x86-64-v4");
    let check = root.join("bin/cpu-check");
    let mode = {
        use std::os::unix::fs::PermissionsExt;
        fs::metadata(&check).unwrap().permissions().mode()
    };
    assert_eq!(mode & 0o777, 0o755);
    let unit = fs::read_to_string(root.join("systemd/pgoforge-mariadb.service")).unwrap();
    let pre = unit
        .find("ExecStartPre=/opt/mariadb-v4/bin/cpu-check")
        .expect(&unit);
    assert!(pre < unit.find("ExecStart=").unwrap(), "{unit}");
    let readme = fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        readme.contains("## The CPU it needs") && readme.contains("avx512f"),
        "{readme}"
    );

    let stand_in = |name: &str, level: CpuLevel, bare: bool| {
        let flags = format!("fpu sse sse2 {}", level.required_flags(&[]).join(" "));
        let p = t.path().join(name);
        fs::write(
            &p,
            if bare {
                flags.replace(' ', "\n")
            } else {
                format!("processor\t: 0\nmodel name\t: stand-in\nflags\t\t: {flags}\n")
            },
        )
        .unwrap();
        p
    };
    let v3 = stand_in("v3.cpuinfo", CpuLevel::V3, false);
    let v4_bare = stand_in("v4.flags", CpuLevel::V4, true);

    // The packaged check, as the unit runs it.
    let run_check = |cpuinfo: &Path| {
        Command::new(&check)
            .env("PGOFORGE_CPUINFO", cpuinfo)
            .output()
            .unwrap()
    };
    let out = run_check(&v3);
    assert_eq!(out.status.code(), Some(8));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("lacks avx512bw avx512cd avx512dq avx512f avx512vl"),
        "{err}"
    );
    assert_eq!(run_check(&v4_bare).status.code(), Some(0));

    // package verify: 8 on the lacking CPU (the server not started: it would crash), 0 where
    // the CPU has the level, 2 for a stand-in that is not there.
    let verify = |extra: &[&str]| {
        let mut args = vec!["package", "verify"];
        let p = pkg.display().to_string();
        args.push(&p);
        args.extend(extra);
        common::pgoforge(&args)
    };
    let v3s = v3.display().to_string();
    let r = verify(&["--cpu-flags", &v3s]);
    assert_eq!(r.code, 8, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stdout.contains("FAILED cpu") && r.stdout.contains("avx512vl"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("not tried: the server would die with SIGILL"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("this CPU cannot run it"), "{}", r.stdout);
    let r = verify(&[
        "--no-start",
        "--json",
        "--cpu-flags",
        &v4_bare.display().to_string(),
    ]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let cpu = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "cpu")
        .expect("a cpu check");
    assert_eq!(cpu["ok"], true, "{cpu}");
    let r = verify(&["--no-start", "--cpu-flags", "/nonexistent/cpuinfo"]);
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert!(r.stderr.contains("/nonexistent/cpuinfo"), "{}", r.stderr);

    // A damaged package is still exit 6, whatever the CPU: damage is the graver finding.
    let bin_in = root.join("bin/mariadbd");
    let mut bytes = fs::read(&bin_in).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 0xff;
    fs::write(&bin_in, bytes).unwrap();
    let r = common::pgoforge(&[
        "package",
        "verify",
        &root.display().to_string(),
        "--no-start",
        "--cpu-flags",
        &v3s,
    ]);
    assert_eq!(r.code, 6, "{}{}", r.stdout, r.stderr);
}
