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
    let dirs = |d: &Path| -> Vec<PathBuf> {
        fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir())
            .collect()
    };
    // A result's own directory, or one of its runs (a follow cycle's, a host's of a pool).
    let mut runs: Vec<PathBuf> = dirs(&root)
        .into_iter()
        .flat_map(|d| {
            let mut v = dirs(&d);
            v.push(d);
            v
        })
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
        // The first screen is the answer: the gain chart right under the title, before any
        // table, and the method folded below the headline's table.
        let first_svg = html.find("<svg").unwrap();
        assert!(
            html[..first_svg].ends_with("</h1>") && html.contains("per cell with its 95% interval"),
            "the gain chart opens {}",
            dir.display()
        );
        let method = html.find("<details class='method'>").unwrap();
        if r.headline.is_some() {
            assert!(
                html.find("<table").unwrap() < method,
                "the headline's table before the method in {}",
                dir.display()
            );
        }
        assert!(!html[..method].contains("Method: paired by round"));
    }
}

/// `pgoforge report --min-effect`: the smallest change that counts is a stated policy, stored
/// in the run directory and applied by every later report; significant changes below it are
/// reported as below the minimum, not as findings.
#[test]
fn the_minimum_change_is_a_stored_policy_that_later_reports_apply() {
    let src =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/results/mariadb-10.11-default");
    let t = tempfile::tempdir().unwrap();
    for f in ["plan.json", "results.jsonl", "environment.json", "mtr.json"] {
        fs::copy(src.join(f), t.path().join(f)).unwrap();
    }
    let report = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_pgoforge"))
            .arg("report")
            .arg(t.path())
            .args(args)
            .output()
            .unwrap()
    };
    // Every gain there is +34 to +50 %: at a 60 % minimum none counts.
    let out = report(&["--min-effect", "60"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        text.contains("below the 60% minimum change: not counted"),
        "{text}"
    );
    assert!(
        text.contains("decision: no contender measurably beat the baseline"),
        "{text}"
    );
    let policy = fs::read_to_string(t.path().join("policy.json")).unwrap();
    assert!(policy.contains("\"min_effect\": 0.6"), "{policy}");
    // A later report without the flag decides the same way; the Markdown states the rule.
    let again = String::from_utf8_lossy(&report(&[]).stdout).to_string();
    assert_eq!(again, text);
    assert!(fs::read_to_string(t.path().join("report.md"))
        .unwrap()
        .contains("a change of at least 60%"));
    // Back to the default: the run's own verdicts.
    let out = report(&["--min-effect", "2"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("faster +47.7%"));
    for bad in ["150", "-1", "two"] {
        let out = report(&[&format!("--min-effect={bad}")]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("in percent"), "{bad}: {err}");
    }
}

/// The committed reports against another baseline (`report --baseline NAME`, kept as
/// report-vs-NAME.md/.txt) regenerate too; and in each, the A/A control is still compared with the
/// binary it repeats: its noise line and its warnings are the run's, not a comparison of builds.
#[test]
fn alternative_baseline_reports_regenerate_and_keep_the_a_a_pair() {
    let mut rendered = 0;
    for dir in committed_runs() {
        let main = report::build(&dir).unwrap();
        for f in fs::read_dir(&dir).unwrap() {
            let path = f.unwrap().path();
            let file = path.file_name().unwrap().to_string_lossy().to_string();
            let Some(rest) = file.strip_prefix("report-vs-") else {
                continue;
            };
            let (name, exporter): (&str, &dyn Exporter) = if let Some(n) = rest.strip_suffix(".md")
            {
                (n, &export::markdown::Markdown)
            } else if let Some(n) = rest.strip_suffix(".txt") {
                (n, &export::text::Text)
            } else {
                continue;
            };
            let r = report::build_against(&dir, Some(name))
                .unwrap_or_else(|e| panic!("{}: {e:#}", path.display()));
            assert_eq!(r.plan.contenders[0].name, name);
            assert_eq!(
                r.own_noise,
                main.own_noise,
                "{}: the A/A line compares the A/A pair whatever the baseline",
                path.display()
            );
            let aa_warnings = |rep: &report::Report| -> usize {
                rep.cells
                    .iter()
                    .flat_map(|c| &c.warnings)
                    .filter(|w| w.contains("the A/A control"))
                    .count()
            };
            assert_eq!(aa_warnings(&r), aa_warnings(&main), "{}", path.display());
            let want = fs::read_to_string(&path).unwrap();
            let got = exporter.render(&r).unwrap();
            assert!(
                got == want,
                "{} differs from what its results give now:\n--- committed\n{want}\n--- now\n{got}",
                path.display()
            );
            rendered += 1;
        }
    }
    assert!(rendered >= 10, "{rendered} alternative-baseline reports");
}

/// A sweep of threads × buffer pool (`bench --threads 4,16 --sweep-buffer-pool-mb 64,2048`) is
/// reported as gain by threads, one line per pool: a table in the Markdown and text reports and
/// a chart per variant in the HTML. The run directory is made from a committed run's records,
/// its throughput set so each pool and thread count has its own gain.
#[test]
fn a_sweep_reports_the_gain_by_threads_for_each_buffer_pool() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/results");
    let from = root.join("mariadb-10.11-stale-profile");
    let template: serde_json::Value = serde_json::from_str(
        fs::read_to_string(from.join("results.jsonl"))
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    let mut plan: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(from.join("plan.json")).unwrap()).unwrap();
    let contender = |name: &str, pool: u64| serde_json::json!({"name": format!("{name}@bp{pool}"), "binary": "/x", "buffer_pool_mb": pool});
    plan["contenders"] = serde_json::json!([
        contender("baseline", 64),
        contender("pgo", 64),
        contender("baseline", 2048),
        contender("pgo", 2048)
    ]);
    plan["workloads"] = serde_json::json!(["oltp_read_only"]);
    plan["threads"] = serde_json::json!([4, 16]);
    plan["rounds"] = serde_json::json!(8);
    plan["aa_control"] = serde_json::Value::Null;
    plan["reference_only"] = serde_json::json!([]);
    plan.as_object_mut().unwrap().remove("slice_seconds");
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("plan.json"), plan.to_string()).unwrap();
    // Gains: a pool smaller than the ~95 MiB dataset gains little, a large one more, and more at
    // 16 threads; every round wobbles a little.
    let gain = |name: &str, pool: u64, threads: u64| match (name, pool, threads) {
        ("baseline", _, _) => 1.0,
        (_, 64, 4) => 1.03,
        (_, 64, _) => 1.04,
        (_, _, 4) => 1.10,
        _ => 1.20,
    };
    let mut lines = Vec::new();
    for round in 1..=8u64 {
        for (position, (name, pool)) in [
            ("baseline", 64),
            ("pgo", 64),
            ("baseline", 2048),
            ("pgo", 2048),
        ]
        .into_iter()
        .enumerate()
        {
            for threads in [4u64, 16] {
                let wobble = 1.0 + 0.002 * ((round * 7 + threads + position as u64 * 3) % 5) as f64;
                let tx = (10_000.0 * gain(name, pool, threads) * wobble) as u64;
                let mut r = template.clone();
                r["round"] = round.into();
                r["position"] = position.into();
                r["contender"] = format!("{name}@bp{pool}").into();
                r["workload"] = "oltp_read_only".into();
                r["threads"] = threads.into();
                r["result"]["transactions"] = tx.into();
                r["result"]["total_time_s"] = 10.0.into();
                r.as_object_mut().unwrap().remove("load");
                r.as_object_mut().unwrap().remove("slice");
                lines.push(r.to_string());
            }
        }
    }
    fs::write(dir.path().join("results.jsonl"), lines.join("\n") + "\n").unwrap();
    let r = report::build(dir.path()).unwrap();
    let md = export::markdown::Markdown.render(&r).unwrap();
    assert!(
        md.contains("Sweep: each variant's TPS against the baseline of its own buffer pool")
            && md.contains("larger than the 64 MiB buffer pool"),
        "{md}"
    );
    assert!(
        md.contains("| workload | variant | buffer pool | 4 thr | 16 thr |"),
        "{md}"
    );
    let row = |pool: &str| {
        md.lines()
            .find(|l| l.starts_with(&format!("| oltp_read_only | pgo | {pool} |")))
            .unwrap_or_else(|| panic!("a row for {pool}:\n{md}"))
            .to_string()
    };
    let small = row("64 MiB");
    let large = row("2048 MiB");
    assert!(
        small.contains("| +3.") && small.contains("| +4."),
        "{small}"
    );
    assert!(
        large.contains("| +10.") && large.contains("| +20.") && large.contains("faster"),
        "{large}"
    );
    let text = export::text::Text.render(&r).unwrap();
    assert!(
        text.contains("| oltp_read_only | pgo | 2048 MiB |"),
        "{text}"
    );
    let html = export::html::Html.render(&r).unwrap();
    if let Ok(out) = std::env::var("PGOFORGE_SWEEP_HTML") {
        fs::write(out, &html).unwrap();
    }
    assert!(
        html.contains("pgo on oltp_read_only: TPS gain (%) by threads")
            && html.contains("<title>buffer pool 64 MiB</title>")
            && html.contains("<title>buffer pool 2048 MiB</title>"),
        "the sweep's chart"
    );
}

/// Threads chosen per workload (`--threads auto`): the report shows what the probe measured and
/// why, runs each workload's cells at its own count, and a cell that measured the round trip —
/// a rate at half its connections' bound or more while the server idled — is named and left out
/// of the decision. Built from the CPU-level run's records (which carry the servers' vCPU shares
/// and round trips): pgo+lto's read_write made slower, its server 60 % busy and its round trip
/// 120 µs, would disqualify the winner if it were used.
#[test]
fn threads_chosen_per_workload_and_a_link_bound_cell_kept_out_of_the_verdict() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/results");
    let from = root.join("mariadb-10.11-cpu-level");
    let mut plan: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(from.join("plan.json")).unwrap()).unwrap();
    let keep = ["baseline", "pgo+lto"];
    plan["contenders"] = serde_json::Value::Array(
        plan["contenders"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| keep.contains(&c["name"].as_str().unwrap()))
            .cloned()
            .collect(),
    );
    plan["aa_control"] = serde_json::Value::Null;
    plan["reference_only"] = serde_json::json!([]);
    plan["saturate"] = true.into();
    plan["chosen_threads"] = serde_json::json!([
        {"workload": "oltp_point_select", "threads": 8},
        {"workload": "oltp_read_only", "threads": 4},
        {"workload": "oltp_read_write", "threads": 4}
    ]);
    let mut lines = Vec::new();
    for l in fs::read_to_string(from.join("results.jsonl"))
        .unwrap()
        .lines()
    {
        let mut r: serde_json::Value = serde_json::from_str(l).unwrap();
        let name = r["contender"].as_str().unwrap().to_string();
        if !keep.contains(&name.as_str()) {
            continue;
        }
        if r["workload"] == "oltp_point_select" {
            r["threads"] = 8.into();
        }
        if name == "pgo+lto" && r["workload"] == "oltp_read_write" {
            let tx = r["result"]["transactions"].as_f64().unwrap();
            r["result"]["transactions"] = ((tx / 2.0) as u64).into();
            let q = r["result"]["queries"]["total"].as_f64().unwrap();
            r["result"]["queries"]["total"] = ((q / 2.0) as u64).into();
            let wall = r["load"]["wall_s"].as_f64().unwrap();
            r["load"]["server_user_s"] = (wall * 0.3).into();
            r["load"]["server_sys_s"] = (wall * 0.3).into();
            r["rtt_us"] = 120.0.into();
        }
        lines.push(r.to_string());
    }
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("plan.json"), plan.to_string()).unwrap();
    fs::write(dir.path().join("results.jsonl"), lines.join("\n") + "\n").unwrap();
    let probe = |name: &str, tps: f64, rtt: f64, busy: f64| serde_json::json!({"contender": name, "tps": tps, "qps": tps, "rtt_us": rtt, "server_share": busy, "client_share": 0.5});
    let saturation = serde_json::json!({
        "choices": [
            {"workload": "oltp_point_select", "threads": 8, "why": "saturated", "steps": [
                {"threads": 4, "probes": [probe("baseline", 50000.0, 40.0, 0.99), probe("pgo+lto", 72000.0, 38.0, 0.99)]},
                {"threads": 8, "probes": [probe("baseline", 51000.0, 40.0, 0.99), probe("pgo+lto", 73000.0, 38.0, 0.99)]}
            ]},
            {"workload": "oltp_read_only", "threads": 4, "why": "saturated", "steps": [
                {"threads": 4, "probes": [probe("baseline", 25000.0, 40.0, 0.98), probe("pgo+lto", 40000.0, 38.0, 0.98)]}
            ]}
        ],
        "probed": ["baseline", "pgo+lto"],
        "seconds": 41.0
    });
    fs::write(dir.path().join("saturation.json"), saturation.to_string()).unwrap();
    // Cachegrind's counts with the costliest functions kept: the report lays the winner's beside
    // the baseline's.
    let counts = serde_json::json!({"ir": 0, "i1mr": 0, "ilmr": 0, "dr": 0, "d1mr": 0, "dlmr": 0,
        "dw": 0, "d1mw": 0, "dlmw": 0, "bc": 0, "bcm": 0, "bi": 0, "bim": 0});
    let cg = |name: &str, total: f64, fns: serde_json::Value| {
        serde_json::json!({"contender": name, "workload": "oltp_point_select", "events": 10000,
            "short": counts, "long": counts,
            "per_txn": {"instructions": total, "i1_misses": 900.0, "d1_misses": 300.0,
                "ll_misses": 1.0, "branches": 4000.0, "mispredicts": 200.0},
            "functions": fns})
        .to_string()
    };
    fs::write(
        dir.path().join("cachegrind.jsonl"),
        [
            cg(
                "baseline",
                40000.0,
                serde_json::json!([{"name": "MYSQLparse(THD*, bool)", "instructions": 3000.0},
                    {"name": "row_search_mvcc(unsigned char*)", "instructions": 2500.0}]),
            ),
            cg(
                "pgo+lto",
                28000.0,
                serde_json::json!([{"name": "row_search_mvcc(unsigned char*)", "instructions": 2000.0},
                    {"name": "operator|(a, b)", "instructions": 100.0}]),
            ),
        ]
        .join("\n")
            + "\n",
    )
    .unwrap();
    let r = report::build(dir.path()).unwrap();
    // Each workload's cells at its own count.
    let at = |w: &str| {
        r.cells
            .iter()
            .filter(|c| c.workload == w)
            .map(|c| c.threads)
            .collect::<Vec<_>>()
    };
    assert_eq!(at("oltp_point_select"), [8, 8]);
    assert_eq!(at("oltp_read_write"), [4, 4]);
    let rw = r
        .cells
        .iter()
        .find(|c| c.contender == "pgo+lto" && c.workload == "oltp_read_write")
        .unwrap();
    let why = rw
        .link_bound
        .as_deref()
        .expect("the read_write cell is link-bound");
    assert!(
        why.contains("pgo+lto sent 5")
            && why.contains("of what 4 connections can at its 120 µs round trip")
            && why.contains("60% busy"),
        "{why}"
    );
    assert_eq!(
        rw.tps_vs_baseline.as_ref().unwrap().verdict,
        pgoforge::bench::stats::Verdict::Slower,
        "the cell is still shown as measured"
    );
    let d = r.decision.as_ref().unwrap();
    assert_eq!(
        d.winner.as_deref(),
        Some("pgo+lto"),
        "the slower link-bound cell does not disqualify: {}",
        d.sentence()
    );
    assert!(r
        .cells
        .iter()
        .filter(|c| c.workload != "oltp_read_write")
        .all(|c| c.link_bound.is_none()));
    let md = export::markdown::Markdown.render(&r).unwrap();
    assert!(
        md.contains("Client threads, chosen per workload before round 1 (baseline, pgo+lto probed, 41 s)")
            && md.contains("oltp_point_select: 8 threads (the server saturated below half the bound) — 4 thr: every server's vCPU ≥ 99% busy, at most 68% of the round-trip bound; 8 thr:")
            && md.contains("link-bound, not used for the verdict"),
        "{md}"
    );
    assert!(
        md.contains("pgo+lto, at the threads chosen per workload:"),
        "one geometric mean over the workloads: {md}"
    );
    assert!(
        md.contains("Where oltp_point_select's instructions go: the 3 functions costing most per transaction in pgo+lto or baseline")
            && md.contains("| MYSQLparse(THD*, bool) | 3000 | - | - |")
            && md.contains("| row_search_mvcc(unsigned char*) | 2500 | 2000 | -20.0% |")
            && md.contains("| operator\\|(a, b) | - | 100 | - |"),
        "{md}"
    );
    let text = export::text::Text.render(&r).unwrap();
    assert!(
        text.contains("client threads chosen: oltp_read_only: 4 threads"),
        "{text}"
    );
    // The same counts given by the user (`--threads`, no probe): the cell is still named, but it
    // keeps its verdict — and the slower read_write disqualifies pgo+lto.
    plan["saturate"] = false.into();
    fs::write(dir.path().join("plan.json"), plan.to_string()).unwrap();
    fs::remove_file(dir.path().join("saturation.json")).unwrap();
    let given = report::build(dir.path()).unwrap();
    let rw = given
        .cells
        .iter()
        .find(|c| c.contender == "pgo+lto" && c.workload == "oltp_read_write")
        .unwrap();
    assert!(rw.link_bound.is_none());
    assert!(
        rw.warnings
            .iter()
            .any(|w| w.starts_with("link-bound at the threads given (its verdict kept")),
        "{:?}",
        rw.warnings
    );
    assert_eq!(given.decision.as_ref().unwrap().winner, None);
}
