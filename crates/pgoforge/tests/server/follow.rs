//! `pgoforge follow` and `publish` as a timer and a user meet them without a build (issue 71,
//! items 2 and 5; a whole cycle builds a server: docs/results/follow-mariadb-10.11-next-release/
//! measured one): the published profiles found in the repository, the real mirror asked for
//! the newest release it serves, a release already published a no-op with one status line and
//! a JSON status, a second cycle refused while one runs (exit 75), and the bad inputs — a
//! directory that is not a repository, a repository with no published profile, a key that
//! cannot sign, a package for another Debian release — each refused with exit 2 and the
//! repository left byte for byte as it was.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use pgoforge::package::sidecar::{RebuildRecord, Toolchain};
use pgoforge::recipe::Recipe;
use pgoforge::source::release::ReleaseCheck;

use crate::common::{self, Ran};
use crate::deploy::{relabeled_server, tarball};

fn run(args: &[String]) -> Ran {
    common::pgoforge(&args.iter().map(String::as_str).collect::<Vec<_>>())
}

/// The release of the default recipe the real mirror serves now (what `run` would build).
fn newest_served() -> String {
    let w = tempfile::tempdir().unwrap();
    let r = run(&[
        "run".into(),
        "--plan".into(),
        format!("--work-dir={}", w.path().display()),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let p: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let c: ReleaseCheck = serde_json::from_value(p["source_release"].clone()).unwrap();
    assert!(c.unchecked.is_none(), "the mirror answers: {c:?}");
    c.building
}

/// A rebuild sidecar beside `tarball` carrying the default recipe pinned at `fits` (no
/// profiles: a cycle with nothing to build never opens them).
fn sidecar_beside(tarball: &Path, fits: &str) -> PathBuf {
    let name = tarball
        .file_name()
        .unwrap()
        .to_string_lossy()
        .trim_end_matches(".tar.zst")
        .to_string();
    let stage = tempfile::tempdir().unwrap();
    let root = stage.path().join(format!("{name}.rebuild"));
    fs::create_dir_all(&root).unwrap();
    let mut recipe = Recipe::load("mariadb-10.11").unwrap();
    if let pgoforge::recipe::SourceSpec::Debian { version, .. } = &mut recipe.source {
        *version = fits.to_string();
    }
    let record = RebuildRecord {
        package: name.clone(),
        binary: "bin/mariadbd".into(),
        binary_sha256: String::new(),
        manifest_sha256: String::new(),
        recipe: recipe.name.clone(),
        source_origin: format!("Debian source package mariadb {fits} (bookworm)"),
        source_hash: "0".repeat(64),
        debian_source: None,
        variant: "pgo+lto".into(),
        build_key: "0123456789abcdef".into(),
        bolted: false,
        bolt_flags: Vec::new(),
        toolchain: Toolchain {
            compiler: "clang-22".into(),
            compiler_version: "Debian clang version 22".into(),
            cc: "/usr/bin/clang-22".into(),
            lld: None,
            binutils: "GNU ld".into(),
            bolt: None,
        },
        profiles: Vec::new(),
        path_neutral: true,
        build_dir: String::new(),
    };
    fs::write(
        root.join("rebuild.json"),
        serde_json::to_string_pretty(&record).unwrap(),
    )
    .unwrap();
    fs::write(root.join("recipe.toml"), toml::to_string(&recipe).unwrap()).unwrap();
    let sums = Command::new("sh")
        .arg("-c")
        .arg("sha256sum rebuild.json recipe.toml > SHA256SUMS")
        .current_dir(&root)
        .status()
        .unwrap();
    assert!(sums.success());
    let out = pgoforge::package::sidecar::beside(tarball);
    pgoforge::package::reproducible::write_tar_zst(
        &root,
        &format!("{name}.rebuild"),
        1_763_632_800,
        &out,
    )
    .unwrap();
    out
}

/// The installed mariadb-server-core's Debian version.
fn installed() -> String {
    crate::deploy::sh("dpkg-query -W -f '${Version}' mariadb-server-core")
}

/// Every file under `dir` with its hash: what "left as it was" compares (the lock file, which
/// names its last holder, aside).
fn snapshot(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut v: Vec<(PathBuf, String)> = pgoforge::infra::fs::files_under(dir, "")
        .unwrap_or_default()
        .into_iter()
        .filter(|f| !f.ends_with(".pgoforge.lock"))
        .map(|f| (f.clone(), pgoforge::infra::fs::sha256_file(&f).unwrap()))
        .collect();
    v.sort();
    v
}

fn publish(inputs: &[&Path], repo: &Path, keys: &Path, extra: &[&str]) -> Ran {
    let mut a: Vec<String> = vec!["publish".into()];
    a.extend(inputs.iter().map(|p| p.display().to_string()));
    a.push(format!("--repo={}", repo.display()));
    if !extra.iter().any(|x| x.starts_with("--key")) {
        a.push(format!("--key-home={}", keys.display()));
    }
    a.extend(extra.iter().map(|s| s.to_string()));
    run(&a)
}

fn follow(repo: &Path, work: &Path, keys: &Path) -> Ran {
    run(&[
        "follow".into(),
        format!("--repo={}", repo.display()),
        format!("--work-dir={}", work.display()),
        format!("--key-home={}", keys.display()),
        "--json".into(),
    ])
}

#[test]
fn follow_finds_the_published_profile_does_nothing_when_up_to_date_and_refuses_bad_input() {
    let t = tempfile::tempdir().unwrap();
    let keys = t.path().join("keys");
    let work = t.path().join("follow");
    // The stand-in package is Debian's installed server relabeled, so it fits the installed
    // release — at least the one the mirror serves (its source lags its binaries).
    let newest = newest_served();
    let fits = installed();
    assert_ne!(
        pgoforge::source::release::compare(&fits, &newest),
        std::cmp::Ordering::Less,
        "the installed server ({fits}) is not older than the mirror's newest source ({newest})"
    );
    let bin = relabeled_server(t.path());

    // Not a repository: refused, the directory untouched, no status written.
    let stranger = t.path().join("stranger");
    fs::create_dir_all(&stranger).unwrap();
    fs::write(stranger.join("notes.txt"), "mine").unwrap();
    let r = follow(&stranger, &work, &keys);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("is not a repository"), "{}", r.stderr);
    assert!(!work.join("follow-status.json").exists());

    // A repository holding only a .deb: no profile to build from.
    let plain = tarball(&bin, "mariadb-follow-deb", &fits, &t.path().join("deb"));
    let deb = crate::deploy::deb(&plain, &t.path().join("deb"), &[]);
    let debs_only = t.path().join("debs-only");
    let p = publish(&[&deb], &debs_only, &keys, &[]);
    assert_eq!(p.code, 0, "{}", p.stderr);
    let r = follow(&debs_only, &work, &keys);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("no published profile") || r.stderr.contains("without its tarball"),
        "{}",
        r.stderr
    );

    // The tarball with its sidecar: publish keeps the profile beside the pool.
    let repo = t.path().join("repo");
    let pkg = tarball(&bin, "mariadb-follow", &fits, &t.path().join("pkg"));
    sidecar_beside(&pkg, &fits);
    let p = publish(&[&pkg], &repo, &keys, &["--json"]);
    assert_eq!(p.code, 0, "{}", p.stderr);
    let recorded = fs::read_to_string(repo.join("profiles/published.json")).unwrap();
    let recorded: serde_json::Value = serde_json::from_str(&recorded).unwrap();
    assert_eq!(recorded[0]["fits"], fits.as_str(), "{recorded}");
    let side = recorded[0]["sidecar"].as_str().unwrap();
    assert_eq!(
        pgoforge::infra::fs::sha256_file(&repo.join("profiles").join(side)).unwrap(),
        pgoforge::infra::fs::sha256_file(&pgoforge::package::sidecar::beside(&pkg)).unwrap()
    );

    // Up to date: nothing built, exit 0, one line, the status and its history.
    let before = snapshot(&repo);
    for n in 1..=2 {
        let r = follow(&repo, &work, &keys);
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        let st: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
        assert_eq!(st["outcome"], "up-to-date", "{st}");
        assert_eq!(st["newest"], newest.as_str());
        assert_eq!(st["published_before"], fits.as_str());
        assert!(
            r.stderr
                .lines()
                .any(|l| l.starts_with("pgoforge follow: up-to-date: ")),
            "{}",
            r.stderr
        );
        let saved: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(work.join("follow-status.json")).unwrap())
                .unwrap();
        assert_eq!(saved["outcome"], "up-to-date");
        let history = fs::read_to_string(work.join("follow-history.jsonl")).unwrap();
        assert_eq!(history.lines().count(), n, "{history}");
        assert!(!work.join("run").exists(), "nothing was built");
    }
    assert_eq!(
        snapshot(&repo),
        before,
        "a no-op cycle leaves the repository as it was"
    );

    // One cycle at a time: while another holds the work dir, exit 75 and nothing recorded.
    {
        let _held = pgoforge::infra::lock::WorkLock::acquire(&work).unwrap();
        let r = follow(&repo, &work, &keys);
        assert_eq!(r.code, 75, "{}", r.stderr);
        assert!(r.stderr.contains("another follow cycle"), "{}", r.stderr);
    }
    let history = fs::read_to_string(work.join("follow-history.jsonl")).unwrap();
    assert_eq!(history.lines().count(), 2);
}

#[test]
fn publish_refuses_a_stranger_directory_a_key_that_cannot_sign_and_another_release() {
    let t = tempfile::tempdir().unwrap();
    let keys = t.path().join("keys");
    let bin = relabeled_server(t.path());
    let fits = installed();
    let fits = fits.as_str();
    let pkg = tarball(&bin, "mariadb-bad", fits, &t.path().join("pkg"));

    // A directory that is somebody else's: nothing written into it.
    let stranger = t.path().join("stranger");
    fs::create_dir_all(&stranger).unwrap();
    fs::write(stranger.join("index.html"), "a web site").unwrap();
    let before = snapshot(&stranger);
    let r = publish(&[&pkg], &stranger, &keys, &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("not a pgoforge repository"),
        "{}",
        r.stderr
    );
    assert_eq!(snapshot(&stranger), before);
    let file = t.path().join("a-file");
    fs::write(&file, "x").unwrap();
    let r = publish(&[&pkg], &file, &keys, &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("is a file"), "{}", r.stderr);

    // A good repository, then a key that cannot sign (a passphrase and no agent to ask).
    let repo = t.path().join("repo");
    let r = publish(&[&pkg], &repo, &keys, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let before = snapshot(&repo);
    let gnupg = t.path().join("gnupg");
    fs::create_dir_all(&gnupg).unwrap();
    let made = Command::new("gpg")
        .args(["--batch", "--homedir"])
        .arg(&gnupg)
        .args([
            "--passphrase",
            "secret",
            "--pinentry-mode",
            "loopback",
            "--quick-generate-key",
            "locked@pgoforge.invalid",
            "ed25519",
            "sign",
            "never",
        ])
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let other = tarball(&bin, "mariadb-bad-2", fits, &t.path().join("pkg2"));
    let r = common::pgoforge_env(
        &[
            "publish",
            other.to_str().unwrap(),
            &format!("--repo={}", repo.display()),
            "--key=locked@pgoforge.invalid",
        ],
        &[("GNUPGHOME", gnupg.as_path())],
    );
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("cannot sign"), "{}", r.stderr);
    assert_eq!(snapshot(&repo), before, "nothing published");

    // A package built for Debian 13 into a bookworm suite.
    // The same server version, as if built for Debian 13.
    let trixie = tarball(
        &bin,
        "mariadb-trixie",
        &fits.replace("+deb12u", "+deb13u"),
        &t.path().join("t"),
    );
    let r = publish(&[&trixie], &repo, &keys, &[]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("built for Debian trixie")
            && r.stderr.contains("--suite trixie-pgoforge"),
        "{}",
        r.stderr
    );
    assert_eq!(snapshot(&repo), before, "nothing published");
}
