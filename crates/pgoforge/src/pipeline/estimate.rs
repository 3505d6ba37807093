//! How long the whole run will take, stage by stage, said before the first build (issue 49
//! item 4: the default run must fit 75 minutes on 2 cores, and its plan must say so).
//!
//! Builds and the MTR gate come from the recipe's `[timings]`, seconds measured on 2 cores, scaled
//! by this machine's cores; training and BOLT from their mixes' lengths plus what a start, the
//! dataset and the profile's merge cost around them; the benchmark from `bench::estimate`. The
//! small stages (source, Debian's server, the checksum gate, the package) are fixed figures from
//! the committed runs. Every figure is for a stage that has not run yet: a resumed run reuses
//! finished stages, which take seconds.

use serde::Serialize;

use super::stage::StageId;
use crate::builder::variant::{PgoPhase, Variant};
use crate::profile::train::{Mix, NamedMix};
use crate::recipe::{BuildSeconds, Recipe};
use crate::toolchain::FlagFamily;

/// Around a training mix's phases: the servers started and stopped, the dataset copied from its
/// template, the profile merged and checked (the default mix's 600 s trained in 612–618 s).
const TRAIN_OVERHEAD_S: f64 = 15.0;
/// Around BOLT's profiling run (each phase halved): instrumenting the binary, the run's starts,
/// merging and optimizing (the default mix's 300 s: 324–340 s).
const BOLT_OVERHEAD_S: f64 = 30.0;
/// `apt-get source` and the unpack (6 s) after the release check (up to 20 s on a slow mirror).
const SOURCE_S: f64 = 20.0;
/// Debian's server package downloaded and unpacked.
const DISTRO_S: f64 = 15.0;
/// The checksum gate per binary (3–4 s; MySQL's initialize takes longer).
const CHECKSUM_PER_BINARY_S: f64 = 5.0;
/// The report and the package's tarball.
const REPORT_AND_PACKAGE_S: f64 = 10.0;
/// The cores the recipes' minutes were measured on.
const MEASURED_CORES: f64 = 2.0;

/// One stage's expected seconds, `None` where nothing measured says.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StageTime {
    pub stage: String,
    pub seconds: Option<u64>,
}

/// The run's expected wall time from an empty work dir.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RunEstimate {
    pub stages: Vec<StageTime>,
    /// The sum of the known stages.
    pub known_seconds: u64,
    /// Stages nothing measured times (a compiler or recipe without `[timings]`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unknown: Vec<String>,
}

/// What the estimate reads of a plan.
pub struct Planned<'a> {
    pub stages: &'a [StageId],
    pub recipe: &'a Recipe,
    pub family: FlagFamily,
    pub mixes: &'a [NamedMix],
    /// Every binary the checksum gate checks: the contenders and the servers the run did not
    /// build (the A/A control runs the baseline's binary again)…
    pub binaries: usize,
    /// …and those MTR runs: Debian's server is left out unless it is the baseline
    /// (stages/mtr.rs).
    pub mtr_binaries: usize,
    pub bench_seconds: u64,
}

impl RunEstimate {
    /// Times every stage `p` lists on a machine of `cores`.
    pub fn of(p: &Planned, cores: usize) -> RunEstimate {
        let timings = p.recipe.timings.as_ref();
        let build = timings.and_then(|t| match p.family {
            FlagFamily::Clang => t.clang,
            FlagFamily::Gcc => t.gcc,
        });
        // Builds do not scale perfectly with cores (links, the slowest units): at most 4× faster.
        let scale = (MEASURED_CORES / cores.max(1) as f64).max(0.25);
        let binaries = p.binaries as f64;
        let mut est = RunEstimate::default();
        for id in p.stages {
            let seconds = match id {
                StageId::Source => Some(SOURCE_S),
                StageId::Build(v, _) => build.map(|m| build_seconds(&m, v) * scale),
                StageId::Train(_) | StageId::TrainOn(_) => {
                    let mix = match id {
                        StageId::TrainOn(name) => p.mixes.iter().find(|m| &m.name == name),
                        _ => p.mixes.first(),
                    };
                    mix.map(|m| mix_seconds(&m.mix) + TRAIN_OVERHEAD_S)
                }
                StageId::Bolt(_) => p
                    .mixes
                    .first()
                    .map(|m| mix_seconds(&m.mix.for_bolt()) + BOLT_OVERHEAD_S),
                StageId::Distro => Some(DISTRO_S),
                StageId::Gate => Some(CHECKSUM_PER_BINARY_S * binaries),
                StageId::Mtr => timings.filter(|t| t.mtr_per_binary > 0).map(|t| {
                    f64::from(t.mtr_tools) + f64::from(t.mtr_per_binary) * p.mtr_binaries as f64
                }),
                StageId::Seed | StageId::Report => Some(0.0),
                StageId::Bench => Some(p.bench_seconds as f64),
                // Not timed: valgrind's slowdown depends on the binary (an opt-in stage).
                StageId::Cachegrind => None,
                StageId::Package => Some(REPORT_AND_PACKAGE_S),
            };
            match seconds {
                Some(s) => est.known_seconds += s.round() as u64,
                None => est.unknown.push(id.to_string()),
            }
            est.stages.push(StageTime {
                stage: id.to_string(),
                seconds: seconds.map(|s| s.round() as u64),
            });
        }
        est
    }

    /// Seconds of the stages whose names start with `kind` ("build", "train", …).
    pub fn of_kind(&self, kind: &str) -> u64 {
        self.stages
            .iter()
            .filter(|s| s.stage.split(' ').next() == Some(kind))
            .filter_map(|s| s.seconds)
            .sum()
    }

    /// "the whole run will take about 1 h 05 min from an empty work dir (builds 33 min, training
    /// and BOLT 16 min, gates 5 min, benchmark 21 min)".
    pub fn sentence(&self) -> String {
        let h = |s: u64| crate::infra::time::human(s as f64);
        let gates = self.of_kind("gate") + self.of_kind("mtr");
        let parts = format!(
            "builds {}, training and BOLT {}, gates {}, benchmark {}",
            h(self.of_kind("build")),
            h(self.of_kind("train") + self.of_kind("bolt")),
            h(gates),
            h(self.of_kind("bench"))
        );
        if self.unknown.is_empty() {
            format!(
                "the whole run will take about {} from an empty work dir ({parts}; finished \
                 stages found in the work dir are reused)",
                h(self.known_seconds)
            )
        } else {
            format!(
                "the run will take more than {} from an empty work dir ({parts}); not timed: {} \
                 (nothing measured for this recipe and compiler)",
                h(self.known_seconds),
                self.unknown.join(", ")
            )
        }
    }
}

/// The recipe's seconds for a build of `v`.
fn build_seconds(m: &BuildSeconds, v: &Variant) -> f64 {
    f64::from(match v.phase {
        PgoPhase::PgoGen | PgoPhase::CsGen => m.instrumented,
        PgoPhase::Baseline if !v.lto => m.baseline,
        _ => m.optimized,
    })
}

/// The seconds a mix's phases run.
fn mix_seconds(m: &Mix) -> f64 {
    m.phases.iter().map(|p| p.seconds as f64).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_take_the_recipes_seconds_by_kind() {
        let m = BuildSeconds {
            baseline: 6,
            instrumented: 8,
            optimized: 10,
        };
        let v = |s: &str| s.parse::<Variant>().unwrap();
        assert_eq!(build_seconds(&m, &v("baseline")), 6.0);
        assert_eq!(build_seconds(&m, &v("pgo-gen")), 8.0);
        assert_eq!(build_seconds(&m, &v("pgo+lto+bolt")), 10.0);
        assert_eq!(build_seconds(&m, &v("lto")), 10.0);
        assert_eq!(build_seconds(&m, &v("cs-pgo-gen+lto")), 8.0);
    }

    #[test]
    fn the_default_mix_trains_for_its_phases_and_bolt_for_half() {
        let mix = crate::profile::train::Mix::standard();
        assert_eq!(mix_seconds(&mix), 300.0);
        assert_eq!(mix_seconds(&mix.for_bolt()), 150.0);
    }
}
