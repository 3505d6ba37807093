//! `pgoforge publish`: the optimized packages as a signed apt repository that hosts add like any
//! other (`deb [signed-by=…] URL SUITE main`), so a fleet installs and upgrades them with apt and
//! unattended-upgrades. The files are Debian's: a pool of .debs, `Packages` and `Release` made by
//! apt-ftparchive, `InRelease` signed by gpg (index.rs); the key is the user's or one pgoforge
//! makes and keeps outside the repository (key.rs). The directory is the whole state — no
//! database beside it (reprepro's, aptly's) to lose or to disagree with it — so any web server
//! serves it and a copy of it is a backup. One publish at a time per repository (a lock).
//!
//! Newest build wins: a .deb built again for a release the repository already has (another
//! training, another profile) would otherwise sort by its profile's hash, at random; such a .deb
//! is published renumbered (`+pgoforge.2+…`, `+pgoforge.3+…`), above every earlier build of that
//! release, so apt upgrades to it. The bytes of a published file never change: publishing one
//! already there is a no-op, and another file under a published name is refused.

pub mod index;
pub mod key;
pub mod published;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde::Serialize;

use crate::infra::fs::sha256_file;

/// The public key's file at the repository's root, for hosts to fetch and check.
pub const KEY_FILE: &str = "pgoforge-archive-keyring.gpg";

/// Which key signs.
#[derive(Clone, Copy)]
pub enum KeyChoice<'a> {
    /// A secret key of the user's GnuPG keyring, by fingerprint or user id.
    Named(&'a str),
    /// pgoforge's own key in this GnuPG home (made there when missing).
    Own(&'a Path),
}

pub struct PublishRequest<'a> {
    pub repo: &'a Path,
    /// .debs, or package tarballs (their .deb is made first).
    pub inputs: &'a [PathBuf],
    pub suite: &'a str,
    pub key: KeyChoice<'a>,
    /// Where hosts reach the repository [file://REPO].
    pub url: Option<&'a str>,
}

/// What one input became.
#[derive(Debug, Serialize)]
pub struct Entry {
    pub package: String,
    pub version: String,
    pub architecture: String,
    /// Relative to the repository's root.
    pub file: PathBuf,
    pub sha256: String,
    /// `added`, `already published`, or `renumbered from VERSION`.
    pub outcome: String,
}

#[derive(Debug, Serialize)]
pub struct Published {
    pub repo: PathBuf,
    pub suite: String,
    pub url: String,
    pub key_fingerprint: String,
    /// Where the secret key is (None: the user's own keyring).
    pub key_home: Option<PathBuf>,
    pub key_made: bool,
    pub entries: Vec<Entry>,
    /// What a host adds: one-line and deb822 forms.
    pub sources_line: String,
    pub sources_deb822: String,
}

/// A .deb's control fields.
#[derive(Clone, Debug)]
struct Control {
    package: String,
    version: String,
    architecture: String,
}

fn control(deb: &Path) -> Result<Control> {
    let out = Command::new("dpkg-deb")
        .arg("--field")
        .arg(deb)
        .args(["Package", "Version", "Architecture"])
        .output()
        .context("running dpkg-deb (part of dpkg)")?;
    if !out.status.success() {
        crate::usage!(
            "{} is not a Debian package: {} (give .debs made by `pgoforge package --deb` or \
             `package deb`, or package tarballs)",
            deb.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}: ")))
            .map(str::trim)
            .map(String::from)
            .with_context(|| format!("{} has no {name} field", deb.display()))
    };
    Ok(Control {
        package: field("Package")?,
        version: field("Version")?,
        architecture: field("Architecture")?,
    })
}

/// `pool/main/m/mariadb-server-pgo/mariadb-server-pgo_10.11.18-0+deb12u1+…_amd64.deb`: Debian's
/// pool layout, the epoch left out of the name as Debian does.
fn pool_path(c: &Control) -> PathBuf {
    let version = c
        .version
        .split_once(':')
        .map_or(c.version.as_str(), |(_, v)| v);
    let first = c.package.chars().next().unwrap_or('_').to_string();
    PathBuf::from("pool")
        .join(index::COMPONENT)
        .join(first)
        .join(&c.package)
        .join(format!("{}_{}_{}.deb", c.package, version, c.architecture))
}

/// Whether dpkg sorts `a` after `b`.
fn newer(a: &str, b: &str) -> Result<bool> {
    Ok(Command::new("dpkg")
        .args(["--compare-versions", a, "gt", b])
        .status()
        .context("running dpkg --compare-versions")?
        .success())
}

/// `1:10.11.18-0+deb12u1+pgoforge.2+pgo+lto.f3a38cac` → (`1:10.11.18-0+deb12u1`, 2,
/// `pgo+lto.f3a38cac`); an unnumbered build is 1. None for a version pgoforge did not make.
/// The number follows a `.`, which dpkg sorts after the `+` of an unnumbered build (and after
/// any letter), so build 2 sorts above build 1 whatever their variants and hashes.
fn build_number(version: &str) -> Option<(&str, u32, &str)> {
    let (fits, rest) = version.split_once("+pgoforge")?;
    if let Some(tail) = rest.strip_prefix('+') {
        return Some((fits, 1, tail));
    }
    let (n, tail) = rest.strip_prefix('.')?.split_once('+')?;
    Some((fits, n.parse().ok()?, tail))
}

/// The .debs already in the pool for `package`, with their control fields.
fn published(repo: &Path, package: &str) -> Result<Vec<(PathBuf, Control)>> {
    let first = package.chars().next().unwrap_or('_').to_string();
    let dir = repo
        .join("pool")
        .join(index::COMPONENT)
        .join(first)
        .join(package);
    let mut out = Vec::new();
    if let Ok(rd) = fs::read_dir(&dir) {
        for e in rd {
            let p = e?.path();
            if p.extension().is_some_and(|x| x == "deb") {
                let c = control(&p)?;
                out.push((p, c));
            }
        }
    }
    Ok(out)
}

/// The version a new build of an already published release gets: one above the highest build
/// number of that release in the repository; None when `c` already sorts above all of them.
fn renumbered(c: &Control, earlier: &[(PathBuf, Control)]) -> Result<Option<String>> {
    let Some((fits, _, tail)) = build_number(&c.version) else {
        return Ok(None);
    };
    let mut top = 0;
    let mut above_all = true;
    for (_, e) in earlier
        .iter()
        .filter(|(_, e)| e.architecture == c.architecture)
    {
        if let Some((_, n, _)) = build_number(&e.version).filter(|(f, ..)| *f == fits) {
            top = top.max(n);
            if !newer(&c.version, &e.version)? {
                above_all = false;
            }
        }
    }
    Ok((!above_all).then(|| format!("{fits}+pgoforge.{}+{tail}", top + 1)))
}

/// Repacks `deb` with another Version (the files and scripts unchanged) into `out`.
fn repack(deb: &Path, version: &str, scratch: &Path, out: &Path) -> Result<()> {
    let tree = scratch.join("repack");
    let _ = fs::remove_dir_all(&tree);
    use crate::infra::runner::run_tool;
    run_tool(
        Command::new("dpkg-deb").arg("-R").arg(deb).arg(&tree),
        "dpkg-deb -R",
        None,
    )?;
    let cf = tree.join("DEBIAN/control");
    let text = fs::read_to_string(&cf)?;
    let text: String = text
        .lines()
        .map(|l| {
            if l.starts_with("Version: ") {
                format!("Version: {version}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    fs::write(&cf, text)?;
    run_tool(
        Command::new("dpkg-deb")
            .args(["--root-owner-group", "-b"])
            .arg(&tree)
            .arg(out),
        "dpkg-deb -b",
        None,
    )?;
    Ok(())
}

/// The .deb of an input: itself, or the one made from a package tarball in `scratch`.
fn deb_of(input: &Path, scratch: &Path) -> Result<PathBuf> {
    if !input.is_file() {
        crate::usage!(
            "{} does not exist or is not a file (give .debs or package tarballs)",
            input.display()
        );
    }
    if input.to_string_lossy().ends_with(".tar.zst") {
        let d = crate::package::deb::build(&crate::package::deb::DebRequest {
            tarball: input,
            out_dir: scratch,
            for_version: None,
            maintainer: None,
        })?;
        return Ok(d.path);
    }
    Ok(input.to_path_buf())
}

/// An input whose file is in the pool already (the same bytes): nothing added.
const ALREADY: &str = "already published";

/// The Debian version of the server a pgoforge .deb fits (`1:10.11.18-0+deb12u1` of
/// `1:10.11.18-0+deb12u1+pgoforge.2+…`); another package's version as it is.
fn fits_of(version: &str) -> &str {
    build_number(version).map_or(version, |(f, ..)| f)
}

/// Puts one .deb into the pool (renumbered when it would not sort above an earlier build of
/// its release); what became of it.
fn add(repo: &Path, deb: &Path, c: Control, scratch: &Path) -> Result<Entry> {
    let sha = sha256_file(deb)?;
    let earlier = published(repo, &c.package)?;
    if let Some((p, e)) = earlier
        .iter()
        .find(|(p, _)| sha256_file(p).is_ok_and(|s| s == sha))
    {
        return Ok(Entry {
            package: e.package.clone(),
            version: e.version.clone(),
            architecture: e.architecture.clone(),
            file: p.strip_prefix(repo)?.to_path_buf(),
            sha256: sha,
            outcome: ALREADY.into(),
        });
    }
    let (c, from, sha) = match renumbered(&c, &earlier)? {
        Some(v) => {
            let out = scratch.join("renumbered.deb");
            repack(deb, &v, scratch, &out)?;
            let sha = sha256_file(&out)?;
            let old = c.version.clone();
            let c = Control { version: v, ..c };
            (c, Some((old, out)), sha)
        }
        None => (c, None, sha),
    };
    let rel = pool_path(&c);
    let dest = repo.join(&rel);
    if dest.exists() {
        crate::usage!(
            "{} is already published with other contents ({}): a published file never changes \
             (hosts hold its checksum); build it again under another version",
            rel.display(),
            sha256_file(&dest)?
        );
    }
    if let Some(d) = dest.parent() {
        fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
    }
    let src = from.as_ref().map_or(deb, |(_, p)| p.as_path());
    let tmp = dest.with_extension("deb.tmp");
    fs::copy(src, &tmp).with_context(|| format!("copying {} into the pool", src.display()))?;
    fs::rename(&tmp, &dest)?;
    Ok(Entry {
        package: c.package,
        version: c.version,
        architecture: c.architecture,
        file: rel,
        sha256: sha,
        outcome: match from {
            Some((old, _)) => format!("renumbered from {old}"),
            None => "added".into(),
        },
    })
}

/// The architectures the pool's packages are for (`all` counts as amd64's), read from the
/// names [`pool_path`] gave them (`…_ARCH.deb`): no package is opened again.
fn architectures(repo: &Path) -> Result<Vec<String>> {
    let mut archs = std::collections::BTreeSet::new();
    for f in crate::infra::fs::files_under(&repo.join("pool"), "deb")? {
        let stem = f
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        if let Some((_, a)) = stem.rsplit_once('_') {
            archs.insert(if a == "all" {
                "amd64".to_string()
            } else {
                a.to_string()
            });
        }
    }
    Ok(archs.into_iter().collect())
}

/// A repository's directory: missing, empty, or one pgoforge made (its pool or its key there);
/// anything else is refused before a file is written — it is somebody else's directory.
fn check_repo(repo: &Path) -> Result<()> {
    let Ok(meta) = fs::metadata(repo) else {
        return Ok(());
    };
    if !meta.is_dir() {
        crate::usage!(
            "--repo {} is a file, not a repository directory: give a new or empty directory, or \
             one `pgoforge publish` made",
            repo.display()
        );
    }
    let mut names = fs::read_dir(repo)
        .with_context(|| format!("reading {}", repo.display()))?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned());
    let ours = repo.join("pool").is_dir() || repo.join(KEY_FILE).is_file();
    if let (false, Some(first)) = (ours, names.next()) {
        crate::usage!(
            "--repo {} is not a pgoforge repository (no pool/ and no {KEY_FILE}, but files such \
             as {first}): nothing was written; give a new or empty directory, or one `pgoforge \
             publish` made",
            repo.display()
        );
    }
    Ok(())
}

/// The Debian release a server version was built for (`…+deb12u1` → bookworm), when it says.
fn debian_release(version: &str) -> Option<&'static str> {
    let n: u32 = version.split(['+', '~']).skip(1).find_map(|part| {
        let digits = part.strip_prefix("deb")?;
        let (n, rest) = digits.split_at(digits.find(|c: char| !c.is_ascii_digit())?);
        rest.starts_with('u').then(|| n.parse().ok())?
    })?;
    CODENAMES.iter().find(|(v, _)| *v == n).map(|(_, c)| *c)
}

const CODENAMES: [(u32, &str); 5] = [
    (10, "buster"),
    (11, "bullseye"),
    (12, "bookworm"),
    (13, "trixie"),
    (14, "forky"),
];

/// A package built for one Debian release published into a suite named for another is refused:
/// hosts of that release would install a server linked against libraries they lack.
fn check_release(c: &Control, input: &Path, suite: &str) -> Result<()> {
    let fits = fits_of(&c.version);
    let suite_release = CODENAMES
        .iter()
        .map(|(_, n)| *n)
        .find(|n| suite == *n || suite.starts_with(&format!("{n}-")));
    if let (Some(built), Some(repo)) = (debian_release(fits), suite_release) {
        if built != repo {
            crate::usage!(
                "{} is built for Debian {built} (it fits {fits}), but the suite {suite} is for \
                 {repo}: nothing was published; publish it into a suite of its own release \
                 (--suite {built}-pgoforge)",
                input.display()
            );
        }
    }
    Ok(())
}

fn check_suite(suite: &str) -> Result<()> {
    if suite.is_empty()
        || !suite
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    {
        crate::usage!("--suite '{suite}': use letters, digits, '-', '_' and '.' only");
    }
    Ok(())
}

/// Publishes the inputs into the repository and signs its indices.
pub fn publish(req: &PublishRequest) -> Result<Published> {
    check_suite(req.suite)?;
    if req.inputs.is_empty() {
        crate::usage!("nothing to publish: give .debs or package tarballs");
    }
    check_repo(req.repo)?;
    fs::create_dir_all(req.repo).with_context(|| format!("creating {}", req.repo.display()))?;
    let repo = fs::canonicalize(req.repo)?;
    let key = match req.key {
        KeyChoice::Named(id) => key::named(id)?,
        KeyChoice::Own(home) => {
            let abs = std::path::absolute(home)?;
            if abs.starts_with(&repo) {
                crate::usage!(
                    "--key-home {} is inside the repository, which a web server serves: the \
                     secret key must live elsewhere",
                    home.display()
                );
            }
            key::own(&abs)?
        }
    };
    key.check_signs()?;
    let _lock = crate::infra::lock::WorkLock::acquire(&repo)?;
    let scratch = tempfile::Builder::new()
        .prefix(".publish-")
        .tempdir_in(&repo)?;
    let mut added = Vec::new();
    let signed = add_all(&repo, req, scratch.path(), &mut added).and_then(|e| {
        write_key(&repo, &key)?;
        sign_indices(&repo, req.suite, &key)?;
        Ok(e)
    });
    // A publish that fails before the new index is signed leaves the repository as it was: the
    // files it put into the pool go. After that the index lists them, and they stay.
    let entries = match signed {
        Ok(e) => e,
        Err(e) => {
            for f in &added {
                let _ = fs::remove_file(f);
            }
            return Err(e);
        }
    };
    record_builds(&repo, &entries).context(
        "the packages are published, but their profiles were not recorded: publish the same \
         files again to record them",
    )?;
    Ok(summary(
        repo,
        req,
        &key,
        entries.into_iter().map(|(e, _)| e).collect(),
    ))
}

/// Every input into the pool, checked against the suite's Debian release; the pool files this
/// publish made are pushed to `added` as they are made.
fn add_all(
    repo: &Path,
    req: &PublishRequest,
    scratch: &Path,
    added: &mut Vec<PathBuf>,
) -> Result<Vec<(Entry, Option<PathBuf>)>> {
    let mut entries = Vec::new();
    for input in req.inputs {
        let deb = deb_of(input, scratch)?;
        let c = control(&deb)?;
        check_release(&c, input, req.suite)?;
        let e = add(repo, &deb, c, scratch)?;
        if e.outcome != ALREADY {
            added.push(repo.join(&e.file));
        }
        let sidecar = input
            .to_string_lossy()
            .ends_with(".tar.zst")
            .then(|| crate::package::sidecar::beside(input))
            .filter(|s| s.is_file());
        entries.push((e, sidecar));
    }
    Ok(entries)
}

/// The public key at the repository's root, for hosts to fetch and check.
fn write_key(repo: &Path, key: &key::SigningKey) -> Result<()> {
    crate::infra::fs::write_atomic(&repo.join(KEY_FILE), key.export()?)
}

/// The suite's indices over the whole pool, signed.
fn sign_indices(repo: &Path, suite: &str, key: &key::SigningKey) -> Result<()> {
    let archs = architectures(repo)?;
    if archs.is_empty() {
        bail!(
            "{} holds no .deb under pool/ after publishing",
            repo.display()
        );
    }
    index::write(
        repo,
        &index::SuiteInfo {
            suite,
            architectures: &archs,
            description: "MariaDB optimized by pgoforge (profile-guided builds of Debian's source)",
        },
        key,
    )
}

/// Each published build and its profiles (the tarball's sidecar), in `profiles/`.
fn record_builds(repo: &Path, entries: &[(Entry, Option<PathBuf>)]) -> Result<()> {
    for (e, sidecar) in entries {
        let stem = e.file.file_stem().unwrap_or_default().to_string_lossy();
        published::record(
            repo,
            &published::Build {
                package: e.package.clone(),
                version: e.version.clone(),
                fits: fits_of(&e.version).to_string(),
                sidecar: sidecar.as_ref().map(|_| format!("{stem}.rebuild.tar.zst")),
            },
            sidecar.as_deref(),
        )?;
    }
    Ok(())
}

/// What was published and the lines a host adds.
fn summary(
    repo: PathBuf,
    req: &PublishRequest,
    key: &key::SigningKey,
    entries: Vec<Entry>,
) -> Published {
    let url = req
        .url
        .map(|u| u.trim_end_matches('/').to_string())
        .unwrap_or_else(|| format!("file://{}", repo.display()));
    let keyring = format!("/etc/apt/keyrings/{KEY_FILE}");
    Published {
        sources_line: format!(
            "deb [signed-by={keyring}] {url} {} {}",
            req.suite,
            index::COMPONENT
        ),
        sources_deb822: format!(
            "Types: deb\nURIs: {url}\nSuites: {}\nComponents: {}\nSigned-By: {keyring}\n",
            req.suite,
            index::COMPONENT
        ),
        repo,
        suite: req.suite.to_string(),
        url,
        key_fingerprint: key.fingerprint.clone(),
        key_home: key.home.clone(),
        key_made: key.made,
        entries,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_servers_debian_release_is_read_from_its_version() {
        assert_eq!(debian_release("1:10.11.18-0+deb12u1"), Some("bookworm"));
        assert_eq!(debian_release("1:11.8.3-0+deb13u1"), Some("trixie"));
        assert_eq!(
            debian_release("1:10.11.6-0+deb12u1~bpo11+1"),
            Some("bookworm")
        );
        assert_eq!(debian_release("1:11.8.3-1"), None);
        assert_eq!(debian_release("1:10.11.18-0+debian"), None);
    }

    #[test]
    fn build_numbers_read_from_pgoforge_versions() {
        assert_eq!(
            build_number("1:10.11.18-0+deb12u1+pgoforge+pgo+lto.f3a38cac"),
            Some(("1:10.11.18-0+deb12u1", 1, "pgo+lto.f3a38cac"))
        );
        assert_eq!(
            build_number("1:10.11.18-0+deb12u1+pgoforge.3+pgo.0123"),
            Some(("1:10.11.18-0+deb12u1", 3, "pgo.0123"))
        );
        assert_eq!(build_number("1:10.11.18-0+deb12u1"), None);
    }

    fn c(v: &str) -> Control {
        Control {
            package: "mariadb-server-pgo".into(),
            version: v.into(),
            architecture: "amd64".into(),
        }
    }

    /// dpkg's own comparison: a second build of a release whose hash sorts lower is numbered
    /// above the first; a build of a newer release is left as it is.
    #[test]
    fn a_rebuild_of_a_published_release_is_numbered_above_it() {
        let first = vec![(
            PathBuf::new(),
            c("1:10.11.18-0+deb12u1+pgoforge+pgo+lto.f3a38cac"),
        )];
        let again = c("1:10.11.18-0+deb12u1+pgoforge+pgo+lto.01234567");
        let v = renumbered(&again, &first).unwrap().unwrap();
        assert_eq!(v, "1:10.11.18-0+deb12u1+pgoforge.2+pgo+lto.01234567");
        assert!(newer(&v, &first[0].1.version).unwrap());
        let next = c("1:10.11.19-0+deb12u1+pgoforge+pgo+lto.01234567");
        assert_eq!(renumbered(&next, &first).unwrap(), None);
        let third = renumbered(
            &c("1:10.11.18-0+deb12u1+pgoforge+pgo.00000000"),
            &[first[0].clone(), (PathBuf::new(), c(&v))],
        )
        .unwrap()
        .unwrap();
        assert_eq!(third, "1:10.11.18-0+deb12u1+pgoforge.3+pgo.00000000");
        assert!(newer(&third, &v).unwrap());
    }

    #[test]
    fn pool_paths_follow_debian_and_drop_the_epoch() {
        assert_eq!(
            pool_path(&c("1:10.11.18-0+deb12u1+pgoforge+pgo")),
            PathBuf::from(
                "pool/main/m/mariadb-server-pgo/mariadb-server-pgo_10.11.18-0+deb12u1+pgoforge+pgo_amd64.deb"
            )
        );
    }

    #[test]
    fn a_suite_with_a_slash_or_space_is_refused() {
        assert!(check_suite("bookworm-pgoforge").is_ok());
        for bad in ["", "a b", "../x", "x/y"] {
            assert!(check_suite(bad).is_err(), "{bad}");
        }
    }
}
