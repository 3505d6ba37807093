//! What the repository has published and the profiles each build was made from: `profiles/`
//! beside the pool holds each published package's rebuild sidecar (its recipe, source identity,
//! toolchain and profiles) and `profiles/published.json` one record per published .deb. The
//! next release is built from these (`pgoforge follow`, `run --profile-from`), and anyone can
//! rebuild a published binary from them byte for byte — so the repository stays the whole state.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// The directory, relative to the repository's root.
pub const DIR: &str = "profiles";
const RECORD: &str = "published.json";

/// One published .deb.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Build {
    /// The binary package and its version as published (renumbered where it was).
    pub package: String,
    pub version: String,
    /// The Debian version of the server it was built from and installs beside.
    pub fits: String,
    /// The sidecar's file under `profiles/` (None: the .deb was published without its
    /// tarball, so its profiles are not here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sidecar: Option<String>,
}

impl Build {
    pub fn sidecar_path(&self, repo: &Path) -> Option<PathBuf> {
        self.sidecar.as_ref().map(|s| repo.join(DIR).join(s))
    }
}

/// The records, oldest first (none in a repository that never published, or one published
/// before the records were kept).
pub fn read(repo: &Path) -> Result<Vec<Build>> {
    let p = repo.join(DIR).join(RECORD);
    match fs::read_to_string(&p) {
        Ok(text) => serde_json::from_str(&text).with_context(|| {
            format!(
                "{} is damaged (not the JSON pgoforge writes): restore it from a backup of the \
                 repository",
                p.display()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e).with_context(|| format!("reading {}", p.display())),
    }
}

/// Adds `b` (once) and its sidecar (copied from `sidecar`), atomically.
pub fn record(repo: &Path, b: &Build, sidecar: Option<&Path>) -> Result<()> {
    let dir = repo.join(DIR);
    fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    if let (Some(from), Some(name)) = (sidecar, &b.sidecar) {
        let to = dir.join(name);
        if !to.exists() {
            let tmp = dir.join(format!(".{name}.tmp"));
            fs::copy(from, &tmp)
                .with_context(|| format!("copying {} into {}", from.display(), dir.display()))?;
            fs::rename(&tmp, &to)?;
        }
    }
    let mut all = read(repo)?;
    if all
        .iter()
        .any(|x| x.package == b.package && x.version == b.version)
    {
        return Ok(());
    }
    all.push(b.clone());
    crate::infra::fs::write_atomic(
        &dir.join(RECORD),
        serde_json::to_string_pretty(&all)?.as_bytes(),
    )
}

/// The published build of the newest release (the last published of it), if any.
pub fn newest(repo: &Path) -> Result<Option<Build>> {
    let mut best: Option<Build> = None;
    for b in read(repo)? {
        let newer = match &best {
            None => true,
            Some(x) => {
                crate::source::release::compare(&b.fits, &x.fits) != std::cmp::Ordering::Less
            }
        };
        if newer {
            best = Some(b);
        }
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(v: &str, fits: &str) -> Build {
        Build {
            package: "mariadb-server-pgo".into(),
            version: v.into(),
            fits: fits.into(),
            sidecar: Some(format!("{v}.rebuild.tar.zst")),
        }
    }

    #[test]
    fn the_newest_release_wins_and_its_last_build_among_equals() {
        let t = tempfile::tempdir().unwrap();
        assert_eq!(newest(t.path()).unwrap(), None);
        let first = b("1:10.11.18-0+deb12u1+pgoforge+x", "1:10.11.18-0+deb12u1");
        let next = b("1:10.11.19-0+deb12u1+pgoforge+x", "1:10.11.19-0+deb12u1");
        let again = b("1:10.11.19-0+deb12u1+pgoforge.2+x", "1:10.11.19-0+deb12u1");
        for x in [&first, &next, &again, &first] {
            record(t.path(), x, None).unwrap();
        }
        assert_eq!(read(t.path()).unwrap().len(), 3, "recorded once each");
        assert_eq!(newest(t.path()).unwrap(), Some(again));
        fs::write(t.path().join(DIR).join(RECORD), "{").unwrap();
        assert!(format!("{:#}", read(t.path()).unwrap_err()).contains("damaged"));
    }
}
