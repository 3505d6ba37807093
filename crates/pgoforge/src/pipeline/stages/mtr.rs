//! The gate's second step: the server's own regression tests (MTR) on the baseline and every
//! candidate, after the quick CHECKSUM gate. MTR's tools are built in the baseline's build tree
//! first (the recipe's targets; an already built tree costs seconds): gate/mtr/ does both.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use crate::builder::BuildOutput;
use crate::gate::mtr::{self, MtrGate, MtrSpec, MtrTree, ScriptIn, TestOutcome};
use crate::gate::GateMode;
use crate::pipeline::outcome::{candidates, identities, RunContender};
use crate::pipeline::plan::{RunPlan, RunRequest};
use crate::pipeline::run_cx::RunCx;
use crate::pipeline::stage::{Ctx, Made, Stage, StageId};
use crate::pipeline::state::inputs_hash;
use crate::pipeline::tail::{Step, Tail};
use crate::server::config::Engine;
use crate::source::Source;

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
    /// The baseline's name in the run (`baseline`, or `debian` as `--baseline debian`).
    pub baseline_name: String,
    pub candidates: Vec<(String, PathBuf)>,
    /// Debian's downloaded server, left out of MTR (`MtrGate::not_run`).
    pub not_run: Vec<String>,
    /// What identifies each binary (a rebuilt binary at the same path is a new one).
    pub identities: Vec<(String, String)>,
    /// The run's engine: a plugin engine's plugin is each binary's own.
    pub engine: Engine,
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
            engine: self.engine,
        }
    }
}

impl Stage for MtrStage<'_> {
    type Output = MtrGate;

    fn name(&self) -> StageId {
        StageId::Mtr
    }

    fn key(&self) -> Result<String> {
        let inputs = (
            &self.identities,
            self.mode,
            &self.tests,
            &self.args,
            &self.spec.script,
        );
        // An InnoDB run's key stays what it was before engines existed.
        match self.engine {
            Engine::InnoDb => inputs_hash(&inputs),
            e => inputs_hash(&(inputs, e)),
        }
    }

    fn still_valid(&self, _: &MtrGate) -> bool {
        true
    }

    fn run(&self, cx: &Ctx) -> Result<Made<MtrGate>> {
        let stage = self.name().to_string();
        let dir = cx.work.join("gate").join("mtr");
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        cx.reporter.message(
            &stage,
            &format!("building MTR's tools in {}", self.build_dir.display()),
        );
        let tools_seconds =
            mtr::build_tools(&self.build_dir, &self.spec.targets, &dir.join("tools.log"))?;
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
        let mut g = mtr::gate(
            &mtr::Suite {
                tree: &tree,
                tests: &self.tests,
                args: &self.args,
            },
            self.mode,
            (&self.baseline_name, &self.baseline),
            &self.candidates,
            &dir,
            tools_seconds,
            &failed,
        )?;
        g.not_run = self.not_run.clone();
        for line in g.summary_lines() {
            cx.reporter.message(&stage, &line);
        }
        crate::infra::fs::write_json(&dir.join("result.json"), &g)?;
        Ok(Made::New(g))
    }
}

impl<'a> MtrStage<'a> {
    /// The MTR step of the gate over a run's contenders (`None`: the recipe has no MTR, which
    /// the plan refuses with any gate but the quick one).
    pub fn of_run(
        plan: &'a RunPlan,
        src: &Source,
        baseline: Option<&BuildOutput>,
        contenders: &[RunContender],
    ) -> Option<MtrStage<'a>> {
        let req = &plan.request;
        let spec = req.recipe.mtr.as_ref()?;
        // Debian's server, which the run downloaded to compare with, is left out: it is built
        // with wsrep, whose MTR wanted Galera's SST scripts that the baseline's tree lacked (MTR
        // refused it on the first real run, before the recipe was Debian-shaped). As the
        // baseline (`--baseline debian`) it is the reference and runs first. A `--binary`
        // server the user gave is tested like a variant.
        let distro = |c: &RunContender| {
            req.baseline.is_build()
                && req.distro.is_some()
                && c.build.is_none()
                && c.name == crate::source::distro::NAME
        };
        let built: Vec<RunContender> = contenders.iter().filter(|c| !distro(c)).cloned().collect();
        // MTR's tools come from the baseline's tree, or with Debian's server as the baseline,
        // from the first optimized build's (built there with its flags: they only drive tests).
        let build_dir = match baseline {
            Some(b) => b.build_dir.clone(),
            None => contenders
                .iter()
                .find_map(|c| c.build.as_ref())?
                .build_dir
                .clone(),
        };
        let (tests, args) = spec.selection(req.gate, req.mtr_tests.as_deref());
        Some(MtrStage {
            spec,
            mode: req.gate,
            tests,
            args,
            build_dir,
            server_rel: req.recipe.build.binary.clone().into(),
            source_dir: src.dir.clone(),
            baseline: contenders[0].binary.clone(),
            baseline_name: contenders[0].name.clone(),
            candidates: candidates(&built),
            not_run: contenders
                .iter()
                .filter(|c| distro(c))
                .map(|c| c.name.clone())
                .collect(),
            identities: identities(&built),
            engine: req.server.engine,
        })
    }
}

/// In a run: MTR after the checksum gate, unless the gate is the quick one; a variant with a
/// regression leaves the benchmark.
pub struct MtrStep;

impl Step for MtrStep {
    fn id(&self) -> StageId {
        StageId::Mtr
    }

    fn planned(&self, req: &RunRequest) -> bool {
        req.gate != GateMode::Quick
    }

    fn run(&self, r: &mut RunCx, t: &mut Tail) -> Result<()> {
        let plan = r.plan;
        let Some(stage) = MtrStage::of_run(plan, &t.src, t.baseline.as_ref(), &t.contenders) else {
            return Ok(());
        };
        let g = r.run(&stage)?;
        stop_regressed(r, &mut t.contenders, &g)?;
        t.mtr = Some(g);
        Ok(())
    }
}

/// Takes the variants MTR found a regression in out of the benchmark (and so out of packaging),
/// naming the test and showing its diff.
fn stop_regressed(r: &mut RunCx, contenders: &mut Vec<RunContender>, g: &MtrGate) -> Result<()> {
    for name in g.stopped() {
        let tests: Vec<String> = g
            .regressions
            .iter()
            .filter(|r| r.variant == name)
            .map(|r| {
                let diff: Vec<&str> = r.detail.lines().take(20).collect();
                format!("  {} ({}):\n    {}", r.test, r.outcome, diff.join("\n    "))
            })
            .collect();
        let msg = format!(
            "{name}: stopped by the gate, left out of the benchmark and never packaged: {} MTR tests pass on the baseline and not on {name}:\n{}",
            tests.len(),
            tests.join("\n")
        );
        r.warn(msg);
        contenders.retain(|c| c.name != name);
    }
    if contenders.len() < 2 {
        bail!(
            "the gate stopped every variant; nothing left to compare with the baseline:\n{}",
            r.warnings.join("\n")
        );
    }
    Ok(())
}
