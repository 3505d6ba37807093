//! Deterministic counts: each contender under valgrind's cachegrind, instructions, I1 misses and
//! mispredicted branches per transaction, into the benchmark's run directory.

use std::path::PathBuf;

use anyhow::Result;

use crate::bench::cachegrind::{self, CgPlan};
use crate::events::{log_to, tick_to};
use crate::pipeline::stage::{Ctx, Made, Stage, StageId};
use crate::pipeline::state::inputs_hash;

pub struct CachegrindStage {
    pub plan: CgPlan,
    /// The benchmark's label (the binaries' identities).
    pub label: String,
    pub run_dir: PathBuf,
}

impl Stage for CachegrindStage {
    type Output = usize;

    fn name(&self) -> StageId {
        StageId::Cachegrind
    }

    fn key(&self) -> Result<String> {
        inputs_hash(&(&self.plan, &self.label))
    }

    fn still_valid(&self, n: &usize) -> bool {
        cachegrind::read_records(&self.run_dir).is_ok_and(|r| r.len() == *n)
    }

    fn run(&self, cx: &Ctx) -> Result<Made<usize>> {
        let stage = self.name().to_string();
        tick_to(cx.reporter, &stage)(0, 0);
        let recs = cachegrind::measure(
            &self.plan,
            cx.work,
            &self.run_dir,
            true,
            &log_to(cx.reporter, &stage),
        )?;
        Ok(Made::New(recs.len()))
    }
}
