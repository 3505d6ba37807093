//! `pgoforge run`'s pipeline on real code paths without compiling a server:
//! - the fixture project with real gcc: a variant whose build fails is left out and named; with
//!   nothing left to compare the run stops before the gate and benchmark and records no stage it
//!   did not finish;
//! - the stand-in source (tests/fixtures/standin: Debian's mariadbd copied by a real CMake build):
//!   every stage succeeds, the winner is packaged, a rerun reuses everything, and a benchmark cut
//!   short resumes without double-counting.

use crate::common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use oltp::settings::TestName;
use pgoforge::bench::spec::BenchSpec;
use pgoforge::events::{Collect, Event};
use pgoforge::pipeline::{self, Env, RunPlan, RunRequest, Tracker};
use pgoforge::profile::train::{Mix, NamedMix};
use pgoforge::recipe::Recipe;
use pgoforge::server::ServerConfig;
use pgoforge::toolchain::{Compiler, FlagFamily};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/pgofix")
}

/// gcc and g++ that refuse link-time optimization, as a compiler without LTO support would.
fn no_lto_gcc(dir: &Path) -> Compiler {
    for (name, real) in [("nolto-gcc", "gcc"), ("nolto-g++", "g++")] {
        let p = dir.join(name);
        fs::write(
            &p,
            format!(
                "#!/bin/sh\nfor a in \"$@\"; do case \"$a\" in -flto*) echo \"{name}: LTO is not supported\" >&2; exit 1;; esac; done\nexec {real} \"$@\"\n"
            ),
        )
        .unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    }
    Compiler::find(
        dir.join("nolto-gcc").to_str().unwrap(),
        Some(FlagFamily::Gcc),
    )
    .unwrap()
}

/// A run of one variant on a fixture project, packaged, with a 64 MiB buffer pool.
fn request(
    recipe: Recipe,
    source: PathBuf,
    compiler: Compiler,
    variant: &str,
    profile: Option<PathBuf>,
    bench: BenchSpec,
    work: PathBuf,
) -> RunRequest {
    RunRequest {
        recipe,
        source: Some(source.to_str().unwrap().into()),
        sha256: None,
        compiler,
        variants: vec![variant.parse().unwrap()],
        cpu_level: None,
        distro: None,
        profile,
        reuse: None,
        mixes: vec![NamedMix {
            name: "oltp".into(),
            mix: Mix::quick(),
        }],
        bench,
        server: ServerConfig {
            buffer_pool_mb: 64,
            // Each benchmark round restores the datadir, redo log included (512 MiB by default).
            redo_log_mb: 32,
            ..ServerConfig::default()
        },
        bolt_flags: None,
        work_dir: work,
        package: true,
        seed: None,
        cachegrind: false,
        separate_bolt_builds: false,
        sweep_buffer_pool_mb: Vec::new(),
        outside: Vec::new(),
        // Tests share the machine (and one of them loads it on purpose).
        guard: pgoforge::bench::load::Guard::allow_busy(),
        allow_regression: false,
        min_effect: None,
        margin: None,
        aa: false,
        auto_rounds: false,
        // Plumbing runs of a round or two: too few to show anything, on purpose.
        allow_few_rounds: true,
        gate: pgoforge::gate::GateMode::Quick,
        mtr_tests: None,
        baseline: Default::default(),
    }
}

#[test]
fn a_variant_that_fails_to_build_is_named_and_nothing_half_done_is_recorded() {
    let t = tempfile::tempdir().unwrap();
    let cc = no_lto_gcc(t.path());
    let recipe = Recipe::load(fixture().join("recipe.toml").to_str().unwrap()).unwrap();
    let work = t.path().join("work");
    let req = request(
        recipe,
        fixture(),
        cc,
        "lto",
        None,
        tiny_bench(1),
        work.clone(),
    );
    let plan = pgoforge::pipeline::resolve(req, &Env::default()).unwrap();
    let events = Collect::default();
    let e = pipeline::run(&plan, &events).unwrap_err();
    let lines = events.lines();
    let e = format!("{e:#}");
    assert!(e.contains("no variant was built"), "{e}");
    assert!(
        e.contains("lto: build failed") && e.contains("LTO is not supported"),
        "{e}"
    );
    assert!(
        lines.iter().any(|l| l.starts_with("build baseline: done")),
        "{lines:?}"
    );
    // The baseline is a finished build; the failed lto build is not.
    let builds: Vec<(String, bool)> = fs::read_dir(work.join("builds"))
        .unwrap()
        .map(|d| {
            let d = d.unwrap();
            (
                d.file_name().to_string_lossy().into_owned(),
                d.path().join("build.json").is_file(),
            )
        })
        .collect();
    assert!(
        builds
            .iter()
            .any(|(n, done)| n.contains("-baseline-") && *done),
        "{builds:?}"
    );
    assert!(
        builds.iter().any(|(n, done)| n.contains("-lto-") && !*done),
        "{builds:?}"
    );
    // No gate, benchmark or package recorded, no outcome written (the source and the finished
    // baseline build are).
    let state = Tracker::open(&work).unwrap();
    let recorded: Vec<&String> = state.state().stages.keys().collect();
    assert_eq!(recorded, ["build baseline", "source"], "{recorded:?}");
    assert!(!pipeline::outcome_path(&work).exists());
}

fn tiny_bench(rounds: u32) -> BenchSpec {
    BenchSpec {
        workloads: vec![TestName::OltpPointSelect],
        threads: vec![1],
        rounds,
        seconds: 1,
        warmup_seconds: 0,
        tables: 1,
        table_size: 100,
        // The default design, sliced, at the most --time allows.
        slice_seconds: Some(1),
        // At the threads given: the probe has its own test (server tier).
        saturate: false,
        ..BenchSpec::standard()
    }
}

/// The stand-in's `pgo` run in `dir`/work with GCC and a prepared profile in `dir`/gcda, which
/// the pgo variant's build takes (the stand-in build ignores it).
fn standin_pgo(dir: &Path, bench: BenchSpec) -> RunRequest {
    let profile = dir.join("gcda");
    fs::create_dir_all(&profile).unwrap();
    fs::write(profile.join("a.gcda"), b"prepared").unwrap();
    request(
        Recipe::load(standin().join("recipe.toml").to_str().unwrap()).unwrap(),
        standin(),
        Compiler::find("gcc", None).unwrap(),
        "pgo",
        Some(profile),
        bench,
        dir.join("work"),
    )
}

fn standin() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/standin")
}

/// The stages a plan lists, by the names the run reports them under.
fn planned(plan: &RunPlan) -> Vec<String> {
    plan.stages.iter().map(|s| s.to_string()).collect()
}

fn started(events: &Collect) -> Vec<String> {
    events
        .0
        .borrow()
        .iter()
        .filter_map(|e| match e {
            Event::StageStarted { stage } => Some(stage.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_whole_run_succeeds_packages_the_winner_reuses_everything_and_resumes_a_cut_benchmark() {
    let _turn = crate::measured_win_lock();
    let t = tempfile::tempdir().unwrap();
    let work = t.path().join("work");
    let req = standin_pgo(t.path(), tiny_bench(8));
    let plan = pgoforge::pipeline::resolve(req, &Env::default()).unwrap();
    let events = Collect::default();
    let (out, report) = pipeline::run(&plan, &events).unwrap_or_else(|e| panic!("{e:#}"));
    let text = pgoforge::bench::export::text::text(&report);
    println!("{text}");
    // The plan is what runs: the stages started are the plan's, in its order.
    assert_eq!(started(&events), planned(&plan), "{text}");
    assert_eq!(
        started(&events),
        [
            "source",
            "build baseline",
            "build pgo",
            "gate",
            "seed",
            "bench",
            "report",
            "package"
        ],
        "{text}"
    );
    // The baseline stand-in is stopped 3/4 of the time; the pgo one is not: measurably faster, packaged.
    assert_eq!(out.winner.as_deref(), Some("pgo"), "{:?}", report.cells);
    let pkg = out.package.as_ref().expect("the winner is packaged");
    assert!(pkg.path.is_file());
    assert_eq!(
        pgoforge::infra::fs::sha256_file(&pkg.path).unwrap(),
        pkg.sha256
    );
    let results = out.run_dir.join("results.jsonl");
    let lines = |p: &Path| fs::read_to_string(p).unwrap().lines().count();
    assert_eq!(lines(&results), 16, "8 rounds x 2 contenders");
    let saved = pipeline::Outcome::load(&work).unwrap();
    assert_eq!(saved.winner.as_deref(), Some("pgo"));
    // Anyone can rebuild it from its sidecar and get the same bytes; tampering is refused.
    crate::rebuild::rebuild_and_tamper(&pkg.path, &standin(), &t.path().join("rebuild"));
    // The next release from this package's profiles (`run --profile-from`).
    from_the_packages_profiles(&pkg.path, &t.path().join("next"));

    // Nothing changed: every stage is reused (the directory source is hashed again, cheaply;
    // the report is always regenerated), and nothing is measured twice.
    let again = Collect::default();
    let (out2, _) = pipeline::run(&plan, &again).unwrap();
    assert_eq!(started(&again), ["source", "report"]);
    assert_eq!(out2.package.as_ref().unwrap().sha256, pkg.sha256);
    assert_eq!(lines(&results), 16);
    assert!(out2
        .timings
        .iter()
        .any(|s| s.stage == "build pgo" && s.reused));

    // A benchmark killed after three runs: its record never made it to the state file, the
    // results hold three lines. The same command measures the thirteen missing runs only.
    let text = fs::read_to_string(&results).unwrap();
    let kept: Vec<&str> = text.lines().take(3).collect();
    fs::write(&results, kept.join("\n") + "\n").unwrap();
    let state_path = Tracker::state_path(&work);
    let mut state: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(&state_path).unwrap()).unwrap();
    state["stages"].as_object_mut().unwrap().remove("bench");
    fs::write(&state_path, state.to_string()).unwrap();
    let resumed = Collect::default();
    let (out3, _) = pipeline::run(&plan, &resumed).unwrap();
    assert_eq!(started(&resumed), ["source", "bench", "report"]);
    assert_eq!(lines(&results), 16);
    let rounds: std::collections::BTreeSet<String> = fs::read_to_string(&results)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            format!("{}-{}", v["round"], v["contender"])
        })
        .collect();
    assert_eq!(rounds.len(), 16, "every (round, contender) measured once");
    assert_eq!(out3.run_dir, out.run_dir);
}

/// `run --baseline debian` (what `follow` runs): Debian's server of the release, downloaded for
/// real from the machine's mirror, is the baseline — no baseline build; it is fetched first, the
/// checksum gate's and MTR's reference (MTR's tools and tree are the optimized build's), the
/// benchmark's first contender, and the run's outcome names it as a server it did not build.
#[test]
fn with_debians_server_as_the_baseline_nothing_builds_one_and_every_gate_compares_with_debian() {
    let t = tempfile::tempdir().unwrap();
    let work = t.path().join("work");
    let mut req = standin_pgo(t.path(), tiny_bench(2));
    // The stand-in copies the installed server; Debian's package of the same version holds the
    // same binary.
    let installed = std::process::Command::new("dpkg-query")
        .args(["-W", "-f", "${Version}", "mariadb-server-core"])
        .output()
        .unwrap();
    let version = String::from_utf8(installed.stdout).unwrap();
    req.distro = Some(pgoforge::source::distro::DistroServer {
        package: "mariadb-server-core".into(),
        version,
        suite: "bookworm".into(),
        with: Vec::new(),
    });
    req.baseline = pgoforge::pipeline::BaselineFrom::Debian;
    req.gate = pgoforge::gate::GateMode::Mtr;
    req.package = false;
    let plan = pgoforge::pipeline::resolve(req, &Env::default()).unwrap();
    let events = Collect::default();
    let (out, report) = pipeline::run(&plan, &events).unwrap_or_else(|e| panic!("{e:#}"));
    let text = pgoforge::bench::export::text::text(&report);
    println!("{text}");
    assert_eq!(
        started(&events),
        [
            "source",
            "distro",
            "build pgo",
            "gate",
            "mtr",
            "seed",
            "bench",
            "report"
        ],
        "{text}"
    );
    let builds = common::names_in(&work.join("builds"));
    assert!(
        builds.iter().all(|n| !n.contains("-baseline-")),
        "{builds:?}"
    );
    // The baseline is Debian's binary as the mirror serves it, unpacked in the work dir.
    let debian = &out.contenders[0];
    assert_eq!(debian.name, "debian");
    assert!(debian.build.is_none() && debian.binary.starts_with(&work));
    assert_eq!(
        debian.sha256.as_deref(),
        Some(
            pgoforge::infra::fs::sha256_file(Path::new("/usr/sbin/mariadbd"))
                .unwrap()
                .as_str()
        )
    );
    let names: Vec<&str> = out.contenders.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["debian", "pgo"]);
    assert_eq!(report.plan.contenders[0].name, "debian");
    assert!(
        report.plan.reference_only.is_empty(),
        "{:?}",
        report.plan.reference_only
    );
    assert!(report
        .cells
        .iter()
        .any(|c| c.contender == "pgo" && c.tps_vs_baseline.is_some()));
    // MTR ran Debian's server as the reference in the optimized build's tree.
    let g: pgoforge::gate::mtr::MtrGate =
        serde_json::from_str(&fs::read_to_string(work.join("gate/mtr/result.json")).unwrap())
            .unwrap();
    let ran: Vec<(&str, usize)> = g
        .runs
        .iter()
        .map(|r| {
            (
                r.name.as_str(),
                r.count(pgoforge::gate::mtr::TestOutcome::Pass),
            )
        })
        .collect();
    assert_eq!(
        ran.iter().map(|r| r.0).collect::<Vec<_>>(),
        ["debian", "pgo"]
    );
    assert!(ran.iter().all(|r| r.1 == 3), "{ran:?}");
    assert_eq!(g.runs[0].binary, debian.binary);
    assert!(g.not_run.is_empty() && g.regressions.is_empty(), "{g:?}");
}

/// `run --sweep-buffer-pool-mb 64,128`: the benchmark serves every contender at both pools
/// (`NAME@bpN`, each compared with its own pool's baseline), the run's rounds count both pools'
/// comparisons, the winner is one pool's contender, and the package is its build — the binary,
/// whatever pool won.
#[test]
fn a_buffer_pool_sweep_in_a_run_benchmarks_each_pool_and_packages_the_winners_build() {
    let _turn = crate::measured_win_lock();
    let t = tempfile::tempdir().unwrap();
    let mut req = standin_pgo(t.path(), tiny_bench(1));
    req.sweep_buffer_pool_mb = vec![64, 128];
    req.auto_rounds = true;
    let plan = pgoforge::pipeline::resolve(req, &Env::default()).unwrap();
    // Two comparisons (pgo at each pool): the exact test's 6 rounds, a whole Williams block of
    // four contenders is 4, so 8.
    assert_eq!(plan.request.bench.rounds, 8);
    let one_pool = {
        let mut r = plan.request.clone();
        r.sweep_buffer_pool_mb.clear();
        pgoforge::bench::estimate::wall_time(&r.bench, &r.bench_servers(2)).as_secs()
    };
    assert!(
        plan.bench_estimate_seconds > one_pool,
        "the estimate counts both pools: {} vs {one_pool}",
        plan.bench_estimate_seconds
    );
    let events = Collect::default();
    let (out, report) = pipeline::run(&plan, &events).unwrap_or_else(|e| panic!("{e:#}"));
    let text = pgoforge::bench::export::text::text(&report);
    println!("{text}");
    let served: Vec<(String, Option<u64>)> = report
        .plan
        .contenders
        .iter()
        .map(|c| (c.name.clone(), c.buffer_pool_mb))
        .collect();
    assert_eq!(
        served,
        [
            ("baseline@bp64".to_string(), Some(64)),
            ("pgo@bp64".to_string(), Some(64)),
            ("baseline@bp128".to_string(), Some(128)),
            ("pgo@bp128".to_string(), Some(128)),
        ]
    );
    let results = fs::read_to_string(out.run_dir.join("results.jsonl")).unwrap();
    assert_eq!(results.lines().count(), 32, "8 rounds x 4 servers");
    for c in ["pgo@bp64", "pgo@bp128"] {
        let cell = report.cells.iter().find(|x| x.contender == c).unwrap();
        assert!(
            cell.tps_vs_baseline.is_some(),
            "{c} compared with its pool's baseline"
        );
    }
    // The stand-in's pgo wins at either pool; the package is the pgo build's binary.
    let w = out.winner.clone().expect("a winner");
    assert!(w == "pgo@bp64" || w == "pgo@bp128", "{w}");
    let pkg = out
        .package
        .as_ref()
        .expect("the winner's build is packaged");
    assert!(pkg.path.is_file());
    let unpacked = t.path().join("unpacked");
    fs::create_dir_all(&unpacked).unwrap();
    let st = std::process::Command::new("tar")
        .args(["--zstd", "-xf"])
        .arg(&pkg.path)
        .arg("-C")
        .arg(&unpacked)
        .status()
        .unwrap();
    assert!(st.success());
    let root = fs::read_dir(&unpacked)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert!(root.join("bin/mariadbd").is_file());
    let manifest: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(root.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["variant"], "pgo", "{manifest}");
    assert!(
        !manifest["gains"].as_array().unwrap().is_empty(),
        "the winner's gains at its pool: {manifest}"
    );
    assert!(
        text.contains("64 MiB") && text.contains("128 MiB"),
        "{text}"
    );
}

/// A run that takes its profiles from `pkg`'s sidecar: no instrumented build, no training, the
/// compiler profile given to the build, and the new package's manifest naming where the
/// profiles came from; another compiler is refused before anything is built.
fn from_the_packages_profiles(pkg: &Path, dir: &Path) {
    // Another server family's run refuses the profile before anything is built.
    let gcc = Compiler::find("gcc", None).unwrap();
    let fix = Recipe::load(fixture().join("recipe.toml").to_str().unwrap()).unwrap();
    let e =
        pgoforge::pipeline::profile_from::resolve(pkg, &dir.join("other"), &gcc, &fix).unwrap_err();
    assert!(format!("{e:#}").contains("recipe standin"), "{e:#}");
    let plan = plan_from_package(pkg, &dir.join("work"), Default::default());
    assert!(
        planned(&plan)
            .iter()
            .all(|s| !s.contains("pgo-gen") && s != "train"),
        "{:?}",
        planned(&plan)
    );
    let events = Collect::default();
    let (out, report) = pipeline::run(&plan, &events).unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(started(&events), planned(&plan));
    let text = pgoforge::bench::export::text::text(&report);
    let new = out
        .package
        .as_ref()
        .unwrap_or_else(|| panic!("nothing won: {text}"));
    let root = pgoforge::package::unpack::unpack(&new.path, &dir.join("unpacked")).unwrap();
    let m: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(root.join("manifest.json")).unwrap()).unwrap();
    let old = pkg
        .file_name()
        .unwrap()
        .to_string_lossy()
        .replace(".tar.zst", "");
    assert_eq!(m["profile_provenance"]["package"], old.as_str(), "{m}");
    assert!(m["profile_provenance"]["compiler"]
        .as_str()
        .unwrap()
        .starts_with("gcc-"));
    // The report's "keeping up with releases" section: from where, and the one optimized build's
    // staleness as GCC counted it (the same source: nothing stale), kept in the run directory so
    // `pgoforge report` shows it again.
    let reuse = report
        .profile_reuse
        .as_ref()
        .unwrap_or_else(|| panic!("no reuse section: {text}"));
    assert!(reuse.from.starts_with(&old), "{reuse:?}");
    assert_eq!(reuse.builds.len(), 1, "{reuse:?}");
    assert_eq!(
        (reuse.builds[0].variant.as_str(), reuse.builds[0].mismatched),
        ("pgo", 0)
    );
    assert!(text.contains("Keeping up with releases"), "{text}");
    assert!(out.run_dir.join("profile-reuse.json").is_file());
    stale_profile_retrains(pkg, &dir.join("stale"));
    // Another compiler: refused before anything is fetched or built, both named.
    let w2 = dir.join("clang");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pgoforge"))
        .args(["run", "--recipe"])
        .arg(standin().join("recipe.toml"))
        .arg("--source")
        .arg(standin())
        .args([
            "--compiler",
            "clang-22",
            "--variants",
            "pgo",
            "--profile-from",
        ])
        .arg(pkg)
        .arg("--work-dir")
        .arg(&w2)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("gcc-12") && err.contains("clang-22"), "{err}");
    assert!(!w2.join("builds").exists() && !w2.join("sources").exists());
}

/// The stand-in's `pgo` run in `work` with `pkg`'s profiles (`run --profile-from`), GCC, a tiny
/// benchmark, the given staleness policy.
fn plan_from_package(
    pkg: &Path,
    work: &Path,
    stale: pgoforge::pipeline::stale_check::StalePolicy,
) -> RunPlan {
    let gcc = Compiler::find("gcc", None).unwrap();
    let recipe = Recipe::load(standin().join("recipe.toml").to_str().unwrap()).unwrap();
    let mut reuse =
        pgoforge::pipeline::profile_from::resolve(pkg, &work.join("reuse"), &gcc, &recipe).unwrap();
    reuse.stale = stale;
    let mut req = request(
        recipe,
        standin(),
        gcc,
        "pgo",
        Some(reuse.compiler_profile.clone()),
        tiny_bench(6),
        work.to_path_buf(),
    );
    req.reuse = Some(reuse);
    pgoforge::pipeline::resolve(req, &Env::default()).unwrap()
}

/// A profile at the staleness threshold (0 %: always) with `--retrain-if-stale`: the pipeline
/// stops after the optimized build, before any benchmark, with `TooStale`; `pgoforge run` then
/// starts this release's own instrumented build and training.
fn stale_profile_retrains(pkg: &Path, dir: &Path) {
    use pgoforge::pipeline::stale_check::{StalePolicy, TooStale};
    let work = dir.join("work");
    let always = StalePolicy {
        threshold_pct: 0.0,
        retrain: true,
    };
    let plan = plan_from_package(pkg, &work, always);
    let events = Collect::default();
    let e = pipeline::run(&plan, &events).map(|_| ()).unwrap_err();
    let stale = e
        .downcast_ref::<TooStale>()
        .unwrap_or_else(|| panic!("not TooStale: {e:#}"));
    assert_eq!(stale.0.variant, "pgo");
    assert!(format!("{e}").contains("--retrain-if-stale"), "{e}");
    assert!(
        !started(&events).iter().any(|s| s == "bench"),
        "{:?}",
        started(&events)
    );
    // The command: stops there and runs again with this release's own instrumented build and
    // training. (The stand-in's instrumented "server" is Debian's binary, which writes no
    // profile, so that training is refused, as it would be for a real server that wrote none.)
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_pgoforge"))
        .args(["run", "--recipe"])
        .arg(standin().join("recipe.toml"))
        .arg("--source")
        .arg(standin())
        .args(["--compiler", "gcc", "--variants", "pgo", "--profile-from"])
        .arg(pkg)
        .args(["--stale-threshold", "0", "--retrain-if-stale"])
        .args(["--train-mix", "q=oltp_point_select:2:1", "--workloads"])
        .args([
            "oltp_point_select",
            "--threads",
            "1",
            "--time",
            "1",
            "--warmup",
            "0",
        ])
        .args([
            "--rounds",
            "6",
            "--tables",
            "1",
            "--table-size",
            "100",
            "--no-aa",
        ])
        .args([
            "--gate",
            "quick",
            "--buffer-pool-mb",
            "64",
            "--redo-log-mb",
            "32",
            "--allow-busy",
            "--json",
        ])
        .arg("--work-dir")
        .arg(&work)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    let stale_at = err
        .find("retraining (--retrain-if-stale)")
        .unwrap_or_else(|| panic!("{err}"));
    let after = &err[stale_at..];
    for stage in ["build pgo-gen", "train"] {
        assert!(
            after.contains(&format!(r#""stage_started","stage":"{stage}""#)),
            "{stage} after the verdict: {err}"
        );
    }
    assert!(
        !err[..stale_at].contains(r#""stage_started","stage":"bench""#),
        "{err}"
    );
    assert!(after.contains("holds no .gcda files"), "{err}");
}

/// A server that computes differently: Debian's mariadbd with div_precision_increment changed,
/// as a wrong setting or a miscompiled division would.
fn broken_server(dir: &Path) -> PathBuf {
    // Laid out like a build tree (share files beside sql/), as the stand-in builds are.
    let dir = dir.join("broken");
    fs::create_dir_all(dir.join("sql")).unwrap();
    std::os::unix::fs::symlink("/usr/share/mysql", dir.join("share")).unwrap();
    let p = dir.join("sql/mariadbd");
    fs::write(
        &p,
        "#!/bin/sh\nexec /usr/sbin/mariadbd \"$@\" --div-precision-increment=2\n",
    )
    .unwrap();
    fs::set_permissions(&p, fs::Permissions::from_mode(0o755)).unwrap();
    p
}

#[test]
fn a_variant_failing_the_servers_own_tests_is_stopped_by_the_gate_with_the_tests_name() {
    let t = tempfile::tempdir().unwrap();
    let work = t.path().join("work");
    let mut req = standin_pgo(t.path(), tiny_bench(2));
    req.gate = pgoforge::gate::GateMode::Mtr;
    req.package = false;
    req.outside.push(pgoforge::bench::plan::Contender {
        name: "broken".into(),
        binary: broken_server(t.path()),
        buffer_pool_mb: None,
    });
    let plan = pgoforge::pipeline::resolve(req, &Env::default()).unwrap();
    let events = Collect::default();
    let (out, report) = pipeline::run(&plan, &events).unwrap_or_else(|e| panic!("{e:#}"));
    let stages = started(&events);
    assert_eq!(stages, planned(&plan), "the plan is what runs");
    assert!(
        stages.windows(2).any(|w| w == ["gate", "mtr"]),
        "{stages:?}"
    );
    // The quick gate cannot see it (integer tables); MTR does, names the test and shows the diff.
    let warning = out
        .warnings
        .iter()
        .find(|w| w.starts_with("broken: stopped by the gate"))
        .unwrap_or_else(|| panic!("{:?}", out.warnings));
    assert!(warning.contains("main.func_math (fail)"), "{warning}");
    assert!(warning.contains("+"), "the diff is shown: {warning}");
    // Stopped: not benchmarked (so never packaged); the good variant is.
    let names: Vec<&str> = out.contenders.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["baseline", "pgo"]);
    assert!(report.cells.iter().all(|c| c.contender != "broken"));
    let results = fs::read_to_string(out.run_dir.join("results.jsonl")).unwrap();
    assert!(!results.contains("\"broken\""));
    // The record: every binary ran every test; only broken regressed, and the baseline failed none.
    let g: pgoforge::gate::mtr::MtrGate =
        serde_json::from_str(&fs::read_to_string(work.join("gate/mtr/result.json")).unwrap())
            .unwrap();
    assert_eq!(g.runs.len(), 3);
    for r in &g.runs {
        assert_eq!(r.tests.len(), 3, "{}: {:?}", r.name, r.tests);
    }
    assert!(g.baseline_failures.is_empty(), "{:?}", g.baseline_failures);
    let regressed: Vec<(&str, &str)> = g
        .regressions
        .iter()
        .map(|r| (r.variant.as_str(), r.test.as_str()))
        .collect();
    assert!(
        regressed.contains(&("broken", "main.func_math")),
        "{regressed:?}"
    );
    assert!(regressed.iter().all(|(v, _)| *v == "broken"));
    // mysqltest's reject files are kept with the run, not left in the shared test tree.
    let left: Vec<_> = fs::read_dir("/usr/share/mysql/mysql-test/main")
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "reject"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    // (As root mysqltest writes it beside the expected result and the gate moves it into
    // rejects/; as another user it lands in the vardir's logs: either way under the gate's dir.)
    let kept = common::paths_under(&work.join("gate/mtr/candidate1"))
        .into_iter()
        .any(|p| p.file_name().is_some_and(|n| n == "func_math.reject"));
    assert!(kept, "func_math.reject kept with the run");
    // The report names the stopped variant, the test and the changed lines.
    let text = pgoforge::bench::export::text::text(&report);
    let line = text
        .lines()
        .find(|l| l.contains("main.func_math fails on broken"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains(" | +"), "{line}");
    assert!(text.contains("baseline: 3 passed, 0 failed"), "{text}");
}
