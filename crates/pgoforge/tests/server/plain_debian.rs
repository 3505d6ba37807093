//! The package tarball's README on a plain Debian 12 that never had MariaDB (issue 70, item 2:
//! the README names what such a host lacks). The stand-in server (Debian's mariadbd, relabeled)
//! loads the libraries a Debian-shaped build loads — liburing, libaio, libnuma, libsystemd, …;
//! packed on this machine, its manifest names their Debian packages, and step 2 installs them.
//! Followed in a chroot of debootstrap's minbase (tests/common/plain_debian.rs; about 40 s to
//! make the tree once, cached in /var/tmp/pgoforge-test-bookworm/, then about 15 s).

use std::fs;

use crate::common::plain_debian::follow_step_2;
use crate::deploy::{relabeled_server, sh as host, tarball};

#[test]
fn step_2_of_the_readme_installs_what_a_plain_debian_lacks_for_the_server() {
    assert!(
        pgoforge::infra::is_root(),
        "this test mounts an overlay and chroots: run it as root"
    );
    let fits = host("dpkg-query -W -f '${Version}' mariadb-server-core");
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    fs::create_dir(dir.join("pkg")).unwrap();
    let bin = relabeled_server(&dir.join("pkg"));
    let name = "mariadb-plain-pgo+lto-clang-22";
    let pkg = tarball(&bin, name, &fits, &dir.join("pkg"));
    let read = |file: &str| host(&format!("tar --zstd -xOf {} {name}/{file}", pkg.display()));
    let manifest: serde_json::Value = serde_json::from_str(&read("manifest.json")).unwrap();
    let named: Vec<&str> = manifest["runtime_packages"]
        .as_array()
        .unwrap_or_else(|| panic!("the manifest names runtime packages: {manifest}"))
        .iter()
        .filter_map(|p| p.as_str())
        .collect();
    // The libraries Debian's mariadbd loads come from these packages; libc6 is on every Debian.
    for p in ["liburing2", "libaio1", "libnuma1"] {
        assert!(named.contains(&p), "{p} in {named:?}");
    }
    assert!(!named.contains(&"libc6"), "{named:?}");
    let readme = read("README.md");

    let f = follow_step_2(&pkg, name, "mariadbd", &readme, &dir.join("plain"));
    assert!(
        f.missing_before.iter().any(|l| l.contains("liburing")),
        "a plain Debian 12 lacks liburing before step 2:\n{}",
        f.log
    );
    assert!(
        f.missing_after.is_empty(),
        "after step 2 nothing is missing:\n{}",
        f.log
    );
    assert!(
        f.version.contains("-pgo"),
        "the server runs after step 2:\n{}",
        f.log
    );
}
