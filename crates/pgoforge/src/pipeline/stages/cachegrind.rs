//! Deterministic counts: each contender under valgrind's cachegrind, instructions, I1 misses and
//! mispredicted branches per transaction, into the benchmark's run directory.

use std::path::PathBuf;

use anyhow::Result;

use crate::bench::cachegrind::{self, CgPlan};
use crate::bench::plan::BenchPlan;
use crate::events::{log_to, tick_to};
use crate::pipeline::plan::{RunPlan, RunRequest};
use crate::pipeline::run_cx::RunCx;
use crate::pipeline::stage::{Ctx, Made, Stage, StageId};
use crate::pipeline::state::inputs_hash;
use crate::pipeline::tail::{needs, Step, Tail};
use std::path::Path;

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

impl CachegrindStage {
    /// cachegrind's counts of a run's contenders (the A/A control's are the baseline's).
    pub fn of_run(plan: &RunPlan, bench: &BenchPlan, run_dir: &Path) -> CachegrindStage {
        let (tables, table_size) = crate::bench::cachegrind::oltp_tables_for(&bench.spec);
        CachegrindStage {
            plan: CgPlan {
                // The control's counts are the baseline's: deterministic, nothing to learn.
                contenders: bench
                    .contenders
                    .iter()
                    .filter(|c| !bench.is_control(&c.name))
                    .cloned()
                    .collect(),
                workloads: bench.spec.workloads.clone(),
                events: 0,
                warmup_events: 100,
                tables,
                table_size,
                config: plan.cachegrind_server(),
                replay: bench.spec.replay.clone(),
            },
            label: bench.label.clone(),
            run_dir: run_dir.to_path_buf(),
        }
    }
}

/// In a run with `--cachegrind`: the contenders' instruction counts beside the timed benchmark.
pub struct CachegrindStep;

impl Step for CachegrindStep {
    fn id(&self) -> StageId {
        StageId::Cachegrind
    }

    fn planned(&self, req: &RunRequest) -> bool {
        req.cachegrind
    }

    fn run(&self, r: &mut RunCx, t: &mut Tail) -> Result<()> {
        let plan = r.plan;
        let bench = needs(&t.bench, "cachegrind", "bench")?;
        let run_dir = needs(&t.run_dir, "cachegrind", "bench")?;
        r.run(&CachegrindStage::of_run(plan, bench, run_dir))?;
        Ok(())
    }
}
