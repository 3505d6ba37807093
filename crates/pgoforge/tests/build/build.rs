//! The build engine on the fixture project (tests/fixtures/pgofix), with gcc and clang: every
//! variant builds and computes the same result, instrumented builds write profiles, pgo builds use
//! them, bolt-ready binaries keep relocations, caching hits and misses as it should, and bad input is
//! refused with a clear error.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use pgoforge::builder::{build, BuildOutput, BuildRequest, ProfileInput};
use pgoforge::recipe::Recipe;
use pgoforge::source::{self, Source};
use pgoforge::toolchain::Compiler;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/pgofix")
}

fn recipe() -> Recipe {
    Recipe::load(fixture().join("recipe.toml").to_str().unwrap()).unwrap()
}

struct Ctx {
    work: tempfile::TempDir,
    recipe: Recipe,
    source: Source,
}

fn ctx() -> Ctx {
    let work = tempfile::tempdir().unwrap();
    let recipe = recipe();
    let source = source::fetch(
        &recipe,
        Some(fixture().to_str().unwrap()),
        None,
        work.path(),
    )
    .unwrap();
    Ctx {
        work,
        recipe,
        source,
    }
}

fn make(
    c: &Ctx,
    variant: &str,
    compiler: &Compiler,
    profile: Option<&ProfileInput>,
) -> BuildOutput {
    build(&BuildRequest {
        recipe: &c.recipe,
        source: &c.source,
        variant: variant.parse().unwrap(),
        compiler,
        profile,
        work_dir: c.work.path(),
        jobs: 2,
        progress: None,
        cluster: None,
        source_paths: pgoforge::builder::relative::SourcePaths::of_profile(profile),
    })
    .unwrap_or_else(|e| panic!("building {variant}: {e:#}"))
}

/// Runs the fixture binary; returns its checksum line.
fn run(bin: &Path, args: &[&str], env: &[(&str, &str)]) -> String {
    let out = Command::new(bin)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(out.status.success(), "{} failed", bin.display());
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn has_rela_text(bin: &Path) -> bool {
    let out = Command::new("readelf").arg("-S").arg(bin).output().unwrap();
    String::from_utf8_lossy(&out.stdout).contains(".rela.text")
}

fn gcda_files(dir: &Path) -> Vec<PathBuf> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "gcda"))
        .collect()
}

/// The optimization levels a binary's units were compiled at: the last `-O` of each target's
/// compile flags as CMake gives them to the compiler (flags.make). GCC's own record of its
/// switches in the debug info is left out of path-neutral builds (builder/paths.rs).
fn opt_levels(binary: &Path) -> Vec<String> {
    let targets = binary.parent().unwrap().join("CMakeFiles");
    let mut levels = std::collections::BTreeSet::new();
    for e in std::fs::read_dir(&targets).unwrap().flatten() {
        let Ok(text) = std::fs::read_to_string(e.path().join("flags.make")) else {
            continue;
        };
        levels.extend(
            text.lines()
                .filter(|l| l.starts_with("C_FLAGS") || l.starts_with("CXX_FLAGS"))
                .filter_map(|l| l.split_whitespace().rfind(|w| w.starts_with("-O")))
                .map(str::to_string),
        );
    }
    assert!(
        !levels.is_empty(),
        "no compile flags under {}",
        targets.display()
    );
    levels.into_iter().collect()
}

#[test]
fn gcc_every_variant_pgo_cycle_and_cache() {
    let c = ctx();
    let gcc = Compiler::find("gcc", None).unwrap();
    let base = make(&c, "baseline", &gcc, None);
    let expected = run(&base.binary, &["all", "20000"], &[]);
    assert!(expected.starts_with("checksum "));
    assert!(
        !has_rela_text(&base.binary),
        "a baseline is not linked with relocations"
    );

    let lto = make(&c, "lto", &gcc, None);
    assert_eq!(run(&lto.binary, &["all", "20000"], &[]), expected);
    assert!(fs::read_to_string(&lto.log).unwrap().contains("-flto=auto"));

    // Instrumented build: running it writes one gcda per translation unit.
    let gen = make(&c, "pgo-gen", &gcc, None);
    let gen_dir = gen.profile_gen_dir.clone().unwrap();
    assert!(!gen_dir.exists() || gcda_files(&gen_dir).is_empty());
    assert_eq!(run(&gen.binary, &["all", "20000"], &[]), expected);
    let files = gcda_files(&gen_dir);
    assert_eq!(files.len(), 4, "{files:?}");
    assert!(files.iter().all(|f| fs::metadata(f).unwrap().len() > 0));

    // The use build finds every trained unit: no missing-profile warning.
    let profile = ProfileInput::GccDir(gen_dir.clone());
    let pgo = make(&c, "pgo+lto+bolt", &gcc, Some(&profile));
    assert_eq!(pgo.missing_profile_warnings, 0, "see {}", pgo.log.display());
    assert!(fs::read_to_string(&pgo.log)
        .unwrap()
        .contains(&format!("-fprofile-use={}", gen_dir.display())));
    assert_eq!(run(&pgo.binary, &["all", "20000"], &[]), expected);
    assert!(
        has_rela_text(&pgo.binary),
        "bolt-ready binaries keep .rela.text"
    );
    assert!(pgo.profile_hash.is_some());

    // Cache: the same request is a hit; a changed profile is a miss.
    let again = make(&c, "pgo+lto+bolt", &gcc, Some(&profile));
    assert!(again.cached && again.key == pgo.key && again.binary == pgo.binary);
    run(&gen.binary, &["kv", "5000"], &[]); // adds counts: a different profile
    let changed = make(&c, "pgo+lto+bolt", &gcc, Some(&profile));
    assert!(!changed.cached && changed.key != pgo.key);

    // -O3 -march=native on a generic instrumented build's profile: the SSE4.2 CRC that only a
    // native build inlines (kv.c's key_tag) changes kv_workload's control flow, and GCC drops
    // its profile with a coverage-mismatch warning, counted. Trained on a pgo-gen+native build
    // (the run's native profile), the same variant applies its profile whole.
    let shared = make(&c, "pgo+native", &gcc, Some(&profile));
    assert!(
        shared.missing_profile_warnings > 0,
        "see {}",
        shared.log.display()
    );
    assert!(fs::read_to_string(&shared.log)
        .unwrap()
        .contains("[-Wcoverage-mismatch]"));
    assert_eq!(run(&shared.binary, &["all", "20000"], &[]), expected);
    let gen_native = make(&c, "pgo-gen+native", &gcc, None);
    let native_dir = gen_native.profile_gen_dir.clone().unwrap();
    assert_eq!(run(&gen_native.binary, &["all", "20000"], &[]), expected);
    let own = make(
        &c,
        "pgo+native",
        &gcc,
        Some(&ProfileInput::GccDir(native_dir)),
    );
    assert_eq!(own.missing_profile_warnings, 0, "see {}", own.log.display());
    assert_eq!(run(&own.binary, &["all", "20000"], &[]), expected);
    // The level each unit is compiled at, the last -O its compiler is given: the build type's
    // -O2 must not override +native's -O3 (it did until 2026-12-03).
    assert_eq!(opt_levels(&base.binary), ["-O2"], "the baseline");
    for b in [&shared, &gen_native, &own] {
        assert_eq!(opt_levels(&b.binary), ["-O3"], "{}", b.binary.display());
    }

    // A profile that lacks units is reported, never hidden.
    let partial = c.work.path().join("partial");
    fs::create_dir_all(&partial).unwrap();
    let kv = files
        .iter()
        .find(|f| f.to_string_lossy().contains("kv.c"))
        .unwrap();
    fs::copy(kv, partial.join(kv.file_name().unwrap())).unwrap();
    let thin = make(&c, "pgo", &gcc, Some(&ProfileInput::GccDir(partial)));
    assert!(
        thin.missing_profile_warnings >= 3,
        "{} warnings",
        thin.missing_profile_warnings
    );
}

#[test]
fn clang_pgo_cycle_with_matching_profdata() {
    // Plain `clang` is LLVM 22, the toolchain whose BOLT pgoforge uses; an older one stays
    // usable by name.
    clang_pgo_cycle("clang", 22);
    clang_pgo_cycle("clang-16", 16);
}

/// Baseline, instrumented run, merge with the matching llvm-profdata, PGO+ThinLTO build with the
/// same output, on the fixture with the clang named `spec` (LLVM `major`).
fn clang_pgo_cycle(spec: &str, major: u32) {
    let c = ctx();
    let clang = Compiler::find(spec, None).unwrap();
    assert_eq!(clang.major, major, "{spec}: {}", clang.version);
    let profdata = clang.profdata().unwrap().to_path_buf();
    assert!(
        profdata.to_string_lossy().contains(&major.to_string()),
        "{}",
        profdata.display()
    );
    let base = make(&c, "baseline+bolt", &clang, None);
    let expected = run(&base.binary, &["all", "20000"], &[]);
    assert!(has_rela_text(&base.binary));

    let gen = make(&c, "pgo-gen", &clang, None);
    let gen_dir = run_instrumented(&gen, &expected);
    let raws: Vec<PathBuf> = fs::read_dir(&gen_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(raws.len(), 1, "{raws:?}");
    let merged = c.work.path().join("merged.profdata");
    let st = Command::new(&profdata)
        .arg("merge")
        .arg("-o")
        .arg(&merged)
        .args(&raws)
        .status()
        .unwrap();
    assert!(st.success());
    let show = Command::new(&profdata)
        .args(["show", "--all-functions", "--counts"])
        .arg(&merged)
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&show.stdout);
    for f in ["kv_workload", "parse_workload", "threaded_workload", "main"] {
        assert!(
            listing.contains(&format!("  {f}:")),
            "{f} not in the profile"
        );
    }

    let pgo = make(
        &c,
        "pgo+lto",
        &clang,
        Some(&ProfileInput::Profdata(merged.clone())),
    );
    assert_eq!(run(&pgo.binary, &["all", "20000"], &[]), expected);
    assert!(fs::read_to_string(&pgo.log)
        .unwrap()
        .contains(&format!("-fprofile-use={}", merged.display())));
    assert!(fs::read_to_string(&pgo.log).unwrap().contains("-flto=thin"));

    // ThinLTO's cache lives in the build: a relink with nothing changed (the binary removed and
    // the build not recorded, as after an interruption) takes every object from it. The attempt
    // configures afresh, and CMake's own link checks (FindThreads' test program `src.c`, linked
    // with the same flags) add an entry of their own, its scratch directory in the key: an entry
    // new after the relink may hold only such a check, none of the fixture's units.
    let cache = pgo.build_dir.join("thinlto-cache");
    let entries = |d: &Path| -> std::collections::BTreeMap<String, Vec<u8>> {
        fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| {
                let name = p.file_name().unwrap().to_string_lossy().into_owned();
                (name, fs::read(&p).unwrap())
            })
            .collect()
    };
    let first = entries(&cache);
    assert!(
        first.len() > 4,
        "no ThinLTO cache of the fixture's units in {}",
        cache.display()
    );
    fs::remove_file(&pgo.binary).unwrap();
    fs::remove_file(pgo.dir.join("build.json")).unwrap();
    let again = make(
        &c,
        "pgo+lto",
        &clang,
        Some(&ProfileInput::Profdata(merged.clone())),
    );
    assert_eq!(run(&again.binary, &["all", "20000"], &[]), expected);
    let units: [&[u8]; 4] = [b"kv.c", b"main.c", b"parse.cpp", b"workers.cpp"];
    for (name, bytes) in entries(&cache) {
        if first.contains_key(&name) {
            continue;
        }
        let unit = units
            .iter()
            .find(|u| bytes.windows(u.len()).any(|w| w == **u));
        assert!(
            unit.is_none(),
            "the relink compiled {} anew ({name}): the ThinLTO cache missed",
            String::from_utf8_lossy(unit.unwrap())
        );
    }
    cs_pgo_cycle(&c, &clang, &merged, &expected);
}

/// Runs an instrumented clang build once (same output as the baseline); returns where it wrote
/// its profile.
fn run_instrumented(gen: &BuildOutput, expected: &str) -> PathBuf {
    let gen_dir = gen
        .profile_gen_dir
        .clone()
        .expect("an instrumented build writes profiles");
    let pattern = gen_dir.join("%m-%p.profraw");
    assert_eq!(
        run(
            &gen.binary,
            &["all", "20000"],
            &[("LLVM_PROFILE_FILE", pattern.to_str().unwrap())]
        ),
        expected
    );
    gen_dir
}

/// Context-sensitive PGO on top of `first`: the cs-pgo-gen+lto build instruments after inlining
/// (in the ThinLTO backend), its counts are context-sensitive records that the first profile
/// lacks, and the cs-pgo+lto build on the merge computes the same result.
fn cs_pgo_cycle(c: &Ctx, clang: &Compiler, first: &Path, expected: &str) {
    let profdata = clang.profdata().unwrap().to_path_buf();
    // The summary pgoforge stores with a profile counts the context-sensitive records apart.
    let cs_functions = |f: &Path| {
        pgoforge::profile::check_profdata(f, &profdata)
            .unwrap()
            .context_sensitive_functions
            .unwrap_or(0)
    };
    assert_eq!(
        cs_functions(first),
        0,
        "the first profile is not context-sensitive"
    );
    let first_in = ProfileInput::Profdata(first.to_path_buf());
    let gen = make(c, "cs-pgo-gen+lto", clang, Some(&first_in));
    let log = fs::read_to_string(&gen.log).unwrap();
    assert!(log.contains(&format!("-fprofile-use={}", first.display())));
    assert!(log.contains("-fcs-profile-generate="));
    let gen_dir = run_instrumented(&gen, expected);
    let merged = pgoforge::profile::train::merge_profraw(&gen, &gen_dir, Some(first)).unwrap();
    let n = cs_functions(&merged);
    assert!(
        n >= 3,
        "{n} context-sensitive functions in the merged profile"
    );
    let cs = make(
        c,
        "cs-pgo+lto",
        clang,
        Some(&ProfileInput::Profdata(merged.clone())),
    );
    assert_eq!(run(&cs.binary, &["all", "20000"], &[]), expected);
    let log = fs::read_to_string(&cs.log).unwrap();
    assert!(log.contains(&format!("-fprofile-use={}", merged.display())));
    assert!(!log.contains("-fcs-profile-generate"));
    // The context-sensitive profile is used: the build differs from the plain PGO one.
    let plain = make(c, "pgo+lto", clang, Some(&first_in));
    assert_ne!(
        fs::read(&cs.binary).unwrap(),
        fs::read(&plain.binary).unwrap(),
        "cs-pgo+lto built the same binary as pgo+lto"
    );
}

#[test]
fn bad_input_gives_clear_errors() {
    let c = ctx();
    let gcc = Compiler::find("gcc", None).unwrap();
    // Unknown recipe field, named.
    let bad = c.work.path().join("bad.toml");
    fs::write(
        &bad,
        fs::read_to_string(fixture().join("recipe.toml"))
            .unwrap()
            .replace("targets", "targetz"),
    )
    .unwrap();
    let e = Recipe::load(bad.to_str().unwrap()).unwrap_err().to_string();
    assert!(e.contains("unknown field `targetz`"), "{e}");
    // Missing source.
    let e = source::fetch(&c.recipe, Some("/nonexistent/src"), None, c.work.path())
        .unwrap_err()
        .to_string();
    assert!(e.contains("/nonexistent/src does not exist"), "{e}");
    // A user-source recipe without --source says what to pass.
    let e = source::fetch(&c.recipe, None, None, c.work.path())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("needs a source") && e.contains("--source"),
        "{e}"
    );
    // Wrong sha256 for a tarball.
    let tgz = c.work.path().join("pgofix.tar.gz");
    let st = Command::new("tar")
        .arg("-czf")
        .arg(&tgz)
        .arg("-C")
        .arg(fixture().parent().unwrap())
        .arg("pgofix")
        .status()
        .unwrap();
    assert!(st.success());
    let e = source::fetch(
        &c.recipe,
        Some(tgz.to_str().unwrap()),
        Some(&"0".repeat(64)),
        c.work.path(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("refusing to build it"), "{e}");
    let ok = source::fetch(&c.recipe, Some(tgz.to_str().unwrap()), None, c.work.path()).unwrap();
    assert!(
        ok.dir.join("CMakeLists.txt").is_file()
            && ok.hash == pgoforge::infra::fs::sha256_file(&tgz).unwrap()
    );
    // A tarball whose only top-level entry is a symlink to a tree outside the work dir: refused,
    // not followed (the source would be built from wherever the link points).
    let trap = c.work.path().join("trap");
    std::fs::create_dir_all(&trap).unwrap();
    std::os::unix::fs::symlink(fixture(), trap.join("src")).unwrap();
    let link_tgz = c.work.path().join("link.tar.gz");
    let st = Command::new("tar")
        .arg("-czf")
        .arg(&link_tgz)
        .arg("-C")
        .arg(&trap)
        .arg("src")
        .status()
        .unwrap();
    assert!(st.success());
    let e = source::fetch(
        &c.recipe,
        Some(link_tgz.to_str().unwrap()),
        None,
        c.work.path(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("does not look like a MySQL/MariaDB source tree"),
        "{e}"
    );
    // URLs need a sha256.
    let e = source::fetch(
        &c.recipe,
        Some("https://example.com/x.tar.gz"),
        None,
        c.work.path(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("--sha256"), "{e}");
    // Unknown compiler and missing toolchain.
    let e = Compiler::find("tcc", None).unwrap_err().to_string();
    assert!(e.contains("--flag-family"), "{e}");
    let e = Compiler::find("clang-99", None).unwrap_err().to_string();
    assert!(e.contains("apt-get install clang-99"), "{e}");
    // A pgo variant without a profile, and a profile of the wrong kind.
    let err = |variant: &str, profile: Option<&ProfileInput>| {
        build(&BuildRequest {
            recipe: &c.recipe,
            source: &c.source,
            variant: variant.parse().unwrap(),
            compiler: &gcc,
            profile,
            work_dir: c.work.path(),
            jobs: 1,
            progress: None,
            cluster: None,
            source_paths: pgoforge::builder::relative::SourcePaths::of_profile(profile),
        })
        .unwrap_err()
        .to_string()
    };
    assert!(err("pgo", None).contains("needs a profile"));
    let pd = c.work.path().join("x.profdata");
    fs::write(&pd, "x").unwrap();
    assert!(err("pgo", Some(&ProfileInput::Profdata(pd))).contains("for clang builds"));
    let empty = c.work.path().join("empty");
    fs::create_dir_all(&empty).unwrap();
    assert!(err("pgo", Some(&ProfileInput::GccDir(empty))).contains("no .gcda files"));
}

#[test]
fn a_failing_build_shows_its_log_and_is_never_cached() {
    let work = tempfile::tempdir().unwrap();
    let broken = work.path().join("broken");
    pgoforge::infra::fs::copy_tree(&fixture(), &broken).unwrap();
    fs::write(
        broken.join("src/kv.c"),
        "int kv_workload( { syntax error here\n",
    )
    .unwrap();
    let recipe = recipe();
    let src = source::fetch(&recipe, Some(broken.to_str().unwrap()), None, work.path()).unwrap();
    let gcc = Compiler::find("gcc", None).unwrap();
    let req = BuildRequest {
        recipe: &recipe,
        source: &src,
        variant: "baseline".parse().unwrap(),
        compiler: &gcc,
        profile: None,
        work_dir: work.path(),
        jobs: 1,
        progress: None,
        cluster: None,
        source_paths: pgoforge::builder::relative::SourcePaths::of_profile(None),
    };
    let e = format!("{:#}", build(&req).unwrap_err());
    assert!(
        e.contains("building pgofix (baseline) failed") && e.contains("kv.c"),
        "{e}"
    );
    let builds: Vec<PathBuf> = fs::read_dir(work.path().join("builds"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(builds.len(), 1);
    assert!(
        !builds[0].join("build.json").exists(),
        "a failed build is not recorded as done"
    );
    assert!(build(&req).is_err(), "and it is not taken from the cache");

    // Mended in place (as after a crash, the same key and directory): the build resumes there,
    // keeps the earlier attempts' log and counts their time.
    fs::copy(fixture().join("src/kv.c"), src.dir.join("src/kv.c")).unwrap();
    let out = build(&req).unwrap_or_else(|e| panic!("{e:#}"));
    assert_eq!(out.dir, fs::canonicalize(&builds[0]).unwrap());
    assert_eq!(out.attempts, 3, "two failed attempts and this one");
    let log = fs::read_to_string(&out.log).unwrap();
    assert!(
        log.contains("syntax error"),
        "the failed attempts' output stays"
    );
    assert_eq!(log.matches("stopped unfinished after").count(), 2, "{log}");
    assert!(out.seconds > 0.0);
    // Each attempt configured afresh: the third is a first pass, as a fresh build's is (the
    // fixture, like MariaDB, configures otherwise over its own cache).
    let flags = fs::read_to_string(out.dir.join("build/CMakeFiles/pgofix.dir/flags.make")).unwrap();
    assert!(
        flags.contains("-DCMAKE_BUILD_TYPE") || flags.contains("_DEFINES"),
        "{flags}"
    );
    assert!(!flags.contains("PGOFIX_SECOND_PASS"), "{flags}");
}

#[test]
fn cli_build_prints_where_the_binary_is() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path().to_str().unwrap();
    let recipe = fixture().join("recipe.toml");
    let src = fixture();
    let args = [
        "build",
        "--recipe",
        recipe.to_str().unwrap(),
        "--source",
        src.to_str().unwrap(),
        "--work-dir",
        w,
        "--variant",
        "baseline",
    ];
    let r = common::pgoforge(&args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("pgofix baseline (gcc-12) built: ") && r.stdout.contains("/build/pgofix"),
        "{}",
        r.stdout
    );
    let again = common::pgoforge(&args);
    assert!(again.stdout.contains("is cached"), "{}", again.stdout);
    let bad = common::pgoforge(&["build", "--variant", "turbo", "--work-dir", w]);
    assert_eq!(bad.code, 2);
    assert!(
        bad.stderr.contains("unknown variant 'turbo'"),
        "{}",
        bad.stderr
    );
    let r = common::pgoforge(&["recipes"]);
    for n in [
        "mariadb-10.11",
        "mysql-8.0",
        "mysql-8.4",
        "mysql-9.7",
        "percona-8.0",
        "percona-8.4",
    ] {
        assert!(r.stdout.contains(n), "{n}");
    }
}

/// A SIGTERM to pgoforge alone (a supervisor's, a CI timeout's: not a terminal's Ctrl-C to the
/// whole group) stops the build it runs: make and what make started do not go on compiling with
/// nobody waiting, and the build is not recorded as finished.
#[test]
fn a_signal_to_pgoforge_alone_stops_its_build() {
    let work = tempfile::tempdir().unwrap();
    let slow = work.path().join("slow");
    pgoforge::infra::fs::copy_tree(&fixture(), &slow).unwrap();
    // A build step that takes minutes and says who it is.
    fs::write(slow.join("slow.sh"), "echo $$ > \"$1\"\nexec sleep 300\n").unwrap();
    let cmake = fs::read_to_string(fixture().join("CMakeLists.txt")).unwrap()
        + "add_custom_target(slowstep COMMAND sh ${CMAKE_SOURCE_DIR}/slow.sh ${CMAKE_BINARY_DIR}/slow.pid)\n\
           add_dependencies(pgofix slowstep)\n";
    fs::write(slow.join("CMakeLists.txt"), cmake).unwrap();
    let w = work.path().join("work");
    let mut child = Command::new(env!("CARGO_BIN_EXE_pgoforge"))
        .args(["build", "--recipe"])
        .arg(fixture().join("recipe.toml"))
        .arg("--source")
        .arg(&slow)
        .arg("--work-dir")
        .arg(&w)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let t0 = std::time::Instant::now();
    let pid_file = loop {
        let found = common::paths_under(&w.join("builds"))
            .into_iter()
            .find(|p| p.file_name().is_some_and(|n| n == "slow.pid"));
        if let Some(p) = found.filter(|p| fs::metadata(p).is_ok_and(|m| m.len() > 0)) {
            break p;
        }
        assert!(
            t0.elapsed().as_secs() < 120 && child.try_wait().unwrap().is_none(),
            "the slow build step never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let sleeper: u32 = fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(pgoforge::infra::pid_alive(sleeper));
    // SAFETY: signalling the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let st = child.wait().unwrap();
    use std::os::unix::process::ExitStatusExt;
    assert_eq!(
        st.signal(),
        Some(libc::SIGTERM),
        "pgoforge dies of the signal"
    );
    let t1 = std::time::Instant::now();
    while pgoforge::infra::pid_alive(sleeper) {
        assert!(
            t1.elapsed().as_secs() < 10,
            "the build step {sleeper} outlived pgoforge"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let builds: Vec<PathBuf> = fs::read_dir(w.join("builds"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(
        !builds[0].join("build.json").exists(),
        "not recorded as built"
    );
}
