//! Getting a server's source: a local directory, a local tarball, a URL with its sha256, or a Debian
//! source package. Extracted once into WORK/sources/, checked, its hash recorded in source.json.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::infra::fs::{hex, sha256_file};

use crate::recipe::{Recipe, SourceSpec};

pub mod apt;
pub mod date;
mod debian;
pub mod distro;
pub mod probe;
pub use debian::from_origin as debian_from_origin;
pub mod release;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    /// The source tree (the directory holding the top-level CMakeLists.txt).
    pub dir: PathBuf,
    /// sha256 of what identifies the content: the tarball, the Debian .dsc (which lists the
    /// checksums of every tarball), or the file list of a directory.
    pub hash: String,
    /// Where it came from, for manifests and reports.
    pub origin: String,
    /// The Debian source package and the exact version fetched (Debian-sourced recipes; absent
    /// in records made before 2026-12-02, and for other sources).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debian: Option<DebianSource>,
}

/// The Debian source package a server was built from (Debian-sourced recipes).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DebianSource {
    pub package: String,
    pub version: String,
    pub suite: String,
}

fn run(cmd: &mut Command, what: &str) -> Result<()> {
    crate::infra::runner::run_tool(cmd, what, None)?;
    Ok(())
}

/// What a user's `--source` names.
enum UserSource<'a> {
    Url(&'a str),
    Dir(&'a Path),
    Tarball(&'a Path),
}

/// Classifies `--source`, refusing what pgoforge does not fetch (URLs other than http(s)) or
/// cannot find.
fn user_source(u: &str) -> Result<UserSource<'_>> {
    if u.starts_with("http://") || u.starts_with("https://") {
        return Ok(UserSource::Url(u));
    }
    if let Some((scheme, rest)) = u.split_once("://") {
        if scheme == "file" {
            crate::usage!(
                "--source {u}: give the path itself (--source {rest}), not a file:// URL"
            );
        }
        crate::usage!("--source {u}: only http:// and https:// URLs are fetched; download it yourself and give the tarball's path");
    }
    let p = Path::new(u);
    if p.is_dir() {
        Ok(UserSource::Dir(p))
    } else if p.is_file() {
        Ok(UserSource::Tarball(p))
    } else {
        crate::usage!("--source {u} does not exist (give a source directory, a tarball or a URL)")
    }
}

/// Resolves the source for `recipe`, or the user's `--source` (a directory, tarball or URL).
pub fn fetch(
    recipe: &Recipe,
    user: Option<&str>,
    sha256: Option<&str>,
    work_dir: &Path,
) -> Result<Source> {
    let sources = work_dir.join("sources");
    fs::create_dir_all(&sources).with_context(|| format!("creating {}", sources.display()))?;
    if let Some(u) = user {
        let what = user_source(u)?;
        if let Some(sum) =
            sha256.filter(|s| s.len() != 64 || !s.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            crate::usage!(
                "--sha256 {sum}: a sha256 is 64 hexadecimal digits (as `sha256sum` prints it)"
            );
        }
        return match what {
            UserSource::Url(u) => {
                let Some(sum) = sha256 else {
                    crate::usage!("--source {u} is a URL: give its --sha256 too, so that what is built is what you meant");
                };
                from_url(u, sum, &sources)
            }
            UserSource::Dir(p) => from_dir(p),
            UserSource::Tarball(p) => from_tarball(p, sha256, &sources),
        };
    }
    match &recipe.source {
        SourceSpec::Debian {
            package,
            version,
            suite,
            ..
        } => debian::fetch(package, version, suite, &sources),
        SourceSpec::Url { url, sha256 } => from_url(url, sha256, &sources),
        SourceSpec::User { hint } => bail!("recipe {} needs a source: {hint}", recipe.name),
    }
}

/// The source `fetch` would return, if it is already there — without fetching, extracting or
/// touching apt (for `build --plan`). A directory is hashed (read only).
pub fn peek(
    recipe: &Recipe,
    user: Option<&str>,
    sha256: Option<&str>,
    work_dir: &Path,
) -> Result<Option<Source>> {
    let sources = work_dir.join("sources");
    if let Some(u) = user {
        return match user_source(u)? {
            UserSource::Dir(p) => from_dir(p).map(Some),
            UserSource::Tarball(p) => {
                let hash = sha256_file(p)?;
                if sha256.is_some_and(|e| !e.eq_ignore_ascii_case(&hash)) {
                    crate::usage!("{} has sha256 {hash}, not the expected one", p.display());
                }
                Ok(load_cached(&tarball_dest(p, &hash, &sources)))
            }
            UserSource::Url(_) => Ok(None),
        };
    }
    Ok(match &recipe.source {
        SourceSpec::Debian {
            package,
            version,
            suite,
            ..
        } => debian::cached(&sources, package, version, suite),
        _ => None,
    })
}

fn load_cached(dir: &Path) -> Option<Source> {
    let text = fs::read_to_string(dir.join("source.json")).ok()?;
    serde_json::from_str(&text).ok()
}

fn save(dir: &Path, s: &Source) -> Result<()> {
    crate::infra::fs::write_json(&dir.join("source.json"), s).context("writing source.json")
}

/// Moves a checked tree into place. A tree already at `dest` has no valid source.json (else it
/// would have been reused): an earlier extraction stopped before recording it, so it is replaced.
fn settle_tree(top: &Path, dest: &Path) -> Result<()> {
    if dest.exists() {
        fs::remove_dir_all(dest).with_context(|| {
            format!(
                "removing {}, an unrecorded (interrupted) extraction",
                dest.display()
            )
        })?;
    }
    fs::rename(top, dest).with_context(|| format!("moving the source tree to {}", dest.display()))
}

/// The single top-level directory an extraction produced (tarballs usually have one).
fn single_top(dir: &Path) -> Result<PathBuf> {
    // A symlink is not a directory here, even one pointing at a directory: a top-level link in a
    // tarball must not take the build outside the work dir.
    let entries: Vec<PathBuf> = fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    match entries.as_slice() {
        [one] => Ok(one.clone()),
        _ => Ok(dir.to_path_buf()),
    }
}

fn check_tree(dir: &Path, origin: &str) -> Result<()> {
    if !dir.join("CMakeLists.txt").is_file() {
        bail!(
            "{origin} does not look like a MySQL/MariaDB source tree: no CMakeLists.txt in {}",
            dir.display()
        );
    }
    Ok(())
}

fn from_dir(p: &Path) -> Result<Source> {
    let dir = fs::canonicalize(p)?;
    check_tree(&dir, &p.display().to_string())?;
    // A metadata hash (paths, sizes, modification times): cheap on 100k files, and any edit changes it.
    let mut files = Vec::new();
    walk(&dir, &dir, &mut files)?;
    files.sort();
    let mut h = Sha256::new();
    for f in &files {
        h.update(f.as_bytes());
        h.update(b"\n");
    }
    Ok(Source {
        hash: hex(&h.finalize()),
        origin: format!("directory {}", dir.display()),
        dir,
        debian: None,
    })
}

fn walk(root: &Path, d: &Path, out: &mut Vec<String>) -> Result<()> {
    for e in fs::read_dir(d).with_context(|| format!("reading {}", d.display()))? {
        let e = e?;
        let name = e.file_name();
        if name == ".git" {
            continue;
        }
        let ty = e.file_type()?;
        if ty.is_dir() {
            walk(root, &e.path(), out)?;
        } else if ty.is_file() {
            let m = e.metadata()?;
            let mtime = m.modified().map_or(0, crate::infra::time::unix_secs);
            let rel = e
                .path()
                .strip_prefix(root)
                .unwrap_or(&e.path())
                .display()
                .to_string();
            out.push(format!("{rel}\t{}\t{mtime}", m.len()));
        }
    }
    Ok(())
}

/// Where a tarball with content hash `hash` is extracted: its name without `.tar*`, and the hash.
fn tarball_dest(tarball: &Path, hash: &str, sources: &Path) -> PathBuf {
    let name = tarball.file_name().unwrap_or_default().to_string_lossy();
    let stem = name.split(".tar").next().unwrap_or(&name);
    sources.join(format!("{stem}-{}", &hash[..12]))
}

fn from_tarball(p: &Path, expected: Option<&str>, sources: &Path) -> Result<Source> {
    let hash = sha256_file(p)?;
    if let Some(e) = expected {
        if !e.eq_ignore_ascii_case(&hash) {
            bail!(
                "{} has sha256 {hash}, not the expected {e}: refusing to build it",
                p.display()
            );
        }
    }
    let dest = tarball_dest(p, &hash, sources);
    if let Some(s) = load_cached(&dest) {
        return Ok(s);
    }
    let tmp = sources.join(format!(".extract-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp)?;
    let r = run(
        // Never the archive's owners or set-id bits, even as root.
        Command::new("tar")
            .args(["--no-same-owner", "--no-same-permissions", "-xf"])
            .arg(p)
            .arg("-C")
            .arg(&tmp),
        &format!("extracting {}", p.display()),
    );
    if let Err(e) = r {
        let _ = fs::remove_dir_all(&tmp);
        return Err(e);
    }
    let top = single_top(&tmp)?;
    if let Err(e) = check_tree(&top, &p.display().to_string()) {
        let _ = fs::remove_dir_all(&tmp);
        return Err(e);
    }
    settle_tree(&top, &dest)?;
    let _ = fs::remove_dir_all(&tmp);
    let s = Source {
        dir: dest.clone(),
        hash,
        origin: format!("tarball {}", p.display()),
        debian: None,
    };
    save(&dest, &s)?;
    Ok(s)
}

fn from_url(url: &str, sha256: &str, sources: &Path) -> Result<Source> {
    let name = url
        .rsplit('/')
        .next()
        .filter(|n| !n.is_empty())
        .unwrap_or("source.tar.gz");
    let file = sources.join(name);
    if !file.is_file() || sha256_file(&file)? != sha256.to_ascii_lowercase() {
        let part = file.with_extension("part");
        run(
            // Only http(s), redirects only to https (never file:// or another protocol), and a
            // time limit: a stalled mirror must not hang a run for ever. The sha256 is checked
            // after the download either way.
            Command::new("curl")
                .args([
                    "-fL",
                    "--proto",
                    "=http,https",
                    "--proto-redir",
                    "=https",
                    "--connect-timeout",
                    "30",
                    "--max-time",
                    "3600",
                    "--retry",
                    "3",
                    "-o",
                ])
                .arg(&part)
                .arg(url),
            &format!("downloading {url}"),
        )?;
        fs::rename(&part, &file)?;
    }
    let mut s = from_tarball(&file, Some(sha256), sources)?;
    s.origin = format!("{url} (sha256 {sha256})");
    Ok(s)
}

#[cfg(test)]
mod url_tests {
    use super::*;

    #[test]
    fn urls_other_than_http_are_refused_with_what_to_give_instead() {
        let t = tempfile::tempdir().unwrap();
        let recipe = Recipe::load(crate::recipe::DEFAULT).unwrap();
        let e = |u: &str| {
            fetch(&recipe, Some(u), Some(&"0".repeat(64)), t.path())
                .unwrap_err()
                .to_string()
        };
        assert!(
            e("file:///tmp/mariadb.tar.gz").contains("--source /tmp/mariadb.tar.gz"),
            "{}",
            e("file:///tmp/mariadb.tar.gz")
        );
        assert!(e("ftp://example.org/x.tar.gz").contains("only http:// and https://"));
        // Nothing was fetched or extracted.
        assert_eq!(fs::read_dir(t.path().join("sources")).unwrap().count(), 0);
    }
}

#[cfg(test)]
mod torn_record_tests {
    use super::*;

    #[test]
    fn a_torn_or_missing_source_record_means_extract_again_not_fail_forever() {
        let t = tempfile::tempdir().unwrap();
        let tree = t.path().join("src-1.0");
        fs::create_dir_all(&tree).unwrap();
        fs::write(tree.join("CMakeLists.txt"), "project(x)\n").unwrap();
        let tarball = t.path().join("src-1.0.tar.gz");
        let st = Command::new("tar")
            .arg("-czf")
            .arg(&tarball)
            .arg("-C")
            .arg(t.path())
            .arg("src-1.0")
            .status()
            .unwrap();
        assert!(st.success());
        let sources = t.path().join("sources");
        fs::create_dir_all(&sources).unwrap();
        let first = from_tarball(&tarball, None, &sources).unwrap();
        let record = first.dir.join("source.json");
        // Killed while writing the record: a torn file; then one lost altogether.
        for damage in ["{\"dir\": \"/x\", \"ha", ""] {
            if damage.is_empty() {
                fs::remove_file(&record).unwrap();
            } else {
                fs::write(&record, damage).unwrap();
            }
            let again = from_tarball(&tarball, None, &sources).unwrap();
            assert_eq!(again, first);
            assert!(again.dir.join("CMakeLists.txt").is_file());
            assert_eq!(load_cached(&again.dir), Some(first.clone()));
        }
        // No leftovers of the extractions.
        let names: Vec<String> = fs::read_dir(&sources)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }
}
