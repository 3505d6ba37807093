//! `pgoforge publish` (issue 71, item 1): the .deb published into a signed apt repository,
//! served over HTTP by nginx, used by a real apt on a throwaway copy of this machine
//! (tests/fixtures/deploy/publish-client.sh in isolated-root.sh): installed from it, upgraded
//! when a newer build of the same release is published (renumbered above the first), and
//! refused when a package or an index is tampered with or another key signs it.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::path::Path;
use std::process::Command;

use crate::common::{self, Ran};
use crate::deploy::{deb, in_isolated_root, relabeled_server, sh, tarball};

fn publish(debs: &[&Path], repo: &Path, keys: &Path) -> Ran {
    let mut args: Vec<String> = vec!["publish".into()];
    args.extend(debs.iter().map(|d| d.display().to_string()));
    args.extend([
        format!("--repo={}", repo.display()),
        format!("--key-home={}", keys.display()),
        "--url=http://127.0.0.1:0".into(),
        "--json".into(),
    ]);
    common::pgoforge(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Two .debs of one release: the same stand-in server packed under two names, so the second is
/// another build with the same version, which publish must number above the first.
fn two_builds(dir: &Path, fits: &str) -> (std::path::PathBuf, std::path::PathBuf) {
    let pkg = dir.join("pkg");
    fs::create_dir_all(&pkg).unwrap();
    let bin = relabeled_server(&pkg);
    let a = tarball(&bin, "mariadb-pub-a", fits, &pkg.join("a"));
    let b = tarball(&bin, "mariadb-pub-b", fits, &pkg.join("b"));
    (deb(&a, &pkg.join("a"), &[]), deb(&b, &pkg.join("b"), &[]))
}

#[test]
fn a_published_repository_installs_upgrades_and_refuses_tampering() {
    assert!(
        pgoforge::infra::is_root(),
        "the publish test installs packages in an isolated root: run it as root"
    );
    let _packages = common::machine_packages();
    let fits = sh("dpkg-query -W -f '${Version}' mariadb-server-core");
    let t = tempfile::tempdir().unwrap();
    let dir = t.path();
    let (first, second) = two_builds(dir, &fits);
    let (repo, keys) = (dir.join("repo"), dir.join("keys"));

    let r = publish(&[&first], &repo, &keys);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    let p: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(p["entries"][0]["outcome"], "added");
    assert_eq!(p["key_made"], true);
    let fpr = p["key_fingerprint"].as_str().unwrap().to_string();
    // The Release is signed, and by this key (gpgv with only the exported key).
    let gpgv = Command::new("gpgv")
        .arg("--keyring")
        .arg(repo.join("pgoforge-archive-keyring.gpg"))
        .arg(repo.join("dists/bookworm-pgoforge/InRelease"))
        .output()
        .unwrap();
    assert!(gpgv.status.success(), "{gpgv:?}");
    let release = fs::read_to_string(repo.join("dists/bookworm-pgoforge/Release")).unwrap();
    assert!(release.contains(&format!("Signed-By: {fpr}")), "{release}");
    assert!(release.contains("Acquire-By-Hash: yes"));
    // Idempotent: the same file again changes nothing.
    let again = publish(&[&first], &repo, &keys);
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        again.stdout.contains("already published"),
        "{}",
        again.stdout
    );
    // Not a package: refused (usage), naming the file; the repository unchanged.
    let junk = dir.join("junk.deb");
    fs::write(&junk, "not a deb").unwrap();
    let bad = publish(&[&junk], &repo, &keys);
    assert_eq!(bad.code, 2, "{}", bad.stderr);
    assert!(
        bad.stderr.contains("junk.deb is not a Debian package"),
        "{}",
        bad.stderr
    );
    let pool = fs::read_dir(repo.join("pool/main/m/mariadb-server-pgo"))
        .unwrap()
        .count();
    assert_eq!(pool, 1);

    // The host's side, as publish printed it, with the port nginx serves on.
    let port = free_port();
    let sources = dir.join("pgoforge.sources");
    fs::write(
        &sources,
        p["sources_deb822"]
            .as_str()
            .unwrap()
            .replace("127.0.0.1:0", &format!("127.0.0.1:{port}")),
    )
    .unwrap();
    let run = dir.join("client");
    fs::create_dir(&run).unwrap();
    let other = dir.join("other-keys");
    let (seen, log): (BTreeMap<String, String>, String) = in_isolated_root(
        dir,
        &run,
        "publish-client.sh",
        &[
            OsStr::new(env!("CARGO_BIN_EXE_pgoforge")),
            repo.as_os_str(),
            OsStr::new(&port.to_string()),
            keys.as_os_str(),
            sources.as_os_str(),
            second.as_os_str(),
            other.as_os_str(),
        ],
    );
    let at = |k: &str| seen.get(k).cloned().unwrap_or_default();
    let ctx = format!("{seen:#?}\n{log}");
    assert_eq!(at("nginx_exit"), "0", "{ctx}");
    assert_eq!(at("key_fingerprint"), fpr, "{ctx}");
    assert_eq!(at("first_update_errors"), "0", "{ctx}");
    let v1 = format!("{fits}+pgoforge+pgo+lto.01234567");
    assert_eq!(at("first_candidate"), v1, "{ctx}");
    assert_ne!(at("first_from_repo"), "0", "{ctx}");
    assert_eq!(at("install_exit"), "0", "{ctx}");
    assert_eq!(at("installed"), format!("{v1} installed"), "{ctx}");
    assert_eq!(at("diverted"), "mariadb-server-pgo", "{ctx}");
    // The second build of the release, numbered above the first, is what the upgrade installs.
    let v2 = format!("{fits}+pgoforge.2+pgo+lto.01234567");
    assert_eq!(at("publish_next_exit"), "0", "{ctx}");
    assert_eq!(at("second_candidate"), v2, "{ctx}");
    assert_eq!(at("upgrade_exit"), "0", "{ctx}");
    assert_eq!(at("upgraded"), format!("{v2} installed"), "{ctx}");
    // Tampering is refused.
    assert_ne!(at("tampered_deb_exit"), "0", "{ctx}");
    assert!(!at("tampered_deb_says").is_empty(), "{ctx}");
    assert!(at("tampered_index_update_errors") != "0", "{ctx}");
    assert_eq!(at("tampered_index_from_repo"), "0", "{ctx}");
    assert_eq!(at("tampered_index_intruder"), "0", "{ctx}");
    assert_eq!(at("publish_other_key_exit"), "0", "{ctx}");
    assert!(at("other_key_update_errors") != "0", "{ctx}");
    assert!(
        at("other_key_update_says").contains("NO_PUBKEY")
            || at("other_key_update_says").contains("not signed"),
        "{ctx}"
    );
    assert_eq!(at("other_key_from_repo"), "0", "{ctx}");
    // Over HTTP, from nginx.
    assert!(
        at("http_inrelease").parse::<u32>().unwrap_or(0) >= 4,
        "{ctx}"
    );
}
