//! A Debian source package fetched with `apt-get source` through pgoforge's private apt state
//! (`super::apt`: the machine's own mirrors as deb-src entries; /etc/apt is never written), and
//! cached by its exact version (Debian revision included). apt checks every file against the
//! index, dpkg-source against the .dsc; a fault is said in pgoforge's words naming the release
//! and the file, apt's own lines go to a log, and nothing half-fetched stays.

use std::fs;
use std::path::Path;

use anyhow::{Context, Result};

use super::apt::{Apt, Log};
use super::probe::percent_decode;
use super::{check_tree, load_cached, save, settle_tree, single_top, DebianSource, Source};
use crate::infra::exit::Stop;
use crate::infra::fs::sha256_file;

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
    let apt = Apt::for_suite(suite)?;
    let mut log = Log::default();
    // A stale index still names the files; the download says whether they are there.
    let _ = apt.refresh(&mut log)?;
    let tmp = sources.join(format!(".apt-source-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp)?;
    let log_path = sources
        .join("logs")
        .join(format!("{package}_{}.log", version.replace(':', "%3a")));
    let fetched = apt.source(package, version, &tmp, &mut log);
    log.save(&log_path);
    match fetched {
        Ok(true) => {}
        Ok(false) => {
            let _ = fs::remove_dir_all(&tmp);
            return Err(Stop::SourceUnavailable(format!(
                "cannot fetch {package} {version} ({suite}) from the mirror: {}; nothing was kept \
                 (apt's output: {}). `pgoforge doctor` names the releases the mirror serves; \
                 leave --source-version out to build the newest of them",
                fault(&log.text),
                log_path.display()
            ))
            .into());
        }
        Err(e) => {
            let _ = fs::remove_dir_all(&tmp);
            return Err(e);
        }
    }
    let settled = (|| -> Result<Source> {
        let dsc = fs::read_dir(&tmp)?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| p.extension().is_some_and(|x| x == "dsc"))
            .context("apt-get source left no .dsc file")?;
        let hash = sha256_file(&dsc)?;
        let top = single_top(&tmp)?;
        check_tree(&top, &format!("Debian source {package} {version}"))?;
        let dest = sources.join(format!("{base}-{upstream}-{}", &hash[..12]));
        settle_tree(&top, &dest)?;
        let s = Source {
            dir: dest.clone(),
            hash,
            origin: debian_origin(package, version, suite),
            debian: Some(release(package, version, suite)),
        };
        save(&dest, &s)?;
        Ok(s)
    })();
    let _ = fs::remove_dir_all(&tmp);
    settled
}

/// What went wrong in apt's and dpkg-source's words, said as the file and the reason: a file the
/// mirror does not serve, a mirror that did not answer, a checksum that differs.
pub fn fault(log: &str) -> String {
    let mut faults: Vec<String> = Vec::new();
    for l in log.lines() {
        let l = l.trim();
        if let Some(rest) = l.strip_prefix("E: Failed to fetch ") {
            // `E: Failed to fetch URI  REASON`
            let (uri, why) = rest.split_once("  ").unwrap_or((rest, ""));
            let name = percent_decode(uri.rsplit('/').next().unwrap_or(uri));
            let why = why.trim();
            let why =
                if why.contains("Hash Sum mismatch") || why.contains("File has unexpected size") {
                    "the file the mirror served has another checksum or size than the index lists"
                        .to_string()
                } else if why.is_empty() {
                    "the mirror did not serve it".to_string()
                } else {
                    let why = why.split(" [IP:").next().unwrap_or(why);
                    why.split_whitespace().collect::<Vec<_>>().join(" ")
                };
            faults.push(format!("{name}: {why}"));
        } else if l.starts_with("dpkg-source: error:") {
            faults.push(format!(
                "the unpacked files do not match the .dsc ({})",
                l.trim_start_matches("dpkg-source: error:").trim()
            ));
        }
    }
    if faults.is_empty() {
        faults.extend(super::apt::first_error(log).map(str::to_string));
    }
    faults.dedup();
    if faults.is_empty() {
        "apt-get source failed".into()
    } else {
        faults.join("; ")
    }
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
mod fault_tests {
    use super::fault;

    #[test]
    fn apt_faults_are_said_as_the_file_and_the_reason() {
        let log = "Err:1 http://m/pool/x_1.0-1.dsc\n  404  Not Found [IP: 1.2.3.4 80]\n\
                   E: Failed to fetch http://m/pool/updates/main/x/x_1.0-0%2bdeb12u1.dsc  404  Not Found [IP: 1.2.3.4 80]\n\
                   E: Failed to fetch http://m/pool/x_1.0.orig.tar.gz  Hash Sum mismatch\n\
                   E: Failed to fetch some archives.\n";
        let f = fault(log);
        assert!(f.contains("x_1.0-0+deb12u1.dsc: 404 Not Found"), "{f}");
        assert!(
            f.contains("x_1.0.orig.tar.gz: the file the mirror served has another checksum"),
            "{f}"
        );
        assert!(!f.contains("IP:"), "{f}");
        assert_eq!(fault("dpkg-source: error: File ./a.tar.xz has size 3 instead of expected 4\n"),
            "the unpacked files do not match the .dsc (File ./a.tar.xz has size 3 instead of expected 4)");
        assert_eq!(
            fault("E: Unable to find a source package for x=1\n"),
            "Unable to find a source package for x=1"
        );
        assert_eq!(fault(""), "apt-get source failed");
    }
}
