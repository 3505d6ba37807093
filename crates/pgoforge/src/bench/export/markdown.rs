//! Markdown (report.md), laid out as published PGO benchmarks are.

use anyhow::Result;

use super::document::{document, Block, Table};
use super::Exporter;
use crate::bench::report::Report;

pub struct Markdown;

/// A Markdown table, one line per row.
pub fn table(t: &Table) -> String {
    let line = |cells: &[String]| format!("| {} |\n", cells.join(" | "));
    let mut o = line(&t.header);
    o.push_str(&format!("|{}\n", "---|".repeat(t.header.len())));
    for r in &t.rows {
        o.push_str(&line(r));
    }
    o
}

fn items(items: &[String]) -> String {
    items.iter().map(|i| format!("- {i}\n")).collect()
}

/// Renders a document; blocks are separated by one blank line.
pub fn render(blocks: &[Block]) -> String {
    let parts: Vec<String> = blocks
        .iter()
        .map(|b| match b {
            Block::Title(t) => format!("# {t}\n"),
            Block::Paragraph(p) => format!("{p}\n"),
            Block::List(lead, i) => format!("{lead}\n\n{}", items(i)),
            Block::Notes(lead, i) => format!("{lead}\n{}", items(i)),
            Block::Table(t) => table(t),
            Block::Counts(lead, t) => format!("{lead}\n\n{}", table(t)),
        })
        .collect();
    parts.join("\n")
}

impl Exporter for Markdown {
    fn file_name(&self) -> &'static str {
        "report.md"
    }

    fn render(&self, r: &Report) -> Result<String> {
        Ok(render(&document(r)))
    }
}
