//! The one date of a build and a package: `SOURCE_DATE_EPOCH` as Debian's reproducible builds
//! take it — the packager's own, else the source's newest changelog entry — never the clock. The
//! compilers read it for `__DATE__` and `__TIME__` (builder/), the package stamps it on every
//! file (package/reproducible.rs).

use std::fs;
use std::path::Path;

/// The date stamped on a package when neither the environment nor the source gives one: GNU tar's
/// deterministic date (2006-07-24), which the `tar` crate also uses.
pub const FALLBACK_EPOCH: u64 = 1_153_704_088;

/// The package's date: `SOURCE_DATE_EPOCH` when set (a packager's own), else the date of the
/// source's newest `debian/changelog` entry (what Debian uses), else [`FALLBACK_EPOCH`] — never
/// the time of packing.
pub fn source_date_epoch(source_dir: Option<&Path>) -> u64 {
    if let Some(v) = std::env::var("SOURCE_DATE_EPOCH")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
    {
        return v;
    }
    source_dir
        .and_then(|d| fs::read_to_string(d.join("debian/changelog")).ok())
        .and_then(|t| changelog_epoch(&t))
        .unwrap_or(FALLBACK_EPOCH)
}

/// The date of a Debian changelog's first entry (its " -- Name <mail>  Thu, 20 Nov 2026 ..." line).
pub fn changelog_epoch(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(" -- "))?;
    let date = line.split("  ").nth(1)?.trim();
    let out = std::process::Command::new("date")
        .args(["-u", "+%s", "-d", date])
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_date_comes_from_the_environment_or_the_changelog_never_the_clock() {
        let cl = "mariadb (1:10.11.18-0+deb12u1) bookworm; urgency=medium\n\n  * New upstream.\n\n -- Otto Kekäläinen <otto@debian.org>  Thu, 20 Nov 2025 10:00:00 +0000\n\nmariadb (1:10.11.17-0+deb12u1) bookworm; urgency=medium\n\n -- X <x@y>  Mon, 01 Jan 2024 00:00:00 +0000\n";
        assert_eq!(changelog_epoch(cl), Some(1_763_632_800));
        assert_eq!(changelog_epoch("no entries"), None);
        let t = tempfile::tempdir().unwrap();
        fs::create_dir(t.path().join("debian")).unwrap();
        fs::write(t.path().join("debian/changelog"), cl).unwrap();
        if std::env::var_os("SOURCE_DATE_EPOCH").is_none() {
            assert_eq!(source_date_epoch(Some(t.path())), 1_763_632_800);
            assert_eq!(source_date_epoch(None), FALLBACK_EPOCH);
        }
    }
}
