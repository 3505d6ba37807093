//! A terminal table (report.txt, and what `run` and `bench` print).

use std::fmt::Write;

use anyhow::Result;

use super::document::{cachegrind_skips, cachegrind_table, warnings};
use super::{markdown, pct, Exporter};
use crate::bench::report::Report;

pub struct Text;

/// The client's path to the servers, and the threads chosen per workload over it.
fn client_path(o: &mut String, r: &Report) {
    if let Some(n) = &r.network {
        let _ = writeln!(o, "{}", n.sentence());
    }
    if let Some(s) = &r.saturation {
        for c in &s.choices {
            let _ = writeln!(o, "client threads chosen: {}", c.sentence());
        }
    }
}

pub fn text(r: &Report) -> String {
    let mut o = String::new();
    if let Some(h) = &r.headline {
        let _ = writeln!(
            o,
            "{}\n{}\n",
            h.sentence(),
            markdown::table(&super::document::headline_table(h)).trim_end()
        );
        for note in h.cells.iter().filter_map(|c| c.counts_note()) {
            let _ = writeln!(o, "{note}");
        }
    }
    let _ = writeln!(
        o,
        "{:<16} {:<22} {:>4}  {:>10} {:>9}  {:>9}  verdict (TPS vs {})",
        "contender", "workload", "thr", "TPS median", "±CI95", "p95 ms", r.plan.contenders[0].name
    );
    for c in &r.cells {
        let half = (c.tps.ci95.1 - c.tps.ci95.0) / 2.0;
        let verdict = c
            .tps_vs_baseline
            .as_ref()
            .map_or("baseline".to_string(), |v| v.sentence());
        let verdict = match &c.capacity_vs_baseline {
            Some(k) => format!("{verdict}; capacity {}", super::document::capacity_cell(k)),
            None => verdict,
        };
        let _ = writeln!(
            o,
            "{:<16} {:<22} {:>4}  {:>10.0} {:>9.0}  {:>9.2}  {verdict}",
            c.contender, c.workload, c.threads, c.tps.median, half, c.p95_ms.median
        );
    }
    for g in &r.geomeans {
        let _ = writeln!(
            o,
            "geometric mean over workloads, {} {}: {}",
            g.contender,
            g.at(),
            pct(g.ratio)
        );
    }
    if let Some(d) = &r.decision {
        let _ = writeln!(o, "decision: {}", d.sentence());
    }
    if let Some(h) = &r.held_out {
        let _ = writeln!(o, "{}", h.sentence());
    }
    if let Some(p) = &r.profile_reuse {
        let _ = writeln!(o, "{}", p.lead());
        for line in p.lines() {
            let _ = writeln!(o, "  {line}");
        }
    }
    if let Some(t) = super::matrix::table(r) {
        let _ = writeln!(
            o,
            "{}\n{}",
            super::matrix::lead(r),
            markdown::table(&t).trim_end()
        );
    }
    if let Some(t) = super::sweep::table(r) {
        let _ = writeln!(
            o,
            "{}\n{}",
            super::sweep::lead(r),
            markdown::table(&t).trim_end()
        );
    }
    for line in super::host_sentences(r) {
        let _ = writeln!(o, "{line}");
    }
    if let Some(n) = &r.own_noise {
        let _ = writeln!(o, "{}", n.sentence());
    }
    if let Some(n) = &r.pooled_noise {
        let _ = writeln!(o, "{}", n.sentence());
    }
    if let Some(p) = &r.position_effect {
        let _ = writeln!(o, "{}", p.sentence());
    }
    client_path(&mut o, r);
    if let Some(g) = &r.gate {
        for line in g.report_lines() {
            let _ = writeln!(o, "gate (mysql-test-run): {line}");
        }
    }
    if let Some(cal) = &r.noise_floor {
        let floors: Vec<String> = cal
            .floors
            .iter()
            .map(|f| format!("{} {:.1}%", f.workload, f.sd_log_ratio * 100.0))
            .collect();
        let _ = writeln!(
            o,
            "this machine's A/A noise floor per round (pgoforge calibrate): {}",
            floors.join(", ")
        );
    }
    if !r.cachegrind.is_empty() {
        let t = cachegrind_table(&r.cachegrind, &r.plan.contenders[0].name);
        let _ = writeln!(
            o,
            "per transaction under cachegrind (deterministic):\n{}",
            markdown::table(&t).trim_end()
        );
    }
    for s in cachegrind_skips(&r.cachegrind_skipped) {
        let _ = writeln!(o, "not measured under cachegrind: {s}");
    }
    for w in warnings(r) {
        let _ = writeln!(o, "warning: {w}");
    }
    o
}

impl Exporter for Text {
    fn file_name(&self) -> &'static str {
        "report.txt"
    }

    fn render(&self, r: &Report) -> Result<String> {
        Ok(text(r))
    }
}
