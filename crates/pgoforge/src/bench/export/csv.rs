//! One line per cell (report.csv), for spreadsheets.

use std::fmt::Write;

use anyhow::Result;

use super::Exporter;
use crate::bench::report::Report;

pub struct Csv;

impl Exporter for Csv {
    fn file_name(&self) -> &'static str {
        "report.csv"
    }

    fn render(&self, r: &Report) -> Result<String> {
        let mut o = String::from("contender,workload,threads,rounds,tps_median,tps_mean,tps_ci_low,tps_ci_high,p95_ms_median,ratio,ratio_ci_low,ratio_ci_high,p_value,p_holm,verdict,latency_ms_mean_median\n");
        for c in &r.cells {
            let (ratio, lo, hi, p, v) = match &c.tps_vs_baseline {
                Some(v) => (
                    format!("{:.4}", v.ratio),
                    // Empty where too few rounds bound nothing.
                    match v.shown_interval() {
                        (lo, hi) if hi.is_finite() => format!("{lo:.4}"),
                        _ => String::new(),
                    },
                    match v.shown_interval() {
                        (_, hi) if hi.is_finite() => format!("{hi:.4}"),
                        _ => String::new(),
                    },
                    format!("{:.4},{:.4}", v.p_value, v.p_holm),
                    v.sentence(),
                ),
                None => (
                    String::new(),
                    String::new(),
                    String::new(),
                    ",".into(),
                    "baseline".into(),
                ),
            };
            let _ = writeln!(
                o,
                "{},{},{},{},{:.2},{:.2},{:.2},{:.2},{:.3},{ratio},{lo},{hi},{p},\"{v}\",{}",
                c.contender,
                c.workload,
                c.threads,
                c.tps.n,
                c.tps.median,
                c.tps.mean,
                c.tps.ci95.0,
                c.tps.ci95.1,
                c.p95_ms.median,
                c.mean_ms
                    .as_ref()
                    .map(|m| format!("{:.3}", m.median))
                    .unwrap_or_default()
            );
        }
        Ok(o)
    }
}
