//! What one follow cycle did, as JSON (`WORK/follow-status.json`, the last cycle's, and one line
//! per cycle appended to `WORK/follow-history.jsonl`) and as the one line the journal keeps.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::verdict::Verdict;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    /// The newest fetchable release is already published: nothing was done.
    UpToDate,
    /// A new release was built, gated, measured and published.
    Published,
    /// Built, but the gate or the margin test kept it out of the repository.
    Held,
    /// Another cycle holds the lock, or the machine stayed busy: the next cycle tries again.
    Busy,
    /// The cycle failed (the error says why); the repository is as it was.
    Failed,
}

impl Outcome {
    pub fn exit_code(self) -> i32 {
        use crate::infra::exit::ExitStatus;
        match self {
            Outcome::UpToDate | Outcome::Published => 0,
            Outcome::Held => ExitStatus::NoWinner.code(),
            Outcome::Busy => ExitStatus::Busy.code(),
            Outcome::Failed => ExitStatus::Failure.code(),
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Status {
    pub outcome: Outcome,
    /// One sentence: what happened and why.
    pub message: String,
    /// The newest release in the repository before the cycle (the Debian version it fits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published_before: Option<String>,
    /// The newest release the mirror serves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub newest: Option<String>,
    /// The .deb version published by this cycle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub published: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<Verdict>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_dir: Option<PathBuf>,
    /// The child run's exit status, when one ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_exit: Option<i32>,
    /// Unix seconds.
    pub started: u64,
    pub seconds: u64,
    /// Stage times of the run (name, seconds), when one ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<(String, f64)>,
}

impl Status {
    /// The journal's line.
    pub fn line(&self) -> String {
        let o = serde_json::to_value(self.outcome)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default();
        format!(
            "pgoforge follow: {o}: {} ({})",
            self.message,
            crate::infra::time::human(self.seconds as f64)
        )
    }

    /// Writes the last cycle's status and appends it to the history.
    pub fn save(&self, work: &Path) -> Result<()> {
        let text = serde_json::to_string_pretty(self)?;
        crate::infra::fs::write_atomic(&work.join("follow-status.json"), text.as_bytes())?;
        let h = work.join("follow-history.jsonl");
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&h)
            .with_context(|| format!("opening {}", h.display()))?;
        writeln!(f, "{}", serde_json::to_string(self)?)?;
        Ok(())
    }
}
