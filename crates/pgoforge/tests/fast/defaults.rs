//! The defaults a plain `pgoforge run` resolves to, as its plan shows them: the training mix the
//! train × evaluate matrix chose, and a benchmark workload that training never runs (the
//! held-out check), and the sliced benchmark design. `--plan` fetches, builds and starts nothing.

use std::process::Command;

use serde_json::Value;

fn plan(extra: &[&str]) -> Value {
    let w = tempfile::tempdir().expect("a temporary directory");
    let out = Command::new(env!("CARGO_BIN_EXE_pgoforge"))
        .args(["run", "--plan", "--work-dir"])
        .arg(w.path())
        .args(extra)
        .output()
        .expect("pgoforge runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the plan is JSON")
}

fn mixes(p: &Value) -> Vec<(String, Vec<String>)> {
    p["request"]["mixes"]
        .as_array()
        .expect("mixes")
        .iter()
        .map(|m| {
            let tests = m["mix"]["phases"]
                .as_array()
                .expect("phases")
                .iter()
                .map(|ph| ph["test"].as_str().expect("a test").to_string())
                .collect();
            (m["name"].as_str().expect("a name").to_string(), tests)
        })
        .collect()
}

fn contender_names(p: &Value) -> Vec<String> {
    p["contenders"]
        .as_array()
        .expect("contenders")
        .iter()
        .map(|c| c["name"].as_str().expect("a name").to_string())
        .collect()
}

fn workloads(p: &Value) -> Vec<String> {
    p["request"]["bench"]["workloads"]
        .as_array()
        .expect("workloads")
        .iter()
        .map(|w| w.as_str().expect("a workload").to_string())
        .collect()
}

/// By default a run on Debian 12 benchmarks Debian's own server of the release it builds, after
/// the builds and before the gate; `--no-distro`, `--matrix`, `--source` and a `--binary
/// debian=` leave it out. On another distribution there is no such server to download (a bookworm source's server
/// links bookworm's libraries), and the plan has none.
#[test]
fn the_default_run_compares_with_debians_server_of_the_built_release() {
    let p = plan(&[]);
    let codename = std::fs::read_to_string("/etc/os-release")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("VERSION_CODENAME="))
        .map(|v| v.trim_matches('"').to_string())
        .unwrap_or_default();
    let stages: Vec<&str> = p["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .map(|s| s.as_str().expect("a stage"))
        .collect();
    if codename == "bookworm" {
        let d = &p["request"]["distro"];
        assert_eq!(d["package"], "mariadb-server-core", "{d}");
        assert_eq!(d["version"], p["request"]["recipe"]["source"]["version"]);
        let at = |x: &str| stages.iter().position(|y| *y == x);
        assert!(
            at("distro").is_some() && at("distro") < at("gate"),
            "{stages:?}"
        );
    } else {
        assert!(p["request"].get("distro").is_none());
    }
    for off in [
        &["--no-distro"][..],
        &["--binary", "debian=/bin/true"],
        &["--matrix"],
    ] {
        let p = plan(off);
        assert!(p["request"].get("distro").is_none(), "{off:?}");
        assert!(!p["stages"].to_string().contains("\"distro\""), "{off:?}");
    }
}

/// The default run trains on OLTP and tpcc and benchmarks point_select, read_write and the
/// held-out select_random_ranges (docs/bench/bench-shape.md); `--full` benchmarks all five.
#[test]
fn the_default_run_trains_on_oltp_and_tpcc_and_holds_out_select_random_ranges() {
    for (extra, benchmarked) in [
        (
            &[][..],
            &[
                "oltp_point_select",
                "oltp_read_write",
                "select_random_ranges",
            ][..],
        ),
        (
            &["--full"][..],
            &[
                "oltp_point_select",
                "oltp_read_only",
                "oltp_read_write",
                "tpcc",
                "select_random_ranges",
            ][..],
        ),
    ] {
        let p = plan(extra);
        let m = mixes(&p);
        assert_eq!(m.len(), 1);
        assert_eq!(m[0].0, "oltp+tpcc");
        assert_eq!(
            m[0].1.first().map(String::as_str),
            Some("oltp_point_select")
        );
        assert_eq!(m[0].1.last().map(String::as_str), Some("tpcc"));
        let w = workloads(&p);
        assert_eq!(w, benchmarked, "{extra:?}");
        let held: Vec<&String> = w.iter().filter(|x| !m[0].1.contains(x)).collect();
        assert_eq!(held, ["select_random_ranges"], "held out: {held:?}");
    }
}

/// The default run is shaped to fit 75 minutes on 2 cores (issue 49 item 4): the BOLTed build
/// against the baseline, Debian's server and the A/A control, 8 rounds of 6-s runs; the plan
/// times every stage from the recipe's measured build times and says the total. `--full` is the
/// full evaluation (the unBOLTed build too, five workloads, 20-s runs).
#[test]
fn the_default_run_is_planned_to_fit_75_minutes_and_the_plan_says_its_total() {
    let p = plan(&[]);
    let names = contender_names(&p);
    assert_eq!(names, ["baseline", "pgo+lto+bolt"]);
    let bench = &p["request"]["bench"];
    assert_eq!(
        (bench["rounds"].clone(), bench["seconds"].clone()),
        (8.into(), 6.into())
    );
    let est = &p["estimate"];
    assert!(est.get("unknown").is_none(), "{est}");
    let stages = est["stages"].as_array().expect("stages");
    // Every stage of the plan is timed, in the plan's order.
    let timed: Vec<&str> = stages
        .iter()
        .map(|s| s["stage"].as_str().unwrap())
        .collect();
    assert_eq!(timed.first(), Some(&"source"));
    assert!(
        timed.contains(&"build pgo+lto+bolt") && timed.contains(&"mtr"),
        "{timed:?}"
    );
    let sum: u64 = stages.iter().map(|s| s["seconds"].as_u64().unwrap()).sum();
    assert_eq!(est["known_seconds"].as_u64(), Some(sum));
    // Scaled to this machine's cores from the recipe's 2-core figures: on 2 cores under 75 min.
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cores == 2 {
        assert!((3000..4500).contains(&sum), "{sum} s");
    }
    let full = plan(&["--full"]);
    let names = contender_names(&full);
    assert_eq!(names, ["baseline", "pgo+lto", "pgo+lto+bolt"]);
    let full_bench = full["estimate"]["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stage"] == "bench")
        .and_then(|s| s["seconds"].as_u64())
        .unwrap();
    assert!(full_bench > 3 * p["bench_estimate_seconds"].as_u64().unwrap());
    // A recipe without figures for the compiler says so instead of guessing.
    let gcc = plan(&["--recipe", "mysql-9.7", "--compiler", "gcc"]);
    let unknown = gcc["estimate"]["unknown"]
        .as_array()
        .expect("unknown stages");
    assert!(unknown.iter().any(|u| u == "build baseline"), "{unknown:?}");
}

#[test]
fn the_oltp_mix_alone_stays_one_option_away_and_quick_and_mix_keep_it() {
    for extra in [
        &["--train-mix", "oltp"][..],
        &["--quick"][..],
        &["--mix", "oltp_point_select:30"][..],
    ] {
        let m = mixes(&plan(extra));
        assert_eq!(m.len(), 1, "{extra:?}");
        assert_eq!(m[0].0, "oltp", "{extra:?}");
        assert!(!m[0].1.contains(&"tpcc".to_string()), "{extra:?}: {m:?}");
    }
    // The matrix keeps its three mixes and its four workloads.
    let p = plan(&["--matrix"]);
    let names: Vec<String> = mixes(&p).into_iter().map(|m| m.0).collect();
    assert_eq!(names, ["oltp", "tpcc", "oltp+tpcc"]);
    assert_eq!(
        workloads(&p),
        [
            "oltp_point_select",
            "oltp_read_only",
            "oltp_read_write",
            "tpcc"
        ]
    );
}

/// The sliced design is the default (2-s slices, never longer than --time); `--slice 0` is the
/// plain design, which the plan then leaves out as plans made before it did.
#[test]
fn the_default_benchmark_is_sliced_every_2_s_and_slice_0_is_the_plain_design() {
    let slice = |extra: &[&str]| plan(extra)["request"]["bench"]["slice_seconds"].clone();
    assert_eq!(slice(&[]), 2);
    assert_eq!(slice(&["--quick"]), 2);
    assert_eq!(slice(&["--matrix"]), 2);
    assert_eq!(slice(&["--time", "1"]), 1, "a slice is at most --time");
    assert_eq!(slice(&["--slice", "5"]), 5);
    let plain = plan(&["--slice", "0"]);
    assert!(
        plain["request"]["bench"].get("slice_seconds").is_none(),
        "{}",
        plain["request"]["bench"]
    );
}

/// Both servers build with clang unless told otherwise (their recipes' default_compiler: MySQL
/// 9.7's baseline in 22–27 min against GCC's 32, docs/bench/mysql-build.md; MariaDB's main job
/// faster on every workload with clang, docs/results/mariadb-10.11-clang-vs-gcc-main-job/);
/// `--compiler` always wins.
#[test]
fn both_servers_build_with_clang_by_default_and_compiler_overrides_it() {
    let family = |extra: &[&str]| plan(extra)["request"]["compiler"]["family"].clone();
    assert_eq!(family(&["--recipe", "mysql-9.7"]), "clang");
    assert_eq!(family(&[]), "clang");
    assert_eq!(
        family(&["--recipe", "mysql-9.7", "--compiler", "gcc"]),
        "gcc"
    );
    assert_eq!(family(&["--compiler", "gcc"]), "gcc");
}

/// The plan tells what the benchmark will cost before anything is built: MySQL 9.7's full
/// evaluation (baseline, A/A control, pgo+lto and its BOLTed binary; five workloads; 12 rounds of
/// 20 s after 5 s) about 1 h 49 min, and every flag that shortens it shortens the estimate.
#[test]
fn the_plan_estimates_the_benchmark_and_its_flags_move_the_estimate() {
    let est = |extra: &[&str]| {
        let mut args = vec!["--recipe", "mysql-9.7", "--full"];
        args.extend_from_slice(extra);
        plan(&args)["bench_estimate_seconds"]
            .as_u64()
            .expect("an estimate in seconds")
    };
    let default = est(&[]);
    assert!((6000..7200).contains(&default), "{default}");
    let shorter = [
        est(&["--no-aa"]),
        est(&["--time", "10"]),
        est(&["--workloads", "oltp_read_only,oltp_read_write"]),
        est(&["--variants", "pgo+lto", "--no-aa"]),
    ];
    for s in shorter {
        assert!(s < default, "{s} against {default}");
    }
    // Twice the rounds, nearly twice the time (the default already needs 12 for its
    // comparisons; the thread probe before round 1, about 2 min, is counted once).
    let r24 = est(&["--rounds", "24"]);
    let ratio = r24 as f64 / default as f64;
    assert!((1.95..2.0).contains(&ratio), "{r24} against {default}");
    let given = est(&["--threads", "4"]);
    assert!(
        (60..240).contains(&(default - given)),
        "the probe's share: {default} against {given} with the threads given"
    );
}

/// `--rounds` that can never be significant over the run's comparisons is refused by the plan,
/// before anything is fetched or built, with the number that can (exit 2); the smoke-run flag
/// lets it through.
#[test]
fn too_few_rounds_for_the_runs_comparisons_are_refused_before_any_build() {
    let w = tempfile::tempdir().expect("a temporary directory");
    let run = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_pgoforge"))
            .args(["run", "--plan", "--work-dir"])
            .arg(w.path())
            .args([
                "--variants",
                "pgo+lto",
                "--workloads",
                "oltp_read_only,oltp_read_write",
                // One comparison per workload: Debian's server (its own test below) left out.
                "--no-distro",
            ])
            .args(extra)
            .output()
            .expect("pgoforge runs")
    };
    // One variant, two workloads, one thread count: 2 comparisons need 7 rounds.
    let out = run(&["--rounds", "6"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--rounds 6: this run makes 2 comparisons")
            && err.contains("give --rounds 7 or more"),
        "{err}"
    );
    assert!(
        std::fs::read_dir(w.path()).unwrap().next().is_none(),
        "nothing made"
    );
    assert!(run(&["--rounds", "7"]).status.success());
    assert!(run(&["--rounds", "6", "--allow-few-rounds"])
        .status
        .success());
}

/// A dataset the work dir's disk cannot hold in every copy the benchmark makes, or a buffer pool
/// larger than this machine's memory, is refused by the plan before anything is made (exit 2),
/// with the figures; seed 004's 16 x 2 M rows (7.7 GB) fits this kind of machine. `bench`
/// refuses the same before it starts a server.
#[test]
fn datasets_and_pools_this_machine_cannot_hold_are_refused_before_any_work() {
    let w = tempfile::tempdir().expect("a temporary directory");
    let pgoforge = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_pgoforge"))
            .args(args)
            .arg("--work-dir")
            .arg(w.path())
            .output()
            .expect("pgoforge runs")
    };
    let mem_mb: u64 = std::fs::read_to_string("/proc/meminfo")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .expect("MemTotal")
        / 1024;
    // The redo log every server gets: 512 MiB unless --redo-log-mb says otherwise; a size the
    // servers refuse is refused before anything runs.
    let redo = |args: &[&str]| {
        let out = pgoforge(&[&["run", "--plan", "--json"][..], args].concat());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        plan["request"]["server"]["redo_log_mb"].as_u64()
    };
    assert_eq!(redo(&[]), Some(512));
    assert_eq!(redo(&["--redo-log-mb", "64"]), Some(64));
    let out = pgoforge(&["run", "--plan", "--redo-log-mb", "4"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("'--redo-log-mb <REDO_LOG_MB>': 4 is not in 8..=1048576"));
    let pool = (mem_mb + 1024).to_string();
    let out = pgoforge(&["run", "--plan", "--buffer-pool-mb", &pool]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("--buffer-pool-mb {pool}: one server needs"))
            && err.contains(&format!("this machine's {mem_mb} MiB of memory")),
        "{err}"
    );
    // A thousand tables of 100 M rows: ~23 TiB on disk, more than any disk this runs on.
    let huge = ["--tables", "1000", "--table-size", "100000000"];
    let out = pgoforge(&[&["run", "--plan"][..], &huge].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("the dataset (1000 tables x 100000000 rows")
            && err.contains("GiB free")
            && err.contains("--work-dir on a larger disk"),
        "{err}"
    );
    let bench = [
        "bench",
        "--baseline",
        "a=/usr/sbin/mariadbd",
        "--binary",
        "b=/usr/sbin/mariadbd",
    ];
    let out = pgoforge(&[&bench[..], &huge].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("the dataset (1000 tables"), "{err}");
    assert!(
        std::fs::read_dir(w.path())
            .unwrap()
            .all(|e| e.unwrap().file_name() != "datasets"),
        "no dataset made"
    );
    // In a sweep every contender has its own pool: the plan's default pool, too large here, is
    // no server's and is not held against the benchmark (it gets past the budget to the
    // binaries, which do not exist).
    let out = pgoforge(&[
        "bench",
        "--baseline",
        "a=/nonexistent/mariadbd",
        "--binary",
        "b=/nonexistent/mariadbd",
        "--buffer-pool-mb",
        &pool,
        "--sweep-buffer-pool-mb",
        "256,512",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !err.contains("one server needs") && err.contains("/nonexistent/mariadbd"),
        "{err}"
    );
    // tpcc's size: a thousand warehouses in each of a hundred copies is refused with the count;
    // a size without a tpcc workload to use it is refused; 10 x 2 is planned.
    let out = pgoforge(&[
        "run",
        "--plan",
        "--full",
        "--tpcc-scale",
        "1000",
        "--tpcc-tables",
        "100",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("tpcc's 100000 warehouses") && err.contains("--tpcc-scale/--tpcc-tables"),
        "{err}"
    );
    let out = pgoforge(&[
        "run",
        "--plan",
        "--workloads",
        "oltp_read_only",
        "--tpcc-scale",
        "10",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("no tpcc workload"), "{err}");
    // The default benchmark has no tpcc workload either; the full evaluation does.
    let out = pgoforge(&["run", "--plan", "--tpcc-scale", "10"]);
    assert_eq!(out.status.code(), Some(2));
    let out = pgoforge(&[
        "run",
        "--plan",
        "--full",
        "--tpcc-scale",
        "10",
        "--tpcc-tables",
        "2",
    ]);
    let plan: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let found = format!("{}", plan);
    assert!(
        found.contains(r#""tpcc":{"scale":10,"tables":2}"#),
        "the plan carries tpcc's size: {found}"
    );
    // Seed 004's 16 x 2 M rows: whether the run fits depends on this disk's free space, so the
    // test holds the plan to the test's own measure of it: accepted where the figure it needs is
    // free, refused (exit 2, both figures named) where it is not — and what it needs must fit the
    // ~75 GB free disk of the machines the issue names.
    let seed_004 = ["--tables", "16", "--table-size", "2000000"];
    let out = pgoforge(&[&["run", "--plan"][..], &seed_004].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    let free_gib = free_gib(w.path());
    if out.status.success() {
        assert!(
            free_gib > 40.0,
            "accepted with {free_gib:.1} GiB free: {err}"
        );
    } else {
        assert_eq!(out.status.code(), Some(2), "{err}");
        let figure = |before: &str| -> f64 {
            let at = err
                .find(before)
                .unwrap_or_else(|| panic!("{before:?} in {err}"));
            err[..at]
                .rsplit(' ')
                .find_map(|w| w.parse::<f64>().ok())
                .unwrap_or_else(|| panic!("a figure before {before:?} in {err}"))
        };
        let (need, free) = (figure(" GiB with their logs"), figure(" GiB free"));
        assert!(
            (free - free_gib).abs() < 2.0,
            "{free} vs df's {free_gib:.1}: {err}"
        );
        assert!(need > free && need < 70.0, "{err}");
    }
}

/// `run --sweep-buffer-pool-mb`: the plan carries the sizes, its benchmark estimate and rounds
/// count every size's servers and comparisons; a size twice, a size of 0, a pool this machine
/// cannot hold, a sweep in a train × evaluate matrix and a contender named like a pool are
/// refused before any work (exit 2).
#[test]
fn a_run_with_a_buffer_pool_sweep_is_planned_over_every_size_or_refused() {
    let one = plan(&[]);
    let swept = plan(&["--sweep-buffer-pool-mb", "1024,4096"]);
    assert_eq!(
        swept["request"]["sweep_buffer_pool_mb"],
        serde_json::json!([1024, 4096])
    );
    assert!(one["request"].get("sweep_buffer_pool_mb").is_none());
    let secs = |p: &Value| p["bench_estimate_seconds"].as_u64().expect("an estimate");
    assert!(
        secs(&swept) as f64 > 1.5 * secs(&one) as f64,
        "two pools' servers: {} s vs {} s",
        secs(&swept),
        secs(&one)
    );
    let rounds = |p: &Value| p["request"]["bench"]["rounds"].as_u64().expect("rounds");
    assert!(rounds(&swept) >= rounds(&one));
    let w = tempfile::tempdir().expect("a temporary directory");
    let refused = |args: &[&str], why: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_pgoforge"))
            .args(["run", "--plan", "--work-dir"])
            .arg(w.path())
            .args(args)
            .output()
            .expect("pgoforge runs");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(why), "{args:?}: {err}");
    };
    refused(&["--sweep-buffer-pool-mb", "1024,1024"], "1024 twice");
    refused(
        &["--sweep-buffer-pool-mb", "0,1024"],
        "--sweep-buffer-pool-mb",
    );
    refused(
        &["--sweep-buffer-pool-mb", "1024,16000000"],
        "--sweep-buffer-pool-mb 16000000: one server needs",
    );
    // Training, BOLT and the gate run at --buffer-pool-mb: a sweep does not excuse it.
    refused(
        &[
            "--buffer-pool-mb",
            "16000000",
            "--sweep-buffer-pool-mb",
            "1024,4096",
        ],
        "--buffer-pool-mb 16000000: one server needs",
    );
    refused(
        &["--matrix", "--sweep-buffer-pool-mb", "1024,4096"],
        "train × evaluate matrix",
    );
    refused(
        &[
            "--binary",
            "old@bp64=/usr/sbin/mariadbd",
            "--sweep-buffer-pool-mb",
            "1024,4096",
        ],
        "'old@bp64'",
    );
    // A sweep that would take months: refused with the plan's estimate, by run and by bench.
    let months = [
        "--threads",
        "4,16,64,512",
        "--sweep-buffer-pool-mb",
        "256,512,1024,2048",
        "--rounds",
        "200",
        "--time",
        "600",
    ];
    refused(&months, "--max-bench-hours 24 allows");
    let out = Command::new(env!("CARGO_BIN_EXE_pgoforge"))
        .args(["bench", "--baseline", "a=/usr/sbin/mariadbd", "--binary"])
        .args(["b=/usr/sbin/mariadbd", "--work-dir"])
        .arg(w.path())
        .args(months)
        .output()
        .expect("pgoforge runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("the benchmark would take about") && err.contains("--max-bench-hours"),
        "{err}"
    );
    // bench holds the work dir's lock file while it decides; nothing else is made.
    let made: Vec<_> = std::fs::read_dir(w.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n != ".pgoforge.lock")
        .collect();
    assert!(made.is_empty(), "nothing made in the work dir: {made:?}");
}

/// Free space of the filesystem holding `p`, GiB, as df reports it to its user.
fn free_gib(p: &std::path::Path) -> f64 {
    let out = Command::new("df")
        .args(["--output=avail", "-B1"])
        .arg(p)
        .output()
        .expect("df runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let bytes: f64 = text
        .lines()
        .nth(1)
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("df's figure: {text}"));
    bytes / (1u64 << 30) as f64
}

/// A work dir begun with GCC before MariaDB's default became clang: the run says which compiler
/// continues its builds (their keys are unchanged), and says nothing in a fresh work dir.
#[test]
fn a_work_dir_of_another_compilers_builds_is_named_with_the_flag_that_continues_it() {
    let w = tempfile::tempdir().expect("a temporary directory");
    let say = |w: &std::path::Path| {
        let out = Command::new(env!("CARGO_BIN_EXE_pgoforge"))
            .args(["run", "--plan", "--work-dir"])
            .arg(w)
            .output()
            .expect("pgoforge runs");
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let fresh = say(w.path());
    assert!(
        fresh.contains("clang, recipe mariadb-10.11's default"),
        "{fresh}"
    );
    assert!(!fresh.contains("continues them"), "{fresh}");
    let b = w
        .path()
        .join("builds/mariadb-10.11-baseline-gcc-12-c283f7a41cf2b85d");
    std::fs::create_dir_all(&b).unwrap();
    let d = b.display();
    std::fs::write(
        b.join("build.json"),
        format!(
            r#"{{"key":"c283f7a41cf2b85d","recipe":"mariadb-10.11","variant":"baseline",
            "compiler":{{"family":"gcc","cc":"/usr/bin/gcc","cxx":"/usr/bin/g++",
            "version":"gcc (Debian 12.2.0-14+deb12u1) 12.2.0","major":12,"profdata":null}},
            "source_hash":"bf86","profile_hash":null,"dir":"{d}","build_dir":"{d}/build",
            "binary":"{d}/build/sql/mariadbd","binary_size":1,"profile_gen_dir":null,
            "flags":{{"cflags":[],"ldflags":[],"cmake_defs":[]}},"missing_profile_warnings":0,
            "seconds":1.0,"attempts":1,"jobs":2,"targets":["mariadbd"],"log":"{d}/build.log"}}"#
        ),
    )
    .unwrap();
    let earlier = say(w.path());
    assert!(
        earlier.contains("earlier builds are gcc-12's: --compiler gcc continues them"),
        "{earlier}"
    );
}

/// The benchmark's client threads are chosen per workload by default (and by `--threads auto`,
/// `--quick` too); counts given are used as given (the matrix's are its axis); `auto` mixed with
/// counts is a usage error (exit 2) naming both forms.
#[test]
fn client_threads_are_chosen_per_workload_unless_given() {
    let bench = |extra: &[&str]| plan(extra)["request"]["bench"].clone();
    for args in [&[][..], &["--threads", "auto"], &["--quick"]] {
        let b = bench(args);
        assert_eq!(b["saturate"], true, "{args:?}: {b}");
        assert_eq!(
            b["threads"],
            serde_json::json!([4]),
            "the probe starts at 4"
        );
    }
    let b = bench(&["--threads", "4,16"]);
    assert!(b.get("saturate").is_none(), "{b}");
    assert_eq!(b["threads"], serde_json::json!([4, 16]));
    assert!(bench(&["--matrix"]).get("saturate").is_none());
    let w = tempfile::tempdir().expect("a temporary directory");
    let out = Command::new(env!("CARGO_BIN_EXE_pgoforge"))
        .args(["run", "--plan", "--threads", "auto,4", "--work-dir"])
        .arg(w.path())
        .output()
        .expect("pgoforge runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(
            "--threads auto chooses one count per workload: give auto alone, or the counts"
        ),
        "{err}"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_pgoforge"))
        .args(["run", "--plan", "--threads", "many", "--work-dir"])
        .arg(w.path())
        .output()
        .expect("pgoforge runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("or auto (chosen per workload)"));
}

/// A run on MyRocks (issue 51 item 3): every build carries the RocksDB plugin (the recipe's
/// `[engines.rocksdb]` replaces its `-DPLUGIN_ROCKSDB=NO`), the training and the benchmark use
/// MyRocks tables, the gate adds MyRocks' own MTR tests, and Debian's server is compared with
/// Debian's plugin of the same release; a
/// default run's recipe, server and mix are what they were (their keys stay). Two training
/// engines make a matrix; a recipe that cannot build the engine is refused before any work.
#[test]
fn a_run_on_myrocks_builds_its_plugin_everywhere_and_trains_on_it() {
    let args = |p: &Value| -> Vec<String> {
        p["request"]["recipe"]["build"]["cmake_args"]
            .as_array()
            .expect("cmake_args")
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect()
    };
    let default = plan(&[]);
    assert!(args(&default).contains(&"-DPLUGIN_ROCKSDB=NO".to_string()));
    assert!(default["request"]["server"].get("engine").is_none());
    assert!(default["request"]["mixes"][0]["mix"]
        .get("engine")
        .is_none());
    let rocks = plan(&["--engine", "rocksdb"]);
    let a = args(&rocks);
    assert!(a.contains(&"-DPLUGIN_ROCKSDB=DYNAMIC".to_string()), "{a:?}");
    assert!(!a.iter().any(|x| x == "-DPLUGIN_ROCKSDB=NO"), "{a:?}");
    let targets = rocks["request"]["recipe"]["build"]["targets"].clone();
    assert_eq!(targets, serde_json::json!(["mariadbd", "rocksdb"]));
    assert_eq!(rocks["request"]["server"]["engine"], "rocksdb");
    assert_eq!(rocks["request"]["mixes"][0]["mix"]["engine"], "rocksdb");
    if default["request"].get("distro").is_some() {
        assert_eq!(
            rocks["request"]["distro"]["with"],
            serde_json::json!(["mariadb-plugin-rocksdb"])
        );
    }
    // The estimate counts the plugin's share of every build.
    let build = |p: &Value, stage: &str| {
        p["estimate"]["stages"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["stage"] == stage)
            .and_then(|s| s["seconds"].as_u64())
            .unwrap()
    };
    assert!(build(&rocks, "build baseline") > build(&default, "build baseline"));
    // The gate runs MyRocks' own suite beside the recipe's subset, with the tool it needs; its
    // estimate counts them. A default run's MTR list is the recipe's alone.
    let mtr = |p: &Value, key: &str| -> Vec<String> {
        p["request"]["recipe"]["mtr"][key]
            .as_array()
            .expect("mtr")
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect()
    };
    let (plain, with) = (mtr(&default, "tests"), mtr(&rocks, "tests"));
    assert!(
        !plain.iter().any(|t| t.starts_with("rocksdb.")),
        "{plain:?}"
    );
    assert!(with.starts_with(&plain), "{with:?}");
    let engine_tests: Vec<&String> = with[plain.len()..].iter().collect();
    assert!(
        engine_tests.len() >= 20 && engine_tests.iter().all(|t| t.starts_with("rocksdb.")),
        "{engine_tests:?}"
    );
    assert!(mtr(&rocks, "targets").contains(&"sst_dump".to_string()));
    assert!(!mtr(&default, "targets").contains(&"sst_dump".to_string()));
    assert!(build(&rocks, "mtr") > build(&default, "mtr"));
    // InnoDB-trained and MyRocks-trained profiles side by side.
    let both = plan(&["--engine", "rocksdb", "--train-engine", "innodb,rocksdb"]);
    let names: Vec<(String, Vec<String>)> = mixes(&both);
    assert_eq!(
        names.iter().map(|m| m.0.as_str()).collect::<Vec<_>>(),
        ["oltp+tpcc-innodb", "oltp+tpcc-rocksdb"]
    );
    assert!(both["request"]["mixes"][0]["mix"].get("engine").is_none());
    assert_eq!(both["request"]["mixes"][1]["mix"]["engine"], "rocksdb");
    let contenders = contender_names(&both);
    assert!(
        contenders.iter().any(|c| c.ends_with("@oltp+tpcc-innodb"))
            && contenders.iter().any(|c| c.ends_with("@oltp+tpcc-rocksdb")),
        "{contenders:?}"
    );
    // MySQL's recipe builds no MyRocks: refused, exit 2, before anything.
    let w = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_pgoforge"))
        .args([
            "run",
            "--plan",
            "--recipe",
            "mysql-9.7",
            "--engine",
            "rocksdb",
        ])
        .arg("--work-dir")
        .arg(w.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("does not build the rocksdb engine"), "{err}");
    assert!(std::fs::read_dir(w.path()).unwrap().next().is_none());
}
