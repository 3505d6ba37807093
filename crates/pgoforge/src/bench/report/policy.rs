//! How the report decides beyond the numbers — the minimum change a claim needs, whether a
//! held-out regression still lets a variant win — and where that choice is kept (the run
//! directory's policy.json), so every later `pgoforge report` decides as the run did.

use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

/// How the report decides, beyond the numbers. Kept in the run directory (`policy.json`, absent
/// for the default) so that every later `pgoforge report` decides as the run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Policy {
    /// A contender significantly slower on a held-out workload (only there) may still win.
    pub allow_held_out_regression: bool,
    /// The smallest change counted as one (`--min-effect`, a fraction; absent: 2 %). A
    /// significant change below it is reported as below the minimum, never as a finding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_effect: Option<f64>,
    /// The non-inferiority margin on held-out workloads (`--margin`, a fraction; absent: 3 %):
    /// a variant is packaged only when shown not slower than −margin there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub margin: Option<f64>,
}

impl Policy {
    /// The non-inferiority margin in force.
    pub fn margin(&self) -> f64 {
        self.margin.unwrap_or(crate::bench::stats::DEFAULT_MARGIN)
    }

    pub fn path(dir: &Path) -> std::path::PathBuf {
        dir.join("policy.json")
    }

    /// The run directory's policy (the default when it has none).
    pub fn stored(dir: &Path) -> Result<Policy> {
        let p = Policy::path(dir);
        match std::fs::read_to_string(&p) {
            Ok(t) => {
                serde_json::from_str(&t).with_context(|| format!("{} is corrupted", p.display()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Policy::default()),
            Err(e) => Err(e).with_context(|| format!("reading {}", p.display())),
        }
    }

    /// Makes this the run directory's policy.
    pub fn store(&self, dir: &Path) -> Result<()> {
        let p = Policy::path(dir);
        if *self == Policy::default() {
            match std::fs::remove_file(&p) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(e).with_context(|| format!("removing {}", p.display()))
                }
                _ => Ok(()),
            }
        } else {
            crate::infra::fs::write_json(&p, self)
        }
    }
}
