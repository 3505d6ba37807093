//! Snapshot tests of the reports: every committed run under docs/results/ is rendered again from its
//! stored results (plan.json, results.jsonl, environment.json) and must give the committed
//! report.md, report.txt and report.csv byte for byte — the exporters may be rearranged, the reports
//! users hold may not change by accident. The HTML is checked for its structure.

use std::fs;
use std::path::{Path, PathBuf};

use pgoforge::bench::export::{self, Exporter};
use pgoforge::bench::report;

fn committed_runs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/results");
    let mut runs: Vec<PathBuf> = fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|d| d.join("plan.json").is_file() && d.join("report.md").is_file())
        .collect();
    runs.sort();
    runs
}

#[test]
fn committed_reports_regenerate_identically_from_their_results() {
    let runs = committed_runs();
    assert!(runs.len() >= 3, "the committed runs are there: {runs:?}");
    for dir in runs {
        let r = report::build(&dir).unwrap_or_else(|e| panic!("{}: {e:#}", dir.display()));
        for e in [
            &export::markdown::Markdown as &dyn Exporter,
            &export::text::Text,
            &export::csv::Csv,
        ] {
            let committed = dir.join(e.file_name());
            if !committed.is_file() {
                continue;
            }
            let want = fs::read_to_string(&committed).unwrap();
            let got = e.render(&r).unwrap();
            assert!(
                got == want,
                "{} differs from what its results give now:\n--- committed\n{want}\n--- now\n{got}",
                committed.display()
            );
        }
        let html = export::html::Html.render(&r).unwrap();
        // Every table row of the Markdown is a row of the HTML, from the same document.
        let md_rows = export::markdown::Markdown
            .render(&r)
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("| "))
            .count();
        assert_eq!(html.matches("<tr>").count(), md_rows, "{}", dir.display());
        assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
        assert!(html.contains("<svg"), "charts in {}", dir.display());
    }
}
