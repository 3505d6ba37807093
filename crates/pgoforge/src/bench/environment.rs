//! The machine and the builds a benchmark ran on, recorded in the run directory when it starts
//! (environment.json): CPU model, CPUs, kernel, server versions, and how each pgoforge build was
//! made.

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
}

impl Environment {
    pub fn probe(plan: &BenchPlan) -> Environment {
        let cpu = fs::read_to_string("/proc/cpuinfo")
            .ok()
            .and_then(|c| {
                c.lines()
                    .find(|l| l.starts_with("model name"))
                    .and_then(|l| l.split(':').nth(1))
                    .map(|s| s.trim().to_string())
            })
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
                        b.flags.cflags.join(" "),
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
        }
    }
}
