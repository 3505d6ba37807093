//! The train × evaluate matrix as a table: one row per workload and thread count, one column per
//! contender (a training mix's build), each cell the gain against the baseline with its interval
//! and verdict. Every significantly slower cell is a REGRESSION, whichever workload it is on: the
//! question a matrix answers is whether any training slows anything down.

use super::Table;
use crate::bench::report::{is_held_out, Report};
use crate::bench::stats::Verdict;

/// The matrix of a report whose plan trained several mixes (`None` otherwise).
pub fn table(r: &Report) -> Option<Table> {
    if r.plan.training.is_empty() {
        return None;
    }
    let columns: Vec<&str> = r.plan.contenders[1..]
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    let mut header = vec!["workload".to_string(), "threads".to_string()];
    header.extend(columns.iter().map(|c| match r.plan.mix_of(c) {
        Some(m) => format!("{c} (trained on {m})"),
        None => c.to_string(),
    }));
    let mut rows = Vec::new();
    for w in &r.plan.spec.workloads {
        for t in r.plan.spec.threads_of(*w) {
            let mut row = vec![w.to_string(), t.to_string()];
            for c in &columns {
                let cell = r
                    .cells
                    .iter()
                    .find(|x| x.contender == *c && x.workload == w.to_string() && x.threads == t);
                row.push(
                    match cell.and_then(|x| x.tps_vs_baseline.as_ref().map(|k| (x, k))) {
                        None => "-".into(),
                        Some((x, k)) => format!(
                            "{:+.1}% {} {}{}",
                            (k.ratio - 1.0) * 100.0,
                            super::interval_brackets(super::interval_pct(k)),
                            match k.verdict {
                                Verdict::Faster => "faster",
                                Verdict::Slower => "REGRESSION",
                                _ if k.below_minimum() => "below min.",
                                _ => "n.s.",
                            },
                            if is_held_out(&r.plan, x) { " (h)" } else { "" }
                        ),
                    },
                );
            }
            rows.push(row);
        }
    }
    Some(Table { header, rows })
}

/// The sentence above the table.
pub fn lead(r: &Report) -> String {
    let comparisons = r
        .cells
        .iter()
        .filter(|c| c.tps_vs_baseline.is_some())
        .count();
    format!(
        "Train × evaluate matrix: TPS against {} as gain [95% interval] and verdict after Holm \
         over all {comparisons} comparisons (faster, n.s.: no significant difference, \
         {}REGRESSION: significantly slower); (h): a workload the column's profile was not \
         trained on. {}",
        r.plan.contenders[0].name,
        if r.cells
            .iter()
            .filter_map(|c| c.tps_vs_baseline.as_ref())
            .any(|k| k.below_minimum())
        {
            "below min.: significant but below the minimum change, "
        } else {
            ""
        },
        regressions_sentence(r)
    )
}

/// "No cell is significantly slower than the baseline." or the cells that are.
pub fn regressions_sentence(r: &Report) -> String {
    let slower: Vec<String> = r
        .cells
        .iter()
        .filter(|c| {
            c.tps_vs_baseline
                .as_ref()
                .is_some_and(|k| k.verdict == Verdict::Slower)
        })
        .map(|c| format!("{} {} at {} threads", c.contender, c.workload, c.threads))
        .collect();
    if slower.is_empty() {
        "No cell is significantly slower than the baseline.".into()
    } else {
        format!("Regressions: {}.", slower.join("; "))
    }
}
