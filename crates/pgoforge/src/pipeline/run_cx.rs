//! What every step of `pgoforge run` needs besides the stages' typed outputs (the source, the
//! baseline's build, the profiles, the contenders, which pass from step to step as values): the
//! plan, where events go and the work dir, the tracker of stage records, and the warnings the
//! outcome keeps.

use anyhow::{bail, Result};

use super::plan::RunPlan;
use super::stage::{Ctx, Stage};
use super::state::Tracker;

pub(super) struct RunCx<'a> {
    pub plan: &'a RunPlan,
    pub cx: Ctx<'a>,
    pub t: Tracker,
    pub warnings: Vec<String>,
}

impl RunCx<'_> {
    /// Runs a stage, or reuses its record (`Tracker::run`) — only one the plan lists: the plan
    /// is what runs, and a stage it does not name is a bug here, refused before it starts.
    pub fn run<S: Stage>(&mut self, stage: &S) -> Result<S::Output> {
        let id = stage.name();
        if !self.plan.runs(&id) {
            bail!(
                "stage '{id}' is not in the run's plan ({}): pgoforge's pipeline and its plan \
                 disagree (a bug; please report it with `run --plan`'s output)",
                self.plan
                    .stages
                    .iter()
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        self.t.run(stage, &self.cx)
    }

    /// Says a fact the user should see, not a warning.
    pub fn info(&mut self, msg: String) {
        self.cx.reporter.message("profile", &msg);
    }

    /// Says a warning and keeps it for the run's outcome.
    pub fn warn(&mut self, msg: String) {
        self.cx.reporter.warning(&msg);
        self.warnings.push(msg);
    }
}
