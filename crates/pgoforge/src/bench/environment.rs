//! The machine and the builds a benchmark ran on, recorded in the run directory when it starts
//! (environment.json): CPU model, CPUs, kernel, server versions, how each pgoforge build was made,
//! and the host's fingerprint — noise belongs to the host, so a calibration measured on one is not
//! applied on another.

use std::fs;

use serde::{Deserialize, Serialize};

use super::plan::BenchPlan;
use crate::server::cpu;

/// The machine and the builds, recorded when the benchmark starts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Environment {
    pub cpu: String,
    pub cpus: usize,
    pub kernel: String,
    pub server_versions: std::collections::BTreeMap<String, String>,
    /// For contenders pgoforge built: recipe, variant, compiler, flags, source hash.
    #[serde(default)]
    pub builds: std::collections::BTreeMap<String, String>,
    /// The host's fingerprint ([`Host`]); absent in runs recorded before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<Host>,
    /// What the host's caches do to far data and far code ([`CacheProbe`]), measured when the
    /// benchmark started; absent in runs recorded before 2026-12-07.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_probe: Option<super::cache_probe::CacheProbe>,
}

/// What identifies the host a benchmark ran on, as far as a guest can tell. Two VM instances of
/// one image can share the CPU model, the machine-id and the hostname and still differ in noise
/// by a factor of five (docs/bench/trust.md); what differed between them here was the kernel build
/// string. The TSC frequency the kernel calibrated and the CPU's microcode are added: both are set
/// by the physical host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    /// A hash of everything below and the CPU model, kernel release and CPU count.
    pub fingerprint: String,
    /// /proc/version: the kernel and how it was built.
    pub kernel_version: String,
    /// /proc/cpuinfo's `cpu MHz` (the clock the kernel calibrated) and `microcode`.
    pub cpu_mhz: String,
    pub microcode: String,
}

impl Host {
    pub fn probe() -> Host {
        let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let field = |name: &str| {
            cpu::cpuinfo_field(&cpuinfo, name)
                .unwrap_or_default()
                .to_string()
        };
        let read = |p: &str| fs::read_to_string(p).unwrap_or_default().trim().to_string();
        let (kernel_version, cpu_mhz, microcode) =
            (read("/proc/version"), field("cpu MHz"), field("microcode"));
        let fingerprint = crate::infra::fs::value_hash(&(
            field("model name"),
            cpu::online(),
            read("/proc/sys/kernel/osrelease"),
            &kernel_version,
            &cpu_mhz,
            &microcode,
        ))
        .unwrap_or_default();
        Host {
            fingerprint,
            kernel_version,
            cpu_mhz,
            microcode,
        }
    }
}

impl Environment {
    pub fn probe(plan: &BenchPlan) -> Environment {
        let cpu = fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|c| cpu::cpuinfo_field(&c, "model name").map(str::to_string))
            .unwrap_or_default();
        let kernel = fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
            .to_string();
        let mut builds = std::collections::BTreeMap::new();
        for c in &plan.contenders {
            // A pgoforge build: WORK/builds/<name>/build.json above the binary.
            let record = c
                .binary
                .ancestors()
                .find_map(|d| fs::read_to_string(d.join("build.json")).ok());
            if let Some(b) =
                record.and_then(|t| serde_json::from_str::<crate::builder::BuildOutput>(&t).ok())
            {
                builds.insert(
                    c.name.clone(),
                    format!(
                        "{} {} with {}; flags: {} | {}; source {}",
                        b.recipe,
                        b.variant,
                        b.compiler.version,
                        b.flags.compile_flags().join(" "),
                        b.flags.ldflags.join(" "),
                        &b.source_hash[..12.min(b.source_hash.len())]
                    ),
                );
            }
        }
        Environment {
            cpu,
            cpus: cpu::online(),
            kernel,
            server_versions: Default::default(),
            builds,
            host: Some(Host::probe()),
            cache_probe: super::cache_probe::CacheProbe::run(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_fingerprint_is_stable_here_and_records_what_it_hashes() {
        let (a, b) = (Host::probe(), Host::probe());
        assert_eq!(a, b);
        assert_eq!(a.fingerprint.len(), 16);
        assert!(a.kernel_version.starts_with("Linux version"), "{a:?}");
    }
}
