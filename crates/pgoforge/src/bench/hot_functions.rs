//! Where a transaction's instructions go, function by function. Cachegrind's output file counts
//! every function's instructions (Ir); the difference the totals take — the measured run minus
//! the warm-up-and-idle run, per transaction ([`super::cachegrind`]) — gives each function's
//! cost per transaction. The report lays the winner's hottest functions beside the baseline's,
//! so that where a goal is not reached the next lever is visible (issue 50 item 4).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// Functions kept per measured cell, the costliest first: enough for a top 20 of either side of
/// a comparison.
pub const KEPT: usize = 40;

/// One function's instructions per transaction.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FnCost {
    pub name: String,
    pub instructions: f64,
}

/// A function's name as two builds of one source both call it: the suffixes that LTO, BOLT and
/// GCC's cloning add to a function they split, rename or specialize are cut (`.llvm.123`,
/// `.cold`, `.lto_priv.0`, `[clone .isra.0]` …), so its parts count as one.
pub fn normalize(name: &str) -> String {
    let mut n = name.trim();
    for cut in [
        ".llvm.",
        ".cold",
        " [clone",
        ".lto_priv",
        ".isra.",
        ".part.",
        ".constprop.",
    ] {
        if let Some(i) = n.find(cut) {
            n = &n[..i];
        }
    }
    n.to_string()
}

/// Instructions per function (normalized names) of a cachegrind output file: the `Ir` column of
/// every count line, summed under the `fn=` above it, whatever its file.
pub fn parse(text: &str) -> HashMap<String, u64> {
    let mut out: HashMap<String, u64> = HashMap::new();
    let mut ir: Option<usize> = None;
    let mut current: Option<String> = None;
    for l in text.lines() {
        if let Some(events) = l.strip_prefix("events:") {
            ir = events.split_whitespace().position(|e| e == "Ir");
            continue;
        }
        if let Some(f) = l.strip_prefix("fn=") {
            current = Some(normalize(f));
            continue;
        }
        let (Some(col), Some(name)) = (ir, &current) else {
            continue;
        };
        // A count line is "LINE COUNT…": digits only; headers and `fl=` lines are not.
        let mut fields = l.split_whitespace();
        if !fields
            .next()
            .is_some_and(|f| f.bytes().all(|b| b.is_ascii_digit()))
        {
            continue;
        }
        if let Some(v) = fields.nth(col).and_then(|v| v.parse::<u64>().ok()) {
            *out.entry(name.clone()).or_insert(0) += v;
        }
    }
    out
}

/// Each function's cost per transaction, `(long − short) / events`, the [`KEPT`] costliest.
pub fn per_txn(
    short: &HashMap<String, u64>,
    long: &HashMap<String, u64>,
    events: u64,
) -> Vec<FnCost> {
    let mut v: Vec<FnCost> = long
        .iter()
        .map(|(name, l)| FnCost {
            name: name.clone(),
            instructions: (*l as f64 - short.get(name).copied().unwrap_or(0) as f64)
                / events.max(1) as f64,
        })
        .filter(|f| f.instructions > 0.0)
        .collect();
    v.sort_by(|a, b| b.instructions.total_cmp(&a.instructions));
    v.truncate(KEPT);
    v
}

/// One row of the comparison: a function's cost in the baseline and in the winner (None: not
/// among the side's kept functions).
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub name: String,
    pub baseline: Option<f64>,
    pub winner: Option<f64>,
}

/// The `n` functions costliest on either side (by the larger of the two), each with both costs.
pub fn side_by_side(baseline: &[FnCost], winner: &[FnCost], n: usize) -> Vec<Row> {
    let find = |v: &[FnCost], name: &str| v.iter().find(|f| f.name == name).map(|f| f.instructions);
    let mut names: Vec<&str> = Vec::new();
    for f in baseline.iter().chain(winner) {
        if !names.contains(&f.name.as_str()) {
            names.push(&f.name);
        }
    }
    let mut rows: Vec<Row> = names
        .into_iter()
        .map(|name| Row {
            name: name.to_string(),
            baseline: find(baseline, name),
            winner: find(winner, name),
        })
        .collect();
    let top = |r: &Row| r.baseline.unwrap_or(0.0).max(r.winner.unwrap_or(0.0));
    rows.sort_by(|a, b| top(b).total_cmp(&top(a)));
    rows.truncate(n);
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUT: &str = "desc: I1 cache: 32768 B, 64 B, 8-way associative\n\
        cmd: mariadbd\n\
        events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw Bc Bcm Bi Bim\n\
        fl=???\n\
        fn=row_sel_store_mysql_rec(unsigned char*, row_prebuilt_t*)\n\
        0 1000 5 0 300\n\
        fn=row_sel_store_mysql_rec(unsigned char*, row_prebuilt_t*) [clone .cold]\n\
        0 10\n\
        fl=ha_innodb.cc\n\
        fn=ha_innobase::index_read(unsigned char*).llvm.7711\n\
        12 400 1\n\
        13 100\n\
        fn=my_hash_sort_simple\n\
        7 50\n\
        summary: 1560 6 0 300 0 0 0 0 0 0 0 0 0\n";

    #[test]
    fn a_cachegrind_file_is_summed_per_function_with_its_split_parts_as_one() {
        let f = parse(OUT);
        assert_eq!(
            f.get("row_sel_store_mysql_rec(unsigned char*, row_prebuilt_t*)"),
            Some(&1010),
            "{f:?}"
        );
        assert_eq!(f.get("ha_innobase::index_read(unsigned char*)"), Some(&500));
        assert_eq!(f.get("my_hash_sort_simple"), Some(&50));
        assert_eq!(f.values().sum::<u64>(), 1560, "every count, once");
        assert_eq!(normalize("f.lto_priv.0"), "f");
        assert_eq!(normalize("g.cold.3"), "g");
    }

    #[test]
    fn costs_are_the_measured_run_minus_the_idle_one_per_transaction() {
        let short: HashMap<String, u64> = [("a".into(), 100), ("b".into(), 50)].into();
        let long: HashMap<String, u64> =
            [("a".into(), 1100), ("b".into(), 50), ("c".into(), 300)].into();
        let v = per_txn(&short, &long, 10);
        assert_eq!(
            v,
            [
                FnCost {
                    name: "a".into(),
                    instructions: 100.0
                },
                FnCost {
                    name: "c".into(),
                    instructions: 30.0
                }
            ],
            "b did no work per transaction"
        );
        let rows = side_by_side(
            &v,
            &[FnCost {
                name: "c".into(),
                instructions: 120.0,
            }],
            1,
        );
        assert_eq!(
            rows,
            [Row {
                name: "c".into(),
                baseline: Some(30.0),
                winner: Some(120.0)
            }]
        );
    }
}
