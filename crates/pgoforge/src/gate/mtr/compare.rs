//! The comparison: a test that passes on the baseline and not on a variant is a regression.

use serde::{Deserialize, Serialize};

use super::output::{TestOutcome, TestResult};
use super::run::MtrRun;

/// A test that passes on the baseline and not on a variant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Regression {
    pub variant: String,
    pub test: String,
    pub outcome: RegressionKind,
    pub detail: String,
}

/// How a test that passes on the baseline went on a variant; stored in mtr.json as the words it
/// always was.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RegressionKind {
    #[serde(rename = "fail")]
    Failed,
    /// Disabled on the variant's run only.
    #[serde(rename = "disabled")]
    Disabled,
    /// MTR stopped before it (after a crash, say).
    #[serde(rename = "did not run")]
    DidNotRun,
}

impl std::fmt::Display for RegressionKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            RegressionKind::Failed => "fail",
            RegressionKind::Disabled => "disabled",
            RegressionKind::DidNotRun => "did not run",
        })
    }
}

/// The tests that pass on the baseline and not on `variant`.
pub fn regressions(base: &MtrRun, variant: &MtrRun) -> Vec<Regression> {
    let passed = |t: &TestResult| matches!(t.outcome, TestOutcome::Pass | TestOutcome::RetryPass);
    base.tests
        .iter()
        .filter(|b| passed(b))
        .filter_map(|b| match variant.get(&b.name) {
            Some(v) if passed(v) || v.outcome == TestOutcome::Skipped => None,
            Some(v) => Some(Regression {
                variant: variant.name.clone(),
                test: b.name.clone(),
                outcome: if v.outcome == TestOutcome::Disabled {
                    RegressionKind::Disabled
                } else {
                    RegressionKind::Failed
                },
                detail: v.detail.clone(),
            }),
            None => Some(Regression {
                variant: variant.name.clone(),
                test: b.name.clone(),
                outcome: RegressionKind::DidNotRun,
                detail: format!(
                    "MTR stopped before this test on {}; see {}",
                    variant.name,
                    variant.log.display()
                ),
            }),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::mtr::MtrGate;
    use crate::gate::GateMode;
    use std::path::PathBuf;

    fn run_of(name: &str, tests: &[(&str, TestOutcome)]) -> MtrRun {
        MtrRun {
            name: name.into(),
            binary: PathBuf::new(),
            tests: tests
                .iter()
                .map(|(n, o)| TestResult {
                    name: n.to_string(),
                    outcome: *o,
                    detail: format!("{n} diff"),
                })
                .collect(),
            seconds: 1.0,
            log: PathBuf::from("/x/mtr.log"),
        }
    }

    #[test]
    fn only_tests_passing_on_the_baseline_count_against_a_variant() {
        use TestOutcome::*;
        let base = run_of(
            "baseline",
            &[
                ("main.a", Pass),
                ("main.b", Fail),
                ("main.c", Pass),
                ("main.d", Pass),
            ],
        );
        let v = run_of(
            "pgo",
            &[("main.a", Pass), ("main.b", Fail), ("main.c", Fail)],
        );
        let r = regressions(&base, &v);
        let got: Vec<(&str, RegressionKind)> =
            r.iter().map(|r| (r.test.as_str(), r.outcome)).collect();
        // main.b fails on the baseline too: not the variant's; main.d never ran.
        assert_eq!(
            got,
            [
                ("main.c", RegressionKind::Failed),
                ("main.d", RegressionKind::DidNotRun)
            ]
        );
        // Stored as the words mtr.json always held.
        assert_eq!(
            serde_json::to_string(&[RegressionKind::Failed, RegressionKind::DidNotRun]).unwrap(),
            r#"["fail","did not run"]"#
        );
        assert_eq!(r[0].detail, "main.c diff");
        assert!(regressions(
            &base,
            &run_of(
                "same",
                &[("main.a", Pass), ("main.c", RetryPass), ("main.d", Skipped)]
            )
        )
        .is_empty());
        let g = MtrGate {
            mode: GateMode::Mtr,
            tests: vec![],
            tools_seconds: 0.0,
            runs: vec![
                base.clone(),
                run_of(
                    "cs",
                    &[("main.a", Pass), ("main.c", Skipped), ("main.d", Pass)],
                ),
            ],
            baseline_failures: vec!["main.b".into()],
            regressions: vec![],
            not_run: vec!["debian".into()],
        };
        let lines = g.report_lines().join("\n");
        assert!(
            lines.contains("not run on debian: Debian's own server"),
            "{lines}"
        );
        assert!(
            lines.contains("not compared on cs (skipped there, passed on the baseline): main.c")
                && lines.contains(
                    "failing on the baseline too (not blamed on any optimization): main.b"
                ),
            "{lines}"
        );
        for m in [GateMode::Quick, GateMode::Mtr, GateMode::Full] {
            assert_eq!(m.to_string().parse::<GateMode>(), Ok(m));
        }
        assert!("fast"
            .parse::<GateMode>()
            .unwrap_err()
            .contains("quick, mtr or full"));
    }
}
