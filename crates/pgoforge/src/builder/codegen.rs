//! A variant's code generation beyond its PGO and LTO: the optimization level (`+O3`) and the CPU
//! level it is compiled for (`+x86-64`, `+v2`, `+v3`, `+v4`, `+march-native`; `--cpu-level` gives
//! one to every build of a run). `+native` is seed 000's `-O3 -march=native`, kept under its old
//! name so finished builds keep their keys.
//!
//! A CPU level is a promise about the machines the binary will run on: an instruction the CPU
//! lacks kills the server with SIGILL, at start or later, on a code path nobody tested. So the
//! level travels with the binary: into the build key, the package's manifest
//! (`package::cpu::CpuRequirement`), and the checks that refuse to install or start it where the
//! CPU lacks a feature.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The x86-64 micro-architecture levels (the psABI's, as GCC and clang name them for `-march`),
/// and the build host's own CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum CpuLevel {
    /// The baseline every x86-64 CPU has (SSE2); what Debian's amd64 packages are built for.
    #[serde(rename = "x86-64")]
    X86_64,
    /// + SSE3, SSSE3, SSE4.1/4.2, POPCNT, CMPXCHG16B (Intel Nehalem, AMD Bulldozer, 2008–2011).
    #[serde(rename = "x86-64-v2")]
    V2,
    /// + AVX, AVX2, BMI1/2, FMA, F16C, LZCNT, MOVBE (Intel Haswell 2013, AMD Excavator/Zen).
    #[serde(rename = "x86-64-v3")]
    V3,
    /// + AVX-512 F, BW, CD, DQ, VL (Intel Skylake-X and later servers, AMD Zen 4).
    #[serde(rename = "x86-64-v4")]
    V4,
    /// Whatever the build host's CPU has.
    #[serde(rename = "native")]
    Native,
}

/// The levels in order, for messages.
pub const LEVELS: &str = "x86-64, x86-64-v2, x86-64-v3, x86-64-v4 (or v2, v3, v4), native";

/// /proc/cpuinfo's names of what each level adds to the one before (the psABI's lists; LZCNT is
/// `abm` there, SSE3 `pni`). x86-64 itself adds nothing a 64-bit kernel could run without.
const V2_ADDS: &[&str] = &[
    "cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3",
];
const V3_ADDS: &[&str] = &[
    "abm", "avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "movbe", "xsave",
];
const V4_ADDS: &[&str] = &["avx512bw", "avx512cd", "avx512dq", "avx512f", "avx512vl"];

/// The instruction-set extensions among /proc/cpuinfo's flags that `-march=native` may use: what
/// a native binary needs of the CPU it runs on (features of the kernel, the hypervisor or power
/// management are left out: they do not change which instructions a compiler emits).
const ISA_FLAGS: &[&str] = &[
    "abm",
    "adx",
    "aes",
    "avx",
    "avx2",
    "avx512_bf16",
    "avx512_bitalg",
    "avx512_fp16",
    "avx512_vbmi2",
    "avx512_vnni",
    "avx512_vp2intersect",
    "avx512_vpopcntdq",
    "avx512bw",
    "avx512cd",
    "avx512dq",
    "avx512f",
    "avx512ifma",
    "avx512vbmi",
    "avx512vl",
    "avx_vnni",
    "bmi1",
    "bmi2",
    "clflushopt",
    "clwb",
    "clzero",
    "cx16",
    "f16c",
    "fma",
    "fma4",
    "fsgsbase",
    "gfni",
    "lahf_lm",
    "movbe",
    "movdir64b",
    "movdiri",
    "mwaitx",
    "pclmulqdq",
    "pku",
    "pni",
    "popcnt",
    "prefetchw",
    "rdpid",
    "rdrand",
    "rdseed",
    "serialize",
    "sha_ni",
    "sse4_1",
    "sse4_2",
    "sse4a",
    "ssse3",
    "tbm",
    "vaes",
    "vpclmulqdq",
    "waitpkg",
    "wbnoinvd",
    "xop",
    "xsave",
    "xsavec",
    "xsaveopt",
    "xsaves",
];

impl CpuLevel {
    /// The `-march=` value GCC and clang take.
    pub fn march(self) -> &'static str {
        match self {
            CpuLevel::X86_64 => "x86-64",
            CpuLevel::V2 => "x86-64-v2",
            CpuLevel::V3 => "x86-64-v3",
            CpuLevel::V4 => "x86-64-v4",
            CpuLevel::Native => "native",
        }
    }

    /// Its modifier in a variant's name (`pgo+lto+v3`).
    fn modifier(self) -> &'static str {
        match self {
            CpuLevel::X86_64 => "x86-64",
            CpuLevel::V2 => "v2",
            CpuLevel::V3 => "v3",
            CpuLevel::V4 => "v4",
            CpuLevel::Native => "march-native",
        }
    }

    fn from_modifier(m: &str) -> Option<CpuLevel> {
        [
            CpuLevel::X86_64,
            CpuLevel::V2,
            CpuLevel::V3,
            CpuLevel::V4,
            CpuLevel::Native,
        ]
        .into_iter()
        .find(|l| l.modifier() == m)
    }

    /// The /proc/cpuinfo flags a CPU needs to run code built for this level; for `native`, the
    /// instruction-set flags among `host_flags` (the build host's).
    pub fn required_flags(self, host_flags: &[String]) -> Vec<String> {
        let adds: &[&[&str]] = match self {
            CpuLevel::X86_64 => &[],
            CpuLevel::V2 => &[V2_ADDS],
            CpuLevel::V3 => &[V2_ADDS, V3_ADDS],
            CpuLevel::V4 => &[V2_ADDS, V3_ADDS, V4_ADDS],
            CpuLevel::Native => {
                let mut v: Vec<String> = host_flags
                    .iter()
                    .filter(|f| ISA_FLAGS.contains(&f.as_str()))
                    .cloned()
                    .collect();
                v.sort();
                v.dedup();
                return v;
            }
        };
        let mut v: Vec<String> = adds
            .iter()
            .flat_map(|a| a.iter())
            .map(|s| s.to_string())
            .collect();
        v.sort();
        v
    }
}

impl fmt::Display for CpuLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.march())
    }
}

impl FromStr for CpuLevel {
    type Err = String;
    fn from_str(s: &str) -> Result<CpuLevel, String> {
        Ok(match s {
            "x86-64" | "x86_64" | "v1" | "x86-64-v1" => CpuLevel::X86_64,
            "x86-64-v2" | "v2" => CpuLevel::V2,
            "x86-64-v3" | "v3" => CpuLevel::V3,
            "x86-64-v4" | "v4" => CpuLevel::V4,
            "native" => CpuLevel::Native,
            _ => return Err(format!("unknown CPU level '{s}'; levels are {LEVELS}")),
        })
    }
}

/// The flags of the first `flags` line of a /proc/cpuinfo text (every CPU of a machine has the
/// same; a hybrid CPU's cores share their instruction set).
pub fn cpuinfo_flags(cpuinfo: &str) -> Vec<String> {
    crate::server::cpu::cpuinfo_field(cpuinfo, "flags")
        .map(|v| v.split_whitespace().map(str::to_string).collect())
        .unwrap_or_default()
}

/// A variant's code generation: `-O3` or the build type's level, and the CPU level or the
/// compiler's default (which for Debian's GCC and clang is x86-64).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Codegen {
    pub o3: bool,
    pub cpu: Option<CpuLevel>,
}

impl Codegen {
    /// Seed 000's `-O3 -march=native`: the `+native` modifier.
    pub const NATIVE: Codegen = Codegen {
        o3: true,
        cpu: Some(CpuLevel::Native),
    };

    /// The build type's optimization level for the compiler's default CPU.
    pub fn is_default(&self) -> bool {
        *self == Codegen::default()
    }

    /// The flags placed after the build type's own (builder::opt_level): the `-O` first, then
    /// `-march`, the order `+native` always had.
    pub fn flags(&self) -> Vec<String> {
        let mut f = Vec::new();
        if self.o3 {
            f.push("-O3".to_string());
        }
        if let Some(l) = self.cpu {
            f.push(format!("-march={}", l.march()));
        }
        f
    }

    /// The modifiers in a variant's name: `+native`, or `+O3` and then the level's.
    pub fn suffix(&self) -> String {
        if *self == Codegen::NATIVE {
            return "+native".into();
        }
        let mut s = String::new();
        if self.o3 {
            s.push_str("+O3");
        }
        if let Some(l) = self.cpu {
            s.push('+');
            s.push_str(l.modifier());
        }
        s
    }

    /// Applies one `+` part of a variant's name; false when it is not a code-generation
    /// modifier. A second level, or a level beside `+native`, is an error.
    pub fn apply(&mut self, part: &str) -> Result<bool, String> {
        let (o3, cpu) = match part {
            "O3" => (true, None),
            "native" => (true, Some(CpuLevel::Native)),
            _ => match CpuLevel::from_modifier(part) {
                Some(l) => (false, Some(l)),
                None => return Ok(false),
            },
        };
        if let (Some(new), Some(old)) = (cpu, self.cpu) {
            return Err(format!(
                "two CPU levels ({} and {}): a binary is built for one",
                old.march(),
                new.march()
            ));
        }
        self.o3 |= o3;
        self.cpu = cpu.or(self.cpu);
        Ok(true)
    }

    /// This code generation for `level` (`--cpu-level`): an error when it names another.
    pub fn at_level(self, level: CpuLevel) -> Result<Codegen, String> {
        match self.cpu {
            Some(l) if l != level => Err(format!(
                "it is built for {} already, and --cpu-level asks for {}",
                l.march(),
                level.march()
            )),
            _ => Ok(Codegen {
                cpu: Some(level),
                ..self
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_parse_print_and_nest() {
        for l in ["x86-64", "x86-64-v2", "x86-64-v3", "x86-64-v4", "native"] {
            assert_eq!(l.parse::<CpuLevel>().unwrap().to_string(), l);
        }
        assert_eq!("v3".parse::<CpuLevel>().unwrap(), CpuLevel::V3);
        assert!("v5".parse::<CpuLevel>().unwrap_err().contains("x86-64-v4"));
        let none: Vec<String> = Vec::new();
        assert!(CpuLevel::X86_64.required_flags(&none).is_empty());
        let (v2, v3, v4) = (
            CpuLevel::V2.required_flags(&none),
            CpuLevel::V3.required_flags(&none),
            CpuLevel::V4.required_flags(&none),
        );
        // Each level holds the one below it.
        assert!(v2.iter().all(|f| v3.contains(f)) && v3.iter().all(|f| v4.contains(f)));
        assert!(v3.contains(&"avx2".to_string()) && !v2.contains(&"avx2".to_string()));
        assert!(v4.contains(&"avx512f".to_string()));
    }

    #[test]
    fn native_needs_the_build_hosts_instruction_sets_only() {
        let info = "processor\t: 0\nflags\t\t: fpu vme sse2 ssse3 avx2 hypervisor aes constant_tsc avx512f\n\nprocessor\t: 1\nflags\t\t: fpu\n";
        let host = cpuinfo_flags(info);
        assert_eq!(host.len(), 9);
        assert_eq!(
            CpuLevel::Native.required_flags(&host),
            ["aes", "avx2", "avx512f", "ssse3"]
        );
        assert!(cpuinfo_flags("no flags here").is_empty());
    }

    #[test]
    fn modifiers_combine_and_print_canonically() {
        let mk = |parts: &[&str]| {
            let mut c = Codegen::default();
            for p in parts {
                assert!(c.apply(p).unwrap(), "{p}");
            }
            c
        };
        assert_eq!(mk(&["native"]), Codegen::NATIVE);
        assert_eq!(mk(&["O3", "march-native"]).suffix(), "+native");
        assert_eq!(mk(&["v3", "O3"]).suffix(), "+O3+v3");
        assert_eq!(mk(&["v3"]).flags(), ["-march=x86-64-v3"]);
        assert_eq!(Codegen::NATIVE.flags(), ["-O3", "-march=native"]);
        assert!(Codegen::default().apply("v2").is_ok());
        assert!(mk(&["v2"])
            .apply("v3")
            .unwrap_err()
            .contains("two CPU levels"));
        assert!(mk(&["native"]).apply("v4").is_err());
        assert_eq!(Codegen::default().apply("bolt"), Ok(false));
        assert_eq!(
            mk(&["O3"]).at_level(CpuLevel::V3).unwrap().suffix(),
            "+O3+v3"
        );
        assert!(Codegen::NATIVE.at_level(CpuLevel::V3).is_err());
        assert_eq!(mk(&["v3"]).at_level(CpuLevel::V3).unwrap(), mk(&["v3"]));
    }
}
