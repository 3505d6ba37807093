//! Training, profile checks and storage, BOLT and the correctness gate: on the fixture project
//! (gcc, clang, bolt) and on Debian's mariadbd where a real server is needed.

use crate::common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use pgoforge::builder::{build, BuildOutput, BuildRequest, ProfileInput};
use pgoforge::gate::{gate, GateWorkload};
use pgoforge::profile::bolt::{self, BoltRequest};
use pgoforge::profile::train::{self, Mix, TrainRequest};
use pgoforge::profile::{
    self, check_belongs, check_gcda, check_profdata, store, Kind, Meta, Summary,
};
use pgoforge::recipe::Recipe;
use pgoforge::server::ServerSpec;
use pgoforge::source::{self, Source};
use pgoforge::toolchain::{Bolt, Compiler};

const MARIADBD: &str = "/usr/sbin/mariadbd";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/pgofix")
}

fn fixture_build(
    work: &Path,
    variant: &str,
    compiler: &Compiler,
    profile: Option<&ProfileInput>,
) -> (BuildOutput, Source) {
    let recipe = Recipe::load(fixture().join("recipe.toml").to_str().unwrap()).unwrap();
    let src = source::fetch(&recipe, Some(fixture().to_str().unwrap()), None, work).unwrap();
    let out = build(&BuildRequest {
        recipe: &recipe,
        source: &src,
        variant: variant.parse().unwrap(),
        compiler,
        profile,
        work_dir: work,
        jobs: 2,
        progress: None,
        cluster: None,
        source_paths: pgoforge::builder::relative::SourcePaths::of_profile(profile),
    })
    .unwrap();
    (out, src)
}

fn output(bin: &Path, args: &[&str]) -> String {
    let out = Command::new(bin).args(args).output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn meta(kind: Kind, source_hash: &str, compiler: &str) -> Meta {
    Meta {
        hash: String::new(),
        kind,
        source_hash: source_hash.into(),
        build_key: "k".into(),
        recipe: "pgofix".into(),
        variant: "pgo-gen".into(),
        compiler: compiler.into(),
        compiler_version: String::new(),
        training: vec!["all 20000".into()],
        seconds: 1.0,
        created: pgoforge::infra::time::now_secs(),
        summary: Summary::default(),
        source_paths: Default::default(),
    }
}

#[test]
fn gcc_profiles_are_checked_stored_and_refused_when_foreign() {
    let work = tempfile::tempdir().unwrap();
    let gcc = Compiler::find("gcc", None).unwrap();
    let (gen, src) = fixture_build(work.path(), "pgo-gen", &gcc, None);
    let dir = gen.profile_gen_dir.clone().unwrap();
    // Nothing ran yet: refused.
    fs::create_dir_all(&dir).unwrap();
    assert!(check_gcda(&dir, &gen)
        .unwrap_err()
        .to_string()
        .contains("holds no .gcda files"));
    output(&gen.binary, &["all", "20000"]);
    let s = check_gcda(&dir, &gen).unwrap();
    assert_eq!(s.files, 4);
    assert!(s.bytes > 0);
    // gcov-dump of the same GCC counts functions; cold_path never ran, so not all have counts.
    let (f, w) = (s.functions.unwrap(), s.functions_with_counts.unwrap());
    assert!(f >= 8 && w >= 5 && w < f, "{f} functions, {w} with counts");

    let stored = store(
        work.path(),
        &ProfileInput::GccDir(dir.clone()),
        Kind::Gcda,
        meta(Kind::Gcda, &src.hash, &gcc.label()),
    )
    .unwrap();
    assert!(stored.dir.starts_with(work.path().join("profiles")));
    assert_eq!(profile::gcda_files(&stored.data()).unwrap().len(), 4);
    let again = store(
        work.path(),
        &ProfileInput::GccDir(dir.clone()),
        Kind::Gcda,
        meta(Kind::Gcda, &src.hash, &gcc.label()),
    )
    .unwrap();
    assert_eq!(again.dir, stored.dir, "content-addressed");
    let loaded = profile::Stored::load(&stored.dir).unwrap();
    assert_eq!(loaded.meta.hash, stored.meta.hash);
    check_belongs(&loaded, &src.hash, &gcc.label()).unwrap();
    let e = check_belongs(&loaded, "0123456789abcdef", &gcc.label())
        .unwrap_err()
        .to_string();
    assert!(e.contains("trained on source"), "{e}");
    assert!(check_belongs(&loaded, &src.hash, "clang-16")
        .unwrap_err()
        .to_string()
        .contains("made by gcc"));

    // A profile whose files name objects this build does not have belongs to another build.
    let foreign = work.path().join("foreign");
    fs::create_dir_all(&foreign).unwrap();
    for (i, f) in profile::gcda_files(&dir).unwrap().iter().enumerate() {
        fs::copy(
            f,
            foreign.join(format!("CMakeFiles#other{i}.dir#src#x.c.gcda")),
        )
        .unwrap();
    }
    let e = check_gcda(&foreign, &gen).unwrap_err().to_string();
    assert!(e.contains("belongs to another build"), "{e}");
    // An empty gcda file is refused.
    let empty = work.path().join("empty");
    fs::create_dir_all(&empty).unwrap();
    fs::write(empty.join("CMakeFiles#pgofix.dir#src#kv.c.gcda"), "").unwrap();
    assert!(check_gcda(&empty, &gen)
        .unwrap_err()
        .to_string()
        .contains("is empty"));
}

#[test]
fn clang_profiles_are_merged_with_the_matching_tool_and_summarized() {
    let work = tempfile::tempdir().unwrap();
    let clang = Compiler::find("clang-16", None).unwrap();
    let (gen, _) = fixture_build(work.path(), "pgo-gen", &clang, None);
    let dir = gen.profile_gen_dir.clone().unwrap();
    assert!(train::merge_profraw(&gen, &dir, None).is_err() || !dir.exists());
    let pattern = dir.join("%m-%p.profraw");
    let st = Command::new(&gen.binary)
        .args(["all", "20000"])
        .env("LLVM_PROFILE_FILE", &pattern)
        .status()
        .unwrap();
    assert!(st.success());
    let merged = train::merge_profraw(&gen, &dir, None).unwrap();
    let s = check_profdata(&merged, clang.profdata().unwrap()).unwrap();
    assert!(s.functions.unwrap() >= 5, "{s:?}");
    assert!(s.functions_with_counts.unwrap() >= 4, "{s:?}");
    assert!(
        s.hottest
            .iter()
            .any(|f| f.contains("kv_workload") || f.contains("parse") || f.contains("threaded")),
        "{s:?}"
    );
    // The hottest functions, as a stale build's report ranks them: the "all" workload's sort and
    // parser (by their largest block count), no more than asked for, none from a non-profile.
    let hot = pgoforge::profile::hottest_functions(&merged, clang.profdata().unwrap(), 3).unwrap();
    assert!(!hot.is_empty() && hot.len() <= 3, "{hot:?}");
    assert!(
        hot.iter()
            .any(|f| f.contains("parse_workload") || f.contains("introsort")),
        "{hot:?}"
    );
    let junk = work.path().join("junk.profdata");
    fs::write(&junk, "not a profile").unwrap();
    assert!(check_profdata(&junk, clang.profdata().unwrap())
        .unwrap_err()
        .to_string()
        .contains("cannot read it"));
    assert_eq!(
        pgoforge::profile::hottest_functions(&junk, clang.profdata().unwrap(), 3),
        None
    );
    let empty = work.path().join("empty.profdata");
    fs::write(&empty, "").unwrap();
    assert!(check_profdata(&empty, clang.profdata().unwrap())
        .unwrap_err()
        .to_string()
        .contains("is empty"));
}

#[test]
fn bolt_instruments_and_optimizes_a_fixture_binary() {
    let work = tempfile::tempdir().unwrap();
    let b = Bolt::find().expect("bolt is installed (scripts/install-test-deps.sh)");
    let gcc = Compiler::find("gcc", None).unwrap();
    let (plain, _) = fixture_build(work.path(), "baseline", &gcc, None);
    // Not bolt-ready: refused before anything runs.
    let e = bolt::optimize(
        &BoltRequest {
            binary: &plain.binary,
            bolt: &b,
            spec: ServerSpec::new(MARIADBD),
            mix: &Mix::quick(),
            dataset: None,
            work_dir: work.path(),
            flags: None,
            source_hash: String::new(),
            build_key: String::new(),
            given: None,
        },
        &|_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("is not bolt-ready"), "{e}");

    let (ready, _) = fixture_build(work.path(), "baseline+bolt", &gcc, None);
    assert!(bolt::is_bolt_ready(&ready.binary).unwrap());
    let expected = output(&ready.binary, &["all", "20000"]);
    let fdata = work.path().join("fdata");
    fs::create_dir_all(&fdata).unwrap();
    let inst = work.path().join("pgofix.inst");
    bolt::instrument_binary(
        &b,
        &ready.binary,
        &fdata,
        &inst,
        &work.path().join("inst.log"),
    )
    .unwrap();
    assert_eq!(output(&inst, &["all", "20000"]), expected);
    let merged = work.path().join("merged.fdata");
    bolt::merge_fdata(&b, &fdata, &merged).unwrap();
    assert!(fs::metadata(&merged).unwrap().len() > 0);
    let flags = bolt::probe_flags(&b).unwrap();
    assert!(
        flags.iter().any(|f| f.starts_with("-reorder-functions=")),
        "{flags:?}"
    );
    // CI installs bolt-22, which calls `-icf=1` deprecated: the probe picks its spelling.
    assert_eq!(b.major, 22, "the newest installed BOLT is found");
    assert!(flags.contains(&"-icf=all".to_string()), "{flags:?}");
    let out = work.path().join("pgofix.bolt");
    let coverage = bolt::optimize_binary(
        &b,
        &ready.binary,
        &merged,
        &flags,
        &out,
        &work.path().join("opt.log"),
    )
    .unwrap();
    assert!(bolt::is_bolted(&out).unwrap());
    assert!(!bolt::is_bolted(&ready.binary).unwrap());
    assert!(
        coverage.as_deref().is_some_and(|c| c.contains("out of")),
        "{coverage:?}"
    );
    assert_eq!(
        output(&out, &["all", "20000"]),
        expected,
        "the BOLTed binary computes the same"
    );
    // BOLT's note holds its command line: names relative to the output, no directory of this
    // machine (a rebuild elsewhere gets the same bytes), and no link left behind.
    let note = Command::new("readelf")
        .args(["-p", ".note.bolt_info"])
        .arg(&out)
        .output()
        .unwrap();
    let note = String::from_utf8_lossy(&note.stdout);
    assert!(
        note.contains(" pgofix -o pgofix.bolt -data=pgofix.fdata "),
        "{note}"
    );
    assert!(!note.contains(&*work.path().to_string_lossy()), "{note}");
    assert!(!work.path().join("pgofix").exists() && !work.path().join("pgofix.fdata").exists());
    // No profile: refused.
    let none = work.path().join("none");
    fs::create_dir_all(&none).unwrap();
    assert!(bolt::merge_fdata(&b, &none, &work.path().join("x.fdata"))
        .unwrap_err()
        .to_string()
        .contains("no profile written"));
}

/// Debian's mariadbd stands in for an instrumented build: the training flow is the same.
fn fake_gen(work: &Path) -> BuildOutput {
    let gen_dir = work.join("gen-profile");
    let gcc = Compiler::find("gcc", None).unwrap();
    BuildOutput {
        key: "fake".into(),
        recipe: "mariadb-10.11".into(),
        variant: "pgo-gen".into(),
        compiler: gcc,
        source_hash: "debian".into(),
        profile_hash: None,
        dir: work.to_path_buf(),
        build_dir: work.join("build"),
        binary: MARIADBD.into(),
        binary_size: 0,
        profile_gen_dir: Some(gen_dir),
        flags: Default::default(),
        missing_profile_warnings: 0,
        seconds: 0.0,
        attempts: 1,
        jobs: 1,
        targets: vec!["mariadbd".into()],
        log: work.join("log"),
        cached: false,
        distributed: None,
        built_on: None,
        path_neutral: false,
        source_paths: Default::default(),
        profile_relocated: None,
        profile_path: None,
        stale: None,
    }
}

fn small_spec() -> ServerSpec {
    let mut s = ServerSpec::new(MARIADBD);
    s.config.buffer_pool_mb = 128;
    s.config.redo_log_mb = 32;
    s
}

#[test]
fn a_training_run_that_writes_no_profile_stores_nothing() {
    let work = tempfile::tempdir().unwrap();
    let gen = fake_gen(work.path());
    let mut mix = Mix::quick();
    mix.phases = "oltp_point_select:2:2,oltp_read_only@text:1:1"
        .parse::<train::Phases>()
        .unwrap()
        .0;
    let e = train::train(
        &TrainRequest {
            gen: &gen,
            base: None,
            spec: small_spec(),
            mix: &mix,
            dataset: None,
            work_dir: work.path(),
        },
        &|_| {},
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("holds no .gcda files"), "{e}");
    assert!(!work.path().join("profiles").exists(), "nothing stored");
}

#[test]
fn a_killed_instrumented_server_means_no_profile() {
    let work = tempfile::tempdir().unwrap();
    let gen = fake_gen(work.path());
    let mut mix = Mix::quick();
    mix.phases = "oltp_point_select:30:2".parse::<train::Phases>().unwrap().0;
    let train_dir = work.path().join("train");
    let e = std::thread::scope(|scope| {
        let h = scope.spawn(|| {
            train::train(
                &TrainRequest {
                    gen: &gen,
                    base: None,
                    spec: small_spec(),
                    mix: &mix,
                    dataset: None,
                    work_dir: work.path(),
                },
                &|_| {},
            )
        });
        // Find the server once it serves (its socket exists), and kill it mid-workload as a crash
        // would. Generous waits: a loaded machine may take long to bootstrap and start it.
        let mut killed = false;
        for _ in 0..1200 {
            std::thread::sleep(Duration::from_millis(100));
            if let Some(pid) = server_pid_under(&train_dir).filter(|_| socket_under(&train_dir)) {
                std::thread::sleep(Duration::from_millis(1500));
                // SAFETY: killing the test's own server.
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
                killed = true;
                break;
            }
        }
        assert!(killed, "the training server was never seen");
        h.join().unwrap()
    })
    .unwrap_err();
    let msg = format!("{e:#}");
    assert!(
        msg.contains("no profile written: the server did not exit cleanly"),
        "{msg}"
    );
    assert!(!work.path().join("profiles").exists());
    assert!(server_pid_under(&train_dir).is_none());
}

fn socket_under(dir: &Path) -> bool {
    fs::read_dir(dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .any(|e| e.path().join("run/mysqld.sock").exists())
}

fn server_pid_under(dir: &Path) -> Option<u32> {
    common::processes_mentioning(dir)
        .into_iter()
        .find(|(_, c)| c.contains("mariadbd") && !c.contains("--bootstrap"))
        .map(|(pid, _)| pid)
}

#[test]
fn the_gate_passes_equal_results_and_stops_on_different_ones() {
    let work = tempfile::tempdir().unwrap();
    let w = GateWorkload {
        tables: 1,
        table_size: 500,
        events: 300,
        seed: 7,
    };
    let sums = gate(
        &small_spec(),
        Path::new(MARIADBD),
        &[("same".into(), MARIADBD.into())],
        work.path(),
        &w,
    )
    .unwrap();
    assert_eq!(sums.len(), 2);
    assert_eq!(sums[0].tables, sums[1].tables);
    assert!(!sums[0].tables[0].1.is_empty());

    // A "miscompiled" server: one that numbers rows differently computes different data.
    let wrapper = work.path().join("mariadbd-different");
    fs::write(
        &wrapper,
        format!("#!/bin/sh\nexec {MARIADBD} \"$@\" --auto-increment-increment=2\n"),
    )
    .unwrap();
    fs::set_permissions(&wrapper, fs::Permissions::from_mode(0o755)).unwrap();
    let mut spec = small_spec();
    spec.share_dir = Some("/usr/share/mysql".into());
    let err = gate(
        &spec,
        Path::new(MARIADBD),
        &[("different".into(), wrapper.clone())],
        work.path(),
        &w,
    )
    .unwrap_err();
    // A typed stop (exit status 3), naming the variant.
    match err.downcast_ref::<pgoforge::infra::exit::Stop>() {
        Some(pgoforge::infra::exit::Stop::GateStopped { variants, .. }) => {
            assert_eq!(variants, &["different".to_string()])
        }
        other => panic!("not a gate stop: {other:?}"),
    }
    let e = format!("{err:#}");
    assert!(
        e.contains("correctness gate failed")
            && e.contains("baseline: sbtest1=")
            && e.contains("different: sbtest1="),
        "{e}"
    );
}

/// Training and BOLT's profiling run start on a copy of one prepared dataset (made by the baseline
/// in a run) instead of preparing the tables on the slow instrumented server each time; the
/// template itself is never written to.
#[test]
fn profiling_runs_start_on_a_copy_of_the_dataset_template() {
    let work = tempfile::tempdir().unwrap();
    let mut mix = Mix::quick();
    mix.phases = "oltp_point_select:2:2,oltp_read_write:3:2"
        .parse::<train::Phases>()
        .unwrap()
        .0;
    let (tpl, made) = train::dataset_template(work.path(), &small_spec(), &mix).unwrap();
    assert!(made);
    let table = tpl.join("data/sbtest/sbtest1.ibd");
    let before = fs::read(&table).expect("the template holds the prepared table");
    let again = train::dataset_template(work.path(), &small_spec(), &mix).unwrap();
    assert_eq!(again, (tpl.clone(), false), "made once, then found");

    let logs = std::sync::Mutex::new(Vec::<String>::new());
    let log = |m: &str| logs.lock().unwrap().push(m.to_string());
    train::train_on(
        &small_spec(),
        &work.path().join("t1"),
        &mix,
        Some(&tpl),
        &log,
    )
    .unwrap();
    let lines = logs.lock().unwrap().clone();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("starting on a copy of the dataset")),
        "{lines:?}"
    );
    assert!(
        !lines.iter().any(|l| l.starts_with("preparing")),
        "{lines:?}"
    );
    let tps: f64 = lines
        .iter()
        .find_map(|l| l.strip_prefix("oltp_read_write (prepared): "))
        .and_then(|l| l.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no read_write phase in {lines:?}"));
    assert!(tps > 0.0, "{lines:?}");
    assert_eq!(
        fs::read(&table).unwrap(),
        before,
        "the writes went to the copy, not the template"
    );

    logs.lock().unwrap().clear();
    train::train_on(&small_spec(), &work.path().join("t2"), &mix, None, &log).unwrap();
    let lines = logs.lock().unwrap().clone();
    assert!(
        lines.iter().any(|l| l == "preparing 1 tables x 10000 rows"),
        "without a template the server prepares the tables itself: {lines:?}"
    );
}
