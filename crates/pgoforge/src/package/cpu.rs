//! What CPU a packaged binary needs, and the checks that refuse a machine without it.
//!
//! A binary compiled for x86-64-v3 (or `-march=native`) runs on an older CPU until the first
//! instruction it lacks — SIGILL at start, or hours later on a rarely taken path. So a package
//! built for a CPU level says so in its manifest ([`CpuRequirement`]) and carries a POSIX shell
//! check ([`check_script`]) that three places run before the server: `package verify` (and
//! its `--cpu-flags FILE`, a stand-in CPU for tests and for checking a fleet's machines from
//! here), the .deb's `preinst` (dpkg refuses to install, nothing changed), and the systemd unit's
//! `ExecStartPre` (a disk or VM moved to an older host refuses to start, with the reason in the
//! journal). Every one exits [`EXIT_CPU`] with the missing features named.

use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::builder::codegen::{cpuinfo_flags, CpuLevel};

/// The exit status of the check script, and of `package verify`, when the CPU lacks a feature
/// (`ExitStatus::CpuUnsupported`).
pub const EXIT_CPU: i32 = crate::infra::exit::ExitStatus::CpuUnsupported.code();

/// Where the tarball keeps the check (`bin/cpu-check`, beside the server).
pub const TARBALL_CHECK: &str = "bin/cpu-check";

/// The CPU a package's binary was compiled for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuRequirement {
    /// The `-march=` level.
    pub level: CpuLevel,
    /// /proc/cpuinfo flags a machine must have (for `native`: the build host's instruction-set
    /// extensions, every one of which the compiler may have used).
    pub flags: Vec<String>,
    /// For `native`: the build host's CPU model, which the refusal names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub built_on: Option<String>,
}

impl CpuRequirement {
    /// The requirement of a binary compiled for `level` on the machine whose /proc/cpuinfo is
    /// `build_cpuinfo`.
    pub fn new(level: CpuLevel, build_cpuinfo: &str) -> CpuRequirement {
        let built_on = (level == CpuLevel::Native).then(|| model_name(build_cpuinfo));
        CpuRequirement {
            level,
            flags: level.required_flags(&cpuinfo_flags(build_cpuinfo)),
            built_on,
        }
    }

    /// The requirement of a binary compiled for `level` here (None: the compiler's default).
    pub fn of_this_machine(level: Option<CpuLevel>) -> Result<Option<CpuRequirement>> {
        let Some(level) = level else {
            return Ok(None);
        };
        Ok(Some(CpuRequirement::new(level, &read_cpuinfo(None)?)))
    }

    /// What a CPU with `have` lacks of this requirement.
    pub fn missing(&self, have: &[String]) -> Vec<String> {
        self.flags
            .iter()
            .filter(|f| !have.contains(f))
            .cloned()
            .collect()
    }

    /// What it was compiled for, in words: `-march=x86-64-v3`, or the host's CPU for native.
    pub fn describe(&self) -> String {
        match &self.built_on {
            Some(model) => format!("-march=native on {model}"),
            None => format!("-march={}", self.level.march()),
        }
    }

    /// The refusal: what is missing, why it matters, and what to do.
    pub fn refusal(&self, missing: &[String]) -> String {
        format!(
            "this CPU lacks {} of the {} instruction-set features the server was compiled for \
             ({}): {}. It would die with SIGILL. Run a package built for a level this CPU has \
             (pgoforge run --cpu-level x86-64 is every amd64 CPU), or Debian's own server",
            missing.len(),
            self.flags.len(),
            self.describe(),
            missing.join(" ")
        )
    }
}

/// The model name of a /proc/cpuinfo text.
fn model_name(cpuinfo: &str) -> String {
    crate::server::cpu::cpuinfo_field(cpuinfo, "model name")
        .unwrap_or("the build host")
        .to_string()
}

/// A cpuinfo text: `path` (a stand-in CPU: /proc/cpuinfo's format, or flags alone separated by
/// white space) or this machine's /proc/cpuinfo.
pub fn read_cpuinfo(path: Option<&Path>) -> Result<String> {
    let p = path.unwrap_or(Path::new("/proc/cpuinfo"));
    let text = std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()))?;
    if crate::server::cpu::cpuinfo_field(&text, "flags").is_some() {
        Ok(text)
    } else {
        // A bare list of flags, as a fleet inventory would give them.
        Ok(format!(
            "flags\t\t: {}\n",
            text.split_whitespace().collect::<Vec<_>>().join(" ")
        ))
    }
}

/// The check, as a POSIX shell script that exits [`EXIT_CPU`] naming what is missing, 0 when the
/// CPU has everything. `PGOFORGE_CPUINFO` names another cpuinfo file (tests, or a fleet's
/// inventory), in either format [`read_cpuinfo`] takes.
pub fn check_script(r: &CpuRequirement, package: &str) -> String {
    format!(
        r#"#!/bin/sh
# {package}: refuses a CPU without what the server was compiled for ({what}).
# Exit status {EXIT_CPU} names the missing features; 0 when the CPU has them all.
cpuinfo=${{PGOFORGE_CPUINFO:-/proc/cpuinfo}}
if [ ! -r "$cpuinfo" ]; then
    echo "{package}: cannot read $cpuinfo to check the CPU the server needs ({what})" >&2
    exit {EXIT_CPU}
fi
if grep -q '^flags' "$cpuinfo"; then
    have=" $(sed -n 's/^flags[[:space:]]*:[[:space:]]*//p' "$cpuinfo" | head -n 1) "
else
    have=" $(tr -s '[:space:]' ' ' < "$cpuinfo") "
fi
missing=
for f in {flags}; do
    case "$have" in
        *" $f "*) ;;
        *) missing="$missing $f" ;;
    esac
done
if [ -n "$missing" ]; then
    echo "{package}: this CPU lacks${{missing}} — the server was compiled for {what} and would die with SIGILL here." >&2
    echo "{package}: use a package built for this CPU (pgoforge run --cpu-level x86-64 suits every amd64 CPU) or the distribution's server." >&2
    exit {EXIT_CPU}
fi
exit 0
"#,
        what = r.describe(),
        flags = r.flags.join(" "),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(script: &str, cpuinfo: &str) -> (i32, String) {
        let t = tempfile::tempdir().unwrap();
        let (s, c) = (t.path().join("check"), t.path().join("cpuinfo"));
        std::fs::write(&s, script).unwrap();
        std::fs::write(&c, cpuinfo).unwrap();
        let out = std::process::Command::new("sh")
            .arg(&s)
            .env("PGOFORGE_CPUINFO", &c)
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    #[test]
    fn the_script_and_the_requirement_agree_on_what_is_missing() {
        let v3 = CpuRequirement::new(CpuLevel::V3, "");
        assert_eq!(v3.built_on, None);
        let script = check_script(&v3, "mariadb-x");
        let all = format!("flags\t\t: fpu {} sse2\n", v3.flags.join(" "));
        assert_eq!(run(&script, &all).0, 0);
        // A v2 machine (no AVX2, no BMI): refused, each missing feature named.
        let v2 = CpuRequirement::new(CpuLevel::V2, "");
        let older = format!("processor : 0\nflags : fpu sse2 {}\n", v2.flags.join(" "));
        let (code, err) = run(&script, &older);
        assert_eq!(code, EXIT_CPU, "{err}");
        let missing = v3.missing(&cpuinfo_flags(&older));
        assert!(missing.contains(&"avx2".to_string()) && missing.contains(&"bmi2".to_string()));
        for m in &missing {
            assert!(err.contains(&format!(" {m}")), "{m} in {err}");
        }
        assert!(
            err.contains("-march=x86-64-v3") && err.contains("SIGILL"),
            "{err}"
        );
        // A flag that is a prefix of another is not taken for it (avx is not avx2).
        let prefix_only = all.replace(" avx2 ", " avx2x ");
        assert_eq!(run(&script, &prefix_only).0, EXIT_CPU);
        // A bare flag list (an inventory) works the same.
        assert_eq!(run(&script, &v3.flags.join("\n")).0, 0);
        // An unreadable cpuinfo refuses rather than passes.
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&script)
            .env("PGOFORGE_CPUINFO", "/nonexistent/cpuinfo")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(EXIT_CPU));
    }

    #[test]
    fn native_names_the_build_hosts_cpu() {
        let info = "model name\t: AMD EPYC 7B13\nflags\t\t: fpu sse2 avx2 hypervisor\n";
        let r = CpuRequirement::new(CpuLevel::Native, info);
        assert_eq!(r.flags, ["avx2"]);
        assert_eq!(r.describe(), "-march=native on AMD EPYC 7B13");
        assert!(r.refusal(&["avx2".into()]).contains("1 of the 1"));
        let j = serde_json::to_string(&r).unwrap();
        assert_eq!(serde_json::from_str::<CpuRequirement>(&j).unwrap(), r);
    }
}
