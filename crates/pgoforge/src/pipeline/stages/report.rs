//! The report: text, Markdown, HTML, JSON and CSV regenerated from the run's stored results
//! every time (cheap, and a newer pgoforge's report is then what the user reads).

use std::path::PathBuf;

use anyhow::Result;

use crate::bench::report::{self, Report};
use crate::pipeline::stage::{Ctx, Made, Stage, StageId};
use crate::pipeline::state::inputs_hash;

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
