//! MTR's report, read: every test's outcome and, for a failure, what MTR printed after it.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TestOutcome {
    Pass,
    /// Failed, then passed when MTR retried it: reported, not a regression.
    RetryPass,
    Fail,
    Skipped,
    Disabled,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestResult {
    /// `suite.test`, with the combination when MTR runs one (`innodb.doublewrite '4k,strict_crc32'`).
    pub name: String,
    pub outcome: TestOutcome,
    /// For a failure: what MTR printed (the result diff, the server's error log tail on a crash).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

/// The lines of a failure kept in reports.
const DETAIL_LINES: usize = 60;

const OUTCOMES: [(&str, TestOutcome); 5] = [
    ("[ pass ]", TestOutcome::Pass),
    ("[ retry-pass ]", TestOutcome::RetryPass),
    ("[ fail ]", TestOutcome::Fail),
    ("[ skipped ]", TestOutcome::Skipped),
    ("[ disabled ]", TestOutcome::Disabled),
];

/// A result line of MTR's report: MariaDB's `main.ps  w1 [ pass ]  1887`, MySQL's
/// `[ 25%] main.ps  [ pass ]  1887`, with the combination in quotes after the name.
pub(super) fn result_line(line: &str) -> Option<(String, TestOutcome)> {
    let (marker, outcome) = OUTCOMES.iter().find(|(m, _)| line.contains(m))?;
    let head = line[..line.find(marker)?].trim();
    // MySQL's progress prefix.
    let head = match head.strip_prefix('[') {
        Some(rest) => rest.split_once(']')?.1.trim(),
        None => head,
    };
    let name = head.split_whitespace().next()?;
    if !name.contains('.') {
        return None;
    }
    let combination = head
        .split_once('\'')
        .and_then(|(_, r)| r.split_once('\''))
        .map(|(c, _)| c);
    let full = match combination {
        Some(c) => format!("{name} '{c}'"),
        None => name.to_string(),
    };
    Some((full, *outcome))
}

/// Every test's outcome in MTR's output; a failure keeps the lines MTR printed after it. A test
/// retried appears once, with its last outcome.
pub fn parse(output: &str) -> Vec<TestResult> {
    let mut tests: Vec<TestResult> = Vec::new();
    let mut open: Option<usize> = None;
    for line in output.lines() {
        if let Some((name, outcome)) = result_line(line) {
            tests.retain(|t| t.name != name);
            tests.push(TestResult {
                name,
                outcome,
                detail: String::new(),
            });
            open = (outcome == TestOutcome::Fail).then(|| tests.len() - 1);
            continue;
        }
        let Some(i) = open else { continue };
        // The report's closing rule ends the last failure's text.
        if line.starts_with("-----------") || line.starts_with("Completed:") {
            open = None;
            continue;
        }
        let d = &mut tests[i].detail;
        if d.lines().count() < DETAIL_LINES {
            d.push_str(line);
            d.push('\n');
        }
    }
    tests
}

#[cfg(test)]
mod tests {
    use super::*;

    const MARIADB: &str = "\
worker[01] Using MTR_BUILD_THREAD 300, with reserved ports 19000..19029
main.ps                                  w1 [ pass ]   1887
innodb.doublewrite '32k,strict_crc32'    w2 [ pass ]   8307
main.trigger                             w2 [ skipped ]  Not as root
main.ctype_latin1                        w2 [ fail ]
        Test ended at 2026-12-01 06:50:54

CURRENT_TEST: main.ctype_latin1
-302E35303030
+302E3530
Result length mismatch
--------------------------------------------------------------------------
Completed: Failed 1/4 tests, 75.00% were successful.
";

    #[test]
    fn results_and_failure_text_are_read_from_mtr_output() {
        let r = parse(MARIADB);
        let names: Vec<(&str, TestOutcome)> =
            r.iter().map(|t| (t.name.as_str(), t.outcome)).collect();
        assert_eq!(
            names,
            [
                ("main.ps", TestOutcome::Pass),
                ("innodb.doublewrite '32k,strict_crc32'", TestOutcome::Pass),
                ("main.trigger", TestOutcome::Skipped),
                ("main.ctype_latin1", TestOutcome::Fail),
            ]
        );
        assert!(r[3].detail.contains("+302E3530") && !r[3].detail.contains("Completed"));
        // MySQL's progress prefix; a retried test counts once.
        let r = parse("[ 25%] main.1st  [ fail ]\nboom\n[ 50%] main.1st  [ retry-pass ]  12\n");
        assert_eq!(r.len(), 1);
        assert_eq!(r[0].outcome, TestOutcome::RetryPass);
        assert!(parse("Logging: ... [ pass ] nothing").is_empty());
    }
}
