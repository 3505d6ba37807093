//! The benchmark: every contender side by side in interleaved rounds on pinned CPUs; results
//! append to `results.jsonl` in a run directory named by the plan's hash, so an interrupted
//! benchmark resumes where it stopped.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::bench::plan::BenchPlan;
use crate::bench::report;
use crate::bench::run as bench_run;
use crate::events::{log_to, tick_to};
use crate::pipeline::stage::{Ctx, Made, Stage, StageId};
use crate::pipeline::state::inputs_hash;

pub struct BenchStage {
    pub plan: BenchPlan,
    pub guard: crate::bench::load::Guard,
}

impl BenchStage {
    pub fn run_dir(&self, work: &Path) -> Result<PathBuf> {
        Ok(work
            .join("runs")
            .join(format!("run-{}", inputs_hash(&self.plan)?)))
    }
}

impl Stage for BenchStage {
    type Output = PathBuf;

    fn name(&self) -> StageId {
        StageId::Bench
    }

    fn key(&self) -> Result<String> {
        inputs_hash(&self.plan)
    }

    fn still_valid(&self, d: &PathBuf) -> bool {
        report::build(d).is_ok()
    }

    fn run(&self, cx: &Ctx) -> Result<Made<PathBuf>> {
        let dir = self.run_dir(cx.work)?;
        let stage = self.name().to_string();
        // Resuming is always right here: the directory is named by the plan's hash.
        bench_run::benchmark(
            &self.plan,
            cx.work,
            &dir,
            true,
            self.guard,
            &log_to(cx.reporter, &stage),
            &tick_to(cx.reporter, &stage),
        )?;
        Ok(Made::New(dir))
    }
}
