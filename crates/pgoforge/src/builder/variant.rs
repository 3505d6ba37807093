//! Build variants and the compiler flags each one adds to the shared base.
//!
//! Every variant starts from the recipe's CMake arguments (build type and all), so a comparison
//! isolates one feature — never a baseline without LTO against a PGO build with it.

use std::fmt;
use std::path::Path;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::codegen::{Codegen, CpuLevel};
use crate::recipe::PgoStyle;
use crate::toolchain::{Compiler, FlagFamily, ProfileInput};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PgoPhase {
    Baseline,
    /// Instrumented: writes profiles when run.
    PgoGen,
    /// Optimized with a profile.
    PgoUse,
    /// Context-sensitive instrumentation (clang): optimized with the first profile, then
    /// instrumented again after inlining, so the second profile counts each inlined copy apart.
    CsGen,
    /// Optimized with the first profile merged with the context-sensitive one.
    CsUse,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "StoredVariant", into = "StoredVariant")]
pub struct Variant {
    pub phase: PgoPhase,
    pub lto: bool,
    /// Linked with relocations (and, for GCC, without hot/cold splitting) so BOLT can reorder it.
    pub bolt_ready: bool,
    /// `+O3` and the CPU level on top of the base flags (`+native`: -O3 -march=native).
    pub codegen: Codegen,
}

/// A variant as build.json, run-state.json and plans store it: the fields it had before the
/// code generation became an axis, `native` among them (so finished builds read back and a
/// `+native` build is stored as before), and the other code generations beside.
#[derive(Serialize, Deserialize)]
struct StoredVariant {
    /// `stage`: its name before the pipeline's stages took that word.
    stage: PgoPhase,
    lto: bool,
    bolt_ready: bool,
    native: bool,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    o3: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cpu_level: Option<CpuLevel>,
}

impl From<StoredVariant> for Variant {
    fn from(s: StoredVariant) -> Variant {
        let codegen = if s.native {
            Codegen::NATIVE
        } else {
            Codegen {
                o3: s.o3,
                cpu: s.cpu_level,
            }
        };
        Variant {
            phase: s.stage,
            lto: s.lto,
            bolt_ready: s.bolt_ready,
            codegen,
        }
    }
}

impl From<Variant> for StoredVariant {
    fn from(v: Variant) -> StoredVariant {
        let native = v.codegen == Codegen::NATIVE;
        StoredVariant {
            stage: v.phase,
            lto: v.lto,
            bolt_ready: v.bolt_ready,
            native,
            o3: v.codegen.o3 && !native,
            cpu_level: v.codegen.cpu.filter(|_| !native),
        }
    }
}

impl Variant {
    pub const NAMES: &'static str =
        "baseline, lto, pgo-gen, pgo, pgo+lto, cs-pgo, cs-pgo+lto (clang); each optionally +bolt, +O3, a CPU level (+x86-64, +v2, +v3, +v4, +march-native) or +native (-O3 -march=native)";

    pub fn needs_profile(&self) -> bool {
        matches!(
            self.phase,
            PgoPhase::PgoUse | PgoPhase::CsGen | PgoPhase::CsUse
        )
    }

    /// Whether the binary writes a profile when run.
    pub fn instrumented(&self) -> bool {
        matches!(self.phase, PgoPhase::PgoGen | PgoPhase::CsGen)
    }

    /// The instrumented build whose training gives a cs variant its second profile: the same
    /// variant (same LTO, same flags, so the same inlining) built with -fcs-profile-generate.
    /// Bolt-readiness only keeps relocations, so one cs-gen build serves cs-pgo and cs-pgo+bolt.
    pub fn cs_gen(&self) -> Option<Variant> {
        (self.phase == PgoPhase::CsUse).then_some(Variant {
            phase: PgoPhase::CsGen,
            bolt_ready: false,
            ..*self
        })
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let base = match (self.phase, self.lto) {
            (PgoPhase::Baseline, false) => "baseline",
            (PgoPhase::Baseline, true) => "lto",
            (PgoPhase::PgoGen, false) => "pgo-gen",
            (PgoPhase::PgoGen, true) => "pgo-gen+lto",
            (PgoPhase::PgoUse, false) => "pgo",
            (PgoPhase::PgoUse, true) => "pgo+lto",
            (PgoPhase::CsGen, false) => "cs-pgo-gen",
            (PgoPhase::CsGen, true) => "cs-pgo-gen+lto",
            (PgoPhase::CsUse, false) => "cs-pgo",
            (PgoPhase::CsUse, true) => "cs-pgo+lto",
        };
        f.write_str(base)?;
        if self.bolt_ready {
            f.write_str("+bolt")?;
        }
        f.write_str(&self.codegen.suffix())
    }
}

impl FromStr for Variant {
    type Err = String;
    fn from_str(s: &str) -> Result<Variant, String> {
        let mut parts = s.split('+');
        let head = parts.next().unwrap_or_default();
        let (phase, mut lto) = match head {
            "baseline" => (PgoPhase::Baseline, false),
            "lto" => (PgoPhase::Baseline, true),
            "pgo-gen" => (PgoPhase::PgoGen, false),
            "pgo" => (PgoPhase::PgoUse, false),
            "cs-pgo-gen" => (PgoPhase::CsGen, false),
            "cs-pgo" => (PgoPhase::CsUse, false),
            _ => {
                return Err(format!(
                    "unknown variant '{s}'; variants are {}",
                    Variant::NAMES
                ))
            }
        };
        let (mut bolt_ready, mut codegen) = (false, Codegen::default());
        for p in parts {
            match p {
                "lto" if phase != PgoPhase::Baseline => lto = true,
                "bolt" => bolt_ready = true,
                _ if codegen
                    .apply(p)
                    .map_err(|e| format!("variant '{s}': {e}"))? => {}
                _ => {
                    return Err(format!(
                        "unknown variant '{s}'; variants are {}",
                        Variant::NAMES
                    ))
                }
            }
        }
        Ok(Variant {
            phase,
            lto,
            bolt_ready,
            codegen,
        })
    }
}

/// What the build adds to the recipe's CMake arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FlagSet {
    pub cflags: Vec<String>,
    pub ldflags: Vec<String>,
    /// Extra -D arguments (MySQL-style PGO switches, the version suffix).
    pub cmake_defs: Vec<String>,
    /// Compile flags that must come after the build type's own: the variant's optimization
    /// level. CMake puts `CMAKE_<LANG>_FLAGS_<TYPE>` (RelWithDebInfo: `-O2 -g -DNDEBUG`) after
    /// `CMAKE_<LANG>_FLAGS`, and the last `-O` wins, so a `-O3` among the cflags was silently
    /// compiled at -O2 (builder::opt_level places these).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub opt: Vec<String>,
}

impl FlagSet {
    /// Every compile flag the variant adds, in the order they take effect.
    pub fn compile_flags(&self) -> Vec<String> {
        self.cflags.iter().chain(&self.opt).cloned().collect()
    }
}

pub struct FlagInputs<'a> {
    pub variant: Variant,
    pub compiler: &'a Compiler,
    pub pgo_style: PgoStyle,
    /// Where an instrumented build writes its profiles.
    pub gen_dir: &'a Path,
    pub profile: Option<&'a ProfileInput>,
    /// The build directory (GCC's gcda names are made relative to it).
    pub build_dir: &'a Path,
    pub link_jobs: usize,
    pub version_suffix_arg: Option<&'a str>,
    /// GCC's `-fprofile-partial-training` in profile-use builds (the recipe's setting).
    pub partial_training: bool,
}

pub fn flags(i: &FlagInputs) -> FlagSet {
    let mut f = FlagSet::default();
    let gcc = i.compiler.family == FlagFamily::Gcc;
    let s = |v: &str| v.to_string();
    f.opt.extend(i.variant.codegen.flags());
    match i.variant.phase {
        PgoPhase::Baseline => {}
        PgoPhase::PgoGen => gen_flags(i, gcc, &mut f),
        PgoPhase::PgoUse => use_flags(i, gcc, &mut f),
        // Context-sensitive PGO is clang's alone (the plan refuses it for GCC); its flags are
        // given directly whatever the recipe's PGO style, since MySQL's FPROFILE_* switches
        // know nothing of it. With ThinLTO, clang passes both to lld's LTO backend, where the
        // post-inline instrumentation and use happen.
        PgoPhase::CsGen | PgoPhase::CsUse => cs_flags(i, &mut f),
    }
    if i.variant.lto {
        lto_flags(i, gcc, &mut f);
    }
    if i.variant.bolt_ready {
        f.ldflags.push(s("-Wl,--emit-relocs"));
        if gcc {
            f.cflags.push(s("-fno-reorder-blocks-and-partition"));
        }
    }
    f
}

/// An instrumented build's flags: GCC's or clang's -fprofile-generate (MySQL's FPROFILE_*
/// switches instead, for a recipe whose PGO style is MySQL's own).
fn gen_flags(i: &FlagInputs, gcc: bool, f: &mut FlagSet) {
    let s = |v: &str| v.to_string();
    if i.pgo_style == PgoStyle::Mysql {
        f.cmake_defs.extend([
            s("-DFPROFILE_GENERATE=ON"),
            format!("-DFPROFILE_DIR={}", i.gen_dir.display()),
        ]);
    }
    if gcc {
        if i.pgo_style == PgoStyle::Flags {
            f.cflags
                .push(format!("-fprofile-generate={}", i.gen_dir.display()));
            f.ldflags
                .push(format!("-fprofile-generate={}", i.gen_dir.display()));
        }
        // Atomic counters: the server is multithreaded. Names relative to the build dir, so
        // a use build in another directory finds them.
        f.cflags.push(s("-fprofile-update=prefer-atomic"));
        f.cflags
            .push(format!("-fprofile-prefix-path={}", i.build_dir.display()));
    } else if i.pgo_style == PgoStyle::Flags {
        f.cflags
            .push(format!("-fprofile-generate={}", i.gen_dir.display()));
        f.ldflags
            .push(format!("-fprofile-generate={}", i.gen_dir.display()));
    }
}

/// A profile-use build's flags.
fn use_flags(i: &FlagInputs, gcc: bool, f: &mut FlagSet) {
    let s = |v: &str| v.to_string();
    let p = i
        .profile
        .map(|p| p.path().display().to_string())
        .unwrap_or_default();
    if i.pgo_style == PgoStyle::Mysql {
        // MySQL's cmake/fprofile.cmake turns LTO on by default with FPROFILE_USE; LTO
        // belongs only to the variants named for it, and those get pgoforge's own -flto
        // flags (the same for every recipe), so MySQL's switch stays off.
        f.cmake_defs.extend([
            s("-DFPROFILE_USE=ON"),
            format!("-DFPROFILE_DIR={p}"),
            s("-DWITH_LTO=OFF"),
        ]);
    }
    if gcc {
        if i.pgo_style == PgoStyle::Flags {
            f.cflags.push(format!("-fprofile-use={p}"));
            f.ldflags.push(format!("-fprofile-use={p}"));
        }
        f.cflags.push(s("-fprofile-correction"));
        if i.partial_training {
            f.cflags.push(s("-fprofile-partial-training"));
        }
        f.cflags.extend([
            format!("-fprofile-prefix-path={}", i.build_dir.display()),
            s("-Wmissing-profile"),
            // Generated sources (bison's parsers) carry #line paths into the build
            // directory, which differs between the gen and the use build, so the source
            // location checksum differs and GCC, by default, fails the build. The control
            // flow checksum still matches and GCC then uses the counts anyway (checked on a
            // small file: same code as a same-directory build), so a warning is enough.
            s("-Wno-error=coverage-mismatch"),
        ]);
    } else if i.pgo_style == PgoStyle::Flags {
        f.cflags.push(format!("-fprofile-use={p}"));
        f.ldflags.push(format!("-fprofile-use={p}"));
    }
    if let Some(a) = i.version_suffix_arg {
        f.cmake_defs.push(a.to_string());
    }
}

/// Context-sensitive PGO's flags (the instrumented build and the use build).
fn cs_flags(i: &FlagInputs, f: &mut FlagSet) {
    let p = i
        .profile
        .map(|p| p.path().display().to_string())
        .unwrap_or_default();
    let mut both = vec![format!("-fprofile-use={p}")];
    if i.variant.phase == PgoPhase::CsGen {
        both.push(format!("-fcs-profile-generate={}", i.gen_dir.display()));
    } else if let Some(a) = i.version_suffix_arg {
        f.cmake_defs.push(a.to_string());
    }
    f.cflags.extend(both.iter().cloned());
    f.ldflags.extend(both);
}

/// LTO: GCC's with its linker plugin, or clang's ThinLTO through lld with its cache.
fn lto_flags(i: &FlagInputs, gcc: bool, f: &mut FlagSet) {
    let s = |v: &str| v.to_string();
    if gcc {
        f.cflags.push(s("-flto=auto"));
        f.ldflags
            .extend([s("-flto=auto"), s("-fuse-linker-plugin")]);
    } else {
        f.cflags.push(s("-flto=thin"));
        f.ldflags.extend([
            s("-flto=thin"),
            s("-fuse-ld=lld"),
            format!("-Wl,--thinlto-jobs={}", i.link_jobs),
            // A relink with unchanged inputs (an interrupted build resumed, a re-run
            // make) takes its optimized objects from here instead of redoing the LTO backend.
            format!(
                "-Wl,--thinlto-cache-dir={}",
                i.build_dir.join("thinlto-cache").display()
            ),
        ]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for n in [
            "baseline",
            "lto",
            "pgo-gen",
            "pgo",
            "pgo+lto",
            "pgo+lto+bolt",
            "baseline+bolt+native",
            "pgo-gen+bolt",
            "cs-pgo-gen+lto",
            "cs-pgo+lto+bolt",
            "cs-pgo",
            "pgo+lto+bolt+O3",
            "pgo+lto+O3+v3",
            "baseline+v4",
            "pgo-gen+march-native",
        ] {
            assert_eq!(n.parse::<Variant>().unwrap().to_string(), n);
        }
        // -O3 with -march=native is seed 000's +native, whichever way it is written.
        assert_eq!(
            "pgo+O3+march-native"
                .parse::<Variant>()
                .unwrap()
                .to_string(),
            "pgo+native"
        );
        assert!("pgo+v3+v4"
            .parse::<Variant>()
            .unwrap_err()
            .contains("two CPU levels"));
        assert!("fast"
            .parse::<Variant>()
            .unwrap_err()
            .contains("baseline, lto"));
        assert!("lto+lto".parse::<Variant>().is_err());
    }

    #[test]
    fn stored_variants_read_back_as_before() {
        // build.json and run-state.json of finished builds: the old four fields.
        let old = r#"{"stage":"pgo-use","lto":true,"bolt_ready":false,"native":true}"#;
        let v: Variant = serde_json::from_str(old).unwrap();
        assert_eq!(v.to_string(), "pgo+lto+native");
        assert_eq!(serde_json::to_string(&v).unwrap(), old);
        let plain: Variant = "pgo+lto+bolt".parse().unwrap();
        assert_eq!(
            serde_json::to_string(&plain).unwrap(),
            r#"{"stage":"pgo-use","lto":true,"bolt_ready":true,"native":false}"#
        );
        let v3: Variant = "pgo+O3+v3".parse().unwrap();
        let j = serde_json::to_string(&v3).unwrap();
        assert!(j.contains(r#""o3":true,"cpu_level":"x86-64-v3""#), "{j}");
        assert_eq!(serde_json::from_str::<Variant>(&j).unwrap(), v3);
    }

    fn gcc() -> Compiler {
        Compiler {
            family: FlagFamily::Gcc,
            cc: "gcc".into(),
            cxx: "g++".into(),
            version: String::new(),
            major: 12,
            profdata: None,
        }
    }

    #[test]
    fn gcc_and_clang_flags() {
        let gcc = gcc();
        let clang = Compiler {
            family: FlagFamily::Clang,
            ..gcc.clone()
        };
        let p = ProfileInput::GccDir("/p".into());
        let mk = |v: &str, c: &Compiler| {
            flags(&FlagInputs {
                variant: v.parse().unwrap(),
                compiler: c,
                pgo_style: PgoStyle::Flags,
                gen_dir: Path::new("/gen"),
                profile: Some(&p),
                build_dir: Path::new("/b"),
                link_jobs: 2,
                version_suffix_arg: Some("-DMYSQL_SERVER_SUFFIX=-pgo"),
                partial_training: true,
            })
        };
        let g = mk("pgo-gen", &gcc);
        assert!(
            g.cflags.contains(&"-fprofile-generate=/gen".into())
                && g.cflags.contains(&"-fprofile-update=prefer-atomic".into())
        );
        let u = mk("pgo+lto+bolt", &gcc);
        for want in [
            "-fprofile-use=/p",
            "-fprofile-correction",
            "-fprofile-partial-training",
            "-flto=auto",
            "-fno-reorder-blocks-and-partition",
        ] {
            assert!(
                u.cflags.contains(&want.to_string()),
                "{want} in {:?}",
                u.cflags
            );
        }
        assert!(u.ldflags.contains(&"-Wl,--emit-relocs".into()));
        assert_eq!(u.cmake_defs, vec!["-DMYSQL_SERVER_SUFFIX=-pgo"]);
        let c = mk("lto+bolt", &clang);
        assert!(
            c.cflags.contains(&"-flto=thin".into()) && c.ldflags.contains(&"-fuse-ld=lld".into())
        );
        assert!(!c.cflags.iter().any(|f| f.contains("reorder-blocks")));
        assert!(mk("baseline", &gcc) == FlagSet::default());
        let cs = mk("cs-pgo-gen+lto", &clang);
        for want in [
            "-fprofile-use=/p",
            "-fcs-profile-generate=/gen",
            "-flto=thin",
        ] {
            assert!(
                cs.cflags.contains(&want.to_string()) && cs.ldflags.contains(&want.to_string()),
                "{want} in {cs:?}"
            );
        }
        let cs = mk("cs-pgo+lto", &clang);
        assert!(cs.ldflags.contains(&"-fprofile-use=/p".into()));
        assert!(!cs.cflags.iter().any(|f| f.contains("generate")));
        assert_eq!(cs.cmake_defs, vec!["-DMYSQL_SERVER_SUFFIX=-pgo"]);
        let v: Variant = "cs-pgo+lto+bolt".parse().unwrap();
        assert_eq!(v.cs_gen().unwrap().to_string(), "cs-pgo-gen+lto");
        assert!(v.cs_gen().unwrap().instrumented() && v.needs_profile());
        assert_eq!("pgo+lto".parse::<Variant>().unwrap().cs_gen(), None);
    }

    /// A GCC variant's flags in the MySQL style.
    fn mysql_style(v: &str, partial_training: bool) -> FlagSet {
        flags(&FlagInputs {
            variant: v.parse().unwrap(),
            compiler: &gcc(),
            pgo_style: PgoStyle::Mysql,
            gen_dir: Path::new("/gen"),
            profile: Some(&ProfileInput::GccDir("/p".into())),
            build_dir: Path::new("/b"),
            link_jobs: 2,
            version_suffix_arg: None,
            partial_training,
        })
    }

    #[test]
    fn mysql_style_pgo_uses_mysqls_switches_and_keeps_lto_to_lto_variants() {
        let mk = |v: &str| mysql_style(v, true);
        let g = mk("pgo-gen");
        assert!(g.cmake_defs.contains(&"-DFPROFILE_GENERATE=ON".into()));
        assert!(!g.cflags.iter().any(|f| f.starts_with("-fprofile-generate")));
        let u = mk("pgo");
        assert!(u.cmake_defs.contains(&"-DFPROFILE_USE=ON".into()));
        // FPROFILE_USE would switch MySQL's own LTO on: the plain pgo variant must not get it.
        assert!(u.cmake_defs.contains(&"-DWITH_LTO=OFF".into()));
        assert!(!u.cflags.iter().any(|f| f.starts_with("-flto")));
        let l = mk("pgo+lto+native");
        assert!(l.cflags.contains(&"-flto=auto".into()) && l.opt.contains(&"-march=native".into()));
        // The baseline and the instrumented build keep the keys they always had.
        assert!(mk("baseline") == FlagSet::default());
        assert!(!g.cmake_defs.contains(&"-DWITH_LTO=OFF".into()));
    }

    #[test]
    fn partial_training_is_the_recipes_choice() {
        let mk = |partial_training| mysql_style("pgo", partial_training);
        let has = |f: &FlagSet| f.cflags.iter().any(|c| c == "-fprofile-partial-training");
        assert!(has(&mk(true)));
        let off = mk(false);
        assert!(!has(&off));
        assert!(off.cflags.iter().any(|c| c == "-fprofile-correction"));
    }
}
