//! Debian's own server of a release, as `run` fetches it to benchmark beside the variants: the
//! binary package downloaded from the machine's mirror through pgoforge's private apt state and
//! unpacked into the work dir — nothing installed, the installed server untouched — and the
//! unpacked mariadbd runs from there (its error messages and character sets found beside it).

use std::process::Command;

use pgoforge::source::distro::DistroServer;
use pgoforge::source::release::parse_madison;

fn sh(cmd: &str) -> String {
    let out = Command::new("sh").args(["-c", cmd]).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn debians_server_of_a_release_is_fetched_unpacked_and_runs_from_the_work_dir() {
    let t = tempfile::tempdir().unwrap();
    let work = t.path().join("work");
    let installed_sha = sh("sha256sum /usr/sbin/mariadbd");
    // The mirror may list a release whose files it does not serve (2026-12-04: 10.11.19's
    // source); the run asks for the release it builds, here each listed one newest first until
    // one downloads: at least one must.
    let listed = parse_madison(
        &sh("apt-cache madison mariadb-server-core"),
        "mariadb-server-core",
    );
    assert!(
        !listed.is_empty(),
        "apt's lists name no mariadb-server-core"
    );
    let mut errors = Vec::new();
    let (d, f) = listed
        .iter()
        .find_map(|r| {
            let d = DistroServer {
                package: "mariadb-server-core".into(),
                version: r.version.clone(),
                suite: "bookworm".into(),
                with: Vec::new(),
            };
            match d.fetch(&work) {
                Ok(f) => Some((d, f)),
                Err(e) => {
                    errors.push(format!("{e:#}"));
                    None
                }
            }
        })
        .unwrap_or_else(|| panic!("no listed release downloaded: {errors:?}"));
    assert!(
        f.binary.starts_with(work.join("distro")),
        "{}",
        f.binary.display()
    );
    assert_eq!(f.deb_sha256.len(), 64);
    let upstream = d
        .version
        .split_once(':')
        .map_or(d.version.as_str(), |x| x.1);
    let upstream = upstream.split('-').next().unwrap();
    let v = Command::new(&f.binary).arg("--version").output().unwrap();
    let v = String::from_utf8_lossy(&v.stdout);
    assert!(v.contains(&format!("{upstream}-MariaDB")), "{v}");
    // Its error messages and character sets are the unpacked ones, beside it.
    let layout = pgoforge::server::Layout::discover(&f.binary, None, None);
    assert!(layout.lc_messages_dir.is_some_and(|d| d.starts_with(&work)));
    // Fetched once: the second time is the same tree, nothing downloaded.
    let again = d.fetch(&work).unwrap();
    assert_eq!(again, f);
    // A run on MyRocks unpacks Debian's plugin package of the same release beside the server,
    // in a tree of its own; the server's layout finds the plugin there.
    let with_rocksdb = DistroServer {
        with: vec!["mariadb-plugin-rocksdb".into()],
        ..d.clone()
    };
    let fr = with_rocksdb.fetch(&work).unwrap();
    assert_ne!(with_rocksdb.dir(&work), d.dir(&work));
    let layout = pgoforge::server::Layout::discover(&fr.binary, None, None);
    let dir = layout
        .engine_plugin_dir(pgoforge::server::config::Engine::RocksDb, &fr.binary)
        .unwrap()
        .expect("MyRocks is a plugin");
    assert!(dir.starts_with(work.join("distro")), "{}", dir.display());
    assert!(dir.join("ha_rocksdb.so").is_file());
    // The plain server's tree has no plugin: it was not unpacked there.
    let plain = pgoforge::server::Layout::discover(&f.binary, None, None);
    assert!(plain
        .engine_plugin_dir(pgoforge::server::config::Engine::RocksDb, &f.binary)
        .is_err());
    // A release the mirror does not list: refused, naming it.
    let bogus = DistroServer {
        version: "1:10.11.0-0+deb12u99".into(),
        ..d
    };
    let e = format!("{:#}", bogus.fetch(&work).unwrap_err());
    assert!(
        e.contains("mariadb-server-core 1:10.11.0-0+deb12u99 could not be downloaded"),
        "{e}"
    );
    assert!(!bogus.dir(&work).exists());
    // The installed server is untouched.
    assert_eq!(sh("sha256sum /usr/sbin/mariadbd"), installed_sha);
}
