//! Whether a profile taken from an earlier release (`run --profile-from`) still fits this one
//! (issue 53): after the optimized build, the share of the profile's functions with counts whose
//! code changed so much that the compiler dropped their counts (builder/staleness.rs, from the
//! compiler's own diagnostics). At or above the threshold the run warns; with
//! `--retrain-if-stale` it stops after that build ([`TooStale`]) and `run` starts again with its
//! own instrumented build and training, every finished stage (source, baseline) reused.

use serde::{Deserialize, Serialize};

use crate::builder::staleness::{StaleShare, Staleness};
use crate::builder::ProfileInput;
use crate::toolchain::{Compiler, FlagFamily};

/// What `run` does with a stale profile (`--stale-threshold`, `--retrain-if-stale`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct StalePolicy {
    /// Percent of the profile's functions with counts; 0 retrains (or warns) always.
    pub threshold_pct: f64,
    pub retrain: bool,
}

impl Default for StalePolicy {
    /// 10 %: a security release changes a few dozen of the ~9 000 functions a MariaDB training
    /// reaches; a tenth of them changed is another code base, not a patch release.
    fn default() -> Self {
        StalePolicy {
            threshold_pct: 10.0,
            retrain: false,
        }
    }
}

/// The hottest functions the staleness report looks at: the ones a training spends its time in.
pub const HOT: usize = 100;

/// The run stopped after the build because its reused profile is too stale and
/// `--retrain-if-stale` was given: `run` trains its own and runs again.
#[derive(Debug, thiserror::Error)]
#[error("{}: retraining (--retrain-if-stale)", .0.warning())]
pub struct TooStale(pub StaleShare);

/// What a build's staleness is measured against: the reused profile's functions with counts and
/// its hottest functions. Read once per run however many builds and the report ask (each read is
/// a pass of llvm-profdata over the whole profile); one run has one compiler, so the first
/// build's compiler reads it for all.
#[derive(Clone, Debug, Default)]
pub struct ProfileFacts(std::sync::OnceLock<(Option<u64>, Option<Vec<String>>)>);

impl ProfileFacts {
    fn get(
        &self,
        profile: &ProfileInput,
        compiler: &Compiler,
    ) -> &(Option<u64>, Option<Vec<String>>) {
        self.0.get_or_init(|| {
            (
                functions_with_counts(profile, compiler),
                hot_functions(profile, compiler),
            )
        })
    }

    /// `variant`'s verdict: its stale functions against the profile's size and hottest.
    pub fn verdict(
        &self,
        profile: &ProfileInput,
        compiler: &Compiler,
        variant: &str,
        stale: &Staleness,
        policy: StalePolicy,
    ) -> StaleShare {
        let (n, hot) = self.get(profile, compiler);
        StaleShare::judge(variant, stale, *n, policy.threshold_pct).with_hot(stale, hot.as_deref())
    }
}

/// The profile's [`HOT`] hottest functions by their largest block count, llvm-profdata's own
/// ranking (clang's .profdata; GCC's gcda have no ranking tool). A function warm in many blocks
/// can drop a large total count and still rank below them: the dropped list shows totals.
pub fn hot_functions(p: &ProfileInput, compiler: &Compiler) -> Option<Vec<String>> {
    match (p, compiler.family) {
        (ProfileInput::Profdata(f), FlagFamily::Clang) => {
            crate::profile::hottest_functions(f, compiler.profdata().ok()?, HOT)
        }
        _ => None,
    }
}

/// The profile's functions with non-zero counts, as its own tool counts them.
pub fn functions_with_counts(p: &ProfileInput, compiler: &Compiler) -> Option<u64> {
    match (p, compiler.family) {
        (ProfileInput::Profdata(f), FlagFamily::Clang) => {
            let tool = compiler.profdata().ok()?;
            crate::profile::check_profdata(f, tool)
                .ok()?
                .functions_with_counts
        }
        (ProfileInput::GccDir(d), FlagFamily::Gcc) => {
            crate::profile::gcda_functions_with_counts(d, compiler.major)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stale(n: u64) -> Staleness {
        Staleness {
            mismatched: n,
            hottest: Vec::new(),
            names: Vec::new(),
        }
    }

    #[test]
    fn the_share_is_of_the_functions_with_counts_and_the_threshold_is_inclusive() {
        let p = StalePolicy::default();
        let v = StaleShare::judge("pgo+lto", &stale(30), Some(9000), p.threshold_pct);
        assert!((v.share_pct - 0.333).abs() < 0.01 && !v.over(), "{v:?}");
        assert!(v
            .warning()
            .contains("30 function(s) of the 9000 with counts (0.3 %"));
        assert!(StaleShare::judge("x", &stale(900), Some(9000), p.threshold_pct).over());
        // Unknown size: a mismatch counts in full, none is fresh.
        assert!(StaleShare::judge("x", &stale(1), None, p.threshold_pct).over());
        assert!(!StaleShare::judge("x", &stale(0), None, p.threshold_pct).over());
        // Threshold 0: always.
        let always = StalePolicy {
            threshold_pct: 0.0,
            retrain: true,
        };
        assert!(StaleShare::judge("x", &stale(0), Some(10), always.threshold_pct).over());
    }

    #[test]
    fn the_hot_share_matches_static_functions_across_paths() {
        let st = Staleness {
            mismatched: 3,
            hottest: Vec::new(),
            names: vec![
                "../../../source/sql/a.cc;_ZL3hotv".into(),
                "open_table".into(),
                "cold".into(),
            ],
        };
        let hot: Vec<String> = [
            "/old/tree/sql/a.cc;_ZL3hotv",
            "open_table",
            "my_hash_sort",
            "x",
        ]
        .map(String::from)
        .into();
        let v = StaleShare::judge("pgo+lto", &st, Some(5000), 10.0).with_hot(&st, Some(&hot));
        assert_eq!(v.hot, Some((2, 4)));
        assert!(
            v.warning().ends_with(", 2 of its 4 hottest by block count"),
            "{}",
            v.warning()
        );
        // No ranking: nothing said.
        let none = StaleShare::judge("x", &st, Some(5000), 10.0).with_hot(&st, None);
        assert_eq!(none.hot, None);
    }
}
