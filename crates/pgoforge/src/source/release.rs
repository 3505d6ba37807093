//! Which releases of a Debian-packaged server the distribution serves, and whether the one a
//! recipe builds is the newest. Debian publishes security fixes as new versions in the suite's
//! security archive (bookworm-security) while the suite itself keeps the old one until its next
//! point release: a recipe pinned to the suite's version then builds, benchmarks and packages a
//! server with those fixes missing. `doctor`, `run --plan`, the run's summary and its report say
//! so and name the newer version; `--source-version newest` builds it.
//!
//! apt's binary package lists answer without deb-src entries and without root: the versions of
//! the recipe's `server_package` (`mariadb-server-core`), built from the same source at the same
//! version, as `apt-cache madison` shows them; the installed one as `dpkg-query` does.

use std::cmp::Ordering;
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::recipe::SourceSpec;

/// A version apt's lists offer, and the suite they offer it from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Release {
    pub version: String,
    pub suite: String,
}

/// The recipe's version against what the distribution serves and what is installed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseCheck {
    /// The source package and the version the run builds.
    pub package: String,
    pub building: String,
    /// The binary package whose versions were looked up.
    pub server_package: String,
    /// Every version of it apt offers in the recipe's suite, its -security and -updates suites.
    pub available: Vec<Release>,
    /// The installed version of `server_package`, if installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installed: Option<String>,
    /// Why nothing could be looked up (no apt, no such package in the lists), if so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unchecked: Option<String>,
}

impl ReleaseCheck {
    /// The newest release offered (None: nothing offered).
    pub fn newest(&self) -> Option<&Release> {
        self.available
            .iter()
            .max_by(|a, b| compare(&a.version, &b.version))
    }

    /// The newest release offered, if it is newer than the one built.
    pub fn newer(&self) -> Option<&Release> {
        self.newest()
            .filter(|n| compare(&n.version, &self.building) == Ordering::Greater)
    }

    /// What a user must hear: a newer release (security fixes missing), an installed server of
    /// another version (a `--binary` contender or a `.deb` that does not fit), a check that
    /// could not be made.
    pub fn warnings(&self) -> Vec<String> {
        let mut v = Vec::new();
        if let Some(n) = self.newer() {
            v.push(format!(
                "this run builds {} {}, but Debian serves a newer release, {} ({}){}: the server \
                 built here misses what changed since, security fixes included; build that one \
                 with --source-version newest (or --source-version {})",
                self.package,
                self.building,
                n.version,
                n.suite,
                if n.suite.ends_with("-security") {
                    ", a security release"
                } else {
                    ""
                },
                n.version
            ));
        }
        if let Some(i) = self.installed.as_ref().filter(|i| **i != self.building) {
            v.push(format!(
                "the installed {} is {i}, not {} as built here: Debian's binary as a --binary \
                 contender is another version, and a .deb of this build will not install beside \
                 it (build --source-version {i}, or upgrade the installed server)",
                self.server_package, self.building
            ));
        }
        if let Some(why) = &self.unchecked {
            v.push(format!(
                "cannot tell whether Debian serves a newer {} than {}: {why}",
                self.package, self.building
            ));
        }
        v
    }
}

/// Where a run directory keeps the check made when its run started (the report shows it).
pub fn copy_in_run_dir(run_dir: &std::path::Path) -> std::path::PathBuf {
    run_dir.join("source-release.json")
}

pub fn read_copy(run_dir: &std::path::Path) -> anyhow::Result<Option<ReleaseCheck>> {
    crate::infra::fs::read_json_if_present(
        &copy_in_run_dir(run_dir),
        "delete it to report without it",
    )
}

/// Looks `spec` up in apt's lists (None: not a Debian source, or the recipe names no server
/// package to look up).
pub fn check(spec: &SourceSpec) -> Option<ReleaseCheck> {
    let SourceSpec::Debian {
        package,
        version,
        suite,
        server_package: Some(bin),
    } = spec
    else {
        return None;
    };
    let mut c = ReleaseCheck {
        package: package.clone(),
        building: version.clone(),
        server_package: bin.clone(),
        available: Vec::new(),
        installed: installed(bin),
        unchecked: None,
    };
    match Command::new("apt-cache").args(["madison", bin]).output() {
        Ok(out) if out.status.success() => {
            let all = parse_madison(&String::from_utf8_lossy(&out.stdout), bin);
            c.available = all
                .into_iter()
                .filter(|r| same_distribution(&r.suite, suite))
                .collect();
            if c.available.is_empty() {
                c.unchecked = Some(format!(
                    "apt's lists offer no {bin} from {suite} or its -security and -updates \
                     suites (run apt-get update; add {suite}-security to apt's sources to hear of \
                     security releases)"
                ));
            }
        }
        Ok(out) => {
            c.unchecked = Some(format!(
                "apt-cache madison {bin} failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
        Err(e) => c.unchecked = Some(format!("cannot run apt-cache ({e}): not a Debian system?")),
    }
    Some(c)
}

/// The newest version of `spec`'s server package apt offers in its distribution, for
/// `--source-version newest`; the reason when there is none to be found.
pub fn newest(spec: &SourceSpec) -> Result<Release, String> {
    let c = check(spec).ok_or_else(|| {
        "--source-version newest needs a Debian recipe that names its server_package".to_string()
    })?;
    if let Some(why) = &c.unchecked {
        return Err(format!(
            "--source-version newest: {why}; give the version itself (--source-version VERSION)"
        ));
    }
    Ok(c.newest().cloned().expect("checked non-empty"))
}

/// The installed version of a binary package (None: not installed, or no dpkg).
pub fn installed(package: &str) -> Option<String> {
    let out = Command::new("dpkg-query")
        .args(["-W", "-f", "${Status}\t${Version}", package])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let (status, version) = text.split_once('\t')?;
    (out.status.success() && status.ends_with(" installed") && is_version(version))
        .then(|| version.to_string())
}

/// `apt-cache madison` lines (`pkg | version | URI suite/component arch Packages`) for `package`;
/// anything else (source lines, garbage, a line of another package) is skipped.
pub fn parse_madison(text: &str, package: &str) -> Vec<Release> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split('|').map(str::trim);
            let (p, v, from) = (f.next()?, f.next()?, f.next()?);
            if p != package || !is_version(v) || !from.ends_with("Packages") {
                return None;
            }
            let suite = from.split_whitespace().nth(1)?.split('/').next()?;
            let suite_ok = !suite.is_empty()
                && suite
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
            suite_ok.then(|| Release {
                version: v.to_string(),
                suite: suite.to_string(),
            })
        })
        .collect()
}

/// Whether `suite` is `base` or one of the suites that update it in place: its security
/// archive and its stable updates (not backports, which are another distribution's builds).
fn same_distribution(suite: &str, base: &str) -> bool {
    suite == base
        || suite
            .strip_prefix(base)
            .is_some_and(|rest| matches!(rest, "-security" | "-updates" | "-proposed-updates"))
}

fn is_version(v: &str) -> bool {
    !v.is_empty()
        && v.len() <= 128
        && v.starts_with(|c: char| c.is_ascii_digit())
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '-' | ':' | '~'))
}

/// Debian's version order (deb-version(7)): epoch numerically, then the upstream version and
/// the revision, each compared in alternating runs of non-digits (letters before everything
/// else, `~` before the end of the string) and digits (numerically).
pub fn compare(a: &str, b: &str) -> Ordering {
    let (ea, ua, ra) = split(a);
    let (eb, ub, rb) = split(b);
    ea.cmp(&eb)
        .then_with(|| compare_part(ua, ub))
        .then_with(|| compare_part(ra, rb))
}

fn split(v: &str) -> (u64, &str, &str) {
    let (epoch, rest) = match v.split_once(':') {
        Some((e, r)) => (e.parse().unwrap_or(0), r),
        None => (0, v),
    };
    match rest.rsplit_once('-') {
        Some((u, r)) => (epoch, u, r),
        None => (epoch, rest, ""),
    }
}

fn order(c: Option<u8>) -> i32 {
    match c {
        None => 0,
        Some(b'~') => -1,
        Some(c) if c.is_ascii_alphabetic() => c as i32,
        Some(c) => c as i32 + 256,
    }
}

fn compare_part(a: &str, b: &str) -> Ordering {
    let (mut a, mut b) = (a.as_bytes(), b.as_bytes());
    while !a.is_empty() || !b.is_empty() {
        // The non-digit prefixes, character by character.
        loop {
            let ca = a.first().copied().filter(|c| !c.is_ascii_digit());
            let cb = b.first().copied().filter(|c| !c.is_ascii_digit());
            if ca.is_none() && cb.is_none() {
                break;
            }
            match order(ca).cmp(&order(cb)) {
                Ordering::Equal => {
                    a = &a[1..];
                    b = &b[1..];
                }
                o => return o,
            }
        }
        // The digit runs, as numbers (leading zeros ignored).
        let da = a.iter().take_while(|c| c.is_ascii_digit()).count();
        let db = b.iter().take_while(|c| c.is_ascii_digit()).count();
        let na = trim_zeros(&a[..da]);
        let nb = trim_zeros(&b[..db]);
        match na.len().cmp(&nb.len()).then_with(|| na.cmp(nb)) {
            Ordering::Equal => {
                a = &a[da..];
                b = &b[db..];
            }
            o => return o,
        }
    }
    Ordering::Equal
}

fn trim_zeros(d: &[u8]) -> &[u8] {
    let n = d.iter().take_while(|c| **c == b'0').count();
    &d[n..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debian_versions_order_as_dpkg_orders_them() {
        let ascending = [
            "1.0~rc1",
            "1.0",
            "1.0-1",
            "1.0-1+b1",
            "1.0a",
            "1.00.1",
            "1.2",
            "1.10",
            "1:0.1",
            "1:10.11.18-0+deb12u1",
            "1:10.11.19-0+deb12u1~bpo1",
            "1:10.11.19-0+deb12u1",
            "1:10.11.19-0+deb12u2",
            "2:0",
        ];
        for (i, a) in ascending.iter().enumerate() {
            for (j, b) in ascending.iter().enumerate() {
                assert_eq!(compare(a, b), i.cmp(&j), "{a} vs {b}");
            }
        }
        assert_eq!(compare("1.01", "1.1"), Ordering::Equal);
    }

    #[test]
    fn madison_lines_give_releases_and_garbage_gives_nothing() {
        let text = "mariadb-server-core | 1:10.11.19-0+deb12u1 | http://deb.debian.org/debian-security bookworm-security/main amd64 Packages\n\
                    mariadb-server-core | 1:10.11.18-0+deb12u1 | http://deb.debian.org/debian bookworm/main amd64 Packages\n\
                    mariadb | 1:10.11.18-0+deb12u1 | http://deb.debian.org/debian bookworm/main Sources\n\
                    other | 9 | http://x bookworm/main amd64 Packages\n\
                    mariadb-server-core | $(reboot) | http://x bookworm/main amd64 Packages\n\
                    mariadb-server-core | 1:1 | http://x Bookworm;rm/main amd64 Packages\n\
                    \u{0}\u{1}|||\n\
                    mariadb-server-core\n";
        let r = parse_madison(text, "mariadb-server-core");
        assert_eq!(
            r,
            [
                Release {
                    version: "1:10.11.19-0+deb12u1".into(),
                    suite: "bookworm-security".into()
                },
                Release {
                    version: "1:10.11.18-0+deb12u1".into(),
                    suite: "bookworm".into()
                }
            ]
        );
    }

    #[test]
    fn a_newer_security_release_is_named_an_older_or_equal_one_is_not() {
        let rel = |v: &str, s: &str| Release {
            version: v.into(),
            suite: s.into(),
        };
        let mut c = ReleaseCheck {
            package: "mariadb".into(),
            building: "1:10.11.18-0+deb12u1".into(),
            server_package: "mariadb-server-core".into(),
            available: vec![
                rel("1:10.11.18-0+deb12u1", "bookworm"),
                rel("1:10.11.19-0+deb12u1", "bookworm-security"),
            ],
            installed: Some("1:10.11.18-0+deb12u1".into()),
            unchecked: None,
        };
        let w = c.warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("1:10.11.19-0+deb12u1 (bookworm-security), a security release")
                && w[0].contains("--source-version newest"),
            "{w:?}"
        );
        c.building = "1:10.11.19-0+deb12u1".into();
        let w = c.warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("the installed mariadb-server-core is 1:10.11.18-0+deb12u1"),
            "{w:?}"
        );
        c.installed = None;
        assert!(c.warnings().is_empty());
        assert!(same_distribution("bookworm-updates", "bookworm"));
        assert!(!same_distribution("bookworm-backports", "bookworm"));
        assert!(!same_distribution("trixie", "bookworm"));
    }
}
