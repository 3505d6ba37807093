//! Precompiled headers for a recipe's heaviest CMake targets: a build-time cut that leaves the
//! code nearly alone.
//!
//! Most of a MySQL server compile is the front end re-reading the same headers: `-fsyntax-only`
//! takes 33–82 % of a sql/, InnoDB or performance-schema unit's compile time, and a header set
//! compiled once cuts those units by 25–70 % (docs/bench/mysql-build.md). MySQL's CMake has no
//! such switch, so pgoforge adds one from outside the source tree: a CMake file given as
//! `CMAKE_PROJECT_INCLUDE` that, once every target exists (a deferred call at the end of the
//! top-level directory), calls `target_precompile_headers` on the recipe's targets.
//!
//! A precompiled header is read before anything else in a source, so a source that `#define`s or
//! `#undef`s something before its first `#include` (MySQL's pfs.cc turns on every PSI interface
//! that way) would see the headers differently: such sources, and sources generated at build time
//! (not readable when CMake runs), are compiled without it; so is a source that includes a header
//! without an include guard from the precompiled headers' directories (MySQL's
//! engine_combination_tracker.h: read once through sql_class.h and again by its own source, it
//! would be defined twice). What remains compiles to nearly the same code: function by function,
//! a whole `mysqld` keeps 99.6 % (clang) and 99.2 % (GCC) of its functions' instructions; the rest
//! are static initializers (the headers' namespace-scope objects, now constructed in more units at
//! start-up) and, with GCC, 0.5 % of functions optimized differently (docs/bench/mysql-build.md).
//! Hence the setting's place in the build key: every variant of a run is built the same way.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

/// The file the configure step is given as `CMAKE_PROJECT_INCLUDE`, in the build directory.
pub const FILE: &str = "pgoforge-precompiled-headers.cmake";

/// Writes the CMake file for `map` into `build_dir` (every header must exist in `source_dir`)
/// and returns its path; none for an empty map.
pub fn write(
    map: &BTreeMap<String, Vec<String>>,
    source_dir: &Path,
    build_dir: &Path,
) -> Result<Option<PathBuf>> {
    if map.is_empty() {
        return Ok(None);
    }
    crate::recipe::precompile::check(map)?;
    for h in map.values().flatten() {
        if !source_dir.join(h).is_file() {
            bail!(
                "build.precompile_headers names {h}, which the source {} does not have (a recipe \
                 for another version of the server? remove it from the recipe, or give the \
                 source that has it)",
                source_dir.display()
            );
        }
    }
    let path = build_dir.join(FILE);
    let unguarded = unguarded_headers(map, source_dir);
    crate::infra::fs::write_atomic(&path, cmake_text(map, source_dir, &unguarded))
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(Some(path))
}

/// Whether a header protects itself from a second inclusion: `#pragma once`, or `#ifndef X` (or
/// `#if !defined(X)`) followed by `#define X` as the next directive.
pub fn is_guarded(text: &str) -> bool {
    let directives: Vec<Vec<&str>> = text
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix('#'))
        .map(|d| d.split_whitespace().collect())
        .collect();
    directives.iter().enumerate().any(|(i, d)| {
        if d.len() >= 2 && d[0] == "pragma" && d[1] == "once" {
            return true;
        }
        let guard = match d.first() {
            Some(&"ifndef") => d.get(1).map(|s| s.to_string()),
            Some(&"if") => {
                let rest: String = d[1..].concat();
                rest.strip_prefix("!defined")
                    .map(|r| r.trim_matches(|c| c == '(' || c == ')').to_string())
            }
            _ => None,
        };
        guard.is_some_and(|g| {
            directives
                .get(i + 1)
                .is_some_and(|n| n.len() >= 2 && n[0] == "define" && n[1] == g)
        })
    })
}

/// File names of the headers without an include guard in the directories of the precompiled
/// headers (names CMake's regex can hold safely: the others are not looked for).
fn unguarded_headers(map: &BTreeMap<String, Vec<String>>, source_dir: &Path) -> Vec<String> {
    let dirs: std::collections::BTreeSet<PathBuf> = map
        .values()
        .flatten()
        .filter_map(|h| source_dir.join(h).parent().map(Path::to_path_buf))
        .collect();
    let mut names = std::collections::BTreeSet::new();
    for d in dirs {
        let Ok(entries) = fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            let header = [".h", ".hh", ".hpp", ".hxx", ".ic", ".i"]
                .iter()
                .any(|x| name.ends_with(x));
            let plain = name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '+'));
            if header && plain {
                let text = fs::read(e.path()).unwrap_or_default();
                if !is_guarded(&String::from_utf8_lossy(&text)) {
                    names.insert(name);
                }
            }
        }
    }
    names.into_iter().collect()
}

/// The CMake code: a function per target, run once all targets exist.
pub fn cmake_text(
    map: &BTreeMap<String, Vec<String>>,
    source_dir: &Path,
    unguarded: &[String],
) -> String {
    // A regex alternation of the names ('.' and '+' escaped; nothing else needs it, `plain`).
    let alternation = if unguarded.is_empty() {
        "^$".to_string()
    } else {
        unguarded
            .iter()
            .map(|n| n.replace('.', "\\\\.").replace('+', "\\\\+"))
            .collect::<Vec<_>>()
            .join("|")
    };
    let mut calls = String::new();
    for (target, headers) in map {
        let hs: Vec<String> = headers
            .iter()
            .map(|h| {
                format!(
                    "\"$<$<COMPILE_LANGUAGE:CXX>:{}>\"",
                    source_dir.join(h).display()
                )
            })
            .collect();
        calls.push_str(&format!("  _pgoforge_pch({target} {})\n", hs.join(" ")));
    }
    format!(
        r##"# Written by pgoforge (builder/pch.rs): precompiled headers for the recipe's targets.
# Included after every project() call; acts once, for the top-level project.
include_guard(GLOBAL)
if(CMAKE_VERSION VERSION_LESS 3.19)
  message(WARNING "pgoforge: CMake ${{CMAKE_VERSION}} has no deferred calls (3.19): no precompiled headers")
  return()
endif()

# Headers without an include guard near the precompiled ones: a source including one goes without.
set(_pgoforge_unguarded "{alternation}")

function(_pgoforge_pch target)
  if(NOT TARGET ${{target}})
    message(STATUS "pgoforge: no target ${{target}} in this build: no precompiled headers for it")
    return()
  endif()
  get_target_property(dir ${{target}} SOURCE_DIR)
  get_target_property(sources ${{target}} SOURCES)
  set(with 0)
  set(without 0)
  foreach(s IN LISTS sources)
    if(NOT s MATCHES "\\.(cc|cpp|cxx|C)$" OR s MATCHES "^\\$<")
      continue()
    endif()
    if(IS_ABSOLUTE "${{s}}")
      set(p "${{s}}")
    else()
      set(p "${{dir}}/${{s}}")
    endif()
    set(skip TRUE)
    if(EXISTS "${{p}}")
      # The first preprocessor line that includes or defines: a define first means the source
      # sets something up for its headers.
      file(STRINGS "${{p}}" first REGEX "^[ \t]*#[ \t]*(include|define|undef)" LIMIT_COUNT 1)
      file(STRINGS "${{p}}" unguarded REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<]([^\">]*/)?(${{_pgoforge_unguarded}})[\">]" LIMIT_COUNT 1)
      if(NOT first MATCHES "#[ \t]*(define|undef)" AND NOT unguarded)
        set(skip FALSE)
      endif()
    endif()
    if(skip)
      set_source_files_properties("${{p}}" TARGET_DIRECTORY ${{target}} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
      math(EXPR without "${{without}} + 1")
    else()
      math(EXPR with "${{with}} + 1")
    endif()
  endforeach()
  target_precompile_headers(${{target}} PRIVATE ${{ARGN}})
  message(STATUS "pgoforge: precompiled headers for ${{target}}: ${{with}} sources with, ${{without}} without")
endfunction()

function(_pgoforge_pch_all)
{calls}endfunction()

cmake_language(DEFER DIRECTORY "${{CMAKE_SOURCE_DIR}}" CALL _pgoforge_pch_all)
"##
    )
}

/// The configure step's arguments for the file: set, or unset so a directory configured with
/// precompiled headers before does not keep them from CMake's cache.
pub fn cmake_args(file: Option<&Path>) -> Vec<String> {
    match file {
        Some(f) => vec![format!("-DCMAKE_PROJECT_INCLUDE={}", f.display())],
        None => vec!["-UCMAKE_PROJECT_INCLUDE".to_string()],
    }
}

/// Removes a file left by an earlier configure of this directory with precompiled headers.
pub fn remove_stale(build_dir: &Path) {
    let _ = fs::remove_file(build_dir.join(FILE));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recipe::precompile::tests::map;

    #[test]
    fn the_cmake_file_names_each_target_with_its_headers_for_cxx_only() {
        let m = BTreeMap::from([
            ("sql_main".to_string(), vec!["sql/sql_class.h".to_string()]),
            (
                "innobase".to_string(),
                vec!["a/b.h".to_string(), "c.h".to_string()],
            ),
        ]);
        let t = cmake_text(&m, Path::new("/src"), &["a.h".into(), "b+c.ic".into()]);
        assert!(t.contains(
            "_pgoforge_pch(innobase \"$<$<COMPILE_LANGUAGE:CXX>:/src/a/b.h>\" \"$<$<COMPILE_LANGUAGE:CXX>:/src/c.h>\")"
        ));
        assert!(t.contains(
            "_pgoforge_pch(sql_main \"$<$<COMPILE_LANGUAGE:CXX>:/src/sql/sql_class.h>\")"
        ));
        assert!(t.contains("cmake_language(DEFER DIRECTORY"));
        assert!(t.contains("SKIP_PRECOMPILE_HEADERS ON"));
        assert!(
            t.contains(r#"set(_pgoforge_unguarded "a\\.h|b\\+c\\.ic")"#),
            "{t}"
        );
    }

    #[test]
    fn include_guards_are_recognised_in_their_usual_forms() {
        assert!(is_guarded("#pragma once\nint x;\n"));
        assert!(is_guarded(
            "/* c */\n#ifndef A_H\n#define A_H\nint x;\n#endif\n"
        ));
        assert!(is_guarded(
            "#include <x>\n#ifndef A_H\n#define A_H\n#endif\n"
        ));
        assert!(is_guarded("#if !defined(A_H)\n#define A_H\n#endif\n"));
        assert!(is_guarded("#  ifndef A_H\n#  define A_H\n#endif\n"));
        assert!(!is_guarded("class Engine_combination_tracker {};\n"));
        assert!(!is_guarded("#ifndef _WIN32\n#include <x>\n#endif\n"));
        assert!(!is_guarded("#ifndef A_H\n#define B_H\n#endif\n"));
    }

    #[test]
    fn a_header_missing_from_the_source_is_named() {
        let src = tempfile::tempdir().unwrap();
        let build = tempfile::tempdir().unwrap();
        fs::write(src.path().join("here.h"), "").unwrap();
        let e = write(&map("t", &["here.h", "gone.h"]), src.path(), build.path())
            .unwrap_err()
            .to_string();
        assert!(e.contains("gone.h"), "{e}");
        assert!(!build.path().join(FILE).exists(), "nothing written");
        let f = write(&map("t", &["here.h"]), src.path(), build.path())
            .unwrap()
            .unwrap();
        assert!(fs::read_to_string(f).unwrap().contains("here.h"));
        assert!(write(&BTreeMap::new(), src.path(), build.path())
            .unwrap()
            .is_none());
    }
}
