//! The stages of `pgoforge run`, one file each; every one implements [`Stage`](super::stage::Stage)
//! and is used alike by `pgoforge run` and by the single-stage commands (`build`, `train`, `bolt`,
//! `gate`).

pub mod bench;
pub mod bolt;
pub mod build;
pub mod cachegrind;
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
