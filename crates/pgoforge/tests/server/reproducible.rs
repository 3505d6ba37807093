//! Packages are reproducible: the same server packed twice — into another directory, a few
//! seconds later, from a staging tree made in another order of time — gives the same bytes, as a
//! tarball and as a .deb; the time of packing is beside the package, not in it.

use std::fs;

use crate::deploy::{deb, relabeled_server, tarball};

#[test]
fn the_same_build_packs_to_the_same_bytes_as_tarball_and_deb() {
    let t = tempfile::tempdir().unwrap();
    let bin = relabeled_server(t.path());
    let fits = String::from_utf8(
        std::process::Command::new("dpkg-query")
            .args(["-W", "-f", "${Version}", "mariadb-server-core"])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let (a, b) = (t.path().join("first"), t.path().join("much/later/second"));
    let ta = tarball(&bin, "mariadb-same", &fits, &a);
    // Another second: any time of packing inside the package would show.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let tb = tarball(&bin, "mariadb-same", &fits, &b);
    let bytes = |p: &std::path::Path| fs::read(p).unwrap();
    assert_eq!(
        bytes(&ta),
        bytes(&tb),
        "{} and {} differ",
        ta.display(),
        tb.display()
    );
    // The time of packing is kept beside it.
    let packing: serde_json::Value =
        serde_json::from_slice(&bytes(&a.join("mariadb-same.tar.zst.packing.json"))).unwrap();
    assert!(packing["packed_at"].as_u64().unwrap() > 1_763_632_800);
    // Inside: every entry dated the source's day, owned by root.
    let listing = std::process::Command::new("tar")
        .args(["--zstd", "-tvf"])
        .arg(&ta)
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&listing.stdout).to_string();
    assert!(
        listing
            .lines()
            .all(|l| l.contains("root/root") && l.contains("2025-11-20")),
        "{listing}"
    );
    // The .debs made from the two tarballs, in two directories, seconds apart.
    let da = deb(&ta, &a.join("deb"), &[]);
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let db = deb(&tb, &b.join("deb"), &[]);
    assert_eq!(
        bytes(&da),
        bytes(&db),
        "{} and {} differ",
        da.display(),
        db.display()
    );
}
