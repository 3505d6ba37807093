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
//! baseline's, so a difference is the server's.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::infra::runner::{Tool, ToolError};

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

/// How much the gate checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GateMode {
    /// The seeded write workload and CHECKSUM TABLE only.
    Quick,
    /// Quick, then the recipe's curated MTR subset (minutes per binary).
    Mtr,
    /// Quick, then the recipe's whole MTR suites.
    Full,
}

impl std::fmt::Display for GateMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            GateMode::Quick => "quick",
            GateMode::Mtr => "mtr",
            GateMode::Full => "full",
        })
    }
}

impl FromStr for GateMode {
    type Err = String;
    fn from_str(s: &str) -> Result<GateMode, String> {
        match s {
            "quick" => Ok(GateMode::Quick),
            "mtr" => Ok(GateMode::Mtr),
            "full" => Ok(GateMode::Full),
            _ => Err(format!("unknown gate '{s}'; choose quick, mtr or full")),
        }
    }
}

/// Where MTR is and how it takes the server under test.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MtrTree {
    /// The mysql-test-run script.
    pub script: PathBuf,
    /// Where the test files live: mysqltest writes a failing test's output beside its expected
    /// result there.
    pub tests_dir: PathBuf,
    /// The server binary's path inside the directory MTR takes it from (the recipe's binary,
    /// e.g. `sql/mariadbd`).
    pub server_rel: PathBuf,
    pub server_dir_env: String,
    pub swap: ServerSwap,
    /// The baseline's build directory, which a shadow mirrors.
    pub build_dir: PathBuf,
}

/// Makes the directory MTR takes the server from at `at`, with `binary` as the server.
pub fn server_dir(tree: &MtrTree, binary: &Path, at: &Path) -> Result<()> {
    match tree.swap {
        ServerSwap::Link => {
            let link = at.join(&tree.server_rel);
            fs::create_dir_all(link.parent().context("the server path has a directory")?)
                .with_context(|| format!("creating {}", at.display()))?;
            std::os::unix::fs::symlink(binary, &link)
                .with_context(|| format!("linking {} to {}", link.display(), binary.display()))
        }
        ServerSwap::ShadowBuild => shadow(&tree.build_dir, at, &tree.server_rel, binary),
    }
}

/// `to` as a copy of `from` made of links, except along `rel`, whose last component links to
/// `binary`.
fn shadow(from: &Path, to: &Path, rel: &Path, binary: &Path) -> Result<()> {
    let mut parts = rel.components();
    let first = parts
        .next()
        .context("the recipe's binary path is empty")?
        .as_os_str()
        .to_os_string();
    let rest = parts.as_path();
    fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    let entries = fs::read_dir(from).with_context(|| format!("reading {}", from.display()))?;
    for e in entries {
        let e = e.with_context(|| format!("reading {}", from.display()))?;
        let name = e.file_name();
        if name == first {
            continue;
        }
        let (src, dst) = (e.path(), to.join(&name));
        std::os::unix::fs::symlink(&src, &dst)
            .with_context(|| format!("linking {} to {}", dst.display(), src.display()))?;
    }
    let dst = to.join(&first);
    if rest.as_os_str().is_empty() {
        std::os::unix::fs::symlink(binary, &dst)
            .with_context(|| format!("linking {} to {}", dst.display(), binary.display()))
    } else {
        shadow(&from.join(&first), &dst, rest, binary)
    }
}

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

/// One binary's MTR run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MtrRun {
    pub name: String,
    pub binary: PathBuf,
    pub tests: Vec<TestResult>,
    pub seconds: f64,
    /// MTR's whole output.
    pub log: PathBuf,
}

impl MtrRun {
    pub fn count(&self, o: TestOutcome) -> usize {
        self.tests.iter().filter(|t| t.outcome == o).count()
    }

    fn get(&self, name: &str) -> Option<&TestResult> {
        self.tests.iter().find(|t| t.name == name)
    }
}

/// A test that passes on the baseline and not on a variant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Regression {
    pub variant: String,
    pub test: String,
    /// "fail", or "did not run" (MTR stopped before it, e.g. after a crash).
    pub outcome: String,
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
fn result_line(line: &str) -> Option<(String, TestOutcome)> {
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

/// What every binary runs: the same MTR, tests and arguments.
pub struct Suite<'a> {
    pub tree: &'a MtrTree,
    pub tests: &'a [String],
    pub args: &'a [String],
}

/// Runs the suite on `binary` in `dir` (its own vardir and server link). MTR reporting failures
/// is a result, not an error; MTR reporting nothing at all is an error.
pub fn run(
    suite: &Suite,
    name: &str,
    binary: &Path,
    dir: &Path,
    progress: &dyn Fn(&TestResult),
) -> Result<MtrRun> {
    let tree = suite.tree;
    let binary = fs::canonicalize(binary)
        .with_context(|| format!("MTR for {name}: the binary {}", binary.display()))?;
    if dir.exists() {
        fs::remove_dir_all(dir)
            .with_context(|| format!("removing {}, left by an earlier MTR run", dir.display()))?;
    }
    server_dir(tree, &binary, &dir.join("server"))?;
    let test_dir = tree
        .script
        .parent()
        .context("the MTR script has a directory")?
        .to_path_buf();
    let log = dir.join("mtr.log");
    let started = std::time::SystemTime::now();
    let t0 = Instant::now();
    let parallel = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut cmd = Command::new("perl");
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: die_with_parent makes only async-signal-safe calls. MTR dying with pgoforge takes
    // its servers along (its process wrapper watches its parent).
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(move || {
            crate::server::die_with_parent(parent);
            Ok(())
        });
    }
    cmd.arg(&tree.script)
        .current_dir(&test_dir)
        .env(&tree.server_dir_env, dir.join("server"))
        .arg(format!("--vardir={}", dir.join("var").display()))
        .arg(format!("--parallel={parallel}"))
        // Every test runs whatever fails before it; a test hanging in a broken binary is stopped.
        .args(["--force", "--max-test-fail=0", "--testcase-timeout=10"])
        .args(suite.args)
        .args(suite.tests);
    let ran = Tool::new(&mut cmd, format!("mysql-test-run on {name}"))
        .log(Some(&log))
        .run_with(|line| {
            if let Some((name, outcome)) = result_line(line) {
                progress(&TestResult {
                    name,
                    outcome,
                    detail: String::new(),
                });
            }
        });
    let seconds = t0.elapsed().as_secs_f64();
    keep_rejects(&tree.tests_dir, started, &dir.join("rejects"));
    prune_vardir(&dir.join("var"));
    match ran {
        Ok(_) | Err(ToolError::Failed { .. }) => {}
        Err(e) => return Err(e.into()),
    }
    let text = fs::read_to_string(&log).with_context(|| format!("reading {}", log.display()))?;
    let results = parse(&text);
    if results.is_empty() {
        let tail: Vec<&str> = text.lines().rev().take(25).collect();
        bail!(
            "mysql-test-run on {name} reported no test results; its last lines:\n{}\n(log {})",
            tail.into_iter().rev().collect::<Vec<_>>().join("\n"),
            log.display()
        );
    }
    Ok(MtrRun {
        name: name.to_string(),
        binary,
        tests: results,
        seconds,
        log,
    })
}

/// Directories in an MTR vardir that hold data, not findings: datadirs (MySQL keeps a ~100 MB copy
/// for every failing test), the copied test data, MariaDB's bootstrap database.
const VARDIR_BULK: [&str; 3] = ["data", "std_data", "install.db"];

/// Leaves in a finished run's vardir what explains a failure — the test logs, reject files,
/// server error logs, configurations — and removes the bulk (a MySQL run with a dozen failures
/// left 3 GB).
fn prune_vardir(var: &Path) {
    let Ok(entries) = fs::read_dir(var) else {
        return;
    };
    for e in entries.flatten() {
        // Not followed through links: file_type does not.
        if !e.file_type().is_ok_and(|t| t.is_dir()) {
            continue;
        }
        let p = e.path();
        if VARDIR_BULK.iter().any(|b| e.file_name() == *b) {
            let _ = fs::remove_dir_all(&p);
        } else {
            prune_vardir(&p);
        }
    }
}

/// mysqltest writes a failing test's output beside its expected result when that directory is
/// writable (the test tree, not the vardir); those files are moved into `keep` so the tree stays
/// as it was and the next binary's run starts clean.
fn keep_rejects(test_dir: &Path, since: std::time::SystemTime, keep: &Path) {
    fn walk(d: &Path, depth: usize, found: &mut Vec<PathBuf>) {
        let Ok(entries) = fs::read_dir(d) else { return };
        for e in entries.flatten() {
            let p = e.path();
            let Ok(t) = e.file_type() else { continue };
            if t.is_dir() && depth > 0 && p.file_name().is_some_and(|n| n != "var") {
                walk(&p, depth - 1, found);
            } else if t.is_file() && p.extension().is_some_and(|x| x == "reject") {
                found.push(p);
            }
        }
    }
    let mut found = Vec::new();
    walk(test_dir, 4, &mut found);
    for p in found {
        let fresh = fs::metadata(&p)
            .and_then(|m| m.modified())
            .is_ok_and(|m| m >= since);
        if !fresh {
            continue;
        }
        let _ = fs::create_dir_all(keep);
        let to = keep.join(p.file_name().unwrap_or_default());
        if fs::rename(&p, &to).is_err() && fs::copy(&p, &to).is_ok() {
            let _ = fs::remove_file(&p);
        }
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
                outcome: format!("{:?}", v.outcome).to_lowercase(),
                detail: v.detail.clone(),
            }),
            None => Some(Regression {
                variant: variant.name.clone(),
                test: b.name.clone(),
                outcome: "did not run".into(),
                detail: format!(
                    "MTR stopped before this test on {}; see {}",
                    variant.name,
                    variant.log.display()
                ),
            }),
        })
        .collect()
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
}

impl MtrGate {
    /// The variants a regression stops.
    pub fn stopped(&self) -> Vec<String> {
        let mut v: Vec<String> = self.regressions.iter().map(|r| r.variant.clone()).collect();
        v.dedup();
        v
    }

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

/// The copy of the gate's MTR result in a benchmark's run directory, which its report shows.
pub fn run_copy(run_dir: &Path) -> PathBuf {
    run_dir.join("mtr.json")
}

pub fn read_copy(run_dir: &Path) -> Result<Option<MtrGate>> {
    crate::infra::fs::read_json_if_present(&run_copy(run_dir), "delete it to report without it")
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
                if r.outcome == "fail" {
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

/// Runs the baseline then every candidate and compares.
pub fn gate(
    suite: &Suite,
    mode: GateMode,
    baseline: &Path,
    candidates: &[(String, PathBuf)],
    dir: &Path,
    tools_seconds: f64,
    progress: &dyn Fn(&str, &TestResult),
) -> Result<MtrGate> {
    let base = run(suite, "baseline", baseline, &dir.join("baseline"), &|t| {
        progress("baseline", t)
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
        let r = run(suite, name, bin, &dir.join(format!("candidate{i}")), &|t| {
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
    })
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

    #[test]
    fn a_shadow_build_dir_differs_from_the_build_dir_only_in_the_server() {
        let t = tempfile::tempdir().unwrap();
        let build = t.path().join("build");
        let bin = build.join("runtime_output_directory");
        fs::create_dir_all(&bin).unwrap();
        fs::create_dir_all(build.join("share/english")).unwrap();
        for f in ["mysqld", "mysql", "mysqltest"] {
            fs::write(bin.join(f), f).unwrap();
        }
        fs::write(build.join("CMakeCache.txt"), "").unwrap();
        let variant = t.path().join("variant-mysqld");
        fs::write(&variant, "variant").unwrap();
        let mut tree = MtrTree {
            script: PathBuf::new(),
            tests_dir: PathBuf::new(),
            server_rel: "runtime_output_directory/mysqld".into(),
            server_dir_env: "MTR_BINDIR".into(),
            swap: ServerSwap::ShadowBuild,
            build_dir: build.clone(),
        };
        let at = t.path().join("shadow");
        server_dir(&tree, &variant, &at).unwrap();
        let read = |p: &str| fs::read_to_string(at.join(p)).unwrap();
        // The server is the variant; the clients and everything else the build's.
        assert_eq!(read("runtime_output_directory/mysqld"), "variant");
        assert_eq!(read("runtime_output_directory/mysql"), "mysql");
        assert_eq!(
            fs::read_link(at.join("share")).unwrap(),
            build.join("share")
        );
        assert_eq!(
            fs::read_link(at.join("CMakeCache.txt")).unwrap(),
            build.join("CMakeCache.txt")
        );
        assert!(!fs::symlink_metadata(at.join("runtime_output_directory"))
            .unwrap()
            .file_type()
            .is_symlink());
        // Nothing written through the links: the build's own server is untouched.
        assert_eq!(fs::read_to_string(bin.join("mysqld")).unwrap(), "mysqld");
        let names = |d: &Path| {
            let mut v: Vec<_> = fs::read_dir(d)
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            v.sort();
            v
        };
        assert_eq!(names(&at), names(&build));
        assert_eq!(names(&at.join("runtime_output_directory")), names(&bin));

        // MariaDB's way: the server alone.
        tree.swap = ServerSwap::Link;
        tree.server_rel = "sql/mariadbd".into();
        let at = t.path().join("link");
        server_dir(&tree, &variant, &at).unwrap();
        assert_eq!(names(&at), ["sql"]);
        assert_eq!(
            fs::read_to_string(at.join("sql/mariadbd")).unwrap(),
            "variant"
        );
    }

    #[test]
    fn a_pruned_vardir_keeps_the_findings_and_drops_the_datadirs() {
        let t = tempfile::tempdir().unwrap();
        let var = t.path().join("var");
        for d in [
            "data/mysql",
            "std_data/x",
            "install.db",
            "1/log/main.cast/mysqld.1/data/test",
            "mysqld.1/data",
        ] {
            fs::create_dir_all(var.join(d)).unwrap();
        }
        for f in [
            "1/log/cast.reject",
            "1/log/mysqld.1.err",
            "1/log/main.cast/mysqld.1/mysqld.log",
            "1/log/main.cast/mysqld.1/data/test/t1.ibd",
        ] {
            fs::write(var.join(f), "x").unwrap();
        }
        // A link to a data directory elsewhere is not followed.
        let outside = t.path().join("outside/data");
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("keep"), "x").unwrap();
        std::os::unix::fs::symlink(t.path().join("outside"), var.join("linked")).unwrap();
        prune_vardir(&var);
        for gone in [
            "data",
            "std_data",
            "install.db",
            "1/log/main.cast/mysqld.1/data",
            "mysqld.1/data",
        ] {
            assert!(!var.join(gone).exists(), "{gone}");
        }
        for kept in [
            "1/log/cast.reject",
            "1/log/mysqld.1.err",
            "1/log/main.cast/mysqld.1/mysqld.log",
        ] {
            assert!(var.join(kept).is_file(), "{kept}");
        }
        assert!(outside.join("keep").is_file());
    }

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
        let got: Vec<(&str, &str)> = r
            .iter()
            .map(|r| (r.test.as_str(), r.outcome.as_str()))
            .collect();
        // main.b fails on the baseline too: not the variant's; main.d never ran.
        assert_eq!(got, [("main.c", "fail"), ("main.d", "did not run")]);
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
        };
        let lines = g.report_lines().join("\n");
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
