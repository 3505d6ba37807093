//! The Debian packages a packaged server's shared libraries come from, so the tarball's README
//! can install what a host lacks: a plain Debian 12 has no liburing2 or libnuma1 (MariaDB), no
//! libicu72 or libprotobuf-lite32 (MySQL built on Debian's ICU and protobuf), and a server
//! missing one exits at once with "error while loading shared libraries". Read on the packing
//! machine, where the binary was linked: `ldd` names each library's file and `dpkg-query -S`
//! its package. Libraries the package carries itself (`lib/`) are not asked about, and neither
//! are the packages every Debian has (Essential, or Priority required).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What the packing machine says about the libraries a binary loads.
#[derive(Debug, Default, PartialEq)]
pub struct Runtime {
    /// Debian packages to install on a host, sorted, without architecture qualifiers.
    pub packages: Vec<String>,
    /// Libraries no installed Debian package owns (a local build, /usr/local), or `ldd` could
    /// not find: a host needs them put there by hand.
    pub unowned: Vec<PathBuf>,
}

/// The libraries `binary` loads from outside `own` (the package's root), as `ldd` resolves them
/// here; a library `ldd` cannot find is given by its name alone.
fn loaded(binary: &Path, own: &Path) -> Vec<PathBuf> {
    let Ok(out) = Command::new("ldd").arg(binary).output() else {
        return Vec::new();
    };
    parse_ldd(&String::from_utf8_lossy(&out.stdout))
        .into_iter()
        .filter(|p| !p.starts_with(own))
        .collect()
}

/// `libfoo.so.1 => /lib/x86_64-linux-gnu/libfoo.so.1 (0x…)` gives the path; `=> not found`
/// the name; the vDSO and the loader (no `=>`; the loader is libc6's) nothing.
fn parse_ldd(text: &str) -> Vec<PathBuf> {
    text.lines()
        .filter_map(|l| {
            let (name, target) = l.trim().split_once("=>")?;
            let target = target.trim();
            if target.starts_with("not found") {
                return Some(PathBuf::from(name.trim()));
            }
            target.split_whitespace().next().map(PathBuf::from)
        })
        .filter(|p| !p.as_os_str().is_empty())
        .collect()
}

/// The package owning `lib`, trying the path as given and its other spelling across Debian's
/// merged /usr (`/lib/…` is `/usr/lib/…`; dpkg knows a file under the name its package ships).
fn owner(lib: &Path) -> Option<String> {
    if !lib.is_absolute() {
        return None;
    }
    let s = lib.to_string_lossy();
    let other = match s.strip_prefix("/usr") {
        Some(rest) => rest.to_string(),
        None => format!("/usr{s}"),
    };
    let canonical = std::fs::canonicalize(lib).ok();
    let mut tries = vec![s.to_string(), other];
    if let Some(c) = canonical {
        tries.push(c.to_string_lossy().into_owned());
    }
    tries.iter().find_map(|p| {
        let out = Command::new("dpkg-query").args(["-S", p]).output().ok()?;
        if !out.status.success() {
            return None;
        }
        parse_search(&String::from_utf8_lossy(&out.stdout))
    })
}

/// `libaio1:amd64: /lib/x86_64-linux-gnu/libaio.so.1` → `libaio1` (the first owner; a
/// diversion's `diversion by …` lines are skipped).
fn parse_search(text: &str) -> Option<String> {
    text.lines()
        .filter(|l| !l.starts_with("diversion by"))
        .find_map(|l| {
            let (pkgs, _) = l.split_once(": ")?;
            let first = pkgs.split(", ").next()?;
            Some(first.split(':').next()?.trim().to_string())
        })
        .filter(|p| !p.is_empty())
}

/// The installed packages every Debian system has: the Essential ones and apt (what
/// `debootstrap --variant=minbase` installs), with everything they depend on, taking of each
/// `a | b` the first alternative installed here (or provided by an installed package). Archive
/// priorities cannot say it: libc6 is `optional` in bookworm's Packages.
fn base_set(status: &str) -> BTreeSet<String> {
    let mut deps: std::collections::BTreeMap<&str, Vec<&str>> = Default::default();
    let mut provides: std::collections::BTreeMap<&str, &str> = Default::default();
    let mut roots = Vec::new();
    for l in status.lines() {
        let f: Vec<&str> = l.split('\t').collect();
        let [name, essential, pre, dep, prov] = f[..] else {
            continue;
        };
        if essential == "yes" || name == "apt" {
            roots.push(name);
        }
        for v in relation_names(prov) {
            provides.entry(v).or_insert(name);
        }
        deps.insert(
            name,
            [pre, dep].into_iter().filter(|s| !s.is_empty()).collect(),
        );
    }
    let resolve = |alt: &str| -> Option<&str> {
        relation_alternatives(alt).find_map(|n| {
            deps.get_key_value(n)
                .map(|(k, _)| *k)
                .or_else(|| provides.get(n).copied())
        })
    };
    let mut seen = BTreeSet::new();
    while let Some(p) = roots.pop() {
        if !seen.insert(p.to_string()) {
            continue;
        }
        for field in deps.get(p).into_iter().flatten() {
            roots.extend(field.split(',').filter_map(&resolve));
        }
    }
    seen
}

/// The package names of one `a (>= 1) | b:any` group, in order.
fn relation_alternatives(group: &str) -> impl Iterator<Item = &str> {
    group.split('|').filter_map(|a| {
        let n = a.split_whitespace().next()?;
        Some(n.split(':').next().unwrap_or(n))
    })
}

/// Every name a comma-separated relation field mentions.
fn relation_names(field: &str) -> impl Iterator<Item = &str> {
    field.split(',').flat_map(relation_alternatives)
}

/// This machine's installed packages, one per line: name, Essential, Pre-Depends, Depends,
/// Provides, tab-separated (empty where dpkg cannot say).
fn installed_status() -> String {
    Command::new("dpkg-query")
        .args([
            "-W",
            "-f",
            "${db:Status-Abbrev}\t${Package}\t${Essential}\t${Pre-Depends}\t${Depends}\t${Provides}\n",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .filter_map(|l| l.strip_prefix("ii \t"))
                .map(|l| format!("{l}\n"))
                .collect()
        })
        .unwrap_or_default()
}

/// The packages `binary`'s libraries come from, for a host that may not have them. Empty where
/// this machine has no dpkg (not Debian): the README then names none.
pub fn of(binary: &Path, own: &Path) -> Runtime {
    let base = base_set(&installed_status());
    let mut packages = BTreeSet::new();
    let mut unowned = Vec::new();
    for lib in loaded(binary, own) {
        match owner(&lib) {
            Some(p) if !base.contains(&p) => {
                packages.insert(p);
            }
            Some(_) => {}
            None => unowned.push(lib),
        }
    }
    Runtime {
        packages: packages.into_iter().collect(),
        unowned,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ldd_lines_give_paths_names_of_missing_libraries_and_skip_the_loader() {
        let text = "\tlinux-vdso.so.1 (0x00007ffd)\n\
                    \tliburing.so.2 => /lib/x86_64-linux-gnu/liburing.so.2 (0x00007f)\n\
                    \tlibprotobuf-lite.so.32 => not found\n\
                    \t/lib64/ld-linux-x86-64.so.2 (0x00007f)\n";
        assert_eq!(
            parse_ldd(text),
            [
                PathBuf::from("/lib/x86_64-linux-gnu/liburing.so.2"),
                PathBuf::from("libprotobuf-lite.so.32")
            ]
        );
    }

    #[test]
    fn dpkg_search_gives_the_package_without_its_architecture() {
        assert_eq!(
            parse_search("libaio1:amd64: /lib/x86_64-linux-gnu/libaio.so.1\n").as_deref(),
            Some("libaio1")
        );
        assert_eq!(
            parse_search(
                "diversion by mariadb-server-pgo from: /usr/sbin/mariadbd\n\
                 mariadb-server-core: /usr/sbin/mariadbd\n"
            )
            .as_deref(),
            Some("mariadb-server-core")
        );
        assert_eq!(parse_search(""), None);
    }

    #[test]
    fn the_base_set_follows_essential_packages_and_apt_through_their_first_installed_alternative() {
        let status = "coreutils\tyes\t\tlibc6 (>= 2.34), libacl1 | libfoo\t\n\
                      libc6\tno\t\tlibgcc-s1\t\n\
                      libgcc-s1\tno\t\t\t\n\
                      libacl1\tno\t\t\t\n\
                      libfoo\tno\t\t\t\n\
                      apt\tno\t\tlibstdc++6:any, awk\t\n\
                      libstdc++6\tno\t\t\t\n\
                      mawk\tno\t\t\tawk\n\
                      liburing2\tno\t\tlibc6\t\n";
        let base = base_set(status);
        let names: Vec<&str> = base.iter().map(String::as_str).collect();
        assert_eq!(
            names,
            [
                "apt",
                "coreutils",
                "libacl1",
                "libc6",
                "libgcc-s1",
                "libstdc++6",
                "mawk"
            ]
        );
    }

    /// On this Debian machine: the test binary's own libraries are libc6's and libgcc-s1's, on
    /// every Debian, so nothing is to install; a missing path is no package's.
    #[test]
    fn a_binary_that_needs_only_what_every_debian_has_names_no_package() {
        let me = std::env::current_exe().unwrap();
        let r = of(&me, Path::new("/nonexistent"));
        assert!(r.unowned.is_empty(), "{r:?}");
        assert!(
            r.packages.iter().all(|p| p != "libc6"),
            "libc6 is on every Debian: {r:?}"
        );
        assert_eq!(owner(Path::new("/nonexistent/libx.so.1")), None);
    }
}
