//! A package tarball unpacked, and checked against its SHA256SUMS before anything uses it.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use super::Manifest;
use crate::usage;

/// Unpacks `tarball` into `into` (empty) and returns the package's one top directory.
pub fn unpack(tarball: &Path, into: &Path) -> Result<PathBuf> {
    let file = fs::File::open(tarball).with_context(|| format!("opening {}", tarball.display()))?;
    let dec = zstd::Decoder::new(file)
        .with_context(|| format!("{} is not a zstd archive", tarball.display()))?;
    let mut ar = tar::Archive::new(dec);
    ar.set_preserve_permissions(true);
    ar.unpack(into).with_context(|| {
        format!(
            "unpacking {}: not a pgoforge package (a NAME.tar.zst from `pgoforge package`)",
            tarball.display()
        )
    })?;
    let mut tops = fs::read_dir(into)?.collect::<std::io::Result<Vec<_>>>()?;
    if tops.len() != 1 || !tops[0].file_type()?.is_dir() {
        usage!(
            "{} is not a pgoforge package: it must hold exactly one directory",
            tarball.display()
        );
    }
    let root = tops.remove(0).path();
    Ok(root)
}

/// Unpacks `tarball` into `into`, checks every file against SHA256SUMS, and returns the package
/// root and its manifest.
pub fn unpack_checked(tarball: &Path, into: &Path) -> Result<(PathBuf, Manifest)> {
    let root = unpack(tarball, into)?;
    let manifest: Manifest = serde_json::from_str(
        &fs::read_to_string(root.join("manifest.json"))
            .with_context(|| format!("{} has no manifest.json", tarball.display()))?,
    )
    .with_context(|| format!("{}: manifest.json does not parse", tarball.display()))?;
    let sums =
        check_sums(&root).with_context(|| format!("{} has no SHA256SUMS", tarball.display()))?;
    if let Some(bad) = sums.bad_lines.first() {
        usage!("{}: {bad}", tarball.display());
    }
    if let Some(name) = sums.missing.first() {
        anyhow::bail!("{}: {name} is listed but missing", tarball.display());
    }
    if let Some(name) = sums.differing.first() {
        usage!(
            "{}: {name} does not match its SHA256SUMS entry (damaged or altered package)",
            tarball.display()
        );
    }
    if !sums.unlisted.is_empty() {
        usage!(
            "{}: {} files are not in SHA256SUMS (altered package)",
            tarball.display(),
            sums.unlisted.len()
        );
    }
    Ok((root, manifest))
}

/// A package directory's files against its SHA256SUMS.
#[derive(Debug, Default)]
pub struct Sums {
    /// Lines that cannot be trusted: malformed, or naming a path outside the package.
    pub bad_lines: Vec<String>,
    /// Listed files whose hash matches.
    pub matching: usize,
    /// Listed files whose hash differs, and listed files that are missing.
    pub differing: Vec<String>,
    pub missing: Vec<String>,
    /// Files present but not listed (SHA256SUMS itself aside).
    pub unlisted: Vec<String>,
}

/// Checks every file under `root` against `root/SHA256SUMS` (an error: there is none).
pub fn check_sums(root: &Path) -> std::io::Result<Sums> {
    let text = fs::read_to_string(root.join("SHA256SUMS"))?;
    let mut s = Sums::default();
    let mut listed = std::collections::BTreeSet::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Some((sum, name)) = line.split_once("  ") else {
            s.bad_lines.push(format!(
                "SHA256SUMS line '{}' is malformed",
                line.escape_debug()
            ));
            continue;
        };
        if name.starts_with('/') || name.split('/').any(|c| c == "..") {
            s.bad_lines.push(format!(
                "SHA256SUMS names '{}' outside the package",
                name.escape_debug()
            ));
            continue;
        }
        listed.insert(name.to_string());
        match crate::infra::fs::sha256_file(&root.join(name)) {
            Ok(got) if got == sum => s.matching += 1,
            Ok(_) => s.differing.push(name.to_string()),
            Err(_) => s.missing.push(name.to_string()),
        }
    }
    for f in crate::infra::fs::files_under(root, "").unwrap_or_default() {
        let rel = f
            .strip_prefix(root)
            .map(|r| r.display().to_string())
            .unwrap_or_default();
        if rel != "SHA256SUMS" && !listed.contains(&rel) {
            s.unlisted.push(rel);
        }
    }
    Ok(s)
}
