//! The package of the winning contender: a tar.zst with the server, its share files, a manifest
//! and SHA256SUMS, checked by running the packaged server.

use anyhow::Result;

use crate::bench::report::Report;
use crate::package::Package;
use crate::pipeline::outcome::{package_contender, Outcome};
use crate::pipeline::stage::{Ctx, Made, Stage, StageId};
use crate::pipeline::state::inputs_hash;

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
