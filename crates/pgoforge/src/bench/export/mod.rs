//! The report's formats, one file each behind one trait: text for a terminal, Markdown laid out as
//! published PGO benchmarks are, a self-contained HTML page with charts, JSON and CSV. Markdown and HTML render the
//! same [`document`] (headings, paragraphs, tables, lists), so they always say the same thing.

pub mod csv;
pub mod document;
pub mod gain_chart;
pub mod html;
pub mod json;
pub mod markdown;
pub mod matrix;
mod svg;
pub mod sweep;
pub mod text;

use std::path::Path;

use anyhow::Result;

use super::report::Report;

/// One output format of a report.
pub trait Exporter {
    /// The file it is written to in the run directory.
    fn file_name(&self) -> &'static str;
    fn render(&self, r: &Report) -> Result<String>;
}

/// Every format, in the order they are written.
pub const ALL: [&dyn Exporter; 5] = [
    &markdown::Markdown,
    &json::Json,
    &csv::Csv,
    &text::Text,
    &html::Html,
];

/// Writes every format into the run directory, each atomically.
pub fn write_all(dir: &Path, r: &Report) -> Result<()> {
    for e in ALL {
        crate::infra::fs::write_atomic(&dir.join(e.file_name()), e.render(r)?)?;
    }
    Ok(())
}

/// A table as the formats render it: a header row and rows of cells.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// What the report says of the host: its per-second noise, then the CPU steal behind it (or its
/// absence on a noisy host).
pub fn host_sentences(r: &Report) -> Vec<String> {
    let Some(cv) = r.per_second_cv else {
        return Vec::new();
    };
    let noisy = cv > crate::bench::run::NOISY_CV;
    std::iter::once(host_noise_sentence(cv))
        .chain(crate::bench::steal::Steal::of(&r.load_trace).and_then(|s| s.sentence(noisy)))
        .collect()
}

/// The host's per-second noise in words, flagged when it is above what benchmarking tolerates
/// ([`crate::bench::run::NOISY_CV`]).
fn host_noise_sentence(cv: f64) -> String {
    let noisy = cv > crate::bench::run::NOISY_CV;
    format!(
        "Host noise: per-second throughput varied {:.1}% within runs (median over the OLTP runs; \
         a quiet host shows about 3%, a noisy one 10-15%){}.",
        cv * 100.0,
        if noisy {
            " — a NOISY host: the intervals are wide for that reason, not for lack of rounds alone"
        } else {
            ""
        }
    )
}

/// A comparison's shown interval as percent changes; None when too few rounds bound it (its
/// upper end infinite), the rule every table of the report applies.
pub(crate) fn interval_pct(k: &crate::bench::stats::Comparison) -> Option<(f64, f64)> {
    let (lo, hi) = k.shown_interval();
    hi.is_finite()
        .then_some(((lo - 1.0) * 100.0, (hi - 1.0) * 100.0))
}

/// `[+2.0, +8.3]` for [`interval_pct`], `[unbounded]` without one.
pub(crate) fn interval_brackets(i: Option<(f64, f64)>) -> String {
    i.map_or("[unbounded]".into(), |(lo, hi)| {
        format!("[{lo:+.1}, {hi:+.1}]")
    })
}

/// `+12.3%` for a ratio of 1.123.
pub(crate) fn pct(r: f64) -> String {
    format!("{:+.1}%", (r - 1.0) * 100.0)
}
