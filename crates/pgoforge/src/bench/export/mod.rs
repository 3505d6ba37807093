//! The report's formats, one file each behind one trait: text for a terminal, Markdown laid out as
//! published PGO benchmarks are, a self-contained HTML page with charts, JSON and CSV. Markdown and HTML render the
//! same [`document`] (headings, paragraphs, tables, lists), so they always say the same thing.

pub mod csv;
pub mod document;
pub mod html;
pub mod json;
pub mod markdown;
pub mod matrix;
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

/// `+12.3%` for a ratio of 1.123.
pub(crate) fn pct(r: f64) -> String {
    format!("{:+.1}%", (r - 1.0) * 100.0)
}
