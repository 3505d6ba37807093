//! The distribution's own server of the built release (`source::distro`): Debian's binary
//! package downloaded and unpacked into WORK/distro/, then benchmarked beside the variants as the
//! contender `debian` — gated, never packaged — so the report's first table says what the winner
//! gains over what users run now. A mirror that does not serve that binary costs the run the
//! comparison, not the run: a warning says so and the benchmark goes on without it — unless it
//! is the run's baseline (`--baseline debian`), fetched before the builds ([`reference`]).

use anyhow::{Context, Result};

use crate::pipeline::outcome::RunContender;
use crate::pipeline::plan::RunRequest;
use crate::pipeline::run_cx::RunCx;
use crate::pipeline::stage::{Ctx, Made, Stage, StageId};
use crate::pipeline::state::inputs_hash;
use crate::pipeline::tail::{Step, Tail};
use crate::source::distro::{DistroServer, Fetched, NAME};

pub struct DistroStage<'a> {
    pub server: &'a DistroServer,
}

impl Stage for DistroStage<'_> {
    type Output = Fetched;

    fn name(&self) -> StageId {
        StageId::Distro
    }

    fn key(&self) -> Result<String> {
        inputs_hash(self.server)
    }

    fn still_valid(&self, f: &Fetched) -> bool {
        f.binary.is_file()
    }

    fn run(&self, cx: &Ctx) -> Result<Made<Fetched>> {
        cx.reporter.message(
            "distro",
            &format!(
                "downloading Debian's {} {} (unpacked into the work dir, nothing installed)",
                self.server.package, self.server.version
            ),
        );
        Ok(Made::New(self.server.fetch(cx.work)?))
    }
}

/// In a run: Debian's server joins the contenders, after the builds and before the gate.
pub struct DistroStep;

impl Step for DistroStep {
    fn id(&self) -> StageId {
        StageId::Distro
    }

    fn planned(&self, req: &RunRequest) -> bool {
        req.distro.is_some() && req.baseline.is_build()
    }

    fn run(&self, r: &mut RunCx, t: &mut Tail) -> Result<()> {
        let Some(server) = &r.plan.request.distro else {
            return Ok(());
        };
        if !r.plan.request.baseline.is_build() {
            // The run's baseline, fetched before the builds (`reference`): contenders[0].
            return Ok(());
        }
        match r.run(&DistroStage { server }) {
            Ok(f) => t.contenders.push(RunContender::not_built(NAME, f.binary)?),
            Err(e) => r.warn(format!(
                "the run goes on without Debian's own server to compare with: {e:#} \
                 (--no-distro leaves it out of the plan)"
            )),
        }
        Ok(())
    }
}

/// Debian's server as the run's baseline (`--baseline debian`): fetched before the builds, the
/// first contender — the gate's, MTR's and the benchmark's reference, and the A/A control. No
/// other baseline exists, so a mirror that does not serve it stops the run.
pub(in crate::pipeline) fn reference(r: &mut RunCx) -> Result<RunContender> {
    let server = r.plan.request.distro.as_ref().context(
        "--baseline debian without Debian's server in the plan (the plan refuses that: a bug)",
    )?;
    let f = r.run(&DistroStage { server }).with_context(|| {
        format!(
            "Debian's {} {} is this run's baseline (--baseline debian), and it could not be \
             fetched; leave --baseline out to build the baseline instead",
            server.package, server.version
        )
    })?;
    RunContender::not_built(NAME, f.binary)
}
