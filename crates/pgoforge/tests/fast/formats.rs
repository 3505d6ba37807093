//! The persisted formats (docs/FORMATS.md) read and written byte for byte as before: every
//! committed run's plan.json, mtr.json and report.json parse into today's types and serialize back
//! to the committed bytes, and a plan's hash — which names its run directory, so a resumed run
//! finds its results — is the hash it had when the run was made.

use std::fs;
use std::path::{Path, PathBuf};

use pgoforge::bench::plan::BenchPlan;
use pgoforge::bench::report::Report;
use pgoforge::gate::mtr::MtrGate;
use serde::de::DeserializeOwned;
use serde::Serialize;

fn committed_runs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/results");
    let mut runs: Vec<PathBuf> = fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|d| d.join("plan.json").is_file())
        .collect();
    runs.sort();
    runs
}

/// Parses `file` as `T` and serializes it again as pgoforge writes it (pretty JSON).
fn round_trip<T: Serialize + DeserializeOwned>(file: &Path) -> (String, String) {
    let text = fs::read_to_string(file).unwrap();
    let v: T = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let again = serde_json::to_string_pretty(&v).unwrap();
    (text.trim_end().to_string(), again)
}

#[test]
fn committed_plans_gate_results_and_reports_serialize_back_byte_for_byte() {
    let runs = committed_runs();
    assert!(runs.len() >= 5, "{runs:?}");
    let (mut mtr, mut reports) = (0, 0);
    let mut before_sweeps = Vec::new();
    for dir in &runs {
        let (was, now) = round_trip::<BenchPlan>(&dir.join("plan.json"));
        if was != now {
            // The one known change: plans written before buffer pool sweeps (2026-11-30) have no
            // per-contender `buffer_pool_mb`, which is written as null since. They read the same.
            assert_eq!(
                was,
                now.replace(",\n      \"buffer_pool_mb\": null", ""),
                "{}/plan.json",
                dir.display()
            );
            before_sweeps.push(dir.file_name().unwrap().to_string_lossy().into_owned());
        }
        if dir.join("mtr.json").is_file() {
            let (was, now) = round_trip::<MtrGate>(&dir.join("mtr.json"));
            assert_eq!(was, now, "{}/mtr.json", dir.display());
            mtr += 1;
        }
        if dir.join("report.json").is_file() {
            let (was, now) = round_trip::<Report>(&dir.join("report.json"));
            assert_eq!(was, now, "{}/report.json", dir.display());
            reports += 1;
        }
    }
    assert_eq!(before_sweeps, ["debian-self"]);
    assert!(
        mtr >= 1 && reports >= 3,
        "mtr.json {mtr}, report.json {reports}"
    );
}

/// run.json names the run directory `run-HASH` the pipeline made from the plan's hash.
#[test]
fn a_stored_plan_hashes_to_the_run_directory_it_was_stored_in() {
    let mut checked = 0;
    for dir in committed_runs() {
        let Ok(run) = fs::read_to_string(dir.join("run.json")) else {
            continue;
        };
        let run: serde_json::Value = serde_json::from_str(&run).unwrap();
        let Some(name) = run["run_dir"].as_str().and_then(|p| p.rsplit('/').next()) else {
            continue;
        };
        let Some(hash) = name.strip_prefix("run-") else {
            continue;
        };
        let plan: BenchPlan =
            serde_json::from_str(&fs::read_to_string(dir.join("plan.json")).unwrap()).unwrap();
        assert_eq!(
            pgoforge::infra::fs::value_hash(&plan).unwrap(),
            hash,
            "{}",
            dir.display()
        );
        checked += 1;
    }
    assert!(checked >= 3, "{checked} runs with a recorded run directory");
}
