//! A Debian source package fetched with `apt-get source`, with deb-src entries for its suite
//! added for the fetch only, and cached by its exact version (Debian revision included).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use super::{check_tree, load_cached, run, save, settle_tree, single_top, DebianSource, Source};
use crate::infra::fs::sha256_file;

const DEB_SRC_FILE: &str = "/etc/apt/sources.list.d/pgoforge-deb-src.sources";

/// deb-src entries for Debian's own archive, for `suite` (nothing is installed from them), for
/// the duration of one fetch: the returned guard puts the file back as it was, so a packager's
/// apt configuration does not keep, say, unstable's sources after pgoforge took one package.
fn ensure_deb_src(suite: &str) -> Result<Option<AptSourcesRestore>> {
    let current = fs::read_to_string(DEB_SRC_FILE).unwrap_or_default();
    if current.contains(&format!("Suites: {suite}")) || current.contains(&format!(" {suite}\n")) {
        return Ok(None);
    }
    if !crate::infra::is_root() {
        bail!(
            "fetching Debian source packages needs deb-src entries for '{suite}'; run pgoforge as root \
             once, or add to {DEB_SRC_FILE}:\nTypes: deb-src\nURIs: http://deb.debian.org/debian\nSuites: {suite}\nComponents: main"
        );
    }
    let restore = add_deb_src(Path::new(DEB_SRC_FILE), suite)?;
    run(
        Command::new("apt-get").args(["update", "-q"]),
        "apt-get update (after adding deb-src entries)",
    )?;
    Ok(Some(restore))
}

/// Appends the deb-src stanzas for `suite` to `file`; the guard restores what was there.
fn add_deb_src(file: &Path, suite: &str) -> Result<AptSourcesRestore> {
    let previous = fs::read_to_string(file).ok();
    let mut text = previous.clone().unwrap_or_default();
    let keyring = "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n";
    if suite == "bookworm" {
        text.push_str(&format!("Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm bookworm-updates\nComponents: main\n{keyring}\n"));
        text.push_str(&format!("Types: deb-src\nURIs: http://deb.debian.org/debian-security\nSuites: bookworm-security\nComponents: main\n{keyring}\n"));
    } else {
        text.push_str(&format!("Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: {suite}\nComponents: main\n{keyring}\n"));
    }
    let restore = AptSourcesRestore {
        file: file.to_path_buf(),
        previous,
    };
    fs::write(file, text).with_context(|| format!("writing {}", file.display()))?;
    Ok(restore)
}

/// Puts an apt sources file back as it was before pgoforge added to it (on success and error
/// alike). apt keeps the downloaded source lists until its next update but uses only what the
/// sources files name.
struct AptSourcesRestore {
    file: PathBuf,
    previous: Option<String>,
}

impl Drop for AptSourcesRestore {
    fn drop(&mut self) {
        let _ = match &self.previous {
            Some(text) => fs::write(&self.file, text),
            None => fs::remove_file(&self.file),
        };
    }
}

/// A fetched tree of exactly this package version (Debian revision included), if any.
pub(super) fn cached(sources: &Path, package: &str, version: &str, suite: &str) -> Option<Source> {
    let upstream = version.split_once(':').map_or(version, |(_, v)| v);
    let upstream = upstream.rsplit_once('-').map_or(upstream, |(u, _)| u);
    let base = package;
    if let Ok(rd) = fs::read_dir(sources) {
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.starts_with(&format!("{base}-{upstream}-")) {
                // The directory name has only the upstream version; the recorded origin has the
                // whole one, so a new Debian revision (a security update) is fetched, not reused.
                if let Some(s) = load_cached(&e.path()) {
                    if s.origin == debian_origin(package, version, suite) {
                        return Some(Source {
                            debian: Some(release(package, version, suite)),
                            ..s
                        });
                    }
                }
            }
        }
    }
    None
}

fn release(package: &str, version: &str, suite: &str) -> DebianSource {
    DebianSource {
        package: package.into(),
        version: version.into(),
        suite: suite.into(),
    }
}

fn debian_origin(package: &str, version: &str, suite: &str) -> String {
    format!("Debian source package {package} {version} ({suite})")
}

/// The Debian source package an origin written by [`debian_origin`] names: what a source
/// recorded before sources carried it was built from (the recipe may pin another version now).
pub fn from_origin(origin: &str) -> Option<DebianSource> {
    let rest = origin.strip_prefix("Debian source package ")?;
    let (package, rest) = rest.split_once(' ')?;
    let (version, suite) = rest.split_once(" (")?;
    let suite = suite.strip_suffix(')')?;
    (!package.is_empty() && !version.is_empty() && !suite.is_empty())
        .then(|| release(package, version, suite))
}

pub(super) fn fetch(package: &str, version: &str, suite: &str, sources: &Path) -> Result<Source> {
    let upstream = version.split_once(':').map_or(version, |(_, v)| v);
    let upstream = upstream.rsplit_once('-').map_or(upstream, |(u, _)| u);
    let base = package.to_string();
    if let Some(s) = cached(sources, package, version, suite) {
        return Ok(s);
    }
    crate::infra::tools::require("dpkg-source", "unpacking Debian source packages")?;
    // Held until the fetch is over, then the apt configuration is as it was.
    let _deb_src = ensure_deb_src(suite)?;
    let tmp = sources.join(format!(".apt-source-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp)?;
    let r = run(
        Command::new("apt-get")
            .current_dir(&tmp)
            .args(["source", "-q", "--only-source"])
            .arg(format!("{package}={version}")),
        &format!("apt-get source {package}={version}"),
    );
    if let Err(e) = r {
        let _ = fs::remove_dir_all(&tmp);
        return Err(e);
    }
    let dsc = fs::read_dir(&tmp)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "dsc"))
        .context("apt-get source left no .dsc file")?;
    let hash = sha256_file(&dsc)?;
    let top = single_top(&tmp)?;
    check_tree(&top, &format!("Debian source {package} {version}"))?;
    let dest = sources.join(format!("{base}-{upstream}-{}", &hash[..12]));
    settle_tree(&top, &dest)?;
    let _ = fs::remove_dir_all(&tmp);
    let s = Source {
        dir: dest.clone(),
        hash,
        origin: debian_origin(package, version, suite),
        debian: Some(release(package, version, suite)),
    };
    save(&dest, &s)?;
    Ok(s)
}

#[cfg(test)]
mod debian_cache_tests {
    use super::*;

    #[test]
    fn an_origin_names_its_package_version_and_suite_and_nothing_else_does() {
        let o = debian_origin("mariadb", "1:10.11.18-0+deb12u1", "bookworm");
        assert_eq!(
            from_origin(&o),
            Some(release("mariadb", "1:10.11.18-0+deb12u1", "bookworm"))
        );
        assert_eq!(from_origin("tarball /x.tar.gz"), None);
        assert_eq!(from_origin("Debian source package mariadb"), None);
    }

    #[test]
    fn a_new_debian_revision_is_not_served_from_the_old_tree() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("mariadb-10.11.18-0123456789ab");
        fs::create_dir_all(&dir).unwrap();
        let old = Source {
            dir: dir.clone(),
            hash: "h".into(),
            origin: debian_origin("mariadb", "1:10.11.18-0+deb12u1", "bookworm"),
            debian: None,
        };
        save(&dir, &old).unwrap();
        let hit = cached(t.path(), "mariadb", "1:10.11.18-0+deb12u1", "bookworm");
        // A record made before sources carried their Debian version gets it from the match.
        assert_eq!(
            hit,
            Some(Source {
                debian: Some(release("mariadb", "1:10.11.18-0+deb12u1", "bookworm")),
                ..old
            })
        );
        // Same upstream version, a security update's revision: not the same source.
        assert_eq!(
            cached(t.path(), "mariadb", "1:10.11.18-0+deb12u2", "bookworm"),
            None
        );
    }
}

#[cfg(test)]
mod deb_src_tests {
    use super::*;

    #[test]
    fn deb_src_entries_are_removed_again_after_the_fetch() {
        let t = tempfile::tempdir().unwrap();
        let file = t.path().join("pgoforge-deb-src.sources");
        {
            let _g = add_deb_src(&file, "unstable").unwrap();
            let text = fs::read_to_string(&file).unwrap();
            assert!(text.contains("Types: deb-src") && text.contains("Suites: unstable"));
        }
        assert!(!file.exists(), "a file pgoforge created is removed");
        // A file that was there before (the user's own entries) is restored as it was.
        fs::write(&file, "Types: deb-src\nSuites: bookworm\n").unwrap();
        {
            let _g = add_deb_src(&file, "unstable").unwrap();
            assert!(fs::read_to_string(&file).unwrap().contains("unstable"));
        }
        assert_eq!(
            fs::read_to_string(&file).unwrap(),
            "Types: deb-src\nSuites: bookworm\n"
        );
    }
}
