//! Profiles: stored content-addressed with their metadata, checked before use.
//!
//! A profile lives in WORK/profiles/<hash>/ (a gcda directory, a merged .profdata, or a BOLT .fdata)
//! beside meta.json: where it came from (source hash, the build it was trained on, compiler), how it
//! was trained, and a summary. [`check`] refuses empty profiles and profiles of another build.

pub mod bolt;
pub mod train;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::builder::{BuildOutput, ProfileInput};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A directory of GCC .gcda files.
    Gcda,
    /// A merged LLVM .profdata file.
    Profdata,
    /// A BOLT .fdata file.
    Fdata,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub files: u64,
    pub bytes: u64,
    /// Functions with profile records, where the tool tells.
    pub functions: Option<u64>,
    /// Of those, functions with non-zero counts.
    pub functions_with_counts: Option<u64>,
    /// The hottest functions, where the tool tells.
    pub hottest: Vec<String>,
    /// BOLT: "N out of M functions have non-empty execution profile".
    pub note: Option<String>,
    /// Functions with context-sensitive (post-inline) records: a cs-pgo profile has them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_sensitive_functions: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    pub hash: String,
    pub kind: Kind,
    pub source_hash: String,
    /// The key of the build the profile was collected on.
    pub build_key: String,
    pub recipe: String,
    pub variant: String,
    pub compiler: String,
    pub compiler_version: String,
    /// What ran: tests, durations, threads, protocol.
    pub training: Vec<String>,
    pub seconds: f64,
    /// Seconds since the Unix epoch.
    pub created: u64,
    pub summary: Summary,
    /// How the instrumented build named its sources (builder/relative.rs): a build from this
    /// profile names them the same way. Absent in profiles stored before: absolute.
    #[serde(default)]
    pub source_paths: crate::builder::relative::SourcePaths,
}

/// A profile in the store.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Stored {
    pub dir: PathBuf,
    pub meta: Meta,
}

impl Stored {
    /// The path a build or BOLT consumes: the gcda dir, the .profdata or the .fdata.
    pub fn data(&self) -> PathBuf {
        match self.meta.kind {
            Kind::Gcda => self.dir.join("gcda"),
            Kind::Profdata => self.dir.join("merged.profdata"),
            Kind::Fdata => self.dir.join("merged.fdata"),
        }
    }

    pub fn input(&self) -> ProfileInput {
        match self.meta.kind {
            Kind::Gcda => ProfileInput::GccDir(self.data()),
            _ => ProfileInput::Profdata(self.data()),
        }
    }

    pub fn load(dir: &Path) -> Result<Stored> {
        let text = fs::read_to_string(dir.join("meta.json"))
            .with_context(|| format!("reading {}/meta.json", dir.display()))?;
        Ok(Stored {
            dir: dir.to_path_buf(),
            meta: serde_json::from_str(&text)
                .with_context(|| format!("parsing {}/meta.json", dir.display()))?,
        })
    }
}

/// The gcda files of a directory, sorted.
pub fn gcda_files(d: &Path) -> Result<Vec<PathBuf>> {
    if d.is_dir() {
        crate::infra::fs::files_under(d, "gcda")
    } else {
        Ok(Vec::new())
    }
}

/// Checks a GCC profile against the build it is for: every gcda must name an object of that build
/// (names are object paths relative to the build directory, '/' written as '#').
pub fn check_gcda(dir: &Path, build: &BuildOutput) -> Result<Summary> {
    let files = gcda_files(dir)?;
    if files.is_empty() {
        bail!("refusing the profile {}: it holds no .gcda files (did the instrumented server run and stop cleanly?)", dir.display());
    }
    let mut s = Summary::default();
    let mut foreign = Vec::new();
    for f in &files {
        let len = fs::metadata(f)?.len();
        if len == 0 {
            bail!(
                "refusing the profile {}: {} is empty",
                dir.display(),
                f.display()
            );
        }
        s.files += 1;
        s.bytes += len;
        let name = f
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .replace('#', "/");
        if !build.build_dir.join(format!("{name}.o")).is_file() {
            foreign.push(
                f.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned(),
            );
        }
    }
    if let Some((f, w)) = gcov_functions(&files, build.compiler.major) {
        s.functions = Some(f);
        s.functions_with_counts = Some(w);
    }
    if foreign.len() * 2 > files.len() {
        bail!(
            "refusing the profile {}: {} of its {} files name objects that build {} does not have (e.g. {}); it belongs to another build",
            dir.display(),
            foreign.len(),
            files.len(),
            build.dir.display(),
            foreign[0]
        );
    }
    Ok(s)
}

/// The functions with non-zero arc counts in a gcda directory (None: gcov-dump is missing).
pub fn gcda_functions_with_counts(dir: &Path, gcc_major: u32) -> Option<u64> {
    let files = gcda_files(dir).ok()?;
    gcov_functions(&files, gcc_major).map(|(_, with_counts)| with_counts)
}

/// Functions in the gcda files and those with non-zero arc counts, read with the gcov-dump of the
/// same GCC (gcda formats differ between versions); `None` when it is not installed.
fn gcov_functions(files: &[PathBuf], gcc_major: u32) -> Option<(u64, u64)> {
    let tool = crate::infra::tools::which(&format!("gcov-dump-{gcc_major}"))
        .or_else(|| crate::infra::tools::which("gcov-dump"))?;
    let (mut functions, mut with_counts, mut pending) = (0u64, 0u64, false);
    for chunk in files.chunks(200) {
        let out = Command::new(&tool).arg("-l").args(chunk).output().ok()?;
        if !out.status.success() {
            return None;
        }
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if line.contains(":FUNCTION ident=") {
                functions += 1;
                pending = true;
            } else if pending && line.contains(":COUNTERS arcs") {
                if !line.contains("(all zero)") {
                    with_counts += 1;
                }
                pending = false;
            }
        }
    }
    Some((functions, with_counts))
}

/// A .profdata's `n` hottest functions by their largest block count, as llvm-profdata names
/// them (a static function `FILE;SYMBOL`), hottest first; None when the tool cannot read it.
pub fn hottest_functions(file: &Path, profdata_tool: &Path, n: usize) -> Option<Vec<String>> {
    let out = Command::new(profdata_tool)
        .args(["show", &format!("--topn={n}")])
        .arg(file)
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(topn_names(&String::from_utf8_lossy(&out.stdout), n))
}

/// The function names of `llvm-profdata show --topn` output, in its order.
fn topn_names(text: &str, n: usize) -> Vec<String> {
    text.lines()
        .skip_while(|l| !l.contains("functions with the largest"))
        .skip(1)
        .filter_map(|l| {
            l.rsplit_once(", max count = ")
                .map(|(n, _)| n.trim().to_string())
        })
        .take(n)
        .collect()
}

/// Summarizes and sanity-checks a merged .profdata with the matching llvm-profdata.
pub fn check_profdata(file: &Path, profdata_tool: &Path) -> Result<Summary> {
    let len = fs::metadata(file)
        .with_context(|| format!("profile {} is missing", file.display()))?
        .len();
    if len == 0 {
        bail!("refusing the profile {}: it is empty", file.display());
    }
    let out = Command::new(profdata_tool)
        .args(["show", "--topn=10"])
        .arg(file)
        .output()
        .with_context(|| format!("running {} show", profdata_tool.display()))?;
    if !out.status.success() {
        bail!(
            "refusing the profile {}: llvm-profdata cannot read it: {}",
            file.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let total_functions = |text: &str| {
        text.lines()
            .find_map(|l| l.trim().strip_prefix("Total functions:"))
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    let functions = total_functions(&text);
    let hottest = topn_names(&text, 10)
        .into_iter()
        .map(|n| n.rsplit(':').next().unwrap_or("").to_string())
        .filter(|n| !n.is_empty())
        .collect();
    let hottest = readable(hottest);
    let all = Command::new(profdata_tool)
        .args(["show", "--all-functions", "--counts"])
        .arg(file)
        .output()?;
    let with_counts = String::from_utf8_lossy(&all.stdout)
        .lines()
        .filter_map(|l| {
            let l = l.trim();
            // IR-level profiles list "Block counts: [..]"; front-end ones "Function count: N".
            l.strip_prefix("Block counts:")
                .or_else(|| l.strip_prefix("Function count:"))
        })
        .filter(|c| {
            c.split(|ch: char| !ch.is_ascii_digit())
                .any(|n| !n.is_empty() && n != "0")
        })
        .count() as u64;
    if functions == Some(0) {
        bail!(
            "refusing the profile {}: it holds no functions",
            file.display()
        );
    }
    // `show` counts the plain records only; --showcs counts the context-sensitive ones.
    let cs = Command::new(profdata_tool)
        .args(["show", "--showcs"])
        .arg(file)
        .output()?;
    let context_sensitive_functions =
        total_functions(&String::from_utf8_lossy(&cs.stdout)).filter(|n| *n > 0);
    Ok(Summary {
        files: 1,
        bytes: len,
        functions,
        functions_with_counts: Some(with_counts),
        hottest,
        note: None,
        context_sensitive_functions,
    })
}

/// Function names as a reader knows them: C++ names demangled (binutils' c++filt), a file-local
/// function's `path;symbol` as `symbol (file name)`. Names stay as they were if c++filt is absent.
pub fn readable(names: Vec<String>) -> Vec<String> {
    use std::io::Write;
    let split: Vec<(Option<String>, String)> = names
        .iter()
        .map(|n| match n.rsplit_once(';') {
            Some((file, sym)) => (
                Path::new(file)
                    .file_name()
                    .map(|f| f.to_string_lossy().into_owned()),
                sym.to_string(),
            ),
            None => (None, n.clone()),
        })
        .collect();
    let demangled = (|| -> Option<Vec<String>> {
        let mut child = Command::new("c++filt")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .ok()?;
        let input: String = split.iter().map(|(_, s)| format!("{s}\n")).collect();
        child.stdin.take()?.write_all(input.as_bytes()).ok()?;
        let out = child.wait_with_output().ok()?;
        let lines: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect();
        (out.status.success() && lines.len() == split.len()).then_some(lines)
    })();
    let Some(demangled) = demangled else {
        return names;
    };
    split
        .into_iter()
        .zip(demangled)
        .map(|((file, _), d)| match file {
            Some(f) => format!("{d} ({f})"),
            None => d,
        })
        .collect()
}

/// Moves collected profile data into the store under its content hash.
pub fn store(work_dir: &Path, data: &ProfileInput, kind: Kind, mut meta: Meta) -> Result<Stored> {
    // A single file (profdata or fdata) or a gcda directory: content_hash covers both.
    let hash = data.content_hash()?;
    meta.hash = hash.clone();
    let dir = work_dir.join("profiles").join(&hash[..16]);
    if dir.join("meta.json").is_file() {
        return Stored::load(&dir);
    }
    let tmp = dir.with_extension("storing");
    let _ = fs::remove_dir_all(&tmp);
    fs::create_dir_all(&tmp)?;
    let target = match kind {
        Kind::Gcda => tmp.join("gcda"),
        Kind::Profdata => tmp.join("merged.profdata"),
        Kind::Fdata => tmp.join("merged.fdata"),
    };
    match data {
        ProfileInput::GccDir(d) => {
            fs::create_dir_all(&target)?;
            for f in gcda_files(d)? {
                let rel = f.strip_prefix(d).unwrap_or(&f);
                let dst = target.join(rel);
                if let Some(p) = dst.parent() {
                    fs::create_dir_all(p)?;
                }
                fs::copy(&f, &dst)?;
            }
        }
        ProfileInput::Profdata(f) => {
            fs::copy(f, &target)?;
        }
    }
    fs::write(tmp.join("meta.json"), serde_json::to_string_pretty(&meta)?)?;
    fs::rename(&tmp, &dir).with_context(|| format!("storing the profile in {}", dir.display()))?;
    Ok(Stored { dir, meta })
}

/// Refuses a stored profile for a build of another source.
pub fn check_belongs(p: &Stored, source_hash: &str, compiler_label: &str) -> Result<()> {
    if p.meta.source_hash != source_hash {
        bail!(
            "refusing the profile {}: it was trained on source {} but this build is of source {}",
            p.dir.display(),
            &p.meta.source_hash[..12.min(p.meta.source_hash.len())],
            &source_hash[..12.min(source_hash.len())]
        );
    }
    if p.meta.kind != Kind::Fdata && p.meta.compiler != compiler_label {
        bail!(
            "refusing the profile {}: it was made by {} and this build uses {}",
            p.dir.display(),
            p.meta.compiler,
            compiler_label
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topn_names_are_read_from_llvm_profdata_show() {
        // llvm-profdata 22's own output (a static function named FILE;SYMBOL in an IR profile).
        let text = "Instrumentation level: IR  entry_first = 0\nTotal functions: 3\n\
                    Top 3 functions with the largest internal block counts: \n  \
                    main, max count = 100000\n  src/t.cc;_ZL3hoti, max count = 99999\n  \
                    _Z4coldi, max count = 0\n";
        assert_eq!(
            topn_names(text, 2),
            ["main".to_string(), "src/t.cc;_ZL3hoti".to_string()]
        );
        assert!(topn_names("Total functions: 0\n", 5).is_empty());
    }

    #[test]
    fn hottest_function_names_are_demangled_and_locals_name_their_file() {
        let names = readable(vec![
            "_Z40row_sel_field_store_in_mysql_format_funcPhPK17mysql_row_templ_tPKhm".into(),
            "/src/storage/innobase/row/row0sel.cc;_ZL9store_recPhi".into(),
            "alloc_root".into(),
        ]);
        assert_eq!(
            names,
            vec![
                "row_sel_field_store_in_mysql_format_func(unsigned char*, mysql_row_templ_t const*, unsigned char const*, unsigned long)",
                "store_rec(unsigned char*, int) (row0sel.cc)",
                "alloc_root",
            ]
        );
    }
}
