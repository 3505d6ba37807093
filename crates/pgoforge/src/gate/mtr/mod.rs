//! The server's own regression tests in the gate: mysql-test-run ("MTR") runs a curated subset
//! against the baseline and against each optimized binary, with the same tests, tools and options,
//! and the results are compared test by test. A test that fails on the baseline too is reported as
//! such; a test that passes on the baseline and fails (or crashes, or never runs) on a variant is a
//! regression that stops the variant.
//!
//! MTR comes from the baseline's build tree (its test client and tools built there as extra
//! targets, see [`MtrSpec::targets`]) or from an installed test tree (Debian's mariadb-test). The
//! binary under test is swapped in through the variable MTR reads the server's directory from,
//! in one of two ways ([`ServerSwap`]): MariaDB's `MTR_BINDIR_FORCED` names a directory that
//! holds only a link to that binary; MySQL's `MTR_BINDIR` names the directory MTR takes the server
//! *and* every client from, so it gets a shadow of the baseline's build directory in which only
//! the server's link differs. Either way clients, plugins, error messages and test files stay the
//! baseline's, so a difference is the server's — except a plugin engine's plugin (MyRocks),
//! compiled and optimized with each server: each binary is tested with the plugin beside it,
//! through a shadow build directory (MTR links its plugins from the build directory it is given).
//!
//! Files: [`swap`] (the directory MTR takes the server from), [`output`] (MTR's report parsed),
//! [`run`] (one binary's run, MTR's tools built), [`compare`] (regressions against the baseline),
//! [`render`] (the lines terminals and reports print).

mod compare;
mod output;
mod render;
mod run;
mod swap;

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

pub use crate::recipe::mtr::{MtrSpec, ScriptIn, ServerSwap};
pub use compare::{regressions, Regression, RegressionKind};
pub use output::{parse, TestOutcome, TestResult};
pub use run::{build_tools, run_on, MtrRun, Suite};
pub use swap::{server_dir, MtrTree};

use super::GateMode;

impl MtrSpec {
    /// What MTR is given for `mode`: (tests, arguments). `given` (`--mtr-suite`) replaces the
    /// recipe's subset; the full gate names whole suites.
    pub fn selection(
        &self,
        mode: GateMode,
        given: Option<&[String]>,
    ) -> (Vec<String>, Vec<String>) {
        let mut args = self.args.clone();
        let tests = match (given, mode) {
            (Some(g), _) => g.to_vec(),
            (None, GateMode::Full) => {
                args.push(format!("--suite={}", self.full.join(",")));
                Vec::new()
            }
            (None, _) => self.tests.clone(),
        };
        (tests, args)
    }
}

/// The MTR part of a gate: every binary's run, what fails on the baseline already, and the
/// regressions that stop variants.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MtrGate {
    pub mode: GateMode,
    pub tests: Vec<String>,
    /// Seconds spent building MTR's tools in the baseline's tree (0 when already built).
    pub tools_seconds: f64,
    pub runs: Vec<MtrRun>,
    /// Tests that fail on the baseline: not blamed on any optimization.
    pub baseline_failures: Vec<String>,
    pub regressions: Vec<Regression>,
    /// Debian's own server, which the run downloaded as a reference (the `distro` stage), left
    /// out of MTR: it is built with wsrep, whose MTR wanted Galera's SST scripts the baseline's
    /// test tree lacked before the recipe was Debian-shaped. The checksum gate still checks it.
    /// As the run's baseline (`--baseline debian`) it runs MTR as the reference.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_run: Vec<String>,
}

impl MtrGate {
    /// The variants a regression stops.
    pub fn stopped(&self) -> Vec<String> {
        let mut v: Vec<String> = self.regressions.iter().map(|r| r.variant.clone()).collect();
        v.dedup();
        v
    }
}

/// The copy of the gate's MTR result in a benchmark's run directory, which its report shows.
pub fn copy_in_run_dir(run_dir: &Path) -> PathBuf {
    run_dir.join("mtr.json")
}

pub fn read_copy(run_dir: &Path) -> Result<Option<MtrGate>> {
    crate::infra::fs::read_json_if_present(
        &copy_in_run_dir(run_dir),
        "delete it to report without it",
    )
}

/// Runs the baseline (`(name, binary)`: the built `baseline`, or `debian`) then every
/// candidate and compares.
pub fn gate(
    suite: &Suite,
    mode: GateMode,
    baseline: (&str, &Path),
    candidates: &[(String, PathBuf)],
    dir: &Path,
    tools_seconds: f64,
    progress: &dyn Fn(&str, &TestResult),
) -> Result<MtrGate> {
    let (base_name, baseline) = baseline;
    let base = run_on(suite, base_name, baseline, &dir.join("baseline"), &|t| {
        progress(base_name, t)
    })?;
    let baseline_failures = base
        .tests
        .iter()
        .filter(|t| t.outcome == TestOutcome::Fail)
        .map(|t| t.name.clone())
        .collect();
    let mut runs = vec![base];
    let mut found = Vec::new();
    for (i, (name, bin)) in candidates.iter().enumerate() {
        let r = run_on(suite, name, bin, &dir.join(format!("candidate{i}")), &|t| {
            progress(name, t)
        })?;
        found.extend(regressions(&runs[0], &r));
        runs.push(r);
    }
    Ok(MtrGate {
        mode,
        tests: suite.tests.to_vec(),
        tools_seconds,
        runs,
        baseline_failures,
        regressions: found,
        not_run: Vec::new(),
    })
}
