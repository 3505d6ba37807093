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
    let sums = fs::read_to_string(root.join("SHA256SUMS"))
        .with_context(|| format!("{} has no SHA256SUMS", tarball.display()))?;
    let mut listed = 0;
    for line in sums.lines().filter(|l| !l.trim().is_empty()) {
        let Some((sum, name)) = line.split_once("  ") else {
            usage!(
                "{}: SHA256SUMS line '{line}' is malformed",
                tarball.display()
            );
        };
        if name.starts_with('/') || name.split('/').any(|c| c == "..") {
            usage!(
                "{}: SHA256SUMS names '{name}' outside the package",
                tarball.display()
            );
        }
        let p = root.join(name);
        let got = crate::infra::fs::sha256_file(&p)
            .with_context(|| format!("{}: {name} is listed but missing", tarball.display()))?;
        if got != sum {
            usage!(
                "{}: {name} does not match its SHA256SUMS entry (damaged or altered package)",
                tarball.display()
            );
        }
        listed += 1;
    }
    let present = crate::infra::fs::files_under(&root, "")?.len();
    if present != listed + 1 {
        usage!(
            "{}: {} files are not in SHA256SUMS (altered package)",
            tarball.display(),
            present - listed - 1
        );
    }
    Ok((root, manifest))
}
