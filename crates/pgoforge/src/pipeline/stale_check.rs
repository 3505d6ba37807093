//! Whether a profile taken from an earlier release (`run --profile-from`) still fits this one
//! (issue 53): after the optimized build, the share of the profile's functions with counts whose
//! code changed so much that the compiler dropped their counts (builder/staleness.rs, from the
//! compiler's own diagnostics). At or above the threshold the run warns; with
//! `--retrain-if-stale` it stops after that build ([`TooStale`]) and `run` starts again with its
//! own instrumented build and training, every finished stage (source, baseline) reused.

use serde::{Deserialize, Serialize};

use crate::builder::staleness::{symbol, Staleness};
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

/// One build's staleness against its reused profile.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub variant: String,
    pub mismatched: u64,
    /// The profile's functions with non-zero counts (None: the profile tool could not say).
    pub with_counts: Option<u64>,
    pub share_pct: f64,
    pub threshold_pct: f64,
    /// Of the profile's [`HOT`] hottest functions, how many are among the stale ones (clang's
    /// profiles; None where the profile tool cannot rank them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot: Option<HotStale>,
}

/// How many of the profile's hottest functions the build found stale.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct HotStale {
    pub stale: u64,
    pub of: u64,
}

/// The hottest functions the staleness report looks at: the ones a training spends its time in.
pub const HOT: usize = 100;

impl Verdict {
    pub fn judge(
        variant: &str,
        stale: &Staleness,
        with_counts: Option<u64>,
        p: StalePolicy,
    ) -> Verdict {
        let share_pct = match with_counts {
            Some(n) if n > 0 => 100.0 * stale.mismatched as f64 / n as f64,
            // Without the profile's size, any mismatch counts in full.
            _ if stale.mismatched > 0 => 100.0,
            _ => 0.0,
        };
        Verdict {
            variant: variant.to_string(),
            mismatched: stale.mismatched,
            with_counts,
            share_pct,
            threshold_pct: p.threshold_pct,
            hot: None,
        }
    }

    /// With the profile's hottest functions (`hot`, hottest first): how many of them are stale.
    pub fn with_hot(mut self, stale: &Staleness, hot: Option<&[String]>) -> Verdict {
        self.hot = hot.filter(|h| !h.is_empty()).map(|h| {
            let names: std::collections::BTreeSet<&str> =
                stale.names.iter().map(|n| symbol(n)).collect();
            HotStale {
                stale: h.iter().filter(|n| names.contains(symbol(n))).count() as u64,
                of: h.len() as u64,
            }
        });
        self
    }

    pub fn over(&self) -> bool {
        self.share_pct >= self.threshold_pct
    }

    pub fn sentence(&self) -> String {
        let of = match self.with_counts {
            Some(n) => format!(" of the {n} with counts"),
            None => String::new(),
        };
        let hot = match self.hot {
            Some(h) => format!(", {} of its {} hottest by block count", h.stale, h.of),
            None => String::new(),
        };
        format!(
            "{}: the earlier release's profile is stale for {} function(s){of} ({:.1} %; the \
             threshold is {} %){hot}",
            self.variant, self.mismatched, self.share_pct, self.threshold_pct
        )
    }
}

/// The run stopped after the build because its reused profile is too stale and
/// `--retrain-if-stale` was given: `run` trains its own and runs again.
#[derive(Debug, thiserror::Error)]
#[error("{}: retraining (--retrain-if-stale)", .0.sentence())]
pub struct TooStale(pub Verdict);

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
    ) -> Verdict {
        let (n, hot) = self.get(profile, compiler);
        Verdict::judge(variant, stale, *n, policy).with_hot(stale, hot.as_deref())
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
        let v = Verdict::judge("pgo+lto", &stale(30), Some(9000), p);
        assert!((v.share_pct - 0.333).abs() < 0.01 && !v.over(), "{v:?}");
        assert!(v
            .sentence()
            .contains("30 function(s) of the 9000 with counts (0.3 %"));
        assert!(Verdict::judge("x", &stale(900), Some(9000), p).over());
        // Unknown size: a mismatch counts in full, none is fresh.
        assert!(Verdict::judge("x", &stale(1), None, p).over());
        assert!(!Verdict::judge("x", &stale(0), None, p).over());
        // Threshold 0: always.
        let always = StalePolicy {
            threshold_pct: 0.0,
            retrain: true,
        };
        assert!(Verdict::judge("x", &stale(0), Some(10), always).over());
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
        let v = Verdict::judge("pgo+lto", &st, Some(5000), StalePolicy::default())
            .with_hot(&st, Some(&hot));
        assert_eq!(v.hot, Some(HotStale { stale: 2, of: 4 }));
        assert!(
            v.sentence()
                .ends_with(", 2 of its 4 hottest by block count"),
            "{}",
            v.sentence()
        );
        // No ranking: nothing said.
        let none = Verdict::judge("x", &st, Some(5000), StalePolicy::default()).with_hot(&st, None);
        assert_eq!(none.hot, None);
    }
}
