//! The stages of `pgoforge run`, one file each; every one implements [`Stage`](super::stage::Stage)
//! and is used alike by `pgoforge run` and by the single-stage commands (`build`, `train`, `bolt`,
//! `gate`).

pub mod bench;
pub mod bolt;
pub mod build;
pub mod cachegrind;
pub mod distro;
pub mod gate;
pub mod mtr;
pub mod package;
pub mod report;
pub mod seed;
pub mod source;
pub mod train;

pub use bench::BenchStage;
pub use bolt::BoltStage;
pub use build::BuildStage;
pub use cachegrind::CachegrindStage;
pub use gate::GateStage;
pub use mtr::MtrStage;
pub use package::PackageStage;
pub use report::ReportStage;
pub use seed::SeedStage;
pub use source::SourceStage;
pub use train::TrainStage;

use super::plan::RunRequest;
use super::stage::StageId;
use super::tail::Step;

/// The stages after the builds, in the order a run runs them; each says itself when a run has it.
/// A new stage after the builds is a file here and an entry in this list.
pub(super) const AFTER_BUILDS: &[&dyn Step] = &[
    &distro::DistroStep,
    &gate::GateStep,
    &mtr::MtrStep,
    &seed::SeedStep,
    &bench::BenchStep,
    &cachegrind::CachegrindStep,
    &report::ReportStep,
    &package::PackageStep,
];

/// The stages after the builds a run of `req` has, in order: the plan's tail.
pub fn after_builds(req: &RunRequest) -> Vec<StageId> {
    AFTER_BUILDS
        .iter()
        .filter(|s| s.planned(req))
        .map(|s| s.id())
        .collect()
}
