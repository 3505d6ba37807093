//! The key a repository is signed with: one the user names (`--key`, from their own GnuPG
//! keyring), or one pgoforge makes once and keeps in a GnuPG home of its own, outside anything a
//! web server serves. Hosts trust exactly this key for exactly this repository (`Signed-By`).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

/// A signing key, by fingerprint, in a GnuPG home (None: the user's own, `GNUPGHOME` or ~/.gnupg).
#[derive(Clone, Debug)]
pub struct SigningKey {
    pub fingerprint: String,
    pub home: Option<PathBuf>,
    /// Whether this publish made the key (the summary says to keep its home safe).
    pub made: bool,
}

fn gpg(home: Option<&Path>) -> Command {
    let mut c = Command::new("gpg");
    c.args(["--batch", "--no-tty", "--quiet"]);
    if let Some(h) = home {
        c.arg("--homedir").arg(h);
    }
    c
}

/// Runs a gpg command; its standard output, or an error with what gpg said.
fn run(mut c: Command, what: &str) -> Result<Vec<u8>> {
    let out = c
        .output()
        .with_context(|| format!("{what}: running gpg (apt-get install gnupg)"))?;
    if !out.status.success() {
        bail!(
            "{what}: gpg failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(out.stdout)
}

/// The fingerprints of the secret keys gpg's `--with-colons` listing names, in order.
fn fingerprints(colons: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut after_sec = false;
    for l in colons.lines() {
        let f: Vec<&str> = l.split(':').collect();
        match f.first().copied() {
            Some("sec") => after_sec = true,
            // The primary key's fingerprint follows its `sec` line; subkeys' follow `ssb`.
            Some("fpr") if after_sec => {
                if let Some(fp) = f.get(9).filter(|s| !s.is_empty()) {
                    out.push(fp.to_string());
                }
                after_sec = false;
            }
            Some("ssb") => after_sec = false,
            _ => {}
        }
    }
    out
}

fn secret_keys(home: Option<&Path>, which: Option<&str>) -> Result<Vec<String>> {
    let mut c = gpg(home);
    c.args(["--with-colons", "--list-secret-keys"]);
    if let Some(w) = which {
        c.arg(w);
    }
    let out = c.output().context("running gpg (apt-get install gnupg)")?;
    // gpg exits 2 when the named key is not there: no fingerprints.
    Ok(fingerprints(&String::from_utf8_lossy(&out.stdout)))
}

/// The key the user named: a secret key of their own GnuPG keyring.
pub fn named(id: &str) -> Result<SigningKey> {
    match secret_keys(None, Some(id))?.as_slice() {
        [fp] => Ok(SigningKey {
            fingerprint: fp.clone(),
            home: None,
            made: false,
        }),
        [] => crate::usage!(
            "--key {id}: your GnuPG keyring (GNUPGHOME or ~/.gnupg) has no secret key {id} \
             (gpg --list-secret-keys lists them; or leave --key out and pgoforge makes one)"
        ),
        many => crate::usage!(
            "--key {id} names {} secret keys ({}): give a full fingerprint",
            many.len(),
            many.join(", ")
        ),
    }
}

/// pgoforge's own key in `home`, made there (ed25519, no passphrase, no expiry) when it has none.
pub fn own(home: &Path) -> Result<SigningKey> {
    use std::os::unix::fs::PermissionsExt;
    fs::create_dir_all(home).with_context(|| format!("creating {}", home.display()))?;
    // gpg refuses (warns about) a home others can read; the secret key is in it.
    fs::set_permissions(home, fs::Permissions::from_mode(0o700))
        .with_context(|| format!("making {} private", home.display()))?;
    if let Some(fp) = secret_keys(Some(home), None)?.into_iter().next() {
        return Ok(SigningKey {
            fingerprint: fp,
            home: Some(home.to_path_buf()),
            made: false,
        });
    }
    let host = fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "localhost".into());
    let mut c = gpg(Some(home));
    c.args(["--passphrase", "", "--quick-generate-key"])
        .arg(format!(
            "pgoforge archive key ({host}) <pgoforge@{host}.invalid>"
        ))
        .args(["ed25519", "sign", "never"]);
    run(c, "making the repository's signing key")?;
    let fp = secret_keys(Some(home), None)?
        .into_iter()
        .next()
        .context("gpg made a key but does not list it")?;
    Ok(SigningKey {
        fingerprint: fp,
        home: Some(home.to_path_buf()),
        made: true,
    })
}

impl SigningKey {
    /// The public key, binary (what apt's `Signed-By` reads from a `.gpg` file).
    pub fn export(&self) -> Result<Vec<u8>> {
        let mut c = gpg(self.home.as_deref());
        c.args(["--export", &self.fingerprint]);
        let key = run(c, "exporting the public key")?;
        if key.is_empty() {
            bail!("gpg exported nothing for {}", self.fingerprint);
        }
        Ok(key)
    }

    /// Whether gpg can sign with the key unattended (a passphrase with no agent to ask, an
    /// expired or revoked key, a key without signing capability cannot): checked before
    /// anything is published, so such a key leaves the repository as it was.
    pub fn check_signs(&self) -> Result<()> {
        let t = tempfile::tempdir()?;
        let probe = t.path().join("probe");
        fs::write(&probe, b"pgoforge signing probe\n")?;
        let mut c = gpg(self.home.as_deref());
        c.args(["--pinentry-mode", "error", "--local-user"])
            .arg(&self.fingerprint)
            .arg("--detach-sign")
            .arg("--output")
            .arg(t.path().join("probe.sig"))
            .arg(&probe);
        if let Err(e) = run(c, "a test signature") {
            crate::usage!(
                "the key {} cannot sign here, so nothing was published ({e:#}): give a key with \
                 signing capability whose passphrase an agent holds (or none), or leave --key \
                 out and pgoforge makes one",
                self.fingerprint
            );
        }
        Ok(())
    }

    /// Signs `release` into `inrelease` (clear-signed) and `detached` (`Release.gpg`).
    pub fn sign(&self, release: &Path, inrelease: &Path, detached: &Path) -> Result<()> {
        for (flag, out) in [("--clearsign", inrelease), ("--detach-sign", detached)] {
            let mut c = gpg(self.home.as_deref());
            c.args([
                "--yes",
                "--armor",
                "--digest-algo",
                "SHA512",
                "--local-user",
            ])
            .arg(&self.fingerprint)
            .arg(flag)
            .arg("--output")
            .arg(out)
            .arg(release);
            run(c, &format!("signing {}", release.display()))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_primary_keys_fingerprint_is_taken_not_a_subkeys() {
        let colons = "sec:u:255:22:AAAA:1:::u:::scESC:::+:::ed25519:::0:\n\
                      fpr:::::::::1111222233334444555566667777888899990000:\n\
                      grp:::::::::ABCD:\n\
                      uid:u::::1::X::pgoforge archive key (h) <pgoforge@h.invalid>::::::::::0:\n\
                      ssb:u:255:18:BBBB:1::::::e:::+:::cv25519::\n\
                      fpr:::::::::FFFF222233334444555566667777888899990000:\n";
        assert_eq!(
            fingerprints(colons),
            ["1111222233334444555566667777888899990000"]
        );
        assert!(fingerprints("").is_empty());
    }

    /// A real gpg: the key is made once, found again, exported, and signs what gpgv then checks.
    #[test]
    fn a_key_made_once_is_reused_and_its_signature_verifies() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("gnupg");
        let k = own(&home).unwrap();
        assert!(k.made);
        let again = own(&home).unwrap();
        assert_eq!(again.fingerprint, k.fingerprint);
        assert!(!again.made);
        let release = t.path().join("Release");
        fs::write(&release, "Origin: pgoforge\n").unwrap();
        let (inr, det) = (t.path().join("InRelease"), t.path().join("Release.gpg"));
        k.sign(&release, &inr, &det).unwrap();
        let keyring = t.path().join("k.gpg");
        fs::write(&keyring, k.export().unwrap()).unwrap();
        let ok = |args: &[&Path]| {
            Command::new("gpgv")
                .arg("--keyring")
                .arg(&keyring)
                .args(args)
                .output()
                .unwrap()
                .status
                .success()
        };
        assert!(ok(&[&inr]));
        assert!(ok(&[&det, &release]));
        fs::write(&release, "Origin: someone else\n").unwrap();
        assert!(!ok(&[&det, &release]), "a changed Release fails");
    }
}
