//! The benchmark runner and reports against Debian's mariadbd: one binary under two names must show no
//! significant difference; reports regenerate identically; interrupted runs resume; bad input is refused.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};

use oltp::settings::TestName;
use pgoforge::bench::order::OrderScheme;
use pgoforge::bench::plan::{BenchPlan, Contender};
use pgoforge::bench::report;
use pgoforge::bench::run;
use pgoforge::bench::run_dir::read_records;
use pgoforge::bench::spec::BenchSpec;
use pgoforge::server::ServerConfig;

const MARIADBD: &str = "/usr/sbin/mariadbd";

fn plan(rounds: u32) -> BenchPlan {
    BenchPlan {
        contenders: vec![
            Contender {
                name: "debian".into(),
                binary: MARIADBD.into(),
                buffer_pool_mb: None,
            },
            Contender {
                name: "same".into(),
                binary: MARIADBD.into(),
                buffer_pool_mb: None,
            },
        ],
        spec: BenchSpec {
            workloads: vec![TestName::OltpPointSelect],
            threads: vec![2],
            rounds,
            seconds: 2,
            warmup_seconds: 1,
            tables: 1,
            table_size: 5000,
            saturate: false,
            ..BenchSpec::standard()
        },
        config: ServerConfig {
            buffer_pool_mb: 128,
            redo_log_mb: 32,
            ..ServerConfig::default()
        },
        pin: true,
        seed: 1,
        label: "test".into(),
        order_scheme: OrderScheme::Balanced,
        reference_only: Vec::new(),
        trained_on: Vec::new(),
        training: Vec::new(),
        aa_control: None,
    }
}

/// Runs a benchmark plan; tests share the machine, so the busy-machine guard lets them measure.
fn measure(
    p: &BenchPlan,
    work: &std::path::Path,
    dir: &std::path::Path,
    resume: bool,
) -> anyhow::Result<()> {
    run::benchmark_quietly(
        p,
        work,
        dir,
        resume,
        pgoforge::bench::load::Guard::allow_busy(),
        &|_| {},
    )
}

#[test]
fn one_binary_under_two_names_is_no_significant_difference() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("run");
    let p = plan(4);
    measure(&p, work.path(), &dir, false).unwrap();
    let recs = read_records(&dir).unwrap();
    assert_eq!(recs.len(), 8);
    for round in 1..=4 {
        let names: Vec<&str> = recs
            .iter()
            .filter(|r| r.round == round)
            .map(|r| r.contender.as_str())
            .collect();
        assert_eq!(names.len(), 2, "both contenders run every round");
    }
    assert!(recs
        .iter()
        .all(|r| r.result.transactions > 0 && !r.result.intervals.is_empty()));
    let r = report::build(&dir).unwrap();
    let same = r.cells.iter().find(|c| c.contender == "same").unwrap();
    let cmp = same.tps_vs_baseline.as_ref().unwrap();
    // Four rounds: the exact test can exclude nothing, and the sentence says so.
    assert_eq!(
        cmp.sentence(),
        "no significant difference; 4 paired rounds are too few for the exact test to bound the change at this run's level",
        "{cmp:?}"
    );
    // The interval is not asserted to hold 1: the tests share two vCPUs, and 2-s rounds beside
    // them once put one binary 34 % behind itself (CI, 2026-12-04). A test is no benchmark; the
    // A/A figures live in docs/results/. What must hold whatever the noise: the ratio is the
    // geometric mean of the report's per-round ratios, inside its own interval.
    let base = r.cells.iter().find(|c| c.contender == "debian").unwrap();
    assert_eq!(base.tps_rounds.len(), 4);
    let mean = base
        .tps_rounds
        .iter()
        .zip(&same.tps_rounds)
        .map(|(b, s)| {
            assert_eq!(b.0, s.0, "paired by round");
            (s.1 / b.1).ln()
        })
        .sum::<f64>()
        / 4.0;
    assert!((mean.exp() - cmp.ratio).abs() < 1e-9, "{cmp:?}");
    assert!(
        cmp.ratio_ci95.0 < cmp.ratio && cmp.ratio < cmp.ratio_ci95.1,
        "{cmp:?}"
    );
    assert_eq!(same.tps.n, 4);
    // Against the other name: the ratio inverts, the reference changes, the verdict stays.
    let flipped = report::build_against(&dir, Some("same")).unwrap();
    assert_eq!(flipped.plan.contenders[0].name, "same");
    let deb = flipped
        .cells
        .iter()
        .find(|c| c.contender == "debian")
        .unwrap();
    let back = deb.tps_vs_baseline.as_ref().unwrap();
    assert!(
        (back.ratio * cmp.ratio - 1.0).abs() < 1e-9,
        "{back:?} {cmp:?}"
    );
    assert!(back.sentence().starts_with("no significant difference"));
    let e = report::build_against(&dir, Some("nope"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("it has: debian, same"), "{e}");

    // Reports come from stored results only, identically every time.
    let reports = || -> Vec<String> {
        [
            "report.md",
            "report.json",
            "report.csv",
            "report.txt",
            "report.html",
        ]
        .iter()
        .map(|f| fs::read_to_string(dir.join(f)).unwrap())
        .collect()
    };
    pgoforge::bench::export::write_all(&dir, &r).unwrap();
    let first = reports();
    pgoforge::bench::export::write_all(&dir, &report::build(&dir).unwrap()).unwrap();
    let second = reports();
    assert_eq!(first, second);
    assert!(
        first[0].contains("| oltp_point_select | 2 | same |")
            && first[0].contains("no significant difference"),
        "{}",
        first[0]
    );
    assert!(first[2].lines().count() == 3);
    let html = &first[4];
    assert!(
        html.starts_with("<!DOCTYPE html>") && html.contains("<svg") && html.contains("<table>")
    );
    assert!(
        !html.contains("http://")
            || html
                .matches("http://")
                .all(|_| html.contains("xmlns='http://www.w3.org/2000/svg'")),
        "no external resources"
    );
    assert!(!html.contains("<script"));
    let cli = common::pgoforge(&["report", dir.to_str().unwrap(), "--format", "md"]);
    assert_eq!(cli.code, 0, "{}", cli.stderr);
    assert_eq!(cli.stdout, first[0]);
}

#[test]
fn an_interrupted_run_resumes_and_bad_input_is_refused() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("run");
    let p = plan(2);
    measure(&p, work.path(), &dir, false).unwrap();
    let results = dir.join("results.jsonl");
    let full = fs::read_to_string(&results).unwrap();
    let lines: Vec<&str> = full.lines().collect();
    assert_eq!(lines.len(), 4);
    // As if the process died while writing the third record.
    fs::write(
        &results,
        format!("{}\n{}\n{}", lines[0], lines[1], &lines[2][..40]),
    )
    .unwrap();
    // Without --resume nothing is touched.
    let e = measure(&p, work.path(), &dir, false)
        .unwrap_err()
        .to_string();
    assert!(e.contains("--resume"), "{e}");
    measure(&p, work.path(), &dir, true).unwrap();
    let recs = read_records(&dir).unwrap();
    assert_eq!(recs.len(), 4, "the two missing cells ran again");
    assert_eq!(
        recs[0].result,
        serde_json::from_str::<pgoforge::bench::run_dir::Record>(lines[0])
            .unwrap()
            .result,
        "finished rounds are kept"
    );
    // A different plan cannot resume this run.
    let mut other = p.clone();
    other.spec.seconds = 3;
    assert!(measure(&other, work.path(), &dir, true)
        .unwrap_err()
        .to_string()
        .contains("different plan"));
    // A missing binary, a duplicate name.
    let refused = |p: &BenchPlan, dir: &str| {
        measure(p, work.path(), &work.path().join(dir), false)
            .unwrap_err()
            .to_string()
    };
    let mut bad = plan(1);
    bad.contenders[1].binary = PathBuf::from("/nonexistent/mariadbd");
    assert!(refused(&bad, "r2").contains("does not exist"));
    let mut dup = plan(1);
    dup.contenders[1].name = "debian".into();
    assert!(refused(&dup, "r3").contains("given twice"));
    // A corrupted results file is an error, and nothing is overwritten.
    let good = fs::read_to_string(&results).unwrap();
    let mut ls: Vec<&str> = good.lines().collect();
    ls[1] = "{not json";
    let corrupted = ls.join("\n") + "\n";
    fs::write(&results, &corrupted).unwrap();
    let e = report::build(&dir).unwrap_err().to_string();
    assert!(e.contains("line 2 is corrupted"), "{e}");
    assert_eq!(fs::read_to_string(&results).unwrap(), corrupted);
    // Results of another run (an unknown contender) are refused.
    let foreign = good.replace("\"contender\":\"same\"", "\"contender\":\"other\"");
    fs::write(&results, foreign).unwrap();
    assert!(report::build(&dir)
        .unwrap_err()
        .to_string()
        .contains("belongs to another run"));
    let cli = common::pgoforge(&[
        "bench",
        "--baseline",
        "a=/usr/sbin/mariadbd",
        "--binary",
        "b=/usr/sbin/mariadbd",
        "--workloads",
        "oltp_nope",
    ]);
    assert_eq!(cli.code, 2, "{}", cli.stderr);
}

/// `--measure cachegrind` on one binary under two names: the per-transaction figures agree closely
/// (the method's repeatability), are plausible for a read-only transaction, and the run resumes; a
/// third binary that valgrind cannot run is named as not measured, with the reason.
#[test]
fn cachegrind_counts_repeat_for_one_binary_under_two_names() {
    use pgoforge::bench::cachegrind::{self, CgPlan};
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("cg");
    // And a binary valgrind cannot run: an AVX-512 instruction in a constructor, as
    // -march=native emits on such a CPU (valgrind fails to decode it whatever the CPU).
    let src = work.path().join("avx512.c");
    fs::write(
        &src,
        "__attribute__((constructor)) static void init(void) {\n\
         __asm__ volatile(\"vpxord %%zmm0, %%zmm0, %%zmm0\" ::: \"xmm0\");\n}\n\
         int main(void) { return 0; }\n",
    )
    .unwrap();
    let avx = work.path().join("avx512");
    let cc = std::process::Command::new("cc")
        .arg("-o")
        .arg(&avx)
        .arg(&src)
        .output()
        .unwrap();
    assert!(
        cc.status.success(),
        "{}",
        String::from_utf8_lossy(&cc.stderr)
    );
    let mut contenders = plan(1).contenders;
    contenders.push(pgoforge::bench::plan::Contender {
        name: "native".into(),
        binary: avx,
        buffer_pool_mb: None,
    });
    let plan = CgPlan {
        contenders,
        workloads: vec![TestName::OltpReadOnly],
        events: 300,
        warmup_events: 50,
        tables: 1,
        table_size: 2000,
        config: ServerConfig {
            buffer_pool_mb: 64,
            redo_log_mb: 32,
            ..ServerConfig::default()
        },
        replay: None,
    };
    let recs = cachegrind::measure(&plan, work.path(), &dir, false, &|_| {}).unwrap();
    // The one valgrind cannot run is named with the reason, the others measured.
    assert_eq!(recs.len(), 2);
    let skipped = cachegrind::read_skipped(&dir).unwrap();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0].contender, "native");
    assert!(
        skipped[0].reason.contains("valgrind cannot execute")
            && skipped[0].reason.contains("AVX-512"),
        "{}",
        skipped[0].reason
    );
    let (a, b) = (&recs[0].per_txn, &recs[1].per_txn);
    // A read-only transaction is 14 statements: hundreds of thousands of instructions at least.
    assert!(a.instructions > 200_000.0, "{a:?}");
    assert!(a.mispredicts > 0.0 && a.i1_misses > 0.0 && a.branches > a.mispredicts);
    let rel = |x: f64, y: f64| (x / y - 1.0).abs();
    assert!(
        rel(a.instructions, b.instructions) < 0.03,
        "{} vs {}",
        a.instructions,
        b.instructions
    );
    assert!(rel(a.branches, b.branches) < 0.03);
    // The costliest functions are kept, costliest first, and account for no more than the
    // transaction's instructions; the same binary twice has the same hottest function.
    for r in &recs {
        let f = &r.functions;
        assert!(
            f.len() >= 10 && f.len() <= pgoforge::bench::hot_functions::KEPT,
            "{f:?}"
        );
        assert!(f.windows(2).all(|w| w[0].instructions >= w[1].instructions));
        let kept: f64 = f.iter().map(|x| x.instructions).sum();
        assert!(
            kept > 0.3 * r.per_txn.instructions && kept <= 1.02 * r.per_txn.instructions,
            "{kept} of {}",
            r.per_txn.instructions
        );
    }
    assert_eq!(recs[0].functions[0].name, recs[1].functions[0].name);
    // Every server ran under valgrind and exited: no instance left, the records are on disk.
    // The raw counts are integers and round-trip exactly (the per-transaction floats need not).
    let counts = |r: &[cachegrind::CgRecord]| -> Vec<_> {
        r.iter()
            .map(|x| (x.contender.clone(), x.short.clone(), x.long.clone()))
            .collect()
    };
    assert_eq!(
        counts(&cachegrind::read_records(&dir).unwrap()),
        counts(&recs)
    );
    assert!(fs::read_dir(dir.join("instances"))
        .unwrap()
        .next()
        .is_none());
    let again = cachegrind::measure(&plan, work.path(), &dir, true, &|_| {
        panic!("nothing to redo")
    })
    .unwrap();
    assert_eq!(counts(&again), counts(&recs));
    let e = cachegrind::measure(&plan, work.path(), &dir, false, &|_| {}).unwrap_err();
    assert!(e.to_string().contains("pass --resume"), "{e}");
    let md = pgoforge::bench::export::markdown::table(
        &pgoforge::bench::export::document::cachegrind_table(&recs, "debian"),
    );
    assert!(md.contains("| oltp_read_only | same |"), "{md}");
}

/// `pgoforge bench` arguments for the smallest real benchmark of point selects.
fn tiny_cli_bench(work: &str, run: &std::path::Path) -> Vec<String> {
    common::tiny_bench(std::path::Path::new(work), run, "oltp_point_select")
}

#[test]
fn a_resumed_cli_benchmark_keeps_its_seed_and_design() {
    let t = tempfile::tempdir().unwrap();
    let w = t.path().to_str().unwrap();
    let run = t.path().join("r");
    let args = |resume: bool| {
        let mut a = tiny_cli_bench(w, &run);
        if resume {
            a.push("--resume".into());
        }
        a
    };
    let first: Vec<String> = args(false);
    let r = common::pgoforge(&first.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(r.code, 0, "{}", r.stderr);
    let plan = |p: &std::path::Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(p.join("plan.json")).unwrap()).unwrap()
    };
    let seed = plan(&run)["seed"].clone();
    // New plans order their rounds by a Williams design.
    assert_eq!(plan(&run)["order_scheme"], 2);
    // Resuming without --seed continues the same benchmark (a fresh seed would be "a different
    // plan").
    let again: Vec<String> = args(true);
    let r = common::pgoforge(&again.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(plan(&run)["seed"], seed);
    let md = std::fs::read_to_string(run.join("report.md")).unwrap();
    assert!(
        md.contains(&format!("(seed {seed}, a Williams design")),
        "{md}"
    );
    // The default design is sliced now; a benchmark begun plain (as every one was before) is
    // resumed plain without being told, not refused as "a different plan".
    assert_eq!(plan(&run)["slice_seconds"], 1, "sliced, at most --time");
    let old = t.path().join("plain");
    let mut plain = tiny_cli_bench(w, &old);
    plain.push("--slice=0".into());
    let r = common::pgoforge(&plain.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(plan(&old).get("slice_seconds").is_none());
    let mut resumed = tiny_cli_bench(w, &old);
    resumed.push("--resume".into());
    let r = common::pgoforge(&resumed.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(plan(&old).get("slice_seconds").is_none());
    assert!(read_records(&old)
        .unwrap()
        .iter()
        .all(|r| r.slice.is_none()));
}

/// Relative paths, as a user types them: the run dir and the servers' binaries are written into
/// each server's my.cnf, and the server resolves a relative path there against its datadir, so
/// they must reach it absolute (a relative --run once failed every server's start).
#[test]
fn a_benchmark_given_relative_paths_runs_where_it_was_started() {
    let t = tempfile::tempdir().unwrap();
    let rel_binary = std::iter::repeat_n("..", t.path().components().count() - 1)
        .collect::<std::path::PathBuf>()
        .join(testsupport::MARIADBD.trim_start_matches('/'));
    assert!(
        t.path().join(&rel_binary).is_file(),
        "{}",
        rel_binary.display()
    );
    let mut a = common::tiny_bench(Path::new("w"), Path::new("r"), "oltp_point_select");
    for x in a.iter_mut() {
        if x.starts_with("--baseline=") || x.starts_with("--binary=") {
            let (k, _) = x.split_once('=').unwrap();
            let name = if k == "--baseline" { "a" } else { "b" };
            *x = format!("{k}={name}={}", rel_binary.display());
        }
    }
    let r = common::pgoforge_in(t.path(), &a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(r.code, 0, "{}", r.stderr);
    let run = t.path().join("r");
    let recs = read_records(&run).unwrap();
    for name in ["a", "b"] {
        assert!(recs.iter().any(|r| r.contender == name), "{name} measured");
    }
    // The plan keeps each binary as the servers were started from: absolute.
    let plan: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(run.join("plan.json")).unwrap()).unwrap();
    for c in plan["contenders"].as_array().unwrap() {
        let b = c["binary"].as_str().unwrap();
        assert!(b.starts_with('/'), "{b}");
    }
}

/// A benchmark on a busy machine (one spinning process per CPU) waits, then refuses with the
/// cause and the fix, having measured nothing; with --allow-busy it measures and every result
/// records the load it ran under.
#[test]
fn a_busy_machine_is_refused_unless_allowed_and_the_load_is_recorded() {
    let t = tempfile::tempdir().unwrap();
    let w = t.path().to_str().unwrap();
    let run = t.path().join("r");
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut spinners: Vec<_> = (0..cpus)
        .map(|_| {
            std::process::Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .unwrap()
        })
        .collect();
    let args = |extra: &str| {
        let mut a = tiny_cli_bench(w, &run);
        // This test is about the guard: only its second command allows a busy machine.
        a.retain(|x| x != "--allow-busy");
        a.push(extra.to_string());
        a
    };
    let refused = args("--busy-wait=0");
    let r = common::pgoforge(&refused.iter().map(String::as_str).collect::<Vec<_>>());
    let measured_when_refused = read_records(&run).unwrap().len();
    // The refused benchmark left its plan and no results: measuring anyway continues it.
    let mut allowed = args("--allow-busy");
    allowed.push("--resume".into());
    let ok = common::pgoforge(&allowed.iter().map(String::as_str).collect::<Vec<_>>());
    for s in &mut spinners {
        let _ = s.kill();
        let _ = s.wait();
    }
    // 75 (EX_TEMPFAIL): busy, try again later.
    assert_eq!(r.code, 75, "{}", r.stderr);
    assert!(
        r.stderr.contains("the machine is busy") && r.stderr.contains("--allow-busy"),
        "{}",
        r.stderr
    );
    assert_eq!(measured_when_refused, 0);
    assert_eq!(ok.code, 0, "{}", ok.stderr);
    let recs = read_records(&run).unwrap();
    assert_eq!(recs.len(), 2);
    for rec in &recs {
        let l = rec.load.as_ref().expect("load recorded");
        assert!(l.server_cpu_s > 0.0, "{l:?}");
        assert!(l.disturbed(), "spinners running: {l:?}");
    }
}

/// `pgoforge calibrate` benchmarks one real server against itself and writes the floor where
/// later benchmarks find it; a benchmark with --target-ci adds rounds until its intervals are
/// narrow enough or --max-rounds, judged against that floor.
#[test]
fn calibration_measures_a_floor_and_adaptive_rounds_stop_on_width() {
    let t = tempfile::tempdir().unwrap();
    let w = t.path().to_str().unwrap();
    let cal_run = t.path().join("cal");
    let r = common::pgoforge(&[
        "calibrate",
        &format!("--binary={MARIADBD}"),
        "--workloads=oltp_point_select",
        "--rounds=4",
        "--time=1",
        "--warmup=0",
        "--tables=1",
        "--table-size=100",
        "--buffer-pool-mb=64",
        "--redo-log-mb=32",
        // The threads the adaptive benchmarks below run at, so the floor applies to their cells.
        "--threads=4",
        "--allow-busy",
        &format!("--work-dir={w}"),
        &format!("--run={}", cal_run.display()),
        "--json",
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let cal: pgoforge::bench::calibrate::Calibration = serde_json::from_str(&r.stdout).unwrap();
    assert_eq!(cal.floors.len(), 1);
    let f = &cal.floors[0];
    assert_eq!((f.workload.as_str(), f.rounds), ("oltp_point_select", 4));
    assert!(f.sd_log_ratio > 0.0 && f.sd_log_ratio < 1.0, "{f:?}");
    // The same binary twice: within a factor 2 of itself, and never "significant".
    assert!(
        f.aa.ratio > 0.5 && f.aa.ratio < 2.0 && !f.aa.significant,
        "{f:?}"
    );
    // 4 rounds cannot reach p < 0.05 with the exact test.
    assert_eq!(f.detectable_here, None);
    assert!(cal.wall_seconds_per_run >= 1.0, "{cal:?}");
    let saved = pgoforge::bench::calibrate::read(&t.path().join("calibration.json"))
        .unwrap()
        .unwrap();
    assert_eq!(saved.floors, cal.floors);
    assert!(std::fs::read_to_string(cal_run.join("calibration.md"))
        .unwrap()
        .contains("| oltp_point_select | 4 | 4 |"));
    let records = read_records(&cal_run).unwrap();
    assert_eq!(records.len(), 8);

    // Adaptive: a target no run can meet stops at --max-rounds; the floor came along.
    let adaptive = |run: &std::path::Path, target: &str| {
        let mut a = tiny_cli_bench(w, run);
        a.retain(|x| x != "--rounds=1");
        for x in ["--rounds=2", "--max-rounds=3"] {
            a.push(x.into());
        }
        a.push(format!("--target-ci={target}"));
        common::pgoforge(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let tight = t.path().join("tight");
    let r = adaptive(&tight, "0.0001");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("--max-rounds 3 reached"), "{}", r.stderr);
    let rounds: std::collections::BTreeSet<u32> = read_records(&tight)
        .unwrap()
        .iter()
        .map(|r| r.round)
        .collect();
    assert_eq!(rounds.into_iter().collect::<Vec<_>>(), vec![1, 2, 3]);
    assert!(tight.join("calibration.json").is_file());
    let md = std::fs::read_to_string(tight.join("report.md")).unwrap();
    assert!(
        md.contains("Noise floor of this machine")
            && md.contains("Adaptive rounds: after 2 planned rounds"),
        "{md}"
    );
    let txt = std::fs::read_to_string(tight.join("report.txt")).unwrap();
    assert!(txt.contains("A/A noise floor per round"), "{txt}");
    // A target every run meets stops at the planned rounds. (With 2 rounds Student's t has one
    // degree of freedom, 12.7 at 95 %: next to a build, rounds a factor 3 apart already make an
    // interval wider than ±1000 %, so the target is astronomically loose.)
    let loose = t.path().join("loose");
    let r = adaptive(&loose, "1e9");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stderr.contains("every interval within ±"), "{}", r.stderr);
    assert_eq!(read_records(&loose).unwrap().len(), 4);

    // A floor measured on another host (here: the same file with another fingerprint) is not
    // applied: the run says so and keeps no copy, and its report judges nothing against it.
    assert_eq!(
        saved.host.as_deref(),
        Some(
            pgoforge::bench::environment::Host::probe()
                .fingerprint
                .as_str()
        )
    );
    let mut foreign = saved.clone();
    foreign.host = Some("0123456789abcdef".into());
    pgoforge::infra::fs::write_json(&t.path().join("calibration.json"), &foreign).unwrap();
    let elsewhere = t.path().join("elsewhere");
    let r = adaptive(&elsewhere, "1e9");
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("was measured on 0123456789abcdef") && r.stderr.contains("not applied"),
        "{}",
        r.stderr
    );
    assert!(!elsewhere.join("calibration.json").exists());
    let md = std::fs::read_to_string(elsewhere.join("report.md")).unwrap();
    assert!(!md.contains("Noise floor of this machine"), "{md}");
}

#[test]
fn tpcc_is_benchmarked_beside_the_oltp_tests_on_one_template() {
    let work = tempfile::tempdir().unwrap();
    let dir = work.path().join("run");
    let mut p = plan(2);
    p.spec.workloads = vec![TestName::OltpPointSelect, TestName::Tpcc];
    measure(&p, work.path(), &dir, false).unwrap();
    let recs = read_records(&dir).unwrap();
    let tpcc: Vec<_> = recs
        .iter()
        .filter(|r| r.workload == TestName::Tpcc)
        .collect();
    // Two rounds × two contenders, each a real run: transactions, reads and writes counted.
    assert_eq!(tpcc.len(), 4);
    for r in &tpcc {
        assert!(r.result.transactions > 0, "{:?}", r.result);
        assert!(r.result.queries.write > 0 && r.result.queries.read > 0);
        assert_eq!(r.result.test, "tpcc");
    }
    // One template holds both datasets, named for both.
    let names = crate::common::names_in(&work.path().join("datasets"));
    assert_eq!(names.len(), 1, "{names:?}");
    assert!(names[0].contains("+tpcc1w"), "{names:?}");
    let rep = report::build(&dir).unwrap();
    assert!(rep.cells.iter().any(|c| c.workload == "tpcc"));
}

/// `bench` serves the baseline again as a control by default, interleaved like every contender;
/// the report states the benchmark's own noise from it and never counts it as a claim.
#[test]
fn an_a_a_control_measures_the_benchmarks_own_noise() {
    let t = tempfile::tempdir().unwrap();
    let w = t.path().to_str().unwrap();
    let run = t.path().join("r");
    let mut a = tiny_cli_bench(w, &run);
    a.retain(|x| x != "--rounds=1" && x != "--no-aa");
    a.push("--rounds=3".into());
    let r = common::pgoforge(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(r.code, 0, "{}", r.stderr);
    let names: std::collections::BTreeSet<String> = common::records(&run)
        .iter()
        .map(|v| format!("{}-{}", v["round"], v["contender"].as_str().unwrap()))
        .collect();
    assert_eq!(names.len(), 9, "3 rounds x a, b and the control: {names:?}");
    assert!(names.contains("2-baseline-again"));
    let md = fs::read_to_string(run.join("report.md")).unwrap();
    assert!(
        md.contains(
            "This run's own noise (A/A control: the baseline served again as baseline-again"
        ),
        "{md}"
    );
    let rep: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(run.join("report.json")).unwrap()).unwrap();
    assert_eq!(
        rep["own_noise"]["comparisons"], 1,
        "the control is no claim"
    );
    assert_eq!(rep["own_noise"]["cells"][0]["rounds"], 3);
    // What the server spent, split: every run's user and kernel seconds add up to its CPU
    // seconds, its threads switched, the meter's interval is the run's.
    for v in common::records(&run) {
        let l = &v["load"];
        let (u, s) = (
            l["server_user_s"].as_f64().unwrap(),
            l["server_sys_s"].as_f64().unwrap(),
        );
        assert!(u > 0.0 && s > 0.0, "{l}");
        assert!(
            (u + s - l["server_cpu_s"].as_f64().unwrap()).abs() < 1e-6,
            "{l}"
        );
        assert!(l["server_switches"][0].as_u64().unwrap() > 0, "{l}");
        let wall = l["wall_s"].as_f64().unwrap();
        assert!((0.9..30.0).contains(&wall), "{l}");
    }
    let cell = &rep["cells"][0];
    let per = &cell["server_per_txn"];
    let (u, s) = (
        per["user_us"]["median"].as_f64().unwrap(),
        per["sys_us"]["median"].as_f64().unwrap(),
    );
    // Debian's mariadbd on a point select: microseconds, not milliseconds or nanoseconds.
    assert!(u > 1.0 && u < 10_000.0 && s > 1.0 && s < 10_000.0, "{per}");
    assert!(per["switches"]["median"].as_f64().unwrap() > 0.0, "{per}");
    let busy = per["server_busy"]["median"].as_f64().unwrap();
    assert!(busy > 0.0 && busy <= 2.05, "{per}");
    // What bounds the cell, from both sides' vCPUs: measured, named, the shares plausible.
    let bound = &per["bound"];
    assert!(
        ["server", "client", "wait"].contains(&bound["by"].as_str().unwrap()),
        "{bound}"
    );
    for side in ["server_share", "client_share"] {
        let s = bound[side].as_f64().unwrap();
        assert!(s > 0.0 && s < 1.1, "{bound}");
    }
    // Capacity (transactions per server-CPU second) is compared like throughput: paired by round.
    let cells = rep["cells"].as_array().unwrap();
    let b = cells.iter().find(|c| c["contender"] == "b").unwrap();
    let cap = &b["capacity_vs_baseline"];
    assert_eq!(cap["pairs"], 3, "{cap}");
    let ratio = cap["ratio"].as_f64().unwrap();
    assert!(
        ratio > 0.5 && ratio < 2.0,
        "one binary under two names: {cap}"
    );
    assert!(cells
        .iter()
        .find(|c| c["contender"] == "a")
        .unwrap()
        .get("capacity_vs_baseline")
        .is_none());
    let mut bad = tiny_cli_bench(w, &t.path().join("r2"));
    bad.retain(|x| x != "--no-aa");
    bad.push("--binary=baseline-again=/usr/sbin/mariadbd".into());
    let r = common::pgoforge(&bad.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("name yours otherwise"), "{}", r.stderr);
}

/// A host whose per-second throughput is erratic stops a plain benchmark (`--slice 0`) after its
/// first run (exit status 5, the cause and the fix named, that run kept); `--allow-noisy` resumes
/// it, and the report calls the host noisy. The default sliced design, the remedy itself, says so
/// after the first cell (its slices taken together) and measures on; its report says so too. The noise is
/// made real: the servers are stopped for 0.6 s of every 1.5 s by a wrapper, as a host's
/// neighbours would.
#[test]
fn a_noisy_host_is_refused_unless_allowed_and_the_report_says_so() {
    use std::os::unix::fs::PermissionsExt;
    let t = tempfile::tempdir().unwrap();
    let w = t.path().to_str().unwrap();
    let run = t.path().join("r");
    // Laid out as a build tree (sql/mariadbd beside share/), so its share files are found.
    fs::create_dir(t.path().join("sql")).unwrap();
    std::os::unix::fs::symlink("/usr/share/mysql", t.path().join("share")).unwrap();
    let wrapper = t.path().join("sql/mariadbd");
    fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\ns=$$\n( while [ -r /proc/$s/status ] && ! grep -q '^State:[[:space:]]*[ZX]' /proc/$s/status; do sleep 0.9; kill -STOP $s; sleep 0.6; kill -CONT $s; done ) >/dev/null 2>&1 &\nexec {MARIADBD} \"$@\"\n"
        ),
    )
    .unwrap();
    fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();
    let args = |extra: &[&str]| {
        let mut a: Vec<String> = tiny_cli_bench(w, &run)
            .into_iter()
            .filter(|x| {
                !x.starts_with("--time")
                    && !x.starts_with("--baseline")
                    && !x.starts_with("--binary")
            })
            .collect();
        a.extend([
            format!("--baseline=a={}", wrapper.display()),
            format!("--binary=b={}", wrapper.display()),
            "--time=6".into(),
        ]);
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let r = common::pgoforge(
        &args(&["--slice=0"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert_eq!(r.code, 5, "{}", r.stderr);
    assert!(
        r.stderr.contains("this host is noisy") && r.stderr.contains("--allow-noisy"),
        "{}",
        r.stderr
    );
    assert_eq!(
        read_records(&run).unwrap().len(),
        1,
        "the first run is kept"
    );
    let r = common::pgoforge(
        &args(&["--slice=0", "--allow-noisy", "--resume"])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(read_records(&run).unwrap().len(), 2);
    let text = fs::read_to_string(run.join("report.txt")).unwrap();
    assert!(text.contains("a NOISY host"), "{text}");

    let sliced_run = t.path().join("s");
    let a: Vec<String> = args(&[])
        .into_iter()
        .map(|x| {
            if x.starts_with("--run=") {
                format!("--run={}", sliced_run.display())
            } else {
                x
            }
        })
        .collect();
    let r = common::pgoforge(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("this host is noisy") && r.stderr.contains("the sliced design"),
        "{}",
        r.stderr
    );
    let recs = read_records(&sliced_run).unwrap();
    assert_eq!(recs.len(), 6, "3 slices of 2 s for each of the two");
    assert!(recs.iter().all(|r| r.slice.is_some()));
    let text = fs::read_to_string(sliced_run.join("report.txt")).unwrap();
    assert!(text.contains("a NOISY host"), "{text}");
}

/// `--slice`: both servers up at once, the client alternating between them slice by slice (who
/// goes first rotating), each slice recorded, the report pairing round by round on the averages.
#[test]
fn a_sliced_benchmark_alternates_between_running_servers_and_pairs_by_round() {
    let t = tempfile::tempdir().unwrap();
    let w = t.path().to_str().unwrap();
    let run = t.path().join("r");
    let mut a: Vec<String> = tiny_cli_bench(w, &run)
        .into_iter()
        .filter(|x| !x.starts_with("--rounds") && !x.starts_with("--time"))
        .collect();
    a.extend(["--rounds=2".into(), "--time=2".into(), "--slice=1".into()]);
    let r = common::pgoforge(&a.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(r.code, 0, "{}", r.stderr);
    let recs = read_records(&run).unwrap();
    assert_eq!(recs.len(), 8, "2 rounds x 2 contenders x 2 slices");
    for round in 1..=2 {
        let firsts: Vec<&str> = (0..2)
            .map(|k| {
                recs.iter()
                    .find(|r| r.round == round && r.slice == Some(k) && r.position == 0)
                    .unwrap()
                    .contender
                    .as_str()
            })
            .collect();
        assert_ne!(
            firsts[0], firsts[1],
            "round {round}: who goes first rotates"
        );
    }
    let rep = report::build(&run).unwrap();
    let b = rep.cells.iter().find(|c| c.contender == "b").unwrap();
    assert_eq!(b.tps.n, 2, "one value per round");
    let mean_of_slices: f64 = recs
        .iter()
        .filter(|r| r.round == 1 && r.contender == "b")
        .map(|r| r.result.tps())
        .sum::<f64>()
        / 2.0;
    assert!((b.tps_rounds[0].1 - mean_of_slices).abs() < 1e-9);
    let plan: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(run.join("plan.json")).unwrap()).unwrap();
    assert_eq!(plan["slice_seconds"], 1);
    let mut bad = tiny_cli_bench(w, &t.path().join("r2"));
    bad.push("--slice=5".into());
    let r = common::pgoforge(&bad.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("a slice is 1 to --time"), "{}", r.stderr);
}

/// `--transport tcp`: the client reaches every server over TCP (what a client on another host
/// must use, so local runs compared with such runs take it too); each run records the round trip
/// measured as its server started, and the report names the path. The default stays the socket,
/// and its round trip is measured too.
#[test]
fn the_client_path_and_its_round_trip_are_measured_and_reported() {
    let t = tempfile::tempdir().unwrap();
    let w = t.path().to_str().unwrap();
    let mut by = Vec::new();
    for transport in ["tcp", "socket"] {
        let run = t.path().join(transport);
        let mut a = tiny_cli_bench(w, &run);
        a.push(format!("--transport={transport}"));
        let r = common::pgoforge_with(a, &[]);
        assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
        let plan = std::fs::read_to_string(run.join("plan.json")).unwrap();
        assert_eq!(
            plan.contains("\"transport\": \"tcp\""),
            transport == "tcp",
            "{plan}"
        );
        let recs = common::records(&run);
        assert_eq!(recs.len(), 2);
        for rec in &recs {
            let want = if transport == "tcp" {
                "tcp"
            } else {
                "unix-socket"
            };
            assert_eq!(rec["result"]["server"]["transport"], want, "{rec}");
            let rtt = rec["rtt_us"].as_f64().expect("a round trip per run");
            assert!(rtt > 0.0 && rtt < 100_000.0, "{rtt}");
        }
        let text = std::fs::read_to_string(run.join("report.txt")).unwrap();
        let line = text
            .lines()
            .find(|l| l.starts_with("Client: "))
            .unwrap_or_else(|| panic!("no client line:\n{text}"))
            .to_string();
        assert!(
            line.contains(if transport == "tcp" {
                "tcp"
            } else {
                "unix-socket"
            }),
            "{line}"
        );
        by.push(line);
    }
    assert_ne!(by[0], by[1]);
}

/// The default `--threads auto`: before round 1 the probe measures each workload at 4
/// connections, then 8, 16 … on every distinct binary, and each workload's cells run at the
/// count it settled on — the run directory records the probe, the plan the counts, every run
/// its count, and the report says why. Whatever counts this busy test machine yields, each
/// choice must agree with its own measurements under the rule.
#[test]
fn client_threads_are_chosen_per_workload_before_the_first_round() {
    use pgoforge::bench::saturate::{Saturation, Why, MAX_THREADS};
    let t = tempfile::tempdir().unwrap();
    let run = t.path().join("r");
    // The tiny benchmark with its threads left to the default, runs of 2 s on 2000 rows.
    let args = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> =
            common::tiny_bench(t.path(), &run, "oltp_point_select,oltp_read_only")
                .into_iter()
                .filter(|a| a != "--threads=4")
                .map(|a| match a.as_str() {
                    "--time=1" => "--time=2".into(),
                    "--table-size=100" => "--table-size=2000".into(),
                    _ => a,
                })
                .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let r = common::pgoforge_with(args(&[]), &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("choosing the client threads per workload"),
        "{}",
        r.stderr
    );
    let s = Saturation::read(&run).unwrap().expect("saturation.json");
    assert_eq!(s.probed, ["a"], "b is a's binary again: probed once");
    assert_eq!(s.choices.len(), 2);
    let plan: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(run.join("plan.json")).unwrap()).unwrap();
    let recs = common::records(&run);
    for c in &s.choices {
        // Steps double from 4; the choice is one of them.
        let counts: Vec<u32> = c.steps.iter().map(|s| s.threads).collect();
        assert_eq!(counts[0], 4, "{c:?}");
        assert!(counts.windows(2).all(|w| w[1] == 2 * w[0]), "{counts:?}");
        assert!(counts.contains(&c.threads) && c.threads <= MAX_THREADS);
        let at = c.steps.iter().find(|s| s.threads == c.threads).unwrap();
        let p = &at.probes[0];
        assert!(p.tps > 0.0 && p.qps >= p.tps, "{p:?}");
        let busy = p.server_share.expect("the server's vCPU share is read");
        let link = p.link_share(c.threads).expect("the round trip is measured");
        match &c.why {
            Why::Saturated => assert!(busy >= 0.95 && link < 0.5, "{c:?}"),
            Why::NoGain { gain } => {
                assert!(*gain < 0.03 && link < 0.5, "{c:?}");
                assert_eq!(counts.last(), Some(&(c.threads * 2)), "{c:?}");
            }
            Why::Ceiling => assert_eq!(c.threads, MAX_THREADS),
        }
        // The plan carries the count, and every run of the workload ran at it.
        assert!(
            plan["chosen_threads"]
                .as_array()
                .unwrap()
                .iter()
                .any(|x| x["workload"] == c.workload.to_string() && x["threads"] == c.threads),
            "{plan}"
        );
        let runs: Vec<_> = recs
            .iter()
            .filter(|r| r["workload"] == c.workload.to_string())
            .collect();
        assert_eq!(runs.len(), 2, "a and b, one round");
        assert!(runs.iter().all(|r| r["threads"] == c.threads), "{runs:?}");
    }
    let md = fs::read_to_string(run.join("report.md")).unwrap();
    assert!(
        md.contains("Client threads, chosen per workload before round 1 (a probed"),
        "{md}"
    );
    // Resumed, the benchmark keeps its counts: no second probe.
    let r = common::pgoforge_with(args(&["--resume"]), &[]);
    assert_eq!(r.code, 0, "{}{}", r.stdout, r.stderr);
    assert!(
        !r.stderr.contains("choosing the client threads"),
        "{}",
        r.stderr
    );
    assert_eq!(Saturation::read(&run).unwrap().unwrap(), s);
}
