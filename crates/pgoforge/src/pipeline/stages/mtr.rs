//! The gate's second step: the server's own regression tests (MTR) on the baseline and every
//! candidate, after the quick CHECKSUM gate. MTR's tools are built in the baseline's build tree
//! first (make targets the recipe names; an already built tree costs seconds).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result};

use crate::gate::mtr::{self, GateMode, MtrGate, MtrSpec, MtrTree, ScriptIn, TestOutcome};
use crate::infra::runner::Tool;
use crate::pipeline::stage::{Ctx, Made, Stage};
use crate::pipeline::state::inputs_hash;

pub struct MtrStage<'a> {
    pub spec: &'a MtrSpec,
    pub mode: GateMode,
    /// The tests to run: `--mtr-suite`, or the recipe's subset (mtr); none for full, whose
    /// suites are in `args`.
    pub tests: Vec<String>,
    pub args: Vec<String>,
    /// The baseline's build directory: MTR and its tools come from there.
    pub build_dir: PathBuf,
    /// The recipe's server binary, relative to the build directory.
    pub server_rel: PathBuf,
    /// The source tree: the test files live there (mysqltest writes failing output beside
    /// them), and MySQL's MTR script.
    pub source_dir: PathBuf,
    pub baseline: PathBuf,
    pub candidates: Vec<(String, PathBuf)>,
    /// What identifies each binary (a rebuilt binary at the same path is a new one).
    pub identities: Vec<(String, String)>,
}

impl MtrStage<'_> {
    fn tree(&self) -> MtrTree {
        let script_root = match self.spec.script_in {
            ScriptIn::Build => &self.build_dir,
            ScriptIn::Source => &self.source_dir,
        };
        MtrTree {
            script: script_root.join(&self.spec.script),
            tests_dir: self.source_dir.join(&self.spec.tests_dir),
            server_rel: self.server_rel.clone(),
            server_dir_env: self.spec.server_dir_env.clone(),
            swap: self.spec.swap,
            build_dir: self.build_dir.clone(),
        }
    }

    /// Builds MTR's tools in the baseline's tree; returns the seconds it took.
    fn build_tools(&self, log: &Path) -> Result<f64> {
        let t0 = Instant::now();
        let mut make = Command::new("cmake");
        make.arg("--build")
            .arg(&self.build_dir)
            .arg("-j")
            .arg(crate::builder::default_jobs().to_string());
        for t in &self.spec.targets {
            make.arg("--target").arg(t);
        }
        Tool::new(&mut make, "building MTR's tools in the baseline's tree")
            .log(Some(log))
            .own_process_group()
            .run()?;
        Ok(t0.elapsed().as_secs_f64())
    }
}

impl Stage for MtrStage<'_> {
    type Output = MtrGate;

    fn name(&self) -> String {
        "mtr".into()
    }

    fn key(&self) -> Result<String> {
        inputs_hash(&(
            &self.identities,
            self.mode,
            &self.tests,
            &self.args,
            &self.spec.script,
        ))
    }

    fn still_valid(&self, _: &MtrGate) -> bool {
        true
    }

    fn run(&self, cx: &Ctx) -> Result<Made<MtrGate>> {
        let stage = self.name();
        let dir = cx.work.join("gate").join("mtr");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        cx.reporter.message(
            &stage,
            &format!("building MTR's tools in {}", self.build_dir.display()),
        );
        let tools_seconds = self.build_tools(&dir.join("tools.log"))?;
        cx.reporter.message(
            &stage,
            &format!(
                "{} tests on {} binaries ({} gate)",
                self.tests.len(),
                self.candidates.len() + 1,
                self.mode
            ),
        );
        let failed = |name: &str, t: &mtr::TestResult| {
            if t.outcome == TestOutcome::Fail {
                cx.reporter
                    .message(&stage, &format!("{name}: {} failed", t.name));
            }
        };
        let tree = self.tree();
        let g = mtr::gate(
            &mtr::Suite {
                tree: &tree,
                tests: &self.tests,
                args: &self.args,
            },
            self.mode,
            &self.baseline,
            &self.candidates,
            &dir,
            tools_seconds,
            &failed,
        )?;
        for line in g.summary_lines() {
            cx.reporter.message(&stage, &line);
        }
        crate::infra::fs::write_json(&dir.join("result.json"), &g)?;
        Ok(Made::New(g))
    }
}
