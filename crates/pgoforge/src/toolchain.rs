//! Compilers and the LLVM tools that must match them.
//!
//! gcc/g++ and clang/clang++ are found by plain or versioned names (clang-16); a compiler may also be
//! given by path with the flag family it speaks, so that e.g. Intel's icx works where installed.
//! llvm-profdata must come from the same LLVM major as clang (the unversioned one may belong to
//! another LLVM); BOLT works on any ELF, so the newest installed BOLT is taken.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::infra::fs::{files_under, hex};
pub use crate::infra::tools::which;

/// Which command-line dialect a compiler speaks for PGO, LTO and BOLT flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum FlagFamily {
    Gcc,
    Clang,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Compiler {
    pub family: FlagFamily,
    pub cc: PathBuf,
    pub cxx: PathBuf,
    /// First line of `cc --version`.
    pub version: String,
    pub major: u32,
    /// llvm-profdata of the same LLVM major (Clang only).
    pub profdata: Option<PathBuf>,
}

fn version_line(bin: &Path) -> Result<String> {
    let out = Command::new(bin)
        .arg("--version")
        .output()
        .with_context(|| format!("running {} --version", bin.display()))?;
    Ok(String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or("")
        .trim()
        .to_string())
}

/// The first number of the form N.M in a version line.
fn major_of(line: &str) -> u32 {
    line.split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .find(|w| w.contains('.') && w.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .and_then(|w| w.split('.').next()?.parse().ok())
        .unwrap_or(0)
}

/// A compiler given by path must compile: `--compiler /bin/ls --flag-family gcc` is refused here,
/// not an hour into a build.
fn check_compiles(cc: &Path) -> Result<()> {
    let dir = tempfile::tempdir().context("a temporary directory for the compiler check")?;
    let src = dir.path().join("check.c");
    std::fs::write(&src, "int main(void) { return 0; }\n")?;
    let out = Command::new(cc)
        .arg("-c")
        .arg(&src)
        .arg("-o")
        .arg(dir.path().join("check.o"))
        .output()
        .with_context(|| format!("running {}", cc.display()))?;
    if !out.status.success() || !dir.path().join("check.o").is_file() {
        bail!(
            "{} does not compile a trivial C file, so it is not a usable C compiler: {}",
            cc.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

impl Compiler {
    /// `gcc`, `clang`, `clang-16`, or a path to a C compiler with `flag_family` given.
    pub fn find(spec: &str, flag_family: Option<FlagFamily>) -> Result<Compiler> {
        let (family, cc_names, cxx_of): (FlagFamily, Vec<String>, fn(&str) -> String) = match spec {
            "gcc" => (FlagFamily::Gcc, vec!["gcc".into()], |_| "g++".into()),
            "clang" => {
                // Prefer the newest versioned clang; its llvm-profdata is then unambiguous.
                let mut v: Vec<String> = (14..=30).rev().map(|n| format!("clang-{n}")).collect();
                v.push("clang".into());
                (FlagFamily::Clang, v, |c| c.replace("clang", "clang++"))
            }
            s if s.starts_with("clang-") => (FlagFamily::Clang, vec![s.into()], |c| {
                c.replace("clang", "clang++")
            }),
            s if s.starts_with("gcc-") => {
                (FlagFamily::Gcc, vec![s.into()], |c| c.replace("gcc", "g++"))
            }
            path => {
                let Some(fam) = flag_family else {
                    bail!("compiler '{path}' is not gcc or clang: say which flags it speaks with --flag-family gcc|clang");
                };
                let cc = which(path).with_context(|| format!("compiler {path} not found"))?;
                let cxx_guess = cc.with_file_name(match fam {
                    FlagFamily::Gcc => cc
                        .file_name()
                        .unwrap_or_default()
                        .to_string_lossy()
                        .replace("gcc", "g++"),
                    FlagFamily::Clang => {
                        let n = cc
                            .file_name()
                            .unwrap_or_default()
                            .to_string_lossy()
                            .into_owned();
                        if n == "icx" {
                            "icpx".into()
                        } else {
                            n.replace("clang", "clang++")
                        }
                    }
                });
                return Self::complete(fam, cc, cxx_guess);
            }
        };
        for name in &cc_names {
            if let Some(cc) = which(name) {
                let cxx = which(&cxx_of(name)).unwrap_or_else(|| cc.with_file_name(cxx_of(name)));
                return Self::complete(family, cc, cxx);
            }
        }
        let pkg = match family {
            FlagFamily::Gcc => "gcc g++".to_string(),
            FlagFamily::Clang => spec
                .strip_prefix("clang-")
                .map_or("clang-22 llvm-22 lld-22 libclang-rt-22-dev".into(), |n| {
                    format!("clang-{n} llvm-{n} lld-{n} libclang-rt-{n}-dev")
                }),
        };
        bail!("compiler '{spec}' not found; install it with: apt-get install {pkg}")
    }

    fn complete(family: FlagFamily, cc: PathBuf, cxx: PathBuf) -> Result<Compiler> {
        if !cxx.is_file() {
            bail!(
                "C++ compiler {} (paired with {}) not found",
                cxx.display(),
                cc.display()
            );
        }
        check_compiles(&cc)?;
        let version = version_line(&cc)?;
        let major = major_of(&version);
        let profdata = match family {
            FlagFamily::Clang => which(&format!("llvm-profdata-{major}")).or_else(|| {
                Some(PathBuf::from(format!(
                    "/usr/lib/llvm-{major}/bin/llvm-profdata"
                )))
                .filter(|p| p.is_file())
            }),
            FlagFamily::Gcc => None,
        };
        Ok(Compiler {
            family,
            cc,
            cxx,
            version,
            major,
            profdata,
        })
    }

    /// A short name for directories and reports: gcc-12, clang-16.
    pub fn label(&self) -> String {
        let base = match self.family {
            FlagFamily::Gcc => "gcc",
            FlagFamily::Clang => "clang",
        };
        format!("{base}-{}", self.major)
    }

    pub fn profdata(&self) -> Result<&Path> {
        self.profdata.as_deref().with_context(|| {
            format!(
                "llvm-profdata for LLVM {} not found (it must match {}); install it with: apt-get install llvm-{}",
                self.major, self.label(), self.major
            )
        })
    }
}

/// The profile a pgo build consumes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProfileInput {
    /// A directory of GCC .gcda files, as written by the pgo-gen build.
    GccDir(PathBuf),
    /// A merged LLVM .profdata file.
    Profdata(PathBuf),
}

impl ProfileInput {
    /// What a user's `--profile PATH` means: a directory holds gcda files, a file is a .profdata.
    pub fn from_path(p: PathBuf) -> ProfileInput {
        if p.is_dir() {
            ProfileInput::GccDir(p)
        } else {
            ProfileInput::Profdata(p)
        }
    }

    pub fn path(&self) -> &Path {
        match self {
            ProfileInput::GccDir(p) | ProfileInput::Profdata(p) => p,
        }
    }

    /// The hash of the profile's content (file names and bytes for a gcda directory): what a
    /// build's key holds, so a retrained profile gives a new build.
    pub fn content_hash(&self) -> Result<String> {
        let mut h = Sha256::new();
        match self {
            ProfileInput::Profdata(f) => {
                let mut file = std::fs::File::open(f)
                    .with_context(|| format!("opening profile {}", f.display()))?;
                std::io::copy(&mut file, &mut h)?;
            }
            ProfileInput::GccDir(d) => {
                let files = if d.is_dir() {
                    files_under(d, "gcda")?
                } else {
                    Vec::new()
                };
                if files.is_empty() {
                    bail!("profile directory {} holds no .gcda files", d.display());
                }
                for f in files {
                    h.update(f.strip_prefix(d).unwrap_or(&f).to_string_lossy().as_bytes());
                    h.update(
                        std::fs::read(&f).with_context(|| format!("reading {}", f.display()))?,
                    );
                }
            }
        }
        Ok(hex(&h.finalize()))
    }
}

/// The BOLT tools of one LLVM installation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bolt {
    pub major: u32,
    pub llvm_bolt: PathBuf,
    pub merge_fdata: Option<PathBuf>,
    pub perf2bolt: Option<PathBuf>,
}

impl Bolt {
    /// The newest installed BOLT, called by its full path under /usr/lib/llvm-N so it finds its
    /// runtime libraries.
    pub fn find() -> Option<Bolt> {
        (14..=22).rev().find_map(|n| {
            let dir = PathBuf::from(format!("/usr/lib/llvm-{n}/bin"));
            let llvm_bolt = dir.join("llvm-bolt");
            llvm_bolt.is_file().then(|| Bolt {
                major: n,
                llvm_bolt,
                merge_fdata: Some(dir.join("merge-fdata")).filter(|p| p.is_file()),
                perf2bolt: Some(dir.join("perf2bolt")).filter(|p| p.is_file()),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn majors_from_version_lines() {
        assert_eq!(major_of("gcc (Debian 12.2.0-14+deb12u1) 12.2.0"), 12);
        assert_eq!(major_of("Debian clang version 16.0.6 (15~deb12u1)"), 16);
        assert_eq!(
            major_of("Intel(R) oneAPI DPC++/C++ Compiler 2024.1.0 (2024.1.0.20240308)"),
            2024
        );
    }

    #[test]
    fn a_path_that_is_not_a_compiler_is_refused() {
        let e = Compiler::find("/bin/ls", Some(FlagFamily::Gcc))
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a usable C compiler"), "{e}");
        assert!(Compiler::find("/usr/bin/gcc", Some(FlagFamily::Gcc)).is_ok());
    }

    #[test]
    fn a_clang_by_path_gets_its_own_llvm_profdata() {
        // As an LLVM-based compiler outside PATH would be given (`--compiler PATH --flag-family
        // clang`): the C++ driver beside it, the profile tool of its own LLVM major.
        let c = Compiler::find("/usr/lib/llvm-22/bin/clang", Some(FlagFamily::Clang)).unwrap();
        assert_eq!((c.family, c.major), (FlagFamily::Clang, 22));
        assert_eq!(c.cxx, Path::new("/usr/lib/llvm-22/bin/clang++"));
        assert!(c.profdata().unwrap().to_string_lossy().contains("22"));
    }

    #[test]
    fn unknown_compilers_need_a_flag_family() {
        let e = Compiler::find("/usr/bin/cc", None).unwrap_err().to_string();
        assert!(e.contains("--flag-family"), "{e}");
        let e = Compiler::find("clang-99", None).unwrap_err().to_string();
        assert!(e.contains("apt-get install clang-99 llvm-99"), "{e}");
    }
}
