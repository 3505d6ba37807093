//! The stage abstraction: every step of a run — source, each build, training, BOLT, the gate, the
//! benchmark, cachegrind, the report, the package — is a [`Stage`]: a name, a key of everything its
//! output depends on, a check that a recorded output is still usable, and the work that makes it.
//! [`Tracker::run`](super::state::Tracker::run) is the one caching path: it reuses a recorded output
//! whose key matches and whose files still exist, and otherwise runs the stage and records it.

use std::path::Path;

use anyhow::Result;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::builder::Variant;
use crate::events::Reporter;

/// A stage's name: the key of its record in run-state.json, the name in events and in the stage
/// table. Written as it always was (`source`, `build pgo+lto`, `train`, `train cs-pgo-gen+lto`,
/// `bolt pgo+lto+bolt`, `gate`, ...), so finished runs find their records; a matrix's further
/// training mixes add `train @tpcc` and `build pgo+lto@tpcc`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StageId {
    Source,
    /// A build, and the training mix of its profile when that is not the run's first.
    Build(Variant, Option<String>),
    /// The training of the pgo-gen build (`train`), or of a later instrumented build whose
    /// profile builds on the first (`train cs-pgo-gen+lto`).
    Train(Option<String>),
    /// The pgo-gen build trained on a matrix's further training mix.
    TrainOn(String),
    /// BOLT on one binary: a contender's name, or the binary's path when run alone.
    Bolt(String),
    /// The distribution's own server of the built release, downloaded and unpacked.
    Distro,
    Gate,
    Mtr,
    Seed,
    Bench,
    Cachegrind,
    Report,
    Package,
}

impl std::fmt::Display for StageId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StageId::Source => f.write_str("source"),
            StageId::Build(v, None) => write!(f, "build {v}"),
            StageId::Build(v, Some(m)) => write!(f, "build {v}@{m}"),
            StageId::Train(None) => f.write_str("train"),
            StageId::Train(Some(v)) => write!(f, "train {v}"),
            StageId::TrainOn(m) => write!(f, "train @{m}"),
            StageId::Bolt(name) => write!(f, "bolt {name}"),
            StageId::Distro => f.write_str("distro"),
            StageId::Gate => f.write_str("gate"),
            StageId::Mtr => f.write_str("mtr"),
            StageId::Seed => f.write_str("seed"),
            StageId::Bench => f.write_str("bench"),
            StageId::Cachegrind => f.write_str("cachegrind"),
            StageId::Report => f.write_str("report"),
            StageId::Package => f.write_str("package"),
        }
    }
}

impl Serialize for StageId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

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

    /// The name in the state file, the events and the stage table.
    fn name(&self) -> StageId;

    /// A hash of everything the output depends on ([`inputs_hash`](super::state::inputs_hash) of
    /// a tuple): a recorded output is reused only under the same key.
    fn key(&self) -> Result<String>;

    /// Whether a recorded output is still usable (its files may have been deleted since).
    fn still_valid(&self, out: &Self::Output) -> bool;

    fn run(&self, cx: &Ctx) -> Result<Made<Self::Output>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names are run-state.json's keys: finished runs find their records only under the
    /// names they were written with.
    #[test]
    fn stage_names_are_written_as_they_always_were() {
        let v = |s: &str| s.parse::<Variant>().unwrap();
        let names: Vec<String> = [
            StageId::Source,
            StageId::Build(v("pgo+lto+bolt"), None),
            StageId::Build(v("pgo+lto"), Some("tpcc".into())),
            StageId::Train(None),
            StageId::Train(Some("cs-pgo-gen+lto".into())),
            StageId::TrainOn("oltp+tpcc".into()),
            StageId::Bolt("pgo+lto+bolt".into()),
            StageId::Gate,
            StageId::Mtr,
            StageId::Seed,
            StageId::Bench,
            StageId::Cachegrind,
            StageId::Report,
            StageId::Package,
        ]
        .iter()
        .map(|s| {
            serde_json::to_value(s)
                .unwrap()
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
        assert_eq!(
            names,
            [
                "source",
                "build pgo+lto+bolt",
                "build pgo+lto@tpcc",
                "train",
                "train cs-pgo-gen+lto",
                "train @oltp+tpcc",
                "bolt pgo+lto+bolt",
                "gate",
                "mtr",
                "seed",
                "bench",
                "cachegrind",
                "report",
                "package"
            ]
        );
    }
}
