//! A recipe's `[mtr]` section: which of the server's own regression tests the gate runs, and how
//! MTR is found and takes the binary under test. Data only: the gate (gate/mtr/) acts on it.

use serde::{Deserialize, Serialize};

/// A recipe's `[mtr]` section.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MtrSpec {
    /// Make targets MTR needs besides the server (the test client, the clients and tools tests
    /// call, MTR's process wrapper), built in the baseline's tree.
    pub targets: Vec<String>,
    /// The MTR script, relative to the build directory or (`script_in = "source"`) the source
    /// tree.
    pub script: String,
    /// Where `script` lives. MySQL's build directory holds a wrapper that points MTR at that
    /// build directory itself, which would test the baseline's server whatever is swapped in; its
    /// source tree holds the script proper.
    #[serde(default)]
    pub script_in: ScriptIn,
    /// How the binary under test takes the server's place.
    #[serde(default)]
    pub swap: ServerSwap,
    /// The test files, relative to the source tree.
    #[serde(default = "default_tests_dir")]
    pub tests_dir: String,
    /// The environment variable naming the directory MTR takes the server binary from.
    pub server_dir_env: String,
    /// The curated subset (`--gate mtr`): suite.test names, chosen to touch what PGO, LTO and BOLT
    /// can break and training never runs.
    pub tests: Vec<String>,
    /// Whole suites for `--gate full` (release-grade; hours on 2 cores).
    #[serde(default)]
    pub full: Vec<String>,
    /// Further MTR arguments, the same for every binary.
    #[serde(default)]
    pub args: Vec<String>,
}

/// Which tree [`MtrSpec::script`] is relative to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ScriptIn {
    #[default]
    Build,
    Source,
}

/// How the directory named by [`MtrSpec::server_dir_env`] is made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ServerSwap {
    /// A directory holding only a link to the binary at the recipe's binary path (MariaDB's
    /// `MTR_BINDIR_FORCED` serves the server alone).
    #[default]
    Link,
    /// A shadow of the baseline's build directory: a link to every entry, except along the
    /// recipe's binary path, which is real directories of links ending in the binary under test
    /// (MySQL's `MTR_BINDIR` serves the server, the clients, plugins and error messages).
    ShadowBuild,
}

fn default_tests_dir() -> String {
    "mysql-test".into()
}
