//! The repository's indices, made with Debian's own apt-ftparchive (apt-utils): `Packages` per
//! architecture from the .debs in the pool, then `Release` over them, signed into `InRelease`
//! and `Release.gpg`. A host's apt never sees a half-written repository: the indices are made in
//! a staging directory, copied first under their hash (`by-hash/SHA256/…`, announced by
//! `Acquire-By-Hash: yes`, so a client holding the previous InRelease still finds the files it
//! names), then renamed into place with InRelease last.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use super::key::SigningKey;

/// What the suite's Release says about itself.
pub struct SuiteInfo<'a> {
    pub suite: &'a str,
    pub architectures: &'a [String],
    pub description: &'a str,
}

/// The component every package goes to.
pub const COMPONENT: &str = "main";

fn ftparchive(repo: &Path, args: &[String]) -> Result<Vec<u8>> {
    let out = Command::new("apt-ftparchive")
        .args(args)
        .current_dir(repo)
        .output()
        .context("running apt-ftparchive (apt-get install apt-utils)")?;
    if !out.status.success() {
        bail!(
            "apt-ftparchive {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(out.stdout)
}

/// Writes `dists/SUITE/` of `repo` for the .debs under `pool/`, signed with `key`.
pub fn write(repo: &Path, info: &SuiteInfo, key: &SigningKey) -> Result<()> {
    let staging = tempfile::Builder::new()
        .prefix(".staging-")
        .tempdir_in(repo)
        .with_context(|| format!("making a staging directory in {}", repo.display()))?;
    let st = staging.path();
    let mut indices: Vec<PathBuf> = Vec::new();
    for arch in info.architectures {
        let rel = PathBuf::from(COMPONENT).join(format!("binary-{arch}"));
        fs::create_dir_all(st.join(&rel))?;
        // Paths in Packages are relative to the repository's root, where apt fetches them.
        let packages = ftparchive(
            repo,
            &[
                "--arch".into(),
                arch.clone(),
                "packages".into(),
                "pool".into(),
            ],
        )?;
        fs::write(st.join(rel.join("Packages")), &packages)?;
        crate::package::deb::gzip_n(&packages, &st.join(rel.join("Packages.gz")))?;
        indices.push(rel.join("Packages"));
        indices.push(rel.join("Packages.gz"));
    }
    let field = |name: &str, value: &str| format!("APT::FTPArchive::Release::{name}={value}");
    let mut args = Vec::new();
    for (name, value) in [
        ("Origin", "pgoforge"),
        ("Label", "pgoforge"),
        ("Suite", info.suite),
        ("Codename", info.suite),
        ("Architectures", &info.architectures.join(" ")),
        ("Components", COMPONENT),
        ("Description", info.description),
        ("Acquire-By-Hash", "yes"),
        // A host that has seen this Release trusts only this key for the suite from then on.
        ("Signed-By", &key.fingerprint),
    ] {
        args.push("-o".to_string());
        args.push(field(name, value));
    }
    args.push("release".into());
    args.push(st.display().to_string());
    let release = ftparchive(repo, &args)?;
    let release_path = st.join("Release");
    fs::write(&release_path, &release)?;
    key.sign(
        &release_path,
        &st.join("InRelease"),
        &st.join("Release.gpg"),
    )?;

    let dists = repo.join("dists").join(info.suite);
    fs::create_dir_all(&dists).with_context(|| format!("creating {}", dists.display()))?;
    for rel in &indices {
        let by_hash = dists
            .join(rel.parent().unwrap_or(Path::new("")))
            .join("by-hash/SHA256");
        fs::create_dir_all(&by_hash)?;
        let hash = crate::infra::fs::sha256_file(&st.join(rel))?;
        fs::copy(st.join(rel), by_hash.join(&hash))?;
    }
    for rel in indices
        .iter()
        .map(PathBuf::as_path)
        .chain(["Release", "Release.gpg", "InRelease"].map(Path::new))
    {
        let to = dists.join(rel);
        fs::rename(st.join(rel), &to).with_context(|| format!("installing {}", to.display()))?;
    }
    Ok(())
}
