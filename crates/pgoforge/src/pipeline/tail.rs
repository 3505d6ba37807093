//! The stages after the builds, as steps over one record of the run so far. Each stage file in
//! `stages/` says when a run has its step ([`Step::planned`], asked once, when the plan is made)
//! and what the step does with the run ([`Step::run`]); `stages::AFTER_BUILDS` orders them. So
//! adding a stage after the builds is one new file and one entry in that list.

use std::path::PathBuf;

use anyhow::Result;

use super::outcome::{Outcome, RunContender};
use super::plan::RunRequest;
use super::run_cx::RunCx;
use super::stage::StageId;
use crate::bench::plan::BenchPlan;
use crate::bench::report::Report;
use crate::builder::BuildOutput;
use crate::gate::mtr::MtrGate;
use crate::profile::Stored;
use crate::source::Source;

/// The run after its builds: what the builds made, and what each step adds for the next.
pub(super) struct Tail {
    pub src: Source,
    /// The baseline's build; none when Debian's server is the baseline (`contenders[0]`).
    pub baseline: Option<BuildOutput>,
    /// The first mix's profile, recorded in the outcome.
    pub profile: Option<Stored>,
    pub contenders: Vec<RunContender>,
    /// Some contender was trained or BOLTed: every benchmark workload outside the mix is held out.
    pub trained: bool,
    pub mtr: Option<MtrGate>,
    pub seed: Option<u64>,
    pub bench: Option<BenchPlan>,
    pub run_dir: Option<PathBuf>,
    pub report: Option<Report>,
    pub outcome: Option<Outcome>,
}

/// One stage after the builds, as `pgoforge run` runs it.
pub(super) trait Step: Sync {
    fn id(&self) -> StageId;
    /// Whether a run of `req` has this step: the plan lists it then, and only then is it run.
    fn planned(&self, req: &RunRequest) -> bool;
    fn run(&self, r: &mut RunCx, t: &mut Tail) -> Result<()>;
}

/// What a step needs from an earlier one, or a clear error naming both (a misordered list).
pub(super) fn needs<'a, T>(v: &'a Option<T>, step: &str, from: &str) -> Result<&'a T> {
    v.as_ref().ok_or_else(|| {
        anyhow::anyhow!(
            "the {step} step runs before the {from} step it needs (a bug in stages::AFTER_BUILDS)"
        )
    })
}
