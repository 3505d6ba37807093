//! What terminals and reports print of an MTR gate: a line per binary, the baseline's own
//! failures, tests not compared, every regression with the changed lines of its diff.

use super::compare::{Regression, RegressionKind};
use super::output::TestOutcome;
use super::MtrGate;

impl MtrGate {
    /// One line per binary, for the terminal and the report.
    pub fn summary_lines(&self) -> Vec<String> {
        self.runs
            .iter()
            .map(|r| {
                let regress = self
                    .regressions
                    .iter()
                    .filter(|g| g.variant == r.name)
                    .count();
                format!(
                    "{}: {} passed, {} failed, {} skipped in {:.0} s{}",
                    r.name,
                    r.count(TestOutcome::Pass) + r.count(TestOutcome::RetryPass),
                    r.count(TestOutcome::Fail),
                    r.count(TestOutcome::Skipped) + r.count(TestOutcome::Disabled),
                    r.seconds,
                    if regress > 0 {
                        format!(" — {regress} regressions against the baseline: stopped")
                    } else {
                        String::new()
                    }
                )
            })
            .collect()
    }
}

impl Regression {
    /// The changed lines of the diff, at most `n`, for one-line displays.
    pub fn diff_excerpt(&self, n: usize) -> String {
        let changed: Vec<&str> = self
            .detail
            .lines()
            .filter(|l| {
                (l.starts_with('+') || l.starts_with('-'))
                    && !l.starts_with("+++")
                    && !l.starts_with("---")
            })
            .take(n)
            .collect();
        if changed.is_empty() {
            self.detail
                .lines()
                .rev()
                .take(n)
                .collect::<Vec<_>>()
                .join(" | ")
        } else {
            changed.join(" | ")
        }
    }
}

impl MtrGate {
    /// What a report says: a line per binary, the baseline's own failures, every regression.
    pub fn report_lines(&self) -> Vec<String> {
        let mut lines = self.summary_lines();
        if !self.not_run.is_empty() {
            lines.push(format!(
                "not run on {}: Debian's own server, a reference built with wsrep (whose MTR \
                 needs Galera's SST scripts), checked by the checksum gate alone",
                self.not_run.join(", ")
            ));
        }
        if !self.baseline_failures.is_empty() {
            lines.push(format!(
                "failing on the baseline too (not blamed on any optimization): {}",
                self.baseline_failures.join(", ")
            ));
        }
        // A test may skip itself for timing reasons (innodb.doublewrite after an extra
        // checkpoint): not a regression, but not compared either, and said so.
        if let Some(base) = self.runs.first() {
            for r in &self.runs[1..] {
                let skipped: Vec<&str> = base
                    .tests
                    .iter()
                    .filter(|b| b.outcome == TestOutcome::Pass)
                    .filter(|b| {
                        r.get(&b.name)
                            .is_some_and(|t| t.outcome == TestOutcome::Skipped)
                    })
                    .map(|b| b.name.as_str())
                    .collect();
                if !skipped.is_empty() {
                    lines.push(format!(
                        "not compared on {} (skipped there, passed on the baseline): {}",
                        r.name,
                        skipped.join(", ")
                    ));
                }
            }
        }
        for r in &self.regressions {
            lines.push(format!(
                "{} {} on {} but passes on the baseline: {}",
                r.test,
                if r.outcome == RegressionKind::Failed {
                    "fails"
                } else {
                    "did not run"
                },
                r.variant,
                r.diff_excerpt(6)
            ));
        }
        lines
    }
}
