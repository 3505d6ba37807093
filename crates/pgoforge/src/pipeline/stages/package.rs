//! The package of the winning contender: a tar.zst with the server, its share files, a manifest
//! and SHA256SUMS, checked by running the packaged server.

use anyhow::Result;

use crate::bench::report::Report;
use crate::package::Package;
use crate::pipeline::outcome::{package_contender, Outcome};
use crate::pipeline::plan::RunRequest;
use crate::pipeline::run_cx::RunCx;
use crate::pipeline::stage::{Ctx, Made, Stage, StageId};
use crate::pipeline::state::inputs_hash;
use crate::pipeline::tail::{needs, Step, Tail};

pub struct PackageStage<'a> {
    pub outcome: &'a Outcome,
    pub report: Option<&'a Report>,
    pub contender: &'a str,
}

impl Stage for PackageStage<'_> {
    type Output = Package;

    fn name(&self) -> StageId {
        StageId::Package
    }

    fn key(&self) -> Result<String> {
        let c = self.outcome.contender(self.contender)?;
        inputs_hash(&(c.identity(), &self.outcome.run_dir))
    }

    fn still_valid(&self, p: &Package) -> bool {
        crate::infra::fs::sha256_file(&p.path).is_ok_and(|h| h == p.sha256)
    }

    fn run(&self, cx: &Ctx) -> Result<Made<Package>> {
        Ok(Made::New(package_contender(
            cx.work,
            self.outcome,
            self.report,
            self.contender,
        )?))
    }
}

/// In a run that packages (not `--no-package`): the winner, when something measurably won.
pub struct PackageStep;

impl Step for PackageStep {
    fn id(&self) -> StageId {
        StageId::Package
    }

    fn planned(&self, req: &RunRequest) -> bool {
        req.package
    }

    fn run(&self, r: &mut RunCx, t: &mut Tail) -> Result<()> {
        let report = needs(&t.report, "package", "report")?;
        let Some(outcome) = t.outcome.as_mut() else {
            anyhow::bail!("the package step runs before the report step it needs (a bug in stages::AFTER_BUILDS)");
        };
        let Some(w) = outcome.winner.clone() else {
            let msg = "no variant measurably beat the baseline; nothing packaged (`pgoforge package NAME` packages one anyway)";
            r.cx.reporter.warning(msg);
            outcome.warnings.push(msg.into());
            return Ok(());
        };
        let pkg = r.run(&PackageStage {
            outcome,
            report: Some(report),
            contender: &w,
        })?;
        outcome.package = Some(pkg);
        Ok(())
    }
}
