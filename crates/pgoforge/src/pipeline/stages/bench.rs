//! The benchmark: every contender side by side in interleaved rounds on pinned CPUs; results
//! append to `results.jsonl` in a run directory named by the plan's hash, so an interrupted
//! benchmark resumes where it stopped.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::bench::order::OrderScheme;
use crate::bench::plan::BenchPlan;
use crate::bench::plan::Contender;
use crate::bench::report;
use crate::bench::run as bench_run;
use crate::events::{log_to, tick_to};
use crate::pipeline::outcome::{identities, RunContender};
use crate::pipeline::plan::{RunPlan, RunRequest};
use crate::pipeline::run_cx::RunCx;
use crate::pipeline::stage::{Ctx, Made, Stage, StageId};
use crate::pipeline::state::inputs_hash;
use crate::pipeline::tail::{needs, Step, Tail};
use crate::source::Source;

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

impl BenchStage {
    /// The benchmark of a run's contenders (and the A/A control the plan asks for).
    pub fn of_run(
        plan: &RunPlan,
        src: &Source,
        contenders: &[RunContender],
        seed: u64,
        trained: bool,
    ) -> BenchStage {
        let req = &plan.request;
        let ids = identities(contenders);
        let mut stage = BenchStage {
            guard: req.guard,
            plan: BenchPlan {
                contenders: contenders
                    .iter()
                    .map(|c| Contender {
                        name: c.name.clone(),
                        binary: c.binary.clone(),
                        buffer_pool_mb: None,
                    })
                    .chain(req.aa.then(|| Contender {
                        // The baseline's binary again: the A/A control.
                        name: crate::bench::plan::AA_CONTROL.into(),
                        binary: contenders[0].binary.clone(),
                        buffer_pool_mb: None,
                    }))
                    .collect(),
                spec: req.bench.clone(),
                config: req.server.clone(),
                pin: true,
                seed,
                order_scheme: OrderScheme::Williams,
                // Debian's server as the baseline is compared with, not a reference beside.
                reference_only: req
                    .outside_names()
                    .into_iter()
                    .filter(|n| req.baseline.is_build() || n != &contenders[0].name)
                    .collect(),
                trained_on: if trained && !req.is_matrix() {
                    let mut v: Vec<_> = req.mix().phases.iter().map(|p| p.test).collect();
                    v.dedup();
                    v
                } else {
                    Vec::new()
                },
                training: if req.is_matrix() {
                    training(plan, contenders)
                } else {
                    Vec::new()
                },
                aa_control: req.aa.then(|| crate::bench::plan::AA_CONTROL.into()),
                // The binaries' identities: a rebuilt binary at the same path is a new benchmark.
                label: format!(
                    "recipe {} source {} {}",
                    req.recipe.name,
                    &src.hash[..12.min(src.hash.len())],
                    ids.iter()
                        .map(|(n, i)| format!("{n}={i}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
            },
        };
        stage.plan.sweep_buffer_pool(&req.sweep_buffer_pool_mb);
        stage
    }
}

/// A matrix's contenders and their training mixes (the built ones: a build that failed is gone).
fn training(plan: &RunPlan, contenders: &[RunContender]) -> Vec<crate::bench::plan::Training> {
    let mixes = &plan.request.mixes;
    plan.contenders
        .iter()
        .filter(|c| c.build.needs_profile() && contenders.iter().any(|r| r.name == c.name))
        .map(|c| {
            let m = c
                .mix
                .as_ref()
                .and_then(|n| mixes.iter().find(|m| &m.name == n))
                .unwrap_or(&mixes[0]);
            crate::bench::plan::Training {
                contender: c.name.clone(),
                mix: m.name.clone(),
                workloads: m.workloads(),
            }
        })
        .collect()
}

/// In a run: the benchmark of the contenders the gates let through; its run directory then holds
/// the MTR gate's record and the release check beside the numbers they let through.
pub struct BenchStep;

impl Step for BenchStep {
    fn id(&self) -> StageId {
        StageId::Bench
    }

    fn planned(&self, _: &RunRequest) -> bool {
        true
    }

    fn run(&self, r: &mut RunCx, t: &mut Tail) -> Result<()> {
        let plan = r.plan;
        let seed = *needs(&t.seed, "bench", "seed")?;
        let bench = BenchStage::of_run(plan, &t.src, &t.contenders, seed, t.trained);
        let run_dir = r.run(&bench)?;
        if let Some(g) = &t.mtr {
            crate::infra::fs::write_json(&crate::gate::mtr::copy_in_run_dir(&run_dir), g)?;
        }
        if let Some(c) = &plan.source_release {
            crate::infra::fs::write_json(&crate::source::release::copy_in_run_dir(&run_dir), c)?;
        }
        if let Some(reuse) = &plan.request.reuse {
            let record = crate::pipeline::reuse_record::reuse_record(reuse, &t.contenders);
            crate::infra::fs::write_json(
                &crate::bench::report::reuse::copy_in_run_dir(&run_dir),
                &record,
            )?;
        }
        t.bench = Some(bench.plan);
        t.run_dir = Some(run_dir);
        Ok(())
    }
}
