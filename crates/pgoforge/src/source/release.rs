//! Which release of a Debian-packaged server to build, by what the mirror can actually serve.
//! Mirrors lag, drop superseded files and serve an index ahead of their pool: on 2026-12-04 the
//! index listed MariaDB 1:10.11.19-0+deb12u1 in bookworm-security while none of its source files
//! could be downloaded. So every release considered is checked file by file ([`super::probe`])
//! before anything is built: the default and `--source-version newest` take the newest release
//! whose files are all served, and a newer listed one that is not is named, never recommended;
//! an explicit pin that cannot be fetched is refused with the releases that can.
//!
//! The index is apt's, for source packages, in a private state ([`super::apt`]: the machine's
//! own mirrors as deb-src entries, nothing written under /etc); the installed server, as
//! `dpkg-query` sees it, decides whether a .deb of the build can take its place.

use std::cmp::Ordering;
use std::process::Command;

use serde::{Deserialize, Serialize};

pub use super::apt::same_distribution;
use super::apt::{is_version, parse_madison_kind, Apt, Freshness, Listed, Log};
use super::probe::{Answer, Prober};
use crate::infra::exit::Stop;
use crate::recipe::SourceSpec;

/// A version the index lists, the suite it lists it in, and — when checked and found so — why
/// its source cannot be fetched.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Release {
    pub version: String,
    pub suite: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unfetchable: Option<String>,
}

/// Which release a run asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Want {
    /// The recipe's default: the newest release whose source the mirror serves (the recipe's
    /// own version when the mirror cannot be asked).
    Default,
    /// `--source-version newest`: the same, but a mirror that cannot be asked is an error.
    Newest,
    /// `--source-version VERSION`.
    Exact(String),
}

/// The release a run builds against what the mirror lists and serves and what is installed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseCheck {
    /// The source package and the version the run builds.
    pub package: String,
    pub building: String,
    /// The binary package whose installed version a .deb must fit (empty: none).
    pub server_package: String,
    /// Every version of the source the index lists in the recipe's suite, its -security and
    /// -updates suites; each one checked against the mirror says whether it can be fetched.
    pub available: Vec<Release>,
    /// The installed version of `server_package`, if installed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub installed: Option<String>,
    /// The apt command that puts the installed server at the release built (when they differ).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub align: Option<String>,
    /// Why nothing could be looked up (no apt, no index, no answer), if so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unchecked: Option<String>,
    /// The index could not be refreshed and an older one was used: why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale: Option<String>,
}

impl ReleaseCheck {
    /// The newest release listed and not found unfetchable (None: nothing offered).
    pub fn newest(&self) -> Option<&Release> {
        self.available
            .iter()
            .filter(|r| r.unfetchable.is_none())
            .max_by(|a, b| compare(&a.version, &b.version))
    }

    /// The newest fetchable release, if it is newer than the one built.
    pub fn newer(&self) -> Option<&Release> {
        self.newest()
            .filter(|n| compare(&n.version, &self.building) == Ordering::Greater)
    }

    /// Listed releases newer than the one built whose source the mirror does not serve.
    pub fn unfetchable_newer(&self) -> impl Iterator<Item = &Release> {
        self.available.iter().filter(|r| {
            r.unfetchable.is_some() && compare(&r.version, &self.building) == Ordering::Greater
        })
    }

    /// What a user must hear: a newer release (security fixes missing), a newer one listed but
    /// not served, an installed server of another version (a `--binary` contender or a `.deb`
    /// that does not fit, and what to do), a check that could not be made.
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
        for r in self.unfetchable_newer() {
            v.push(format!(
                "{} {} is listed in {}, but its source cannot be fetched ({}): it is not built; \
                 this run builds {}{} (when the mirror serves it, the default builds it)",
                self.package,
                r.version,
                r.suite,
                r.unfetchable.as_deref().unwrap_or(""),
                self.building,
                if self.newer().is_none() {
                    ", the newest release the mirror serves"
                } else {
                    ""
                }
            ));
        }
        if let Some(i) = self.installed.as_ref().filter(|i| **i != self.building) {
            let newer = compare(i, &self.building) == Ordering::Greater;
            let served = self
                .available
                .iter()
                .any(|r| r.version == *i && r.unfetchable.is_none());
            v.push(format!(
                "the installed {sp} is {i}, not {b} as built here: the benchmark compares with \
                 Debian's {b} (downloaded into the work dir, not installed; the installed binary \
                 is another release), and the .deb of this build installs only beside {sp} {b}, \
                 so dpkg refuses it on this machine and changes nothing. To deploy it in \
                 Debian's place, first put the server at the built release{cmd}{loss}; or deploy \
                 the package's tarball under systemd (its README); or {build}",
                sp = self.server_package,
                b = self.building,
                cmd = self
                    .align
                    .as_ref()
                    .map(|c| format!(": {c}"))
                    .unwrap_or_default(),
                loss = if newer {
                    format!(" (which gives up what {i} fixed)")
                } else {
                    String::new()
                },
                build = if served {
                    format!("build the installed release (--source-version {i})")
                } else {
                    format!("build {i} once the mirror serves its source")
                },
            ));
        }
        if let Some(why) = &self.stale {
            v.push(format!(
                "the mirror's source index could not be refreshed ({why}): releases are as an \
                 older index listed them"
            ));
        }
        if let Some(why) = &self.unchecked {
            v.push(format!(
                "cannot tell which releases of {} the mirror serves ({why}): building {}",
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

/// Whether the mirror serves every file of `package` at `version`: None if so (or if it cannot
/// be told: the download decides), else why not.
fn unfetchable(apt: &Apt, prober: &Prober, package: &str, version: &str) -> Option<String> {
    let files = match apt.files(package, version) {
        Ok(f) if !f.is_empty() => f,
        Ok(_) => return Some("the index names no files for it".into()),
        Err(e) => return Some(e.to_string()),
    };
    let mut missing = Vec::new();
    let mut silent = Vec::new();
    for f in &files {
        match prober.ask(&f.uri) {
            Answer::Served | Answer::Unknown(_) => {}
            Answer::Missing(why) => missing.push(format!("{}: {why}", f.name)),
            Answer::Unreachable(why) => silent.push(format!("{}: {why}", f.name)),
        }
    }
    if !missing.is_empty() {
        Some(format!(
            "{} of its {} source files missing on the mirror — {}",
            missing.len(),
            files.len(),
            missing.join("; ")
        ))
    } else if !silent.is_empty() {
        Some(format!("the mirror did not answer — {}", silent.join("; ")))
    } else {
        None
    }
}

/// Decides which release of `spec` to build, checked against the mirror (None: not a Debian
/// source). An explicit pin that cannot be fetched is refused (exit status 2) with the releases
/// that can; a default with no release fetchable stops with [`Stop::SourceUnavailable`].
pub fn resolve(spec: &SourceSpec, want: &Want) -> anyhow::Result<Option<ReleaseCheck>> {
    let SourceSpec::Debian {
        package,
        version,
        suite,
        server_package,
    } = spec
    else {
        return Ok(None);
    };
    let mut c = ReleaseCheck {
        package: package.clone(),
        building: match want {
            Want::Exact(v) => v.clone(),
            _ => version.clone(),
        },
        server_package: server_package.clone().unwrap_or_default(),
        available: Vec::new(),
        installed: server_package.as_deref().and_then(installed),
        align: None,
        unchecked: None,
        stale: None,
    };
    let (apt, listed) = match listing(package, suite) {
        Ok((apt, listed, stale)) => {
            c.stale = stale;
            (apt, listed)
        }
        Err(why) => return unchecked(c, want, why),
    };
    let pinned = match want {
        Want::Exact(v) => Some(v.as_str()),
        _ => None,
    };
    c.available = listed;
    probe(&apt, package, &mut c.available, pinned);
    match pinned {
        Some(v) => refuse_unfetchable_pin(&c, v, suite)?,
        None => match c.newest() {
            Some(n) => c.building = n.version.clone(),
            None => return nothing_fetchable(c, want, suite),
        },
    }
    c.align = align_command(&c);
    Ok(Some(c))
}

/// The private index, refreshed, and the releases of `package` it lists in `suite`'s
/// distribution, newest first (and why the index is stale, if it is); why not, if none.
fn listing(package: &str, suite: &str) -> Result<(Apt, Vec<Release>, Option<String>), String> {
    let found = Apt::for_suite(suite).and_then(|apt| {
        let mut log = Log::default();
        let stale = match apt.refresh(&mut log)? {
            Freshness::Stale(why) => Some(why),
            Freshness::Fresh => None,
        };
        let mut listed = listed(apt.versions(package)?);
        listed.sort_by(|a, b| compare(&b.version, &a.version));
        listed.dedup_by(|a, b| a.version == b.version);
        Ok((apt, listed, stale))
    });
    match found {
        Ok((_, l, _)) if l.is_empty() => Err(format!(
            "the index lists no source package {package} in {suite} or its -security and -updates suites"
        )),
        Ok(found) => Ok(found),
        Err(e) => Err(format!("{e:#}")),
    }
}

/// Asks the mirror about `listed` (newest first): every release newer than the pin (all, without
/// one) down to the first whose files are all served — so that a newer release named to the user
/// is one that can be built —, then the pin; when the pin cannot be fetched, every other release
/// too, so that the refusal lists what can.
fn probe(apt: &Apt, package: &str, listed: &mut [Release], pinned: Option<&str>) {
    let prober = Prober::new();
    let mut asked = vec![false; listed.len()];
    for (i, r) in listed.iter_mut().enumerate() {
        if pinned.is_some_and(|p| compare(&r.version, p) != Ordering::Greater) {
            break;
        }
        r.unfetchable = unfetchable(apt, &prober, package, &r.version);
        asked[i] = true;
        if r.unfetchable.is_none() {
            break;
        }
    }
    let Some(p) = pinned else { return };
    let pin = listed.iter().position(|r| r.version == p);
    if let Some(i) = pin {
        listed[i].unfetchable = unfetchable(apt, &prober, package, p);
        asked[i] = true;
    }
    if pin.is_none_or(|i| listed[i].unfetchable.is_some()) {
        for (i, r) in listed.iter_mut().enumerate() {
            if !asked[i] {
                r.unfetchable = unfetchable(apt, &prober, package, &r.version);
            }
        }
    }
}

/// Each release found unfetchable and why, one line each.
fn why_not(c: &ReleaseCheck) -> String {
    c.available
        .iter()
        .filter_map(|r| {
            r.unfetchable
                .as_ref()
                .map(|w| format!("  {} ({}): {w}", r.version, r.suite))
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Refuses (exit status 2) a pin the index does not list or whose files the mirror does not
/// serve, naming the releases it does serve.
fn refuse_unfetchable_pin(c: &ReleaseCheck, v: &str, suite: &str) -> anyhow::Result<()> {
    let Some(pin) = c.available.iter().find(|r| r.version == v) else {
        return refuse_pin(
            c,
            v,
            &format!(
            "the mirror's index does not list it in {suite} or its -security and -updates suites"
        ),
        );
    };
    match pin.unfetchable {
        None => Ok(()),
        Some(_) => refuse_pin(c, v, "its source cannot be fetched from the mirror"),
    }
}

fn refuse_pin(c: &ReleaseCheck, v: &str, what: &str) -> anyhow::Result<()> {
    let fetchable: Vec<String> = c
        .available
        .iter()
        .filter(|r| r.unfetchable.is_none())
        .map(|r| format!("{} ({})", r.version, r.suite))
        .collect();
    crate::usage!(
        "--source-version {v}: {what}.\n{}\nReleases of {} the mirror serves: {} (give one with \
         --source-version, or leave it out for the newest)",
        why_not(c),
        c.package,
        if fetchable.is_empty() {
            "none".to_string()
        } else {
            fetchable.join(", ")
        }
    );
}

/// No listed release can be fetched: when the mirror only stayed silent, the recipe's release is
/// tried (the download decides); when it answered that the files are missing, the run stops.
fn nothing_fetchable(
    mut c: ReleaseCheck,
    want: &Want,
    suite: &str,
) -> anyhow::Result<Option<ReleaseCheck>> {
    let all_silent = c.available.iter().all(|r| {
        r.unfetchable
            .as_deref()
            .is_some_and(|w| w.starts_with("the mirror did not answer"))
    });
    if all_silent {
        let why = why_not(&c).trim().to_string();
        c.available.iter_mut().for_each(|r| r.unfetchable = None);
        return unchecked(c, want, format!("the mirror did not answer: {why}"));
    }
    Err(Stop::SourceUnavailable(format!(
        "no release of {} in {suite} can be fetched from the mirror:\n{}\nIts index lists them, \
         its pool does not hold them (a mirror that lags or dropped superseded files). Try again \
         later or use another mirror in apt's sources; or give a source yourself (--source \
         DIR|TARBALL)",
        c.package,
        why_not(&c)
    ))
    .into())
}

/// The check when the mirror could not be asked: the recipe's version (or the pin) is built,
/// and said so; `newest` cannot be told.
fn unchecked(
    mut c: ReleaseCheck,
    want: &Want,
    why: String,
) -> anyhow::Result<Option<ReleaseCheck>> {
    if *want == Want::Newest {
        crate::usage!(
            "--source-version newest: cannot tell which releases the mirror serves ({why}); give \
             the version itself (--source-version VERSION)"
        );
    }
    c.unchecked = Some(why);
    c.align = align_command(&c);
    Ok(Some(c))
}

/// `apt-get install --allow-downgrades P=V …` for every installed binary package built from
/// the same source at the installed server's version: what puts the server at the release built
/// (None when they agree, or nothing is installed).
fn align_command(c: &ReleaseCheck) -> Option<String> {
    let installed = c.installed.as_ref().filter(|i| **i != c.building)?;
    let out = Command::new("dpkg-query")
        .args([
            "-W",
            "-f",
            "${Package}\t${source:Package}\t${Version}\t${Status}\n",
        ])
        .output()
        .ok()?;
    let mut pkgs: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f.len() == 4 && f[1] == c.package && f[2] == installed && f[3].ends_with(" installed"))
                .then(|| format!("{}={}", f[0], c.building))
        })
        .collect();
    pkgs.sort();
    if pkgs.is_empty() {
        pkgs.push(format!("{}={}", c.server_package, c.building));
    }
    Some(format!(
        "apt-get install --allow-downgrades {}",
        pkgs.join(" ")
    ))
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
    listed(parse_madison_kind(text, package, "Packages"))
}

fn listed(v: Vec<Listed>) -> Vec<Release> {
    v.into_iter()
        .map(|l| Release {
            version: l.version,
            suite: l.suite,
            unfetchable: None,
        })
        .collect()
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
    fn madison_source_lines_give_source_releases() {
        let text = "   mariadb | 1:10.11.18-0+deb12u1 | http://m/debian bookworm/main Sources\n\
                    mariadb | 1:10.11.18-0+deb12u1 | http://m/debian bookworm/main amd64 Packages\n\
                    mysql-9.7 |    9.7.2-4 | http://m/debian unstable/main Sources\n";
        let r = listed(parse_madison_kind(text, "mariadb", "Sources"));
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].suite, "bookworm");
        assert_eq!(
            listed(parse_madison_kind(text, "mysql-9.7", "Sources"))[0].version,
            "9.7.2-4"
        );
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
                    suite: "bookworm-security".into(),
                    unfetchable: None,
                },
                Release {
                    version: "1:10.11.18-0+deb12u1".into(),
                    suite: "bookworm".into(),
                    unfetchable: None,
                }
            ]
        );
    }

    #[test]
    fn a_newer_security_release_is_named_an_older_or_equal_one_is_not() {
        let rel = |v: &str, s: &str| Release {
            version: v.into(),
            suite: s.into(),
            unfetchable: None,
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
            align: None,
            unchecked: None,
            stale: None,
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
        assert!(
            w[0].contains("dpkg refuses it on this machine")
                && w[0].contains(
                    "build the installed release (--source-version 1:10.11.18-0+deb12u1)"
                ),
            "{w:?}"
        );
        c.installed = None;
        assert!(c.warnings().is_empty());
        // A newer release the index lists but the mirror does not serve is named, never
        // recommended, and the release built is called the newest served.
        c.building = "1:10.11.18-0+deb12u1".into();
        c.available[1].unfetchable = Some("4 of its 4 source files missing".into());
        assert_eq!(c.newest().unwrap().version, "1:10.11.18-0+deb12u1");
        assert!(c.newer().is_none());
        let w = c.warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("1:10.11.19-0+deb12u1 is listed in bookworm-security, but its source cannot be fetched")
                && w[0].contains("the newest release the mirror serves")
                && !w[0].contains("--source-version newest"),
            "{w:?}"
        );
        assert!(same_distribution("sid", "unstable"));
        assert!(same_distribution("bookworm-updates", "bookworm"));
        assert!(!same_distribution("bookworm-backports", "bookworm"));
        assert!(!same_distribution("trixie", "bookworm"));
    }
}
