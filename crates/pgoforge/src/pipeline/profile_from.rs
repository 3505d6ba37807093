//! `run --profile-from PATH`: the profiles of an earlier build — a package (its rebuild sidecar
//! beside it), the sidecar itself, or a finished run's work dir that packaged one — used for
//! this run's optimized build and BOLT instead of training: one build instead of three when a
//! security release appears (issue 53). The compiler profile's static functions are moved to
//! this source (builder/paths.rs); BOLT's profile is applied to the new binary in its YAML form
//! with `-infer-stale-profile` (BOLT matches the blocks of functions whose code moved; a sidecar
//! made before the YAML form existed gives the .fdata, whose stale functions BOLT leaves
//! unprofiled). Refused before
//! anything is built: a profile of another compiler family or major, and a clang profile this
//! machine's llvm-profdata cannot read — both versions named —, and the profiles of another
//! server family (a MySQL profile for MariaDB).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use crate::infra::exit::Stop;
use crate::package::sidecar::{self, ProfileProvenance};
use crate::toolchain::{Compiler, FlagFamily};

/// The profiles a run takes from an earlier build.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Reuse {
    /// The compiler profile (a .profdata file or a gcda directory).
    pub compiler_profile: PathBuf,
    /// BOLT's profile, when the earlier binary was BOLTed.
    pub bolt_profile: Option<PathBuf>,
    pub provenance: ProfileProvenance,
    /// What a build from it that no longer fits does (`--stale-threshold`, `--retrain-if-stale`).
    pub stale: super::stale_check::StalePolicy,
    /// The profile's size and hottest functions, read once for the builds' verdicts and the report.
    #[serde(skip)]
    pub facts: super::stale_check::ProfileFacts,
}

impl Reuse {
    /// The verdict on a build from this profile that the compiler found `stale`.
    pub fn verdict(
        &self,
        variant: &str,
        stale: &crate::builder::staleness::Staleness,
        compiler: &Compiler,
    ) -> crate::builder::staleness::StaleShare {
        let profile = crate::builder::ProfileInput::from_path(self.compiler_profile.clone());
        self.facts
            .verdict(&profile, compiler, variant, stale, self.stale)
    }
}

fn refuse(msg: String) -> anyhow::Error {
    Stop::Usage(msg).into()
}

/// The sidecar `path` names: itself, the one beside a package, or the one beside the package a
/// finished run's work dir made.
fn sidecar_of(path: &Path) -> Result<(PathBuf, Option<PathBuf>)> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    if path.is_dir() {
        let out = super::outcome::Outcome::load(path).map_err(|e| {
            refuse(format!(
                "--profile-from {}: not a finished run's work dir ({e:#}); give a package \
                 (NAME.tar.zst), its NAME.rebuild.tar.zst, or a work dir whose run packaged one",
                path.display()
            ))
        })?;
        if let Some(p) = out.package {
            return Ok((sidecar::beside(&p.path), Some(p.path)));
        }
        // No winner, but `pgoforge package VARIANT` may have packaged one since.
        return match packaged_by_hand(path).as_slice() {
            [one] => Ok((sidecar::beside(one), Some(one.clone()))),
            [] => Err(refuse(format!(
                "--profile-from {}: that run packaged nothing (no variant won); package one \
                 with `pgoforge package VARIANT --work-dir {}` and give the package",
                path.display(),
                path.display()
            ))),
            several => Err(refuse(format!(
                "--profile-from {}: that run packaged nothing itself, and its packages/ holds \
                 {} packages; give the one to take the profiles from: {}",
                path.display(),
                several.len(),
                several
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))),
        };
    }
    if name.ends_with(".rebuild.tar.zst") {
        return Ok((path.to_path_buf(), None));
    }
    if name.ends_with(".tar.zst") {
        return Ok((sidecar::beside(path), Some(path.to_path_buf())));
    }
    Err(refuse(format!(
        "--profile-from {}: give a package (NAME.tar.zst, with NAME.rebuild.tar.zst beside it), \
         the NAME.rebuild.tar.zst itself, or a finished run's work dir",
        path.display()
    )))
}

/// The packages with a rebuild sidecar beside them in `work`'s packages/ (what `pgoforge
/// package` makes), sorted by name.
fn packaged_by_hand(work: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(crate::package::packages_dir(work)) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
            name.is_some_and(|n| n.ends_with(".tar.zst") && !n.ends_with(".rebuild.tar.zst"))
                && sidecar::beside(p).is_file()
        })
        .collect();
    found.sort();
    found
}

/// Opens the sidecar `path` names into `into` (emptied first), checks it against its package
/// when there is one, and its compiler profile against `compiler`.
pub fn resolve(
    path: &Path,
    into: &Path,
    compiler: &Compiler,
    recipe: &crate::recipe::Recipe,
) -> Result<Reuse> {
    if !path.exists() {
        return Err(refuse(format!(
            "--profile-from {} does not exist",
            path.display()
        )));
    }
    let (side_path, package) = sidecar_of(path)?;
    if !side_path.is_file() {
        return Err(refuse(format!(
            "--profile-from {}: its rebuild sidecar {} does not exist (packages made before \
             2026-12-05 have none; package the run again with `pgoforge package VARIANT`)",
            path.display(),
            side_path.display()
        )));
    }
    let _ = fs::remove_dir_all(into);
    let side = sidecar::open(&side_path, into)?;
    if let Some(pkg) = &package {
        let scratch = tempfile::tempdir()?;
        let (root, m) = crate::infra::exit::Refuse::refused(
            crate::package::unpack::unpack_checked(pkg, scratch.path()),
        )?;
        crate::package::provenance::sidecar_belongs(&side, &root, &m)?;
    }
    let r = &side.record;
    check_compiler(&r.toolchain, compiler, &side_path)?;
    let theirs = side.recipe()?;
    if theirs.family != recipe.family {
        return Err(refuse(format!(
            "--profile-from {}: its profiles are of recipe {} ({:?}), and this run builds {} \
             ({:?}): another server's profile fits none of this one's functions",
            side_path.display(),
            theirs.name,
            theirs.family,
            recipe.name,
            recipe.family
        )));
    }
    let Some(cp) = r.profile("compiler") else {
        return Err(refuse(format!(
            "--profile-from {}: the sidecar carries no compiler profile (its package was not \
             built with PGO)",
            side_path.display()
        )));
    };
    let compiler_profile = side.path_of(cp);
    if compiler.family == FlagFamily::Clang {
        check_readable(&compiler_profile, compiler)?;
    }
    Ok(Reuse {
        compiler_profile,
        // The YAML form when there is one: BOLT infers the counts of code that moved.
        bolt_profile: r
            .profile(sidecar::BOLT_YAML)
            .or_else(|| r.profile("bolt"))
            .map(|p| side.path_of(p)),
        provenance: ProfileProvenance {
            from: side_path.display().to_string(),
            package: r.package.clone(),
            source_origin: r.source_origin.clone(),
            source_hash: r.source_hash.clone(),
            debian_source: r.debian_source.clone(),
            compiler: r.toolchain.compiler.clone(),
            compiler_version: r.toolchain.compiler_version.clone(),
            training: cp.training.clone(),
            hashes: r
                .profiles
                .iter()
                .map(|p| format!("{}:{}", p.kind, p.hash))
                .collect(),
        },
        stale: Default::default(),
        facts: Default::default(),
    })
}

/// A profile is read by the compiler family and major that wrote it.
fn check_compiler(t: &sidecar::Toolchain, compiler: &Compiler, from: &Path) -> Result<()> {
    if t.compiler != compiler.label() {
        return Err(refuse(format!(
            "--profile-from {}: its profiles were made by {} ({}), and this run compiles with {} \
             ({}): a profile is read only by the compiler family and major that wrote it. Run \
             with --compiler {}, or train afresh (drop --profile-from)",
            from.display(),
            t.compiler,
            t.compiler_version,
            compiler.label(),
            compiler.version,
            t.compiler
        )));
    }
    Ok(())
}

/// The indexed profile's format version (its header's second word), when it is one.
fn indexed_version(file: &Path) -> Option<u64> {
    let bytes = fs::read(file).ok()?;
    let word = |i: usize| Some(u64::from_le_bytes(bytes.get(i..i + 8)?.try_into().ok()?));
    (word(0)? == 0x8169_666f_7270_6cff).then(|| word(8).map(|v| v & 0xffff_ffff))?
}

/// This machine's llvm-profdata reads the profile, or the refusal names both versions.
fn check_readable(file: &Path, compiler: &Compiler) -> Result<()> {
    let tool = compiler.profdata()?;
    let out = Command::new(tool)
        .arg("show")
        .arg(file)
        .output()
        .with_context(|| format!("running {}", tool.display()))?;
    if out.status.success() {
        return Ok(());
    }
    Err(refuse(format!(
        "{}: {} ({}) cannot read this profile (indexed format version {}): {}; train afresh \
         (drop --profile-from), or run with the compiler that wrote it",
        file.display(),
        tool.display(),
        compiler.version,
        indexed_version(file).map_or("unknown".to_string(), |v| v.to_string()),
        String::from_utf8_lossy(&out.stderr).trim()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_package_made_by_hand_in_the_work_dir_is_found_with_its_sidecar() {
        let t = tempfile::tempdir().unwrap();
        assert!(packaged_by_hand(t.path()).is_empty());
        let dir = crate::package::packages_dir(t.path());
        fs::create_dir(&dir).unwrap();
        let a = dir.join("mariadb-10.11.18-pgo+lto+bolt-clang-22.tar.zst");
        fs::write(&a, b"x").unwrap();
        // A package without its rebuild sidecar cannot give profiles.
        assert!(packaged_by_hand(t.path()).is_empty());
        fs::write(sidecar::beside(&a), b"x").unwrap();
        fs::write(dir.join("notes.txt"), b"x").unwrap();
        assert_eq!(packaged_by_hand(t.path()), vec![a.clone()]);
        let b = dir.join("mariadb-10.11.18-pgo+lto-clang-22.tar.zst");
        fs::write(&b, b"x").unwrap();
        fs::write(sidecar::beside(&b), b"x").unwrap();
        assert_eq!(packaged_by_hand(t.path()), vec![a, b]);
    }

    #[test]
    fn the_indexed_header_gives_the_format_version() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("p.profdata");
        let mut b = 0x8169_666f_7270_6cffu64.to_le_bytes().to_vec();
        b.extend((0x0100_0000_0000_000cu64).to_le_bytes());
        fs::write(&f, &b).unwrap();
        assert_eq!(indexed_version(&f), Some(12));
        fs::write(&f, b"junk").unwrap();
        assert_eq!(indexed_version(&f), None);
    }
}
