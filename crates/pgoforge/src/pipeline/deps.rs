//! What a run needs installed, what is missing, and the apt command that fixes it.
//!
//! Tools are checked by running them (any distribution); the recipe's library packages by
//! `dpkg-query`, which only Debian-like systems have — elsewhere they are reported as unchecked
//! and CMake's configure step will name what is missing.

use std::process::Command;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::infra::tools::{package_of, which, BOLT_PACKAGE};
use crate::recipe::{Recipe, SourceSpec};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Missing {
    /// A command or a package name.
    pub what: String,
    /// The apt package that provides it.
    pub package: String,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Check {
    pub missing: Vec<Missing>,
    /// Set when library packages could not be checked (no dpkg-query).
    pub unchecked: Vec<String>,
}

impl Check {
    pub fn packages(&self) -> Vec<String> {
        let mut p: Vec<String> = self.missing.iter().map(|m| m.package.clone()).collect();
        p.sort();
        p.dedup();
        p
    }

    /// The exact command that installs what is missing.
    pub fn command(&self) -> String {
        format!(
            "apt-get update && apt-get install -y --no-install-recommends -- {}",
            self.packages().join(" ")
        )
    }
}

/// LLVM 22 is the clang toolchain (clang, llvm-profdata, lld and BOLT from one LLVM): plain
/// `clang` means it; `clang-N` names another.
pub const CLANG_MAJOR: &str = "22";

fn clang_major(spec: &str) -> Option<&str> {
    if spec == "clang" {
        Some(CLANG_MAJOR)
    } else {
        spec.strip_prefix("clang-")
    }
}

/// Libraries a compiler needs that no command stands for: clang's profile runtime
/// (libclang_rt.profile), without which an instrumented build does not link.
fn compiler_libraries(spec: &str) -> Vec<String> {
    clang_major(spec)
        .map(|n| vec![format!("libclang-rt-{n}-dev")])
        .unwrap_or_default()
}

/// The apt packages that give a compiler named as `pgoforge build --compiler` takes it.
fn compiler_packages(spec: &str) -> Vec<(String, String)> {
    let tool = |c: &str, p: &str| (c.to_string(), p.to_string());
    if spec == "gcc" {
        return vec![tool("gcc", "gcc"), tool("g++", "g++")];
    }
    if let Some(n) = spec.strip_prefix("gcc-") {
        return vec![
            tool(spec, &format!("gcc-{n}")),
            tool(&format!("g++-{n}"), &format!("g++-{n}")),
        ];
    }
    match clang_major(spec) {
        Some(n) => vec![
            tool(&format!("clang-{n}"), &format!("clang-{n}")),
            tool(&format!("llvm-profdata-{n}"), &format!("llvm-{n}")),
            tool(&format!("ld.lld-{n}"), &format!("lld-{n}")),
        ],
        // A compiler given by path is the user's to install.
        None => Vec::new(),
    }
}

fn dpkg_installed(pkg: &str) -> Option<bool> {
    let out = Command::new("dpkg-query")
        .args(["-W", "-f=${db:Status-Status}", pkg])
        .output()
        .ok()?;
    Some(out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "installed")
}

/// Checks what a run of `recipe` with `compiler` needs (BOLT when `bolt`).
pub fn check(recipe: &Recipe, compiler: &str, bolt: bool) -> Check {
    let mut names = vec!["cmake", "make", "strip", "pkg-config"];
    if matches!(recipe.source, SourceSpec::Debian { .. }) {
        names.push("dpkg-source");
    }
    // Their packages come from the one table of known tools.
    let mut tools: Vec<(String, String)> = names
        .into_iter()
        .map(|c| (c.to_string(), package_of(c).unwrap_or(c).to_string()))
        .collect();
    tools.extend(compiler_packages(compiler));
    let mut c = Check::default();
    for (cmd, pkg) in tools {
        if which(&cmd).is_none() {
            c.missing.push(Missing {
                what: cmd,
                package: pkg,
            });
        }
    }
    if bolt && crate::toolchain::Bolt::find().is_none() {
        c.missing.push(Missing {
            what: "llvm-bolt".into(),
            package: BOLT_PACKAGE.into(),
        });
    }
    for pkg in recipe
        .apt_packages
        .iter()
        .chain(&compiler_libraries(compiler))
    {
        match dpkg_installed(pkg) {
            Some(true) => {}
            Some(false) => c.missing.push(Missing {
                what: pkg.clone(),
                package: pkg.clone(),
            }),
            None => c.unchecked.push(pkg.clone()),
        }
    }
    c
}

/// Installs the missing packages with apt (as root, or through sudo).
pub fn install(c: &Check) -> Result<()> {
    let pkgs = c.packages();
    if pkgs.is_empty() {
        return Ok(());
    }
    let root = crate::infra::is_root();
    let sudo = |prog: &str| {
        if root {
            Command::new(prog)
        } else {
            let mut s = Command::new("sudo");
            s.arg(prog);
            s
        }
    };
    let st = sudo("apt-get")
        .args(["update", "-q"])
        .status()
        .context("running apt-get update")?;
    if !st.success() {
        bail!(
            "apt-get update failed ({st}); fix the package sources, then run: {}",
            c.command()
        );
    }
    let st = sudo("apt-get")
        .env("DEBIAN_FRONTEND", "noninteractive")
        .args(["install", "-y", "-q", "--no-install-recommends", "--"])
        .args(&pkgs)
        .status()
        .context("running apt-get install")?;
    if !st.success() {
        bail!(
            "apt-get install failed ({st}); the command was: {}",
            c.command()
        );
    }
    Ok(())
}

/// A server build tree with debug info (MariaDB 10.11: 1.6–1.9 GiB here), with room to spare.
pub const BYTES_PER_BUILD: u64 = 3 << 30;

/// What a build of `recipe` may take: precompiled headers add GCC's .gch files (MySQL 9.7: six
/// of 152–278 MiB, a baseline's tree 3.0 GB instead of 1.8; an instrumented one 2.7 GB before).
pub fn bytes_per_build(recipe: &crate::recipe::Recipe) -> u64 {
    if recipe.build.precompile_headers.is_empty() {
        BYTES_PER_BUILD
    } else {
        BYTES_PER_BUILD + (2 << 30)
    }
}

/// Refuses to start `builds` builds of `per_build` bytes each when the disk cannot hold them.
pub fn check_space(work: &std::path::Path, builds: usize, per_build: u64) -> Result<()> {
    if builds == 0 {
        return Ok(());
    }
    let free = crate::infra::fs::free_bytes(work)?;
    let need = builds as u64 * per_build + (1 << 30);
    if free < need {
        bail!(
            "not enough disk space in {}: {:.1} GiB free, about {:.0} GiB needed for {builds} build(s) \
             ({} GiB each with debug info) and the benchmark datadirs; free space or choose another --work-dir",
            work.display(),
            free as f64 / (1u64 << 30) as f64,
            need as f64 / (1u64 << 30) as f64,
            per_build >> 30
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disk_space_is_checked_before_building() {
        let t = tempfile::tempdir().unwrap();
        assert!(crate::infra::fs::free_bytes(t.path()).unwrap() > 0);
        check_space(t.path(), 0, BYTES_PER_BUILD).unwrap();
        let e = check_space(t.path(), 1_000_000, BYTES_PER_BUILD)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("not enough disk space") && e.contains("--work-dir"),
            "{e}"
        );
    }

    #[test]
    fn compilers_map_to_their_packages() {
        let p = |s| {
            compiler_packages(s)
                .into_iter()
                .map(|(_, p)| p)
                .collect::<Vec<_>>()
        };
        assert_eq!(p("gcc"), ["gcc", "g++"]);
        assert_eq!(p("clang"), ["clang-22", "llvm-22", "lld-22"]);
        assert_eq!(p("clang-16"), ["clang-16", "llvm-16", "lld-16"]);
        assert_eq!(p("clang-19"), ["clang-19", "llvm-19", "lld-19"]);
        assert_eq!(compiler_libraries("clang"), ["libclang-rt-22-dev"]);
        assert!(compiler_libraries("gcc").is_empty());
        assert!(p("/opt/icx/bin/icx").is_empty());
    }

    #[test]
    fn the_default_recipe_is_satisfied_here() {
        // CI installs the default recipe's build dependencies (scripts/install-test-deps.sh).
        let r = Recipe::load(crate::recipe::DEFAULT).unwrap();
        let c = check(&r, "gcc", true);
        assert!(c.missing.is_empty(), "missing: {:?}", c.missing);
        let mut r = r;
        r.apt_packages.push("pgoforge-no-such-package".into());
        let c = check(&r, "gcc", true);
        assert_eq!(c.packages(), ["pgoforge-no-such-package"]);
        assert!(c
            .command()
            .ends_with("--no-install-recommends -- pgoforge-no-such-package"));
    }
}
