//! The tools this machine has, found once into a typed environment: where each is, its version,
//! the Debian package that provides it, and whether pgoforge needs it or only uses it when there.
//! `pgoforge doctor` prints this table; every "install it with" hint comes from it.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use serde::Serialize;

use super::runner::version_of;

/// Whether a missing tool stops pgoforge's main job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Need {
    /// `pgoforge run` on the default recipe cannot do without it.
    Required,
    /// Used when present (ccache, perf, valgrind, sysbench...), or needed only by some options.
    Optional,
}

/// What pgoforge knows about a tool before looking for it.
#[derive(Clone, Copy, Debug)]
pub struct Known {
    pub name: &'static str,
    /// The apt package that provides it.
    pub package: &'static str,
    pub need: Need,
    /// What it is for, shown by `doctor`.
    pub purpose: &'static str,
    /// The argument that makes it print its version.
    pub version_arg: &'static str,
}

const fn known(
    name: &'static str,
    package: &'static str,
    need: Need,
    purpose: &'static str,
) -> Known {
    Known {
        name,
        package,
        need,
        purpose,
        version_arg: "--version",
    }
}

/// Every external tool pgoforge calls by name. Compilers and BOLT are found by the toolchain
/// module (they come in versioned families) and listed beside these by `doctor`.
pub const KNOWN: &[Known] = &[
    known(
        "cmake",
        "cmake",
        Need::Required,
        "configures and builds servers",
    ),
    known("make", "make", Need::Required, "builds servers"),
    known("bison", "bison", Need::Required, "the servers' SQL parsers"),
    known(
        "pkg-config",
        "pkg-config",
        Need::Required,
        "finds libraries for CMake",
    ),
    known(
        "strip",
        "binutils",
        Need::Required,
        "packages without debug info",
    ),
    known("tar", "tar", Need::Required, "sources and packages"),
    known("zstd", "zstd", Need::Required, "compresses packages"),
    known(
        "dpkg-source",
        "dpkg-dev",
        Need::Required,
        "unpacks Debian source packages",
    ),
    known(
        "apt-get",
        "apt",
        Need::Optional,
        "fetches Debian sources, installs dependencies",
    ),
    known("curl", "curl", Need::Optional, "downloads --source URLs"),
    known(
        "patchelf",
        "patchelf",
        Need::Optional,
        "packages of servers that link libraries from their build tree (MySQL)",
    ),
    known(
        "ccache",
        "ccache",
        Need::Optional,
        "caches unchanged compilations between builds",
    ),
    known(
        "perf",
        "linux-perf",
        Need::Optional,
        "BOLT profiles by sampling where the CPU has LBR",
    ),
    known(
        "valgrind",
        "valgrind",
        Need::Optional,
        "--cachegrind: deterministic counts",
    ),
    known(
        "sysbench",
        "sysbench",
        Need::Optional,
        "cross-checks of pgoforge's own driver",
    ),
    known(
        "mariadbd",
        "mariadb-server",
        Need::Optional,
        "a reference server (Debian's build)",
    ),
];

/// The apt package of a known tool, or of BOLT and the compilers' helpers.
pub fn package_of(name: &str) -> Option<&'static str> {
    match name {
        "llvm-bolt" | "merge-fdata" | "perf2bolt" => Some(BOLT_PACKAGE),
        _ => KNOWN.iter().find(|k| k.name == name).map(|k| k.package),
    }
}

/// The BOLT pgoforge is tested with (bolt-16 broke mariadbd; see docs/bench/train.md).
pub const BOLT_PACKAGE: &str = "bolt-22";

/// "install it with: apt-get install PKG" for a tool.
pub fn install_hint(name: &str) -> String {
    match package_of(name) {
        Some(p) => format!("install it with: apt-get install {p}"),
        None => format!("install {name} and make sure it is on PATH"),
    }
}

/// A program by path or by name on PATH.
pub fn which(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        let p = PathBuf::from(name);
        return p.is_file().then_some(p);
    }
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    })
}

/// A program found on PATH, or an error that says how to install it.
pub fn require(name: &str, for_what: &str) -> Result<PathBuf> {
    match which(name) {
        Some(p) => Ok(p),
        None => bail!(
            "{for_what} needs {name}, which is not installed; {}",
            install_hint(name)
        ),
    }
}

/// One tool as found on this machine.
#[derive(Clone, Debug, Serialize)]
pub struct Probed {
    pub name: String,
    pub package: String,
    pub need: Need,
    pub purpose: String,
    pub path: Option<PathBuf>,
    pub version: Option<String>,
}

impl Probed {
    pub fn found(&self) -> bool {
        self.path.is_some()
    }
}

/// The tools of this machine, each looked up once.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Env {
    pub tools: Vec<Probed>,
}

impl Env {
    /// Looks for every known tool (and runs it for its version).
    pub fn probe() -> Env {
        let mut tools: Vec<Probed> = KNOWN
            .iter()
            .map(|k| {
                let path = which(k.name).or_else(|| {
                    // mariadbd lives in sbin, which a user's PATH may lack.
                    Some(Path::new("/usr/sbin").join(k.name)).filter(|p| p.is_file())
                });
                Probed {
                    name: k.name.into(),
                    package: k.package.into(),
                    need: k.need,
                    purpose: k.purpose.into(),
                    version: path.as_deref().and_then(|p| version_of(p, k.version_arg)),
                    path,
                }
            })
            .collect();
        tools.sort_by_key(|t| t.need == Need::Optional);
        Env { tools }
    }

    pub fn get(&self, name: &str) -> Option<&Probed> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// Adds a tool found elsewhere (a compiler, BOLT) so that `doctor` lists it too.
    pub fn add(&mut self, p: Probed) {
        self.tools.push(p);
    }

    /// The missing tools that are required.
    pub fn missing_required(&self) -> Vec<&Probed> {
        self.tools
            .iter()
            .filter(|t| t.need == Need::Required && !t.found())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_one_install_hint() {
        assert_eq!(
            install_hint("llvm-bolt"),
            "install it with: apt-get install bolt-22"
        );
        assert_eq!(
            install_hint("ccache"),
            "install it with: apt-get install ccache"
        );
        assert!(install_hint("icx").contains("on PATH"));
        let env = Env::probe();
        // `sh` is everywhere but is not a known tool; cmake is known and required.
        assert!(env.get("sh").is_none());
        let cmake = env.get("cmake").expect("cmake is a known tool");
        assert_eq!(cmake.need, Need::Required);
        assert_eq!(env.get("ccache").unwrap().need, Need::Optional);
        let e = require("no-such-tool-xyz", "testing")
            .unwrap_err()
            .to_string();
        assert!(e.contains("testing needs no-such-tool-xyz"), "{e}");
    }
}
