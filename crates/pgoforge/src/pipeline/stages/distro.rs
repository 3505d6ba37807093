//! The distribution's own server of the built release (`source::distro`): Debian's binary
//! package downloaded and unpacked into WORK/distro/, then benchmarked beside the variants as the
//! contender `debian` — gated, never packaged — so the report's first table says what the winner
//! gains over what users run now. A mirror that does not serve that binary costs the run the
//! comparison, not the run: a warning says so and the benchmark goes on without it.

use anyhow::Result;

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
        req.distro.is_some()
    }

    fn run(&self, r: &mut RunCx, t: &mut Tail) -> Result<()> {
        let Some(server) = &r.plan.request.distro else {
            return Ok(());
        };
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
