//! The distribution's own server of the release a Debian recipe builds: Debian's binary package
//! (`mariadb-server-core` for MariaDB 10.11) at the built source version, downloaded through a
//! private apt state of binary entries (`super::apt`, the machine's own mirrors; nothing under
//! /etc written, nothing installed) and unpacked into `WORK/distro/`. It is what users run now,
//! so a run benchmarks it beside the variants by default and the report's first table compares
//! the winner with it (`bench::report::headline`). The installed server may be another release
//! (the mirror serving 10.11.19's binaries but only 10.11.18's source): the same release is the
//! fair reference, and downloading it needs no root.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::apt::{Apt, Log};

/// The contender's name in the benchmark and the report.
pub const NAME: &str = "debian";

/// The distribution's server a run compares with: a binary package at one version.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct DistroServer {
    /// The binary package holding the server (`mariadb-server-core`).
    pub package: String,
    /// The Debian version, the built source's.
    pub version: String,
    /// The recipe's suite; the binary index covers it and its -security and -updates suites.
    pub suite: String,
    /// Packages of the same version unpacked beside the server: an engine's plugin for a run on
    /// that engine (`mariadb-plugin-rocksdb`). Absent otherwise, so other runs' stages stay.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub with: Vec<String>,
}

/// The unpacked server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fetched {
    pub binary: PathBuf,
    /// The .deb's file name and sha256, for the report's provenance.
    pub deb: String,
    pub deb_sha256: String,
}

/// The server binaries a package of the family holds, in the order looked for.
const SERVERS: &[&str] = &["usr/sbin/mariadbd", "usr/sbin/mysqld"];

impl DistroServer {
    /// The server a run of `recipe` compares with: its source's binary package at the same
    /// version, for a Debian source of this machine's own distribution (a server built for
    /// unstable links libraries this system does not have). None for other sources.
    pub fn of_recipe(recipe: &crate::recipe::Recipe) -> Option<DistroServer> {
        let crate::recipe::SourceSpec::Debian {
            version,
            suite,
            server_package: Some(package),
            ..
        } = &recipe.source
        else {
            return None;
        };
        super::apt::same_distribution(suite, &super::apt::os_codename()).then(|| DistroServer {
            package: package.clone(),
            version: version.clone(),
            suite: suite.clone(),
            with: Vec::new(),
        })
    }

    /// Where it is unpacked: `WORK/distro/PACKAGE_VERSION` (the epoch's colon made safe).
    pub fn dir(&self, work: &Path) -> PathBuf {
        let with: String = self.with.iter().map(|p| format!("+{p}")).collect();
        work.join("distro").join(format!(
            "{}_{}{with}",
            self.package,
            self.version.replace(':', "%3a")
        ))
    }

    /// The unpacked server, fetched and unpacked when it is not there yet. Fails naming the
    /// package, the version and apt's first error (its whole output in `WORK/distro/logs/`).
    pub fn fetch(&self, work: &Path) -> Result<Fetched> {
        let dir = self.dir(work);
        if let Some(f) = self.found(&dir) {
            return Ok(f);
        }
        let parent = dir.parent().context("the distro directory has a parent")?;
        fs::create_dir_all(parent.join("logs"))?;
        let staging = tempfile::Builder::new()
            .prefix(".fetch-")
            .tempdir_in(parent)
            .with_context(|| format!("making a staging directory in {}", parent.display()))?;
        let apt = Apt::for_binaries(&self.suite)?;
        let mut log = Log::default();
        if let super::apt::Freshness::Stale(why) = apt.refresh(&mut log)? {
            log.text
                .push_str(&format!("(using the older index: {why})\n"));
        }
        let root = staging.path().join("root");
        let log_file = parent.join("logs").join(format!(
            "{}_{}.log",
            self.package,
            self.version.replace(':', "%3a")
        ));
        let mut debs = Vec::new();
        for package in std::iter::once(&self.package).chain(&self.with) {
            let deb = apt.download(package, &self.version, staging.path(), &mut log)?;
            log.save(&log_file);
            let Some(deb) = deb else {
                bail!(
                    "Debian's {package} {} could not be downloaded ({}); apt's output is in {}",
                    self.version,
                    super::apt::first_error(&log.text).unwrap_or("apt gave no reason"),
                    parent.join("logs").display()
                );
            };
            crate::infra::runner::run_tool(
                std::process::Command::new("dpkg-deb")
                    .arg("-x")
                    .arg(&deb)
                    .arg(&root),
                "dpkg-deb -x",
                None,
            )?;
            debs.push(deb);
        }
        let deb = debs.swap_remove(0);
        for d in debs {
            fs::remove_file(d)?;
        }
        let name = deb
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let record = Fetched {
            binary: PathBuf::new(),
            deb: name,
            deb_sha256: crate::infra::fs::sha256_file(&deb)?,
        };
        fs::remove_file(&deb)?;
        crate::infra::fs::write_json(&staging.path().join("fetched.json"), &record)?;
        if SERVERS.iter().all(|s| !root.join(s).is_file()) {
            bail!(
                "Debian's {} {} holds no server binary ({})",
                self.package,
                self.version,
                SERVERS.join(", ")
            );
        }
        // Whole or not at all: a half-unpacked tree never sits where the next run looks.
        let staged = staging.keep();
        fs::rename(&staged, &dir).with_context(|| format!("renaming to {}", dir.display()))?;
        self.found(&dir)
            .context("the unpacked server vanished as it was moved in place")
    }

    /// A finished unpacking in `dir`.
    fn found(&self, dir: &Path) -> Option<Fetched> {
        let rec: Fetched =
            serde_json::from_str(&fs::read_to_string(dir.join("fetched.json")).ok()?).ok()?;
        let binary = SERVERS
            .iter()
            .map(|s| dir.join("root").join(s))
            .find(|p| p.is_file())?;
        Some(Fetched { binary, ..rec })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unfinished_unpacking_is_not_found() {
        let t = tempfile::tempdir().unwrap();
        let d = DistroServer {
            package: "mariadb-server-core".into(),
            version: "1:10.11.18-0+deb12u1".into(),
            suite: "bookworm".into(),
            with: Vec::new(),
        };
        let dir = d.dir(t.path());
        assert!(dir.ends_with("distro/mariadb-server-core_1%3a10.11.18-0+deb12u1"));
        fs::create_dir_all(dir.join("root/usr/sbin")).unwrap();
        fs::write(dir.join("root/usr/sbin/mariadbd"), b"x").unwrap();
        // No record: a tree left by something else, or cut short.
        assert!(d.found(&dir).is_none());
        let rec = Fetched {
            binary: PathBuf::new(),
            deb: "mariadb-server-core_10.11.18_amd64.deb".into(),
            deb_sha256: "0".repeat(64),
        };
        crate::infra::fs::write_json(&dir.join("fetched.json"), &rec).unwrap();
        assert_eq!(
            d.found(&dir).unwrap().binary,
            dir.join("root/usr/sbin/mariadbd")
        );
    }
}
