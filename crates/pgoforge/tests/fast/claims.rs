//! What the committed READMEs and docs claim must be what their data carry: a sentence that says
//! two things are alike ("tied", "as fast", "no regression", "nothing measurable", "no
//! difference", "within what it allows", "measured no better") must give the interval that
//! allows it, or name the equivalence margin and its test. Non-significance alone is no such
//! claim (issue 54: "no regression" where the data allowed −54.9 %). A word in double quotes is
//! mentioned, not claimed (a doc about the words themselves); in backticks it is what a report
//! prints, and is checked like any claim.

use std::fs;
use std::path::{Path, PathBuf};

use regex::Regex;

const VERDICT: &str = r"(?i)\b(tied|as fast|no regression|nothing measurable|no difference|within what it allows|measured no better|measured alike|alike gains|gains? alike|capacity alike)\b";

fn docs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    // The front page, the history and the driver's guide live outside docs/.
    let mut out = vec![
        root.join("README.md"),
        root.join("CHANGELOG.md"),
        root.join("crates/oltp/README.md"),
    ];
    let mut stack = vec![root.join("docs")];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().to_string();
            if p.is_dir() {
                stack.push(p);
            } else if name.ends_with(".md") && !name.starts_with("report") {
                // Reports are rendered from their results and checked byte for byte elsewhere.
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Sentences of a Markdown file: paragraphs (lines joined up to a blank line, a heading, a list
/// item or a table row), split after a full stop.
fn sentences(text: &str) -> Vec<String> {
    let mut paras: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut fenced = false;
    let numbered = Regex::new(r"^\d+\. ").unwrap();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        let t = line.trim();
        let starts = t.is_empty()
            || t.starts_with('#')
            || t.starts_with('|')
            || t.starts_with("- ")
            || t.starts_with("* ")
            || numbered.is_match(t);
        if starts && !cur.is_empty() {
            paras.push(std::mem::take(&mut cur));
        }
        if !t.is_empty() {
            cur.push(' ');
            cur.push_str(t);
        }
    }
    paras.push(cur);
    let split = Regex::new(r"[.;:!?]\s+(?:\(?[A-Z*`_])").unwrap();
    let mut out = Vec::new();
    for p in paras {
        let mut last = 0;
        for m in split.find_iter(&p) {
            out.push(p[last..m.start() + 1].trim().to_string());
            last = m.start() + 1;
        }
        out.push(p[last..].trim().to_string());
    }
    out
}

/// An interval (−1.2 % to +3.4 %, [−1.2, +3.4], −26.6 … +42.9 %, ±1.8 %) or a margin named with
/// its test.
fn carries_its_evidence(s: &str) -> bool {
    let n = r"[+−-]?\d+(?:\.\d+)?\s*%?";
    let interval = Regex::new(&format!(
        r"{n}\s*(?:to|…|\.\.\.|–)\s*{n}|\[\s*{n}\s*,\s*{n}\s*\]|±\s*\d"
    ))
    .unwrap();
    let margin = s.contains("margin")
        && (s.contains("TOST") || s.contains("non-inferiority") || s.contains("equivalen"));
    interval.is_match(s) || margin
}

#[test]
fn committed_docs_claim_no_equivalence_without_its_interval_or_test() {
    let verdict = Regex::new(VERDICT).unwrap();
    let mut bad = Vec::new();
    let files = docs();
    assert!(files.len() > 20, "{files:?}");
    let quoted = Regex::new(r#""[^"]*"|“[^”]*”"#).unwrap();
    for f in &files {
        for s in sentences(&fs::read_to_string(f).unwrap()) {
            let used = quoted.replace_all(&s, "");
            if verdict.is_match(&used) && !carries_its_evidence(&s) {
                bad.push(format!("{}: {s}", f.display()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} sentence(s) claim more than they show (give the interval the data allow, or the \
         margin and its test):\n{}",
        bad.len(),
        bad.join("\n")
    );
}

/// The check itself can fail, and passes what it should.
#[test]
fn the_claim_check_tells_a_claim_from_its_evidence() {
    let verdict = Regex::new(VERDICT).unwrap();
    let flagged = |s: &str| verdict.is_match(s) && !carries_its_evidence(s);
    assert!(flagged("BOLT and PGO are tied."));
    assert!(flagged("held-out workloads: no regression"));
    assert!(flagged(
        "the report says `held-out workloads (tpcc): no regression`"
    ));
    assert!(flagged(
        "-march=native gives nothing measurable over PGO+LTO"
    ));
    assert!(!flagged(
        "no significant difference; the data allow -14.0% to +22.0%"
    ));
    assert!(!flagged(
        "nothing measurable: the data allow −26.6 … +42.9 % on tpcc"
    ));
    assert!(!flagged(
        "equivalent within ±3% (TOST at 5%): tied within the margin"
    ));
    assert!(!flagged("not slower than -3% (one-sided 95% bound +0.8%)"));
    // Two runs' point estimates called alike (issue 72): the interval or the test, or nothing.
    assert!(flagged("the two trainings give alike gains on this host"));
    assert!(flagged("Debian's binary and the baseline measured alike."));
    assert!(flagged("capacity alike"));
    assert!(!flagged(
        "both compilers alike; the data allow −2.0 % to +3.1 %"
    ));
    let s = sentences(
        "First one is tied. Second [−1.2, +3.4] is\nfine.\n\n- a list item: no regression",
    );
    assert_eq!(s.len(), 3, "{s:?}");
}

/// A report that labels a cell "not significant" must not show a Holm p below 0.05 beside it:
/// such a cell is significant and smaller than the minimum change, which the tables say as
/// "below the minimum change" (issue 72: mariadb-10.11-myrocks-training's −1.7 %, Holm p 0.018).
#[test]
fn no_committed_report_calls_a_cell_with_a_holm_p_below_005_not_significant() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/results");
    let holm = Regex::new(r"\| [0-9.]+ \(([0-9.]+)\) \|").unwrap();
    let mut checked = 0;
    for e in fs::read_dir(&root).unwrap() {
        let md = e.unwrap().path().join("report.md");
        let Ok(text) = fs::read_to_string(&md) else {
            continue;
        };
        for row in text.lines().filter(|l| l.contains("(not significant)")) {
            let Some(p) = holm.captures(row) else {
                continue;
            };
            checked += 1;
            let p: f64 = p[1].parse().unwrap();
            assert!(
                p >= 0.05,
                "{}: a cell labelled not significant has Holm p {p}:\n{row}",
                md.display()
            );
        }
    }
    assert!(checked > 10, "the rows were found ({checked})");
}
