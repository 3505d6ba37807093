//! `pgoforge run`'s orchestration on the fixture project with real gcc: a variant whose build fails
//! is left out and named; with nothing left to compare the run stops before the gate and benchmark
//! and records no stage it did not finish.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use oltp::settings::TestName;
use pgoforge::pipeline::{self, state::Tracker, BenchSettings, Options};
use pgoforge::profile::train::Mix;
use pgoforge::recipe::Recipe;
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

#[test]
fn a_variant_that_fails_to_build_is_named_and_nothing_half_done_is_recorded() {
    let t = tempfile::tempdir().unwrap();
    let cc = no_lto_gcc(t.path());
    let recipe = Recipe::load(fixture().join("recipe.toml").to_str().unwrap()).unwrap();
    let work = t.path().join("work");
    let opts = Options {
        recipe: &recipe,
        source: Some(fixture().to_str().unwrap().into()),
        sha256: None,
        compiler: &cc,
        variants: vec!["lto".parse().unwrap()],
        profile: None,
        mix: Mix::quick(),
        bench: BenchSettings {
            workloads: vec![TestName::OltpPointSelect],
            threads: vec![1],
            rounds: 1,
            seconds: 1,
            warmup_seconds: 0,
            tables: 1,
            table_size: 10,
            buffer_pool_mb: 64,
        },
        bolt_flags: None,
        work_dir: work.clone(),
        package: true,
        cachegrind: false,
        show_progress: false,
    };
    let lines = std::cell::RefCell::new(Vec::new());
    let e = pipeline::run(&opts, &|l| lines.borrow_mut().push(l.to_string())).unwrap_err();
    let e = format!("{e:#}");
    assert!(e.contains("no variant was built"), "{e}");
    assert!(
        e.contains("lto: build failed") && e.contains("LTO is not supported"),
        "{e}"
    );
    let lines = lines.into_inner();
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
    // No gate, benchmark or package recorded, no outcome written.
    let state = Tracker::open(&work, &|_| {}).unwrap();
    assert!(
        state.state().stages.is_empty(),
        "{:?}",
        state.state().stages.keys()
    );
    assert!(!pipeline::outcome_path(&work).exists());
}
