//! How stale a build's profile was, from the compiler's own words in the build log: the
//! functions whose code no longer matches their profile record and whose counts were therefore
//! dropped — clang's "function control flow change detected (hash mismatch) NAME Hash = H up to
//! N count discarded" (the function's largest count), GCC's "the control flow of function 'NAME'
//! does not match its profile data" — each function once however many units compiled it. A
//! profile trained on the same source and flags leaves none; one from another release
//! (`run --profile-from`) shows here what it no longer covers.

use serde::{Deserialize, Serialize};

/// The functions whose profile the compiler dropped.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Staleness {
    /// Distinct functions.
    pub mismatched: u64,
    /// The hottest of them (clang: by the largest count dropped), at most five, with the count
    /// where the compiler gives one.
    pub hottest: Vec<(String, Option<u64>)>,
    /// Every one of them, as the compiler names them (builds before 2026-12-05 kept none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub names: Vec<String>,
}

/// The symbol of a profile's function name: clang names a static function `FILE;SYMBOL`, and
/// the file part differs between a profile and a build at another path.
pub fn symbol(name: &str) -> &str {
    name.rsplit(';').next().unwrap_or(name)
}

impl Staleness {
    pub fn sentence(&self) -> String {
        format!(
            "{} function(s) no longer match their profile and were built without it (the \
             profile is stale: trained on other source or flags){}",
            self.mismatched,
            hottest_clause(&self.hottest)
        )
    }
}

/// `; the hottest: open_table (up to 65100000), free_root` — nothing when there are none.
fn hottest_clause(hottest: &[(String, Option<u64>)]) -> String {
    if hottest.is_empty() {
        return String::new();
    }
    let names: Vec<String> = hottest
        .iter()
        .map(|(n, c)| match c {
            Some(c) => format!("{n} (up to {c})"),
            None => n.clone(),
        })
        .collect();
    format!("; the hottest: {}", names.join(", "))
}

/// A build's staleness judged against the profile it reused: how many of the profile's functions
/// with counts the compiler dropped, against the threshold, and how many of the profile's hottest
/// — the one type the run's warning, its stop for retraining and the report's "keeping up with
/// releases" section all read (stored in profile-reuse.json).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StaleShare {
    pub variant: String,
    /// Functions whose code changed so much that the compiler dropped their counts.
    pub mismatched: u64,
    /// The profile's functions with non-zero counts (None: the profile tool could not say).
    pub with_counts: Option<u64>,
    pub share_pct: f64,
    pub threshold_pct: f64,
    /// Of the profile's hottest functions, (how many are stale, how many were looked at): clang's
    /// profiles; None where the profile tool cannot rank them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hot: Option<(u64, u64)>,
    /// The hottest dropped functions, with the largest count dropped where the compiler says.
    pub hottest: Vec<(String, Option<u64>)>,
}

impl StaleShare {
    /// `stale` against a profile of `with_counts` functions and a threshold in percent.
    pub fn judge(
        variant: &str,
        stale: &Staleness,
        with_counts: Option<u64>,
        threshold_pct: f64,
    ) -> StaleShare {
        let share_pct = match with_counts {
            Some(n) if n > 0 => 100.0 * stale.mismatched as f64 / n as f64,
            // Without the profile's size, any mismatch counts in full.
            _ if stale.mismatched > 0 => 100.0,
            _ => 0.0,
        };
        StaleShare {
            variant: variant.to_string(),
            mismatched: stale.mismatched,
            with_counts,
            share_pct,
            threshold_pct,
            hot: None,
            hottest: stale.hottest.clone(),
        }
    }

    /// With the profile's hottest functions (`hot`, hottest first): how many of them are stale.
    pub fn with_hot(mut self, stale: &Staleness, hot: Option<&[String]>) -> StaleShare {
        self.hot = hot.filter(|h| !h.is_empty()).map(|h| {
            let names: std::collections::BTreeSet<&str> =
                stale.names.iter().map(|n| symbol(n)).collect();
            (
                h.iter().filter(|n| names.contains(symbol(n))).count() as u64,
                h.len() as u64,
            )
        });
        self
    }

    pub fn over(&self) -> bool {
        self.share_pct >= self.threshold_pct
    }

    /// The run's words, as it builds: how stale the earlier release's profile is here.
    pub fn warning(&self) -> String {
        let of = match self.with_counts {
            Some(n) => format!(" of the {n} with counts"),
            None => String::new(),
        };
        let hot = match self.hot {
            Some((stale, of)) => format!(", {stale} of its {of} hottest by block count"),
            None => String::new(),
        };
        format!(
            "{}: the earlier release's profile is stale for {} function(s){of} ({:.1} %; the \
             threshold is {} %){hot}",
            self.variant, self.mismatched, self.share_pct, self.threshold_pct
        )
    }

    /// The report's line: the same figures and the hottest functions dropped.
    pub fn sentence(&self) -> String {
        let of = match self.with_counts {
            Some(n) => format!(" of the {n} functions with counts"),
            None => String::new(),
        };
        let hot = match self.hot {
            Some((stale, of)) => format!(", {stale} of the profile's {of} hottest by block count"),
            None => String::new(),
        };
        format!(
            "{}: {} function(s){of} no longer match the profile and were built without it \
             ({:.1} %; threshold {} %){hot}{}",
            self.variant,
            self.mismatched,
            self.share_pct,
            self.threshold_pct,
            hottest_clause(&self.hottest)
        )
    }
}

/// One log line's mismatched function and the count dropped, if it is such a line.
fn mismatch(line: &str) -> Option<(String, Option<u64>)> {
    if let Some(rest) = line.split("(hash mismatch) ").nth(1) {
        let name = rest.split(" Hash = ").next()?.trim().to_string();
        let count = rest
            .split(" up to ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse().ok());
        return Some((name, count));
    }
    if line.contains("[-Wcoverage-mismatch]") && line.contains("the control flow of function") {
        let name = line.split('\'').nth(1)?.to_string();
        return Some((name, None));
    }
    None
}

/// The staleness a build log shows. A function named `main` is left out: every program the build
/// links has one, the instrumented build runs its own tools (comp_err, gen_lex_hash, uca-dump)
/// and each writes a `main` record into the training's profile, so every other program's `main`
/// "mismatches" on a fresh profile of the same source — a warning nobody could act on.
pub fn of_log(text: &str) -> Staleness {
    let mut seen: std::collections::BTreeMap<String, Option<u64>> = Default::default();
    let counted = text
        .lines()
        .filter_map(mismatch)
        .filter(|(name, _)| symbol(name) != "main");
    for (name, count) in counted {
        let e = seen.entry(name).or_insert(count);
        *e = (*e).max(count);
    }
    let mut hottest: Vec<(String, Option<u64>)> = seen.clone().into_iter().collect();
    hottest.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    hottest.truncate(5);
    Staleness {
        mismatched: seen.len() as u64,
        hottest,
        names: seen.into_keys().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clang_and_gcc_mismatches_are_counted_once_per_function() {
        let log = "\
warning: src/kv.c: function control flow change detected (hash mismatch) kv_workload Hash = 713764388896932355 up to 58685 count discarded [-Wbackend-plugin]
warning: src/b.c: function control flow change detected (hash mismatch) kv_workload Hash = 713764388896932355 up to 60000 count discarded [-Wbackend-plugin]
warning: src/c.c: function control flow change detected (hash mismatch) _ZL4coldv Hash = 1 up to 3 count discarded [-Wbackend-plugin]
/s/x.cc:10:1: warning: the control flow of function 'row_search_mvcc' does not match its profile data (counter 'arcs') [-Wcoverage-mismatch]
/s/y.cc:3:1: warning: source locations for function 'yyparse' have changed, the profile data may be out of date [-Wcoverage-mismatch]
[ 50%] Building C object";
        let s = of_log(log);
        assert_eq!(s.mismatched, 3);
        assert_eq!(
            s.hottest,
            [
                ("kv_workload".to_string(), Some(60000)),
                ("_ZL4coldv".to_string(), Some(3)),
                ("row_search_mvcc".to_string(), None)
            ]
        );
        assert!(s.sentence().contains("kv_workload (up to 60000)"));
        assert_eq!(s.names, ["_ZL4coldv", "kv_workload", "row_search_mvcc"]);
        assert_eq!(symbol("../../../source/a.cc;_ZL4coldv"), "_ZL4coldv");
        assert_eq!(symbol("kv_workload"), "kv_workload");
        assert_eq!(of_log("nothing stale here").mismatched, 0);
        // The build tools' `main` records, from a fresh default run's build log (2026-12-07).
        let tools = "\
warning: ../../source/strings/uca-dump.c: function control flow change detected (hash mismatch) main Hash = 137801630453862945 up to 2 count discarded [-Wbackend-plugin]
warning: ../../source/sql/gen_lex_hash.cc: function control flow change detected (hash mismatch) main Hash = 784007058953177093 up to 2 count discarded [-Wbackend-plugin]
warning: ../../source/extra/comp_err.c: function control flow change detected (hash mismatch) main Hash = 926155495236442084 up to 2 count discarded [-Wbackend-plugin]";
        assert_eq!(of_log(tools), Staleness::default());
        assert_eq!(of_log(&format!("{tools}\n{log}")).mismatched, 3);
    }
}
