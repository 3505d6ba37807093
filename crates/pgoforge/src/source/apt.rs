//! apt, asked about source packages without touching the system's apt configuration: a private
//! apt state (its own sources file, lists and cache) whose `deb-src` entries are the machine's
//! own apt entries with their type changed — the same mirrors, proxies' and users' URIs, keyrings
//! and options, never an address written here. The machine's sources are found as apt finds them
//! (`apt-config`, so `APT_CONFIG` is honoured), and nothing under /etc is written: fetching a
//! source needs no root.
//!
//! The private state lives in the user's cache (`$XDG_CACHE_HOME/pgoforge/apt/HASH`, one
//! directory per set of derived entries) so that a plan, a doctor and a run share one index,
//! refreshed when it is older than [`MAX_AGE`]. `rm -r ~/.cache/pgoforge` removes it.

use std::fs;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context, Result};
use sha2::{Digest, Sha256};

/// The entry types of the two private states: source packages, binary packages.
const SOURCES: &str = "deb-src";
const BINARIES: &str = "deb";

/// How old the private index may be before it is refreshed.
pub const MAX_AGE: Duration = Duration::from_secs(600);

/// A file of a source package as the index lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteFile {
    pub uri: String,
    pub name: String,
    pub size: u64,
    /// `SHA256:…` (apt's strongest hash for the file).
    pub hash: String,
}

/// The private apt state for one distribution (a suite and the suites that update it).
pub struct Apt {
    root: PathBuf,
    /// The suite the recipe names; the index covers it and its -security/-updates suites.
    pub suite: String,
    /// Held while this value lives: one refresh or fetch at a time per state directory.
    _lock: fs::File,
}

/// What `refresh` did.
pub enum Freshness {
    Fresh,
    /// The index could not be refreshed; the older one is used (why).
    Stale(String),
}

impl Apt {
    /// The private state for `suite`'s source packages, derived from the machine's apt sources.
    pub fn for_suite(suite: &str) -> Result<Apt> {
        Apt::open(suite, SOURCES)
    }

    /// The private state for `suite`'s binary packages (the distribution's own server, unpacked
    /// beside the builds): a state of its own, so the source index stays as small and quick to
    /// refresh as it was.
    pub fn for_binaries(suite: &str) -> Result<Apt> {
        Apt::open(suite, BINARIES)
    }

    fn open(suite: &str, types: &str) -> Result<Apt> {
        if Command::new("apt-config").arg("-v").output().is_err() {
            bail!("apt is not installed: Debian source packages are fetched with apt");
        }
        let sources = derive(&system_source_files()?, suite, &os_codename(), types);
        if sources.is_empty() {
            bail!(
                "apt's sources name no entry for {suite} (nor the system's own release, whose \
                 mirror could serve it): add one to /etc/apt/sources.list.d/"
            );
        }
        let key = crate::infra::fs::hex(&Sha256::digest(
            format!("{}\0{}", sources.one_line, sources.deb822).as_bytes(),
        ));
        let root = cache_root().join(&key[..16]);
        for d in ["lists/partial", "cache/archives/partial", "parts"] {
            fs::create_dir_all(root.join(d))
                .with_context(|| format!("creating {}", root.join(d).display()))?;
        }
        let lock = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(root.join(".lock"))
            .with_context(|| format!("opening {}", root.join(".lock").display()))?;
        // SAFETY: flock on a descriptor this File owns; released when it is closed.
        if unsafe { libc::flock(lock.as_raw_fd(), libc::LOCK_EX) } != 0 {
            bail!("locking {}", root.display());
        }
        crate::infra::fs::write_atomic(&root.join("sources.list"), sources.one_line.as_bytes())?;
        crate::infra::fs::write_atomic(
            &root.join("parts/pgoforge.sources"),
            sources.deb822.as_bytes(),
        )?;
        Ok(Apt {
            root,
            suite: suite.to_string(),
            _lock: lock,
        })
    }

    /// apt's options that point it at the private state.
    fn options(&self) -> Vec<String> {
        let r = self.root.display();
        let mut o = vec![
            format!("Dir::Etc::SourceList={r}/sources.list"),
            format!("Dir::Etc::SourceParts={r}/parts"),
            format!("Dir::State::Lists={r}/lists"),
            format!("Dir::Cache={r}/cache"),
            "Dir::Cache::pkgcache=".into(),
            "Dir::Cache::srcpkgcache=".into(),
        ];
        if crate::infra::is_root() {
            // apt drops to _apt for downloads, which cannot write into root's cache directory.
            o.push("APT::Sandbox::User=root".into());
        }
        o.into_iter().flat_map(|x| ["-o".to_string(), x]).collect()
    }

    fn command(&self, tool: &str) -> Command {
        let mut c = Command::new(tool);
        c.args(self.options());
        c.env("LC_ALL", "C");
        c
    }

    /// Refreshes the index when it is older than [`MAX_AGE`]; an index that cannot be refreshed
    /// (no network) is used as it is, if there is one.
    pub fn refresh(&self, log: &mut Log) -> Result<Freshness> {
        let stamp = self.root.join("updated");
        let age = fs::metadata(&stamp)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| SystemTime::now().duration_since(t).ok());
        if age.is_some_and(|a| a < MAX_AGE) {
            return Ok(Freshness::Fresh);
        }
        let out = self
            .command("apt-get")
            .args(["update", "-q"])
            .output()
            .context("running apt-get update")?;
        log.add("apt-get update", &out);
        let text = String::from_utf8_lossy(&out.stderr);
        // apt-get update exits 0 with "W: Failed to fetch" when a mirror did not answer.
        let failed: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("E:") || l.starts_with("W: Failed to fetch"))
            .collect();
        if out.status.success() && failed.is_empty() {
            fs::write(&stamp, b"")?;
            return Ok(Freshness::Fresh);
        }
        let why = failed
            .first()
            .map(|l| l.trim_start_matches(['E', 'W', ':', ' ']).to_string())
            .unwrap_or_else(|| format!("apt-get update exited with {}", out.status));
        if age.is_some() {
            Ok(Freshness::Stale(why))
        } else {
            bail!("the mirror's source index could not be read: {why}")
        }
    }

    /// Every version of source package `package` the index lists in this distribution.
    pub fn versions(&self, package: &str) -> Result<Vec<Listed>> {
        let out = self
            .command("apt-cache")
            .args(["madison", package])
            .output()
            .context("running apt-cache madison")?;
        let text = String::from_utf8_lossy(&out.stdout);
        Ok(parse_madison_kind(&text, package, "Sources")
            .into_iter()
            .filter(|r| same_distribution(&r.suite, &self.suite))
            .collect())
    }

    /// The files of `package` at `version`, with their URIs on the mirror.
    pub fn files(&self, package: &str, version: &str) -> Result<Vec<RemoteFile>> {
        let tmp = tempfile::tempdir()?;
        let out = self
            .command("apt-get")
            .current_dir(tmp.path())
            .args(["source", "--print-uris", "-q", "--only-source"])
            .arg(format!("{package}={version}"))
            .output()
            .context("running apt-get source --print-uris")?;
        if !out.status.success() {
            bail!(
                "apt's index lists no source {package} {version}: {}",
                first_error(&String::from_utf8_lossy(&out.stderr)).unwrap_or("no reason given")
            );
        }
        Ok(parse_print_uris(&String::from_utf8_lossy(&out.stdout)))
    }

    /// Downloads `package` at `version` into `dir` (apt checks each file's size and hash
    /// against the index) and unpacks it there (dpkg-source checks them against the .dsc).
    pub fn source(&self, package: &str, version: &str, dir: &Path, log: &mut Log) -> Result<bool> {
        let out = self
            .command("apt-get")
            .current_dir(dir)
            .args(["source", "-q", "--only-source"])
            .arg(format!("{package}={version}"))
            .output()
            .context("running apt-get source")?;
        log.add(&format!("apt-get source {package}={version}"), &out);
        Ok(out.status.success())
    }

    /// Downloads binary package `package` at `version` into `dir` (apt checks its size and hash
    /// against the index; nothing is installed); the .deb's path, or None when apt could not
    /// (its words in `log`).
    pub fn download(
        &self,
        package: &str,
        version: &str,
        dir: &Path,
        log: &mut Log,
    ) -> Result<Option<PathBuf>> {
        let out = self
            .command("apt-get")
            .current_dir(dir)
            .args(["download", "-q"])
            .arg(format!("{package}={version}"))
            .output()
            .context("running apt-get download")?;
        log.add(&format!("apt-get download {package}={version}"), &out);
        if !out.status.success() {
            return Ok(None);
        }
        let prefix = format!("{package}_");
        Ok(fs::read_dir(dir)?.flatten().map(|e| e.path()).find(|p| {
            p.extension().is_some_and(|x| x == "deb")
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with(&prefix))
        }))
    }
}

/// apt's own words, kept for the log the error names (the message itself is ours).
#[derive(Default)]
pub struct Log {
    pub text: String,
}

impl Log {
    pub fn add(&mut self, what: &str, out: &std::process::Output) {
        self.text.push_str(&format!("$ {what}\n"));
        self.text.push_str(&String::from_utf8_lossy(&out.stdout));
        self.text.push_str(&String::from_utf8_lossy(&out.stderr));
        self.text.push_str(&format!("({})\n\n", out.status));
    }

    /// Writes the log to `path` (best effort: it only explains an error being reported).
    pub fn save(&self, path: &Path) {
        if let Some(d) = path.parent() {
            let _ = fs::create_dir_all(d);
        }
        if let Ok(mut f) = fs::File::create(path) {
            let _ = f.write_all(self.text.as_bytes());
        }
    }
}

/// apt's first error line (`E: …`), without its prefix.
pub fn first_error(text: &str) -> Option<&str> {
    text.lines()
        .find(|l| l.starts_with("E:"))
        .map(|l| l.trim_start_matches("E:").trim_start())
}

/// `apt-get source --print-uris` lines: `'URI' NAME SIZE HASH`.
pub fn parse_print_uris(text: &str) -> Vec<RemoteFile> {
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix('\'')?;
            let (uri, rest) = rest.split_once("' ")?;
            let mut f = rest.split_whitespace();
            let (name, size, hash) = (f.next()?, f.next()?, f.next().unwrap_or(""));
            let safe = !name.is_empty()
                && !name.contains('/')
                && !name.starts_with('.')
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "+-._~".contains(c));
            safe.then(|| RemoteFile {
                uri: uri.to_string(),
                name: name.to_string(),
                size: size.parse().unwrap_or(0),
                hash: hash.to_string(),
            })
        })
        .collect()
}

/// Where the private states live.
fn cache_root() -> PathBuf {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    base.join("pgoforge/apt")
}

/// The system's release codename (bookworm), whose entry names the mirror of Debian's archive.
pub fn os_codename() -> String {
    fs::read_to_string("/etc/os-release")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VERSION_CODENAME="))
        .map(|v| v.trim_matches('"').to_string())
        .unwrap_or_default()
}

/// The sources files apt reads, as apt-config names them: (path, text).
fn system_source_files() -> Result<Vec<(PathBuf, String)>> {
    let out = Command::new("apt-config")
        .args([
            "shell",
            "LIST",
            "Dir::Etc::sourcelist/f",
            "PARTS",
            "Dir::Etc::sourceparts/d",
        ])
        .output()
        .context("running apt-config")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let value = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .map(|v| v.trim_matches('\'').to_string())
    };
    let mut files = Vec::new();
    if let Some(list) = value("LIST") {
        files.push(PathBuf::from(list));
    }
    if let Some(parts) = value("PARTS") {
        if let Ok(rd) = fs::read_dir(&parts) {
            let mut v: Vec<PathBuf> = rd
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "list" || x == "sources"))
                .collect();
            v.sort();
            files.extend(v);
        }
    }
    Ok(files
        .into_iter()
        .filter_map(|p| fs::read_to_string(&p).ok().map(|t| (p, t)))
        .collect())
}

/// deb-src entries for `suite`'s distribution, made from the machine's entries (`files`: path and
/// text, one-line `.list` or deb822 `.sources`): each entry of that distribution becomes a deb-src
/// entry with its own URIs and options. A suite no entry names (unstable on a Debian 12 machine)
/// gets the entry of the system's own release (`codename`) with the suite replaced: the same
/// mirror serves every suite of Debian's archive.
pub fn derive_sources(files: &[(PathBuf, String)], suite: &str, codename: &str) -> Derived {
    derive(files, suite, codename, SOURCES)
}

/// [`derive_sources`], as entries of `types` (`deb-src`, or `deb` for binary packages).
fn derive(files: &[(PathBuf, String)], suite: &str, codename: &str, types: &str) -> Derived {
    let mut out = Derived::default();
    let mut fallback = Derived::default();
    for (path, text) in files {
        let deb822 = path.extension().is_some_and(|x| x == "sources");
        let entries = if deb822 {
            deb822_entries(text)
        } else {
            one_line_entries(text)
        };
        for e in entries {
            let kept: Vec<&String> = e
                .suites
                .iter()
                .filter(|s| same_distribution(s, suite))
                .collect();
            if !kept.is_empty() {
                out.add(&e, &kept, types);
            } else if fallback.is_empty() && e.suites.iter().any(|s| s == codename) {
                fallback.add(&e, &[&suite.to_string()], types);
            }
        }
    }
    if out.is_empty() {
        out = fallback;
    }
    out
}

/// Derived entries: apt reads one-line entries from a `.list` file and deb822 ones from a
/// `.sources` file, never both from one.
#[derive(Default, Debug)]
pub struct Derived {
    pub one_line: String,
    pub deb822: String,
}

impl Derived {
    pub fn is_empty(&self) -> bool {
        self.one_line.is_empty() && self.deb822.is_empty()
    }

    fn add(&mut self, e: &Entry, suites: &[&String], types: &str) {
        let text = e.render(suites, types);
        if e.deb822 {
            self.deb822.push_str(&text);
        } else {
            self.one_line.push_str(&text);
        }
    }
}

/// One apt entry: its options (one-line `[...]` or deb822 fields other than Types, Suites and
/// Enabled, kept verbatim — an inline Signed-By key too), URIs, suites and components.
struct Entry {
    deb822: bool,
    /// One-line: the text between `[` and `]`; deb822: the other fields' lines.
    options: String,
    uris: Vec<String>,
    suites: Vec<String>,
    components: Vec<String>,
}

impl Entry {
    fn render(&self, suites: &[&String], types: &str) -> String {
        let suites: Vec<&str> = suites.iter().map(|s| s.as_str()).collect();
        if self.deb822 {
            format!(
                "Types: {types}\nSuites: {}\n{}\n\n",
                suites.join(" "),
                self.options.trim_end()
            )
        } else {
            let opts = if self.options.is_empty() {
                String::new()
            } else {
                format!("[{}] ", self.options)
            };
            suites
                .iter()
                .map(|s| {
                    format!(
                        "{types} {opts}{} {s} {}\n",
                        self.uris.join(" "),
                        self.components.join(" ")
                    )
                })
                .collect()
        }
    }
}

fn one_line_entries(text: &str) -> Vec<Entry> {
    text.lines()
        .filter_map(|l| {
            let l = l.split('#').next()?.trim();
            let rest = l
                .strip_prefix("deb-src ")
                .or_else(|| l.strip_prefix("deb "))?
                .trim();
            let (options, rest) = match rest.strip_prefix('[') {
                Some(r) => {
                    let (o, r) = r.split_once(']')?;
                    (o.trim().to_string(), r.trim())
                }
                None => (String::new(), rest),
            };
            let mut f = rest.split_whitespace();
            let uri = f.next()?.to_string();
            let suite = f.next()?.to_string();
            Some(Entry {
                deb822: false,
                options,
                uris: vec![uri],
                suites: vec![suite],
                components: f.map(String::from).collect(),
            })
        })
        .collect()
}

fn deb822_entries(text: &str) -> Vec<Entry> {
    let mut v = Vec::new();
    for para in text.split("\n\n") {
        let mut types = Vec::new();
        let mut suites = Vec::new();
        let mut uris = Vec::new();
        let mut enabled = true;
        let mut options = String::new();
        // Continuation lines (an inline key) belong to the field before them.
        let mut skipping = false;
        for line in para.lines() {
            if line.starts_with('#') {
                continue;
            }
            if line.starts_with([' ', '\t']) {
                if !skipping {
                    options.push_str(line);
                    options.push('\n');
                }
                continue;
            }
            let Some((k, val)) = line.split_once(':') else {
                continue;
            };
            let words = || val.split_whitespace().map(String::from).collect::<Vec<_>>();
            skipping = true;
            match k.trim().to_ascii_lowercase().as_str() {
                "types" => types = words(),
                "suites" => suites = words(),
                "enabled" => enabled = !val.trim().eq_ignore_ascii_case("no"),
                key => {
                    if key == "uris" {
                        uris = words();
                    }
                    skipping = false;
                    options.push_str(line);
                    options.push('\n');
                }
            }
        }
        if enabled && !uris.is_empty() && types.iter().any(|t| t == "deb" || t == "deb-src") {
            v.push(Entry {
                deb822: true,
                options,
                uris,
                suites,
                components: Vec::new(),
            });
        }
    }
    v
}

/// A version an apt index lists, and the suite that lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    pub version: String,
    pub suite: String,
}

/// `apt-cache madison` lines (`pkg | version | URI suite/component [arch] KIND`) of `package`
/// whose index is `kind` (`Sources`, `Packages`); anything else (garbage, a line of another
/// package or kind) is skipped.
pub fn parse_madison_kind(text: &str, package: &str, kind: &str) -> Vec<Listed> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split('|').map(str::trim);
            let (p, v, from) = (f.next()?, f.next()?, f.next()?);
            if p != package || !is_version(v) || !from.ends_with(kind) {
                return None;
            }
            let suite = from.split_whitespace().nth(1)?.split('/').next()?;
            let suite_ok = !suite.is_empty()
                && suite
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
            suite_ok.then(|| Listed {
                version: v.to_string(),
                suite: suite.to_string(),
            })
        })
        .collect()
}

/// Whether `suite` is `base` or one of the suites that update it in place: its security
/// archive and its stable updates (not backports, which are another distribution's builds).
pub fn same_distribution(suite: &str, base: &str) -> bool {
    suite == base
        || (base == "unstable" && suite == "sid")
        || suite
            .strip_prefix(base)
            .is_some_and(|rest| matches!(rest, "-security" | "-updates" | "-proposed-updates"))
}

pub fn is_version(v: &str) -> bool {
    !v.is_empty()
        && v.len() <= 128
        && v.starts_with(|c: char| c.is_ascii_digit())
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '-' | ':' | '~'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(list: &[(&str, &str)]) -> Vec<(PathBuf, String)> {
        list.iter()
            .map(|(p, t)| (PathBuf::from(p), t.to_string()))
            .collect()
    }

    #[test]
    fn the_machines_own_entries_become_deb_src_with_their_uris_and_options() {
        let f = files(&[
            (
                "/etc/apt/sources.list.d/debian.sources",
                "Types: deb\n# http://snapshot\nURIs: http://mirror.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\nTypes: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\nComponents: main\n\nTypes: deb\nEnabled: no\nURIs: http://off.example/\nSuites: bookworm\nComponents: main\n",
            ),
            (
                "/etc/apt/sources.list",
                "deb [arch=amd64 trusted=yes] http://proxy.local:3142/debian bookworm main # a cache\ndeb http://other.example/ trixie main\n",
            ),
        ]);
        let d = derive_sources(&f, "bookworm", "bookworm");
        let s = &d.deb822;
        assert!(s.contains("Types: deb-src\nSuites: bookworm bookworm-updates\nURIs: http://mirror.example/debian\n"), "{s}");
        assert!(
            s.contains("Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"),
            "{s}"
        );
        assert!(
            s.contains("Suites: bookworm-security\nURIs: http://mirror.example/debian-security"),
            "{s}"
        );
        assert_eq!(
            d.one_line,
            "deb-src [arch=amd64 trusted=yes] http://proxy.local:3142/debian bookworm main\n"
        );
        assert!(
            !s.contains("off.example") && !s.contains("trixie") && !s.contains("snapshot"),
            "{s}"
        );
        assert!(!s.contains("Types: deb\n"), "{s}");
        // A suite nobody names comes from the mirror of the system's own release.
        let u = derive_sources(&f, "unstable", "bookworm").deb822;
        assert!(
            u.starts_with("Types: deb-src\nSuites: unstable\nURIs: http://mirror.example/debian\n"),
            "{u}"
        );
        assert_eq!(u.matches("Types:").count(), 1, "{u}");
        assert!(derive_sources(&f, "unstable", "").is_empty());
    }

    #[test]
    fn print_uris_lines_give_files_and_hostile_names_are_dropped() {
        let text = "NOTICE: x\n'http://m/pool/updates/main/m/mariadb/mariadb_10.11.19-0%2bdeb12u1.dsc' mariadb_10.11.19-0+deb12u1.dsc 5379 SHA256:bc\n'http://m/x' ../../etc/passwd 1 SHA256:00\n'http://m/y' .hidden 1 SHA256:00\nNeed to get 1 B\n";
        let f = parse_print_uris(text);
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].name, "mariadb_10.11.19-0+deb12u1.dsc");
        assert_eq!(f[0].size, 5379);
        assert!(f[0].uri.ends_with("%2bdeb12u1.dsc"));
    }
}
