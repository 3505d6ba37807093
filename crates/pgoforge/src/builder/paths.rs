//! Builds that do not depend on where they happen: the same source, flags and profiles give the
//! same binary in any work dir, so anyone can rebuild a package and compare bytes (issue 56,
//! docs/results/mariadb-10.11-rebuild/). Three things carry a build's place and time into it:
//!
//! 1. `__FILE__` strings and debug info name the source and build directories (2 069 strings in
//!    a MariaDB 10.11 server). Prefix maps rewrite both to fixed names, [`NEUTRAL_SOURCE`] and
//!    [`NEUTRAL_BUILD`].
//! 2. Both compilers key a static function's profile record by its source path as compiled: a
//!    profile trained in one work dir misses every static function in another, and the binary
//!    differs. Builds now name their sources relative to each compile's directory
//!    (builder/relative.rs), which fixes it for both. A clang profile trained before, with
//!    absolute names (`/work/a/sources/mariadb-10.11.18-…/storage/innobase/row/row0sel.cc;_ZL…`),
//!    is relocated to the build's own source tree ([`relocate_profdata`]: llvm-profdata's text
//!    format, the prefix rewritten, merged back); no prefix map changes those names (checked
//!    with clang 22). GCC hashes the path into the record's id, which cannot be rewritten: an
//!    old GCC profile keeps working only in its own work dir (8 992 "profile for function …
//!    not found" warnings against 36 elsewhere; docs/results/mariadb-10.11-rebuild/).
//! 3. `__DATE__` and `__TIME__`: the compilers take `SOURCE_DATE_EPOCH`, the source's own date
//!    (source/date.rs).
//!
//! None of this is in a build's key (the flags that are, `FlagSet`, are unchanged): the stored
//! profile's hash is the input, and a build finished before this existed keeps its key; its
//! build.json says `path_neutral: false`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::toolchain::FlagFamily;

/// What the source directory is called inside a path-neutral binary.
pub const NEUTRAL_SOURCE: &str = "/usr/src/pgoforge/source";
/// What the build directory is called inside a path-neutral binary.
pub const NEUTRAL_BUILD: &str = "/usr/src/pgoforge/build";

/// The compile flags that name `source` and `build` by their neutral names (and, for GCC, keep
/// its command line out of the debug info); empty when a path holds white space (CMake's flag
/// strings split there; such a build is not path-neutral).
pub fn prefix_maps(family: FlagFamily, source: &Path, build: &Path) -> Vec<String> {
    let pairs = [(source, NEUTRAL_SOURCE), (build, NEUTRAL_BUILD)];
    if pairs
        .iter()
        .any(|(p, _)| p.to_string_lossy().contains(char::is_whitespace))
    {
        return Vec::new();
    }
    let mut flags = Vec::new();
    for (from, to) in pairs {
        let from = from.display();
        match family {
            // GCC's -ffile-prefix-map also maps its profile paths (-fprofile-prefix-map), which
            // must keep naming the build directory -fprofile-prefix-path strips: only the
            // macro and debug maps.
            FlagFamily::Gcc => {
                flags.push(format!("-fmacro-prefix-map={from}={to}"));
                flags.push(format!("-fdebug-prefix-map={from}={to}"));
            }
            FlagFamily::Clang => flags.push(format!("-ffile-prefix-map={from}={to}")),
        }
    }
    if family == FlagFamily::Gcc {
        // GCC records its command line in the debug info (DW_AT_producer), profile paths and
        // all: the build id, computed over the whole file, then differs in every work dir.
        flags.push("-gno-record-gcc-switches".into());
    }
    flags
}

/// A profile whose static-function names were moved to this build's source tree.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Relocation {
    /// The source directory the profile was trained in.
    pub from: String,
    /// This build's.
    pub to: String,
    /// Records renamed.
    pub records: usize,
}

impl Relocation {
    pub fn sentence(&self) -> String {
        format!(
            "the profile's {} static-function records moved from {} to this build's source tree",
            self.records, self.from
        )
    }
}

/// Writes `profile` with its static functions renamed into `source_dir` to `out`, when it was
/// trained in another source directory; None (nothing written) when it names this one or no
/// file of this source.
pub fn relocate_profdata(
    llvm_profdata: &Path,
    profile: &Path,
    source_dir: &Path,
    out: &Path,
) -> Result<Option<Relocation>> {
    let scratch = out.with_extension("relocating");
    fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
    let result = (|| {
        let text_file = scratch.join("profile.txt");
        profdata(
            llvm_profdata,
            &["merge", "--text"],
            profile,
            &text_file,
            "writing the profile as text",
        )?;
        let text = fs::read_to_string(&text_file)
            .with_context(|| format!("reading {}", text_file.display()))?;
        let to = source_dir.to_string_lossy().into_owned();
        let Some(from) = trained_source_dir(&record_paths(&text), source_dir) else {
            return Ok(None);
        };
        if from == to {
            return Ok(None);
        }
        let (old, new) = (format!("{from}/"), format!("{to}/"));
        let records = text
            .lines()
            .filter(|l| l.starts_with(&old) && l.contains(';'))
            .count();
        let moved = scratch.join("moved.txt");
        fs::write(&moved, text.replace(&old, &new))
            .with_context(|| format!("writing {}", moved.display()))?;
        let tmp = out.with_extension("tmp");
        profdata(
            llvm_profdata,
            &["merge"],
            &moved,
            &tmp,
            "merging the relocated profile",
        )?;
        fs::rename(&tmp, out).with_context(|| format!("renaming to {}", out.display()))?;
        Ok(Some(Relocation { from, to, records }))
    })();
    let _ = fs::remove_dir_all(&scratch);
    result
}

fn profdata(tool: &Path, args: &[&str], input: &Path, out: &Path, what: &str) -> Result<()> {
    crate::infra::runner::run_tool(
        Command::new(tool).args(args).arg(input).arg("-o").arg(out),
        &format!("llvm-profdata: {what} ({})", input.display()),
        None,
    )?;
    Ok(())
}

/// The file paths of a text profile's static-function records (`PATH;NAME`, the line before
/// `# Func Hash:`).
fn record_paths(text: &str) -> Vec<&str> {
    let lines: Vec<&str> = text.lines().collect();
    lines
        .windows(2)
        .filter(|w| w[1].starts_with("# Func Hash:"))
        .filter_map(|w| w[0].split_once(';').map(|(p, _)| p))
        .filter(|p| p.starts_with('/'))
        .collect()
}

/// The directory the profile's source files were compiled in: for each record's path, the
/// shortest leading directory whose remainder is a file of `source_dir`; the one most records
/// agree on. None when no record names a file of this source.
fn trained_source_dir(paths: &[&str], source_dir: &Path) -> Option<String> {
    let mut votes: std::collections::BTreeMap<&str, usize> = Default::default();
    let mut seen = std::collections::BTreeSet::new();
    for p in paths.iter().filter(|p| seen.insert(**p)).take(4000) {
        let found = p
            .match_indices('/')
            .skip(1)
            .map(|(i, _)| (&p[..i], &p[i + 1..]))
            .find(|(_, rest)| source_dir.join(rest).is_file());
        if let Some((prefix, _)) = found {
            *votes.entry(prefix).or_default() += 1;
        }
    }
    votes
        .into_iter()
        .max_by_key(|(_, n)| *n)
        .map(|(p, _)| p.to_string())
}

/// Where a build keeps its relocated profile.
pub fn relocated_profile_path(build_root: &Path) -> PathBuf {
    build_root.join("profile-relocated.profdata")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_trained_directory_is_the_one_most_records_agree_on() {
        let t = tempfile::tempdir().unwrap();
        let src = t.path().join("new/src");
        for f in ["sql/a.cc", "sql/b.cc", "strings/c.c", "c.c"] {
            let p = src.join(f);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, "").unwrap();
        }
        let text = "/old/w/src/sql/a.cc;_ZL1fv\n# Func Hash:\n1\n\
                    /old/w/src/sql/b.cc;g\n# Func Hash:\n2\n\
                    /old/w/src/strings/c.c;h\n# Func Hash:\n3\n\
                    /elsewhere/build/gen.cc;k\n# Func Hash:\n4\n\
                    main\n# Func Hash:\n5\n";
        let paths = record_paths(text);
        assert_eq!(paths.len(), 4);
        assert_eq!(
            trained_source_dir(&paths, &src).as_deref(),
            Some("/old/w/src")
        );
        assert_eq!(trained_source_dir(&paths[3..], &src), None);
    }

    #[test]
    fn prefix_maps_per_compiler_and_none_for_paths_with_spaces() {
        let (s, b) = (Path::new("/w/src"), Path::new("/w/b/build"));
        assert_eq!(
            prefix_maps(FlagFamily::Clang, s, b),
            [
                "-ffile-prefix-map=/w/src=/usr/src/pgoforge/source",
                "-ffile-prefix-map=/w/b/build=/usr/src/pgoforge/build"
            ]
        );
        let g = prefix_maps(FlagFamily::Gcc, s, b);
        assert_eq!(g.len(), 5);
        assert!(g.contains(&"-gno-record-gcc-switches".to_string()));
        assert!(g.iter().all(|f| !f.starts_with("-ffile-prefix-map")));
        assert!(prefix_maps(FlagFamily::Gcc, Path::new("/my work/src"), b).is_empty());
    }
}
