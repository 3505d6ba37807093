//! `pgoforge pool` on committed runs of the same kind of build (pgo+lto+bolt against Debian's
//! server of the same release) from three hosts: each host's figures are its own report's
//! headline figures, and the pooled interval counts the spread between hosts.

use std::path::Path;
use std::process::Command;

const RUNS: [&str; 3] = [
    "mariadb-10.11-default-saturated",
    "mariadb-10.11-clang-vs-debian",
    "mariadb-10.11-default-from-empty-fast",
];

fn results(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/results")
        .join(name)
        .display()
        .to_string()
}

/// The headline's "vs debian" percentage for `workload` in a committed report.md.
fn headline_pct(run: &str, workload: &str) -> Option<f64> {
    let md = std::fs::read_to_string(Path::new(&results(run)).join("report.md")).unwrap();
    let at = md.find("| workload | threads | pgo+lto+bolt vs debian |")?;
    let line = md[at..]
        .lines()
        .find(|l| l.starts_with(&format!("| {workload} |")))?;
    let cell = line.split('|').nth(3)?;
    let num = cell
        .split_whitespace()
        .find(|w| w.starts_with('+') || w.starts_with('-'))?;
    num.trim_end_matches('%').parse().ok()
}

#[test]
fn each_hosts_figures_are_its_reports_and_the_pooled_interval_counts_the_spread() {
    let mut args = vec!["pool".to_string()];
    args.extend(RUNS.iter().map(|r| results(r)));
    args.extend(["--contender=pgo+lto+bolt", "--reference=debian", "--json"].map(String::from));
    let o = Command::new(env!("CARGO_BIN_EXE_pgoforge"))
        .args(&args)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let t: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = t["rows"].as_array().unwrap();
    let point = rows
        .iter()
        .find(|r| r["workload"] == "oltp_point_select")
        .unwrap();
    let mut widest_host = 0.0f64;
    for (i, run) in RUNS.iter().enumerate() {
        let h = &point["hosts"][i];
        let pct = (h["ratio"].as_f64().unwrap() - 1.0) * 100.0;
        let reported = headline_pct(run, "oltp_point_select")
            .unwrap_or_else(|| panic!("{run}'s report has a headline against debian"));
        assert!((pct - reported).abs() < 0.06, "{run}: {pct} vs {reported}");
        let ci = (
            h["ci95"][0].as_f64().unwrap(),
            h["ci95"][1].as_f64().unwrap(),
        );
        widest_host = widest_host.max(ci.1 - ci.0);
    }
    let p = &point["pooled"];
    assert_eq!(p["hosts"], 3);
    let pooled = (
        p["ci95"][0].as_f64().unwrap(),
        p["ci95"][1].as_f64().unwrap(),
    );
    // Hosts gain +15 % to +68 % with narrow intervals each: the spread, not the rounds,
    // sets the pooled interval.
    assert!(pooled.1 - pooled.0 > widest_host, "{p}");
    assert!(p["spread"].as_f64().unwrap() > 1.1, "{p}");
    assert!(p["prediction95"].is_array(), "{p}");

    // Text: both tables and the hosts named.
    let text = Command::new(env!("CARGO_BIN_EXE_pgoforge"))
        .args(&args[..args.len() - 1])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("| oltp_point_select |"), "{text}");
    assert!(
        text.contains("debian's CPU per transaction on each host"),
        "{text}"
    );
    assert!(text.contains("host 3: 2d9d7274d8c7a826"), "{text}");

    // Not a run directory: refused with exit 2.
    let bad = Command::new(env!("CARGO_BIN_EXE_pgoforge"))
        .args(["pool", "/nonexistent", &results(RUNS[0])])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
}
