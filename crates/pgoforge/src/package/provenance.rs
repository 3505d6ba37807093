//! Whether a package is what its manifest says it is made of: its binary's hash against the
//! manifest's, and its rebuild sidecar (sidecar.rs) against both — the sidecar names this
//! package, this binary and this manifest, and carries every profile the manifest names, each
//! with the manifest's hash. A failure is a `Stop::Provenance` (exit status 9) naming the file;
//! `package verify` reports each as a check, `rebuild` refuses to start.

use std::path::Path;

use anyhow::Result;

use super::sidecar::Opened;
use super::Manifest;
use crate::builder::ProfileInput;
use crate::infra::exit::Stop;
use crate::infra::fs::sha256_file;

fn refuse(what: String) -> anyhow::Error {
    Stop::Provenance(what).into()
}

/// The packaged binary (`rel`, under `root`) against the manifest's hash; Ok with what was
/// found (also for a package made before manifests carried the hash).
pub fn binary_matches(root: &Path, rel: &str, m: &Manifest) -> Result<String> {
    if m.binary_sha256.is_empty() {
        return Ok("the manifest names no binary hash (a package made before 2026-12-05)".into());
    }
    let h = sha256_file(&root.join(rel))?;
    if h != m.binary_sha256 {
        return Err(refuse(format!(
            "{rel}: its sha256 is {h}, the manifest's is {} (the binary was replaced or altered)",
            m.binary_sha256
        )));
    }
    Ok(format!("{rel} has the manifest's sha256 {}", short(&h)))
}

fn short(h: &str) -> &str {
    &h[..16.min(h.len())]
}

/// The sidecar belongs to this package (`root`, its manifest `m`) and carries the profiles the
/// manifest names, each with its hash.
pub fn sidecar_belongs(s: &Opened, root: &Path, m: &Manifest) -> Result<String> {
    let r = &s.record;
    let from = s.root.display();
    if r.package != m.name {
        return Err(refuse(format!(
            "{from}/rebuild.json belongs to package {}, not {}",
            r.package, m.name
        )));
    }
    let manifest_hash = sha256_file(&root.join("manifest.json"))?;
    if r.manifest_sha256 != manifest_hash {
        return Err(refuse(format!(
            "{from}/rebuild.json was made with another manifest.json (sha256 {}, this package's {}): \
             a sidecar of another packing of {}",
            short(&r.manifest_sha256),
            short(&manifest_hash),
            m.name
        )));
    }
    let bin = sha256_file(&root.join(&r.binary)).map_err(|e| {
        refuse(format!(
            "{from}/rebuild.json names {}, which the package does not hold ({e:#})",
            r.binary
        ))
    })?;
    if bin != r.binary_sha256 {
        return Err(refuse(format!(
            "{}: its sha256 is {}, the sidecar was made for {} (the binary was replaced or altered)",
            r.binary,
            short(&bin),
            short(&r.binary_sha256)
        )));
    }
    for named in &m.profiles {
        let Some((kind, hash)) = named.split_once(':') else {
            return Err(refuse(format!(
                "manifest.json names a profile as '{named}', not KIND:HASH"
            )));
        };
        let Some(p) = r.profile(kind) else {
            return Err(refuse(format!(
                "the sidecar carries no {kind} profile, which the manifest names ({}): missing \
                 profile",
                short(hash)
            )));
        };
        let path = s.path_of(p);
        if !path.exists() {
            return Err(refuse(format!(
                "{}: missing from the sidecar (the manifest names it)",
                p.path
            )));
        }
        let got = ProfileInput::from_path(path)
            .content_hash()
            .unwrap_or_default();
        if got != hash {
            return Err(refuse(format!(
                "{}: its hash is {}, the manifest's {} profile is {} (truncated, altered or \
                 another build's profile)",
                p.path,
                short(&got),
                kind,
                short(hash)
            )));
        }
    }
    // Every profile it carries, the manifest's and those derived from them, has the hash its
    // own record gives.
    for p in &r.profiles {
        let got = ProfileInput::from_path(s.path_of(p))
            .content_hash()
            .unwrap_or_default();
        if got != p.hash {
            return Err(refuse(format!(
                "{}: its hash is {}, the sidecar's record says {} (truncated or altered)",
                p.path,
                short(&got),
                short(&p.hash)
            )));
        }
    }
    Ok(format!(
        "the sidecar names this package, binary and manifest, and carries its {} profile(s) \
         with the manifest's hashes",
        m.profiles.len()
    ))
}
