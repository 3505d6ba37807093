//! The decisions a run's plan takes from the command line's choices, made here where they are
//! unit-tested and where every front end (the command line, `follow`) gets the same answer: the
//! default variants of each kind of run, the training mixes of a matrix, mixes per training
//! engine, what the planned benchmark can find on this host, and the refusal of a benchmark too
//! long to start. The command line parses and prints; it decides none of these.

use crate::builder::Variant;
use crate::profile::train::{Mix, NamedMix};
use crate::server::config::Engine;

use super::RunPlan;

/// The variants a run compares with the baseline when none are given: `--quick` one PGO build,
/// a matrix (several training mixes or engines) PGO+LTO, `--full` PGO+LTO with and without BOLT
/// (BOLT's own share), else PGO+LTO+BOLT.
pub fn default_variants(quick: bool, matrix: bool, full: bool) -> Vec<Variant> {
    let names: &[&str] = if quick {
        &["pgo"]
    } else if matrix {
        &["pgo+lto"]
    } else if full {
        &["pgo+lto", "pgo+lto+bolt"]
    } else {
        &["pgo+lto+bolt"]
    };
    names
        .iter()
        .map(|n| n.parse().expect("a valid variant"))
        .collect()
}

/// The training mixes of `--matrix`.
pub const MATRIX_MIXES: [&str; 3] = ["oltp", "tpcc", "oltp+tpcc"];

/// The names of the mixes a run trains on: `--train-mix` as given, a matrix's three (with the
/// replay file's two more), or None for the default mix.
pub fn mix_names(given: &[String], matrix: bool, replay: bool) -> Option<Vec<String>> {
    if !given.is_empty() {
        return Some(given.to_vec());
    }
    if !matrix {
        return None;
    }
    let mut v: Vec<String> = MATRIX_MIXES.iter().map(|s| s.to_string()).collect();
    if replay {
        // Trained on the file given, and on everything together.
        v.extend(["replay".to_string(), "oltp+tpcc+replay".to_string()]);
    }
    Some(v)
}

/// Each mix on each training engine: one engine keeps the mixes' names; several make every mix
/// once per engine, named MIX-ENGINE (a matrix of training engines).
pub fn on_train_engines(mixes: Vec<NamedMix>, engines: &[Engine]) -> Vec<NamedMix> {
    if let [e] = engines {
        return mixes
            .into_iter()
            .map(|mut m| {
                m.mix.engine = *e;
                m
            })
            .collect();
    }
    mixes
        .iter()
        .flat_map(|m| {
            engines.iter().map(move |&e| NamedMix {
                name: format!("{}-{}", m.name, e.name()),
                mix: Mix {
                    engine: e,
                    ..m.mix.clone()
                },
            })
        })
        .collect()
}

/// What the planned benchmark can find, from this host's noise floor when `calibrate` measured
/// one in the work dir: per workload, the smallest true change reported with 80 % power under the
/// reports' rule at the planned rounds and comparisons.
pub fn planned_power(plan: &RunPlan) -> String {
    use crate::bench::{calibrate, environment::Host, stats};
    let req = &plan.request;
    // Every server but the baseline (the built one, or Debian's, an outside one then).
    let comparisons =
        (plan.contenders.len() + req.outside_count()).saturating_sub(1) * req.bench.cells().len();
    let floor = calibrate::read(&calibrate::path(&req.work_dir))
        .ok()
        .flatten()
        .filter(|c| c.measured_on(&Host::probe().fingerprint));
    let Some(cal) = floor else {
        let from = if req.aa {
            "its own A/A control"
        } else {
            "its comparisons' own scatter (--no-aa)"
        };
        return format!(
            "no noise floor measured on this host (`pgoforge calibrate`); the report will state \
             what this run could detect from {from}"
        );
    };
    let rule = stats::Rule::new(comparisons, req.min_effect);
    let rounds = req.bench.rounds as usize;
    let workloads: Vec<String> = req.bench.workloads.iter().map(|w| w.to_string()).collect();
    let cells: Vec<String> = cal
        .planned_detectable(&workloads, rounds, rule)
        .into_iter()
        .map(|(f, d)| {
            format!(
                "{} ({:.1}% per round): {}",
                f.workload,
                f.sd_log_ratio * 100.0,
                if d.is_finite() {
                    format!("{:.1}%", (d - 1.0) * 100.0)
                } else {
                    "nothing".into()
                }
            )
        })
        .collect();
    format!(
        "with this host's noise floor, the planned {rounds} rounds over {comparisons} comparisons \
         find a true change of this size or more 80% of the time (the reports' rule: exact test, \
         Holm, the {}% minimum): {}",
        stats::percent_number(rule.min_effect),
        if cells.is_empty() {
            "no workload of the floor is planned".into()
        } else {
            cells.join("; ")
        }
    )
}

/// Why a benchmark estimated at `seconds` may not start under a limit of `max_hours`, if it may
/// not: a sweep or a round count typed one order too large would otherwise occupy the machine
/// for days.
pub fn too_long(max_hours: f64, seconds: u64) -> Option<String> {
    let limit = max_hours * 3600.0;
    (seconds as f64 > limit).then(|| {
        format!(
            "the benchmark would take about {} by the plan's estimate, more than \
             --max-bench-hours {max_hours} allows; use fewer rounds, thread counts, buffer pools, \
             workloads or contenders, or a shorter --time (or raise --max-bench-hours)",
            crate::infra::time::human(seconds as f64),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[Variant]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn each_kind_of_run_has_its_default_variants() {
        assert_eq!(names(&default_variants(true, false, false)), ["pgo"]);
        assert_eq!(names(&default_variants(false, true, false)), ["pgo+lto"]);
        assert_eq!(
            names(&default_variants(false, false, true)),
            ["pgo+lto", "pgo+lto+bolt"]
        );
        assert_eq!(
            names(&default_variants(false, false, false)),
            ["pgo+lto+bolt"]
        );
    }

    #[test]
    fn a_matrix_trains_three_mixes_and_two_more_with_a_replay_file() {
        assert_eq!(mix_names(&[], false, false), None);
        assert_eq!(
            mix_names(&["tpcc".into()], true, true),
            Some(vec!["tpcc".to_string()])
        );
        assert_eq!(mix_names(&[], true, false).unwrap().len(), 3);
        assert_eq!(
            mix_names(&[], true, true).unwrap()[3..],
            ["replay".to_string(), "oltp+tpcc+replay".to_string()]
        );
    }

    #[test]
    fn several_training_engines_name_each_mix_per_engine() {
        let oltp = Mix::standard();
        let m = vec![NamedMix::parse("oltp", &oltp).unwrap()];
        let one = on_train_engines(m.clone(), &[Engine::RocksDb]);
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].name, "oltp");
        assert_eq!(one[0].mix.engine, Engine::RocksDb);
        let two = on_train_engines(m, &[Engine::InnoDb, Engine::RocksDb]);
        let n: Vec<&str> = two.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(n, ["oltp-innodb", "oltp-rocksdb"]);
    }

    #[test]
    fn a_benchmark_over_the_limit_is_refused_naming_its_length() {
        assert_eq!(too_long(24.0, 3600), None);
        let e = too_long(1.0, 7200).unwrap();
        assert!(
            e.contains("about 2 h 00 min") && e.contains("--max-bench-hours 1"),
            "{e}"
        );
    }
}
