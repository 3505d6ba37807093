//! Compiles that name their sources relative to their own directory, so that a profile matches
//! its functions in any work dir and in the next release's source (issue 56,
//! docs/results/mariadb-10.11-rebuild/).
//!
//! Both compilers key a static function's profile record by the source path as the compiler was
//! given it, and CMake gives absolute paths (`/w/a/sources/mariadb-10.11.18-…/sql/x.cc`):
//! - GCC 12 hashes that path into the function's profile id (`coverage_compute_profile_id`); no
//!   prefix map changes it (checked: `-fprofile-prefix-map`, `-ffile-prefix-map`). Built from the
//!   same profile in another work dir, 8 992 functions found no profile against 36.
//! - clang names the record `PATH;NAME` (relocated by paths.rs for profiles trained absolute),
//!   and ThinLTO's promoted local symbols (`NAME.llvm.HASH`) hash the module's absolute name.
//!
//! A compiler launcher (a small shell script in the build's directory) rewrites every argument
//! that names the source or the build tree to a path relative to the compile's directory, the
//! source reached through `builds/NAME/source`, a link to it. From `build/sql` the server's parser
//! is `../../source/sql/sql_parse.cc` in every work dir, and in every release's source. Nothing
//! else changes: the objects, the `.gcda` names (`-fprofile-prefix-path`) and the flags are the
//! same, so the build's key is unchanged.
//!
//! A profile records how its instrumented build named its sources ([`SourcePaths`] in the stored
//! profile's meta.json and in a package's sidecar); a build from it names them the same way, so
//! a profile trained before this existed is used as it always was, never silently lost.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::paths::NEUTRAL_SOURCE;
use crate::toolchain::ProfileInput;

/// How a build names its source files to the compiler.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourcePaths {
    /// CMake's absolute paths: what every build did before the launcher, and what a build from
    /// a profile trained so must keep doing.
    #[default]
    Absolute,
    /// Relative to each compile's directory (the launcher).
    Relative,
}

impl SourcePaths {
    pub fn is_absolute(&self) -> bool {
        *self == SourcePaths::Absolute
    }

    /// How `profile` was trained, from the record beside it: the store's meta.json
    /// (profile/mod.rs), the instrumented build's build.json (its `profile-gen` directory or the
    /// .profdata merged there), or the sidecar's rebuild.json it was unpacked from. A profile of
    /// unknown origin was trained absolute; a build without a profile names its sources relative.
    pub fn of_profile(profile: Option<&ProfileInput>) -> SourcePaths {
        let Some(p) = profile else {
            return SourcePaths::Relative;
        };
        let Some(dir) = p.path().parent() else {
            return SourcePaths::Absolute;
        };
        #[derive(Deserialize)]
        struct Recorded {
            #[serde(default)]
            source_paths: SourcePaths,
        }
        let read = |f: PathBuf| -> Option<SourcePaths> {
            let text = fs::read_to_string(f).ok()?;
            Some(serde_json::from_str::<Recorded>(&text).ok()?.source_paths)
        };
        let up = dir.parent().unwrap_or(dir);
        let recorded = read(dir.join("meta.json"))
            .or_else(|| read(dir.join("build.json")))
            .or_else(|| read(up.join("build.json")));
        if let Some(r) = recorded {
            return r;
        }
        // A sidecar: NAME.rebuild/profiles/compiler.* beside NAME.rebuild/rebuild.json, whose
        // `profiles` entry of kind `compiler` says (package::sidecar::CarriedProfile; read as
        // plain JSON here: the builder sits below packaging).
        let record: Option<serde_json::Value> = fs::read_to_string(up.join("rebuild.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        record
            .as_ref()
            .and_then(|r| r["profiles"].as_array())
            .and_then(|ps| ps.iter().find(|p| p["kind"] == "compiler"))
            .and_then(|p| serde_json::from_value(p["source_paths"].clone()).ok())
            .unwrap_or_default()
    }
}

/// The link through which compiles reach the source, in the build's directory (beside `build/`).
pub const SOURCE_LINK: &str = "source";
/// The launcher script, in the build's directory.
pub const LAUNCHER: &str = "cc-relative.sh";

/// Writes the launcher and the source link for a build in `dir` (its build tree `dir/build`) of
/// `source`; returns the launcher's path, to go first in CMake's compiler launcher list. None when
/// a path holds white space or a quote (the script and CMake's flags split there): such a build
/// names its sources absolute.
pub fn prepare(dir: &Path, source: &Path) -> Result<Option<PathBuf>> {
    let build = dir.join("build");
    let unsafe_path = |p: &Path| {
        p.to_string_lossy()
            .contains(|c: char| c.is_whitespace() || c == '\'')
    };
    if unsafe_path(dir) || unsafe_path(source) {
        return Ok(None);
    }
    let link = dir.join(SOURCE_LINK);
    // Made again every time: the work dir may have moved since.
    if fs::symlink_metadata(&link).is_ok() {
        fs::remove_file(&link).with_context(|| format!("removing {}", link.display()))?;
    }
    std::os::unix::fs::symlink(source, &link)
        .with_context(|| format!("linking {} to {}", link.display(), source.display()))?;
    let script = dir.join(LAUNCHER);
    let tmp = dir.join(format!(".{LAUNCHER}.tmp"));
    fs::write(&tmp, launcher_script(source, &build))
        .with_context(|| format!("writing {}", tmp.display()))?;
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&tmp, fs::Permissions::from_mode(0o755))?;
    fs::rename(&tmp, &script).with_context(|| format!("writing {}", script.display()))?;
    Ok(Some(script))
}

/// Removes what [`prepare`] wrote (a build that names its sources absolute).
pub fn remove(dir: &Path) -> Result<()> {
    for f in [LAUNCHER, SOURCE_LINK] {
        let p = dir.join(f);
        if fs::symlink_metadata(&p).is_ok() {
            fs::remove_file(&p).with_context(|| format!("removing {}", p.display()))?;
        }
    }
    Ok(())
}

/// The launcher: `cc-relative.sh [LAUNCHER…] COMPILER ARGS…`. An argument that is a path in the
/// source or build tree, or an `-I` of one, is rewritten relative to the compile's directory;
/// compiles outside the build tree (CMake's own checks) run unchanged. `__FILE__` keeps the
/// neutral name paths.rs gives it.
fn launcher_script(source: &Path, build: &Path) -> String {
    format!(
        r#"#!/bin/sh
# Written by pgoforge (builder/relative.rs): compiles name the source and build trees by paths
# relative to their own directory, so that profiles match in any work dir.
src='{src}'
bld='{bld}'
case "$PWD/" in
  "$bld"/*) ;;
  *) exec "$@" ;;
esac
rest=${{PWD#"$bld"}}
up=
while [ -n "$rest" ]; do rest=${{rest%/*}}; up="../$up"; done
rs="${{up}}../{link}"
rb="${{up%/}}"
[ -n "$rb" ] || rb=.
for a do
  shift
  case $a in
    "$src") a=$rs ;;
    "$src"/*) a="$rs/${{a#"$src"/}}" ;;
    -I"$src") a="-I$rs" ;;
    -I"$src"/*) a="-I$rs/${{a#-I"$src"/}}" ;;
    "$bld") a=$rb ;;
    "$bld"/*) a="$up${{a#"$bld"/}}" ;;
    -I"$bld") a="-I$rb" ;;
    -I"$bld"/*) a="-I$up${{a#-I"$bld"/}}" ;;
  esac
  set -- "$@" "$a"
done
exec "$@" "-fmacro-prefix-map=$rs={neutral}"
"#,
        src = source.display(),
        bld = build.display(),
        link = SOURCE_LINK,
        neutral = NEUTRAL_SOURCE,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// The script's rewrite, seen through `echo` as the compiler.
    fn rewritten(dir: &Path, source: &Path, cwd: &Path, args: &[&str]) -> Vec<String> {
        let script = prepare(dir, source).unwrap().unwrap();
        let out = Command::new(&script)
            .arg("echo")
            .args(args)
            .current_dir(cwd)
            .env("PWD", cwd)
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout)
            .unwrap()
            .split_whitespace()
            .map(String::from)
            .collect()
    }

    #[test]
    fn source_and_build_paths_become_relative_to_the_compile() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("builds/x-1");
        let src = t.path().join("sources/s-1");
        let sub = dir.join("build/storage/innobase");
        fs::create_dir_all(&sub).unwrap();
        fs::create_dir_all(src.join("include")).unwrap();
        let (s, b) = (src.display(), dir.join("build").display().to_string());
        let args = [
            format!("-I{s}/include"),
            format!("-I{b}/include"),
            "-isystem".into(),
            format!("{s}/zlib"),
            format!("-fprofile-prefix-path={b}"),
            "-c".into(),
            format!("{s}/storage/innobase/row/row0sel.cc"),
            format!("{b}/sql/yy_mariadb.cc"),
            "-o".into(),
            "CMakeFiles/x.dir/a.o".into(),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let got = rewritten(&dir, &src, &sub, &args);
        assert_eq!(
            got,
            [
                "-I../../../source/include",
                "-I../../include",
                "-isystem",
                "../../../source/zlib",
                &format!("-fprofile-prefix-path={b}"),
                "-c",
                "../../../source/storage/innobase/row/row0sel.cc",
                "../../sql/yy_mariadb.cc",
                "-o",
                "CMakeFiles/x.dir/a.o",
                &format!("-fmacro-prefix-map=../../../source={NEUTRAL_SOURCE}"),
            ]
        );
        // The link leads to the source.
        assert!(sub.join("../../../source/include").is_dir());
        // At the build tree's top, and outside it (CMake's checks): nothing rewritten.
        let top = rewritten(&dir, &src, &dir.join("build"), &[&format!("{b}/x.c")]);
        assert_eq!(top[0], "x.c");
        let outside = rewritten(&dir, &src, t.path(), &[&format!("{s}/a.c")]);
        assert_eq!(outside, [format!("{s}/a.c")]);
    }

    #[test]
    fn a_profile_says_how_it_was_trained_and_an_unknown_one_is_absolute() {
        let t = tempfile::tempdir().unwrap();
        let stored = t.path().join("profiles/abc");
        fs::create_dir_all(stored.join("gcda")).unwrap();
        let p = ProfileInput::GccDir(stored.join("gcda"));
        assert_eq!(SourcePaths::of_profile(Some(&p)), SourcePaths::Absolute);
        fs::write(stored.join("meta.json"), r#"{"source_paths":"relative"}"#).unwrap();
        assert_eq!(SourcePaths::of_profile(Some(&p)), SourcePaths::Relative);
        // A meta.json from before the field: absolute.
        fs::write(stored.join("meta.json"), r#"{"hash":"x"}"#).unwrap();
        assert_eq!(SourcePaths::of_profile(Some(&p)), SourcePaths::Absolute);
        // An instrumented build's own profile directory, and the .profdata merged in it.
        let gen = t.path().join("builds/x-gen");
        fs::create_dir_all(gen.join("profile-gen")).unwrap();
        fs::write(gen.join("build.json"), r#"{"source_paths":"relative"}"#).unwrap();
        let d = ProfileInput::GccDir(gen.join("profile-gen"));
        assert_eq!(SourcePaths::of_profile(Some(&d)), SourcePaths::Relative);
        let m = ProfileInput::Profdata(gen.join("profile-gen/merged.profdata"));
        assert_eq!(SourcePaths::of_profile(Some(&m)), SourcePaths::Relative);
        assert_eq!(SourcePaths::of_profile(None), SourcePaths::Relative);
        // A sidecar's compiler profile: its rebuild.json's entry says.
        let side = t.path().join("x.rebuild");
        fs::create_dir_all(side.join("profiles")).unwrap();
        let s = ProfileInput::Profdata(side.join("profiles/compiler.profdata"));
        assert_eq!(SourcePaths::of_profile(Some(&s)), SourcePaths::Absolute);
        fs::write(
            side.join("rebuild.json"),
            r#"{"profiles":[{"kind":"bolt"},{"kind":"compiler","source_paths":"relative"}]}"#,
        )
        .unwrap();
        assert_eq!(SourcePaths::of_profile(Some(&s)), SourcePaths::Relative);
    }

    #[test]
    fn a_path_with_white_space_gets_no_launcher() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("my builds/x");
        fs::create_dir_all(dir.join("build")).unwrap();
        assert!(prepare(&dir, t.path()).unwrap().is_none());
    }
}
