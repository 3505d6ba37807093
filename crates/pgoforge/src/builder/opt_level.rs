//! A variant's optimization level where it takes effect. CMake compiles with
//! `CMAKE_<LANG>_FLAGS` and then `CMAKE_<LANG>_FLAGS_<BUILD_TYPE>`; RelWithDebInfo's are
//! `-O2 -g -DNDEBUG`, and GCC and clang take the last `-O` — so `+native`'s `-O3`, given with the
//! other variant flags, was compiled at -O2 in every +native build before 2026-12-03. The level
//! goes at the end of the build type's flags instead (what MySQL's CMakeLists advises for -O3),
//! and after configuring, the generated build files are read back to confirm it is the last
//! `-O` objects get.

use std::fs;
use std::path::Path;

use anyhow::{bail, Result};

/// CMake's own initial flags for a build type with GCC and clang: what the project starts from
/// unless the recipe sets them.
fn cmake_default(build_type: &str) -> &'static str {
    match build_type {
        "RELWITHDEBINFO" => "-O2 -g -DNDEBUG",
        "RELEASE" => "-O3 -DNDEBUG",
        "MINSIZEREL" => "-Os -DNDEBUG",
        "DEBUG" => "-g",
        _ => "",
    }
}

/// The value of `-DNAME=VALUE` (or `-DNAME:TYPE=VALUE`) among CMake arguments, the last one given.
fn define<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter().rev().find_map(|a| {
        let rest = a.strip_prefix("-D")?.strip_prefix(name)?;
        let rest = match rest.strip_prefix(':') {
            Some(typed) => &typed[typed.find('=')?..],
            None => rest,
        };
        rest.strip_prefix('=')
    })
}

/// Where `opt` goes for a configure with the recipe's `args`: `(cflags, defines)` — appended to
/// `CMAKE_<LANG>_FLAGS` when no build type is set (nothing comes after them then), else as
/// `-DCMAKE_{C,CXX}_FLAGS_<TYPE>=<the recipe's value or CMake's default> <opt>`, to be given after
/// the recipe's arguments.
pub fn place(args: &[String], opt: &[String]) -> (Vec<String>, Vec<String>) {
    if opt.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let Some(bt) = define(args, "CMAKE_BUILD_TYPE")
        .filter(|t| !t.is_empty())
        .map(str::to_ascii_uppercase)
    else {
        return (opt.to_vec(), Vec::new());
    };
    let defines = ["C", "CXX"]
        .iter()
        .map(|lang| {
            let var = format!("CMAKE_{lang}_FLAGS_{bt}");
            let base = define(args, &var).unwrap_or(cmake_default(&bt));
            let value = std::iter::once(base)
                .chain(opt.iter().map(String::as_str))
                .filter(|s| !s.is_empty())
                .collect::<Vec<_>>()
                .join(" ");
            format!("-D{var}={value}")
        })
        .collect();
    (Vec::new(), defines)
}

/// The `-O` a compile line ends with (None: none given).
fn last_level(flags: &str) -> Option<&str> {
    flags.split_whitespace().rfind(|f| f.starts_with("-O"))
}

/// How many compile-flag lines of a configured build directory end with `wanted` as their last
/// `-O`, and which do not: Ninja's `FLAGS = ` lines in build.ninja, or the Makefile generator's
/// `C_FLAGS = ` / `CXX_FLAGS = ` in CMakeFiles/*/flags.make.
#[derive(Debug, Default, PartialEq)]
pub struct LevelCheck {
    pub wanted: usize,
    pub other: Vec<String>,
}

pub fn check(build_dir: &Path, wanted: &str) -> Result<LevelCheck> {
    let mut texts = Vec::new();
    let ninja = build_dir.join("build.ninja");
    if ninja.is_file() {
        texts.push(fs::read_to_string(&ninja)?);
    } else {
        collect_flags_make(build_dir, &mut texts, 0)?;
    }
    let mut c = LevelCheck::default();
    for line in texts.iter().flat_map(|t| t.lines()) {
        let t = line.trim_start();
        let Some(flags) = ["FLAGS = ", "C_FLAGS = ", "CXX_FLAGS = "]
            .iter()
            .find_map(|p| t.strip_prefix(p))
        else {
            continue;
        };
        match last_level(flags) {
            Some(l) if l == wanted => c.wanted += 1,
            Some(l) if !c.other.iter().any(|o| o == l) => c.other.push(l.to_string()),
            _ => {}
        }
    }
    Ok(c)
}

fn collect_flags_make(dir: &Path, out: &mut Vec<String>, depth: u32) -> Result<()> {
    // CMakeFiles/<target>.dir/flags.make, in every directory of the tree (bounded: a build
    // tree is not deep).
    if depth > 12 {
        return Ok(());
    }
    for e in fs::read_dir(dir)?.flatten() {
        let p = e.path();
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            collect_flags_make(&p, out, depth + 1)?;
        } else if p.file_name().is_some_and(|n| n == "flags.make") {
            out.push(fs::read_to_string(&p)?);
        }
    }
    Ok(())
}

/// After configuring: the variant's `-O` must be what objects are compiled with. Fails when no
/// compile line ends with it (the project overrides it everywhere); a project that sets its own
/// level for some targets keeps it there, and `note` is told which.
pub fn confirm(build_dir: &Path, opt: &[String], note: &dyn Fn(&str)) -> Result<()> {
    let Some(wanted) = opt.iter().rev().find(|f| f.starts_with("-O")) else {
        return Ok(());
    };
    let c = check(build_dir, wanted)?;
    if c.wanted == 0 {
        bail!(
            "the variant's {wanted} is not the optimization level of any object in {} (their last \
             -O is {}): the project sets its own after the build type's flags; set the level in \
             the recipe's cmake_args instead",
            build_dir.display(),
            c.other.join(", ")
        );
    }
    if !c.other.is_empty() {
        note(&format!(
            "{} compile lines end with {wanted}; some targets set their own level ({})",
            c.wanted,
            c.other.join(", ")
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_level_goes_after_the_build_types_flags() {
        let opt = v(&["-O3", "-march=native"]);
        assert_eq!(
            place(&v(&["-DCMAKE_BUILD_TYPE=RelWithDebInfo"]), &[]),
            (vec![], vec![])
        );
        assert_eq!(
            place(&v(&["-DCMAKE_BUILD_TYPE=RelWithDebInfo"]), &opt),
            (
                vec![],
                v(&[
                    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g -DNDEBUG -O3 -march=native",
                    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g -DNDEBUG -O3 -march=native",
                ])
            )
        );
        // The recipe's own value for the build type is kept, typed or not.
        let (_, d) = place(
            &v(&[
                "-DCMAKE_BUILD_TYPE:STRING=Release",
                "-DCMAKE_CXX_FLAGS_RELEASE:STRING=-O2 -DNDEBUG -fno-plt",
            ]),
            &opt,
        );
        assert_eq!(
            d[0],
            "-DCMAKE_C_FLAGS_RELEASE=-O3 -DNDEBUG -O3 -march=native"
        );
        assert_eq!(
            d[1],
            "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG -fno-plt -O3 -march=native"
        );
        // No build type: nothing follows CMAKE_<LANG>_FLAGS.
        assert_eq!(place(&v(&["-DWITH_X=ON"]), &opt), (opt.clone(), vec![]));
        assert_eq!(
            last_level("-O3 -march=native -O2 -g -DNDEBUG -g1"),
            Some("-O2")
        );
    }

    #[test]
    fn the_generated_flags_are_read_back() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().join("CMakeFiles/srv.dir");
        fs::create_dir_all(&d).unwrap();
        fs::write(
            d.join("flags.make"),
            "C_FLAGS = -O3 -O2 -g\nCXX_FLAGS = -O2 -g -O3\n",
        )
        .unwrap();
        assert_eq!(
            check(t.path(), "-O3").unwrap(),
            LevelCheck {
                wanted: 1,
                other: vec!["-O2".into()]
            }
        );
        let note = std::cell::RefCell::new(Vec::new());
        confirm(t.path(), &v(&["-O3"]), &|m| {
            note.borrow_mut().push(m.to_string())
        })
        .unwrap();
        assert_eq!(
            note.borrow().len(),
            1,
            "a target with its own level is told"
        );
        fs::write(
            t.path().join("build.ninja"),
            "build a.o: CXX a.cc\n  FLAGS = -O3 -O2 -g\n",
        )
        .unwrap();
        let e = confirm(t.path(), &v(&["-O3"]), &|_| {}).unwrap_err();
        assert!(
            e.to_string().contains("is not the optimization level"),
            "{e}"
        );
        confirm(t.path(), &[], &|_| {}).unwrap();
    }
}
