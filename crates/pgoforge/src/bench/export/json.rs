//! The whole report as JSON (report.json): the typed model, for machines.

use anyhow::Result;

use super::Exporter;
use crate::bench::report::Report;

pub struct Json;

impl Exporter for Json {
    fn file_name(&self) -> &'static str {
        "report.json"
    }

    fn render(&self, r: &Report) -> Result<String> {
        Ok(serde_json::to_string_pretty(r)?)
    }
}
