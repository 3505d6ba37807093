//! A replay's options, as `Settings` carries them: apart from the replay itself, which uses
//! `Settings` (settings → replay/options, replay → settings: no circle).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::parse::Format;

/// `--replay-file`, `--replay-format`, `--replay-dataset`, `--replay-datadir`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplayOptions {
    pub file: PathBuf,
    pub format: Format,
    /// A SQL file (e.g. a mysqldump) that `prepare` loads: the data the statements run against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<PathBuf>,
    /// A stopped server's datadir holding that data instead (the pipeline copies it into its
    /// dataset template and never writes the original; `oltp` runs against a server as it is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datadir: Option<PathBuf>,
}

impl ReplayOptions {
    pub fn is_default(&self) -> bool {
        *self == ReplayOptions::default()
    }
}
