//! The stage abstraction: every step of a run — source, each build, training, BOLT, the gate, the
//! benchmark, cachegrind, the report, the package — is a [`Stage`]: a name, a key of everything its
//! output depends on, a check that a recorded output is still usable, and the work that makes it.
//! [`Tracker::run`](super::state::Tracker::run) is the one caching path: it reuses a recorded output
//! whose key matches and whose files still exist, and otherwise runs the stage and records it.

use std::path::Path;

use anyhow::Result;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::events::Reporter;

/// What a stage's work needs from the run it belongs to.
pub struct Ctx<'a> {
    /// The work directory (canonical).
    pub work: &'a Path,
    pub reporter: &'a dyn Reporter,
}

/// The result of a stage's work.
pub enum Made<T> {
    /// Made now.
    New(T),
    /// Found finished in a cache of the stage's own (a build directory with its build.json,
    /// shared with `pgoforge build`); `work_seconds` is what the work took when it was done.
    Found { out: T, work_seconds: f64 },
}

pub trait Stage {
    type Output: Serialize + DeserializeOwned;

    /// The name in the state file, the events and the stage table (`build pgo+lto`, `gate`).
    fn name(&self) -> String;

    /// A hash of everything the output depends on ([`inputs_hash`](super::state::inputs_hash) of
    /// a tuple): a recorded output is reused only under the same key.
    fn key(&self) -> Result<String>;

    /// Whether a recorded output is still usable (its files may have been deleted since).
    fn still_valid(&self, out: &Self::Output) -> bool;

    fn run(&self, cx: &Ctx) -> Result<Made<Self::Output>>;
}
