//! The seed of the benchmark's round orders: the one given (`--seed`, to replay a design), or a
//! fresh one drawn once per run and kept in the run state, so that a rerun resumes the same
//! benchmark instead of starting another.

use anyhow::Result;

use crate::bench::plan::fresh_seed;
use crate::pipeline::plan::RunRequest;
use crate::pipeline::run_cx::RunCx;
use crate::pipeline::stage::{Ctx, Made, Stage, StageId};
use crate::pipeline::state::inputs_hash;
use crate::pipeline::tail::{Step, Tail};

pub struct SeedStage {
    pub given: Option<u64>,
}

impl Stage for SeedStage {
    type Output = u64;

    fn name(&self) -> StageId {
        StageId::Seed
    }

    fn key(&self) -> Result<String> {
        inputs_hash(&self.given)
    }

    fn still_valid(&self, _: &u64) -> bool {
        true
    }

    fn run(&self, cx: &Ctx) -> Result<Made<u64>> {
        let seed = self.given.unwrap_or_else(fresh_seed);
        cx.reporter
            .message("seed", &format!("round orders from seed {seed}"));
        Ok(Made::New(seed))
    }
}

/// In a run: the seed, kept in the run state so a rerun resumes the same benchmark.
pub struct SeedStep;

impl Step for SeedStep {
    fn id(&self) -> StageId {
        StageId::Seed
    }

    fn planned(&self, _: &RunRequest) -> bool {
        true
    }

    fn run(&self, r: &mut RunCx, t: &mut Tail) -> Result<()> {
        let given = r.plan.request.seed;
        t.seed = Some(r.run(&SeedStage { given })?);
        Ok(())
    }
}
