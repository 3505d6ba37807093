//! The correctness gate: every optimized binary runs the same seeded write workload as the
//! baseline and must leave the same CHECKSUM TABLE values.

use std::path::PathBuf;

use anyhow::Result;

use crate::gate::{self, Checksums, GateWorkload};
use crate::pipeline::outcome::{candidates, identities, RunContender};
use crate::pipeline::plan::RunRequest;
use crate::pipeline::run_cx::RunCx;
use crate::pipeline::stage::{Ctx, Made, Stage, StageId};
use crate::pipeline::state::inputs_hash;
use crate::pipeline::tail::{Step, Tail};
use crate::server::{ServerConfig, ServerSpec};

pub struct GateStage<'a> {
    pub baseline: PathBuf,
    /// (name, binary) of every candidate.
    pub candidates: Vec<(String, PathBuf)>,
    /// What identifies each binary (a rebuilt binary at the same path is a new one).
    pub identities: Vec<(String, String)>,
    pub server: &'a ServerConfig,
    pub workload: GateWorkload,
}

impl Stage for GateStage<'_> {
    type Output = Vec<Checksums>;

    fn name(&self) -> StageId {
        StageId::Gate
    }

    fn key(&self) -> Result<String> {
        inputs_hash(&(&self.identities, &self.server, &self.workload))
    }

    fn still_valid(&self, _: &Vec<Checksums>) -> bool {
        true
    }

    fn run(&self, cx: &Ctx) -> Result<Made<Vec<Checksums>>> {
        let sums = gate::gate(
            &ServerSpec::with_config(self.server.clone()),
            &self.baseline,
            &self.candidates,
            cx.work,
            &self.workload,
        )?;
        cx.reporter.message(
            "gate",
            &format!(
                "{} binaries give the baseline's CHECKSUM TABLE values after the seeded writes",
                self.candidates.len()
            ),
        );
        Ok(Made::New(sums))
    }
}

impl<'a> GateStage<'a> {
    /// The checksum gate over a run's contenders, the first the baseline.
    pub fn of_run(req: &'a RunRequest, contenders: &[RunContender]) -> GateStage<'a> {
        GateStage {
            baseline: contenders[0].binary.clone(),
            candidates: candidates(contenders),
            identities: identities(contenders),
            server: &req.server,
            workload: GateWorkload::default(),
        }
    }
}

/// In a run: every contender through the checksum gate, always.
pub struct GateStep;

impl Step for GateStep {
    fn id(&self) -> StageId {
        StageId::Gate
    }

    fn planned(&self, _: &RunRequest) -> bool {
        true
    }

    fn run(&self, r: &mut RunCx, t: &mut Tail) -> Result<()> {
        let plan = r.plan;
        r.run(&GateStage::of_run(&plan.request, &t.contenders))?;
        Ok(())
    }
}
