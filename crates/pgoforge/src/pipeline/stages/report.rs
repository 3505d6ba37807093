//! The report: text, Markdown, HTML, JSON and CSV regenerated from the run's stored results
//! every time (cheap, and a newer pgoforge's report is then what the user reads).

use std::path::PathBuf;

use anyhow::Result;

use crate::bench::report::{self, Report};
use crate::pipeline::outcome::{winner, Outcome};
use crate::pipeline::plan::RunRequest;
use crate::pipeline::run_cx::RunCx;
use crate::pipeline::stage::{Ctx, Made, Stage, StageId};
use crate::pipeline::state::inputs_hash;
use crate::pipeline::tail::{needs, Step, Tail};

pub struct ReportStage {
    pub run_dir: PathBuf,
    /// Decided on every build of the report, so a changed `--allow-regression` or
    /// `--min-effect` takes effect on the stored results without benchmarking again.
    pub policy: report::Policy,
}

impl Stage for ReportStage {
    type Output = Report;

    fn name(&self) -> StageId {
        StageId::Report
    }

    fn key(&self) -> Result<String> {
        inputs_hash(&self.run_dir)
    }

    fn still_valid(&self, _: &Report) -> bool {
        false
    }

    fn run(&self, _: &Ctx) -> Result<Made<Report>> {
        self.policy.store(&self.run_dir)?;
        let r = report::build_with(&self.run_dir, None, self.policy)?;
        crate::bench::export::write_all(&self.run_dir, &r)?;
        Ok(Made::New(r))
    }
}

/// In a run: the report under the run's decision policy, and the run's outcome from it (saved,
/// so `pgoforge package` can pack a contender of a finished run).
pub struct ReportStep;

impl Step for ReportStep {
    fn id(&self) -> StageId {
        StageId::Report
    }

    fn planned(&self, _: &RunRequest) -> bool {
        true
    }

    fn run(&self, r: &mut RunCx, t: &mut Tail) -> Result<()> {
        let req = &r.plan.request;
        let run_dir = needs(&t.run_dir, "report", "bench")?.clone();
        let report = r.run(&ReportStage {
            run_dir: run_dir.clone(),
            policy: report::Policy {
                allow_held_out_regression: req.allow_regression,
                min_effect: req.min_effect,
                margin: req.margin,
            },
        })?;
        let outcome = Outcome {
            recipe: req.recipe.name.clone(),
            source: t.src.clone(),
            contenders: t.contenders.clone(),
            profile: t.profile.clone(),
            run_dir,
            winner: winner(&report),
            package: None,
            warnings: std::mem::take(&mut r.warnings),
            timings: Vec::new(),
            recipe_resolved: Some(req.recipe.clone()),
            profile_provenance: req.reuse.as_ref().map(|r| r.provenance.clone()),
            engine: req.server.engine,
        };
        outcome.save(r.cx.work)?;
        t.report = Some(report);
        t.outcome = Some(outcome);
        Ok(())
    }
}
