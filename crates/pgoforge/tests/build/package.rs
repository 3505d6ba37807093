//! Packages of Debian's mariadbd: the tarball unpacks elsewhere, its checksums verify, and the
//! server starts from the unpacked directory; bad input leaves nothing behind. `pgoforge run` and
//! `pgoforge package` usage errors.

use crate::common;

use std::fs;
use std::path::Path;
use std::process::Command;

use pgoforge::infra::pid_alive as alive;
use pgoforge::package::{package, Gain, Manifest, PackageRequest};
use pgoforge::server::{Layout, Server, ServerSpec};

const MARIADBD: &str = "/usr/sbin/mariadbd";

fn manifest(name: &str) -> Manifest {
    Manifest {
        name: name.into(),
        server_version: String::new(),
        variant: "pgo".into(),
        recipe: "mariadb-10.11".into(),
        source: "test".into(),
        source_hash: "00".into(),
        compiler: "gcc".into(),
        cflags: vec!["-fprofile-use=/x".into()],
        ldflags: vec![],
        cmake_defs: vec![],
        profiles: vec!["compiler:abc".into()],
        bolt_flags: vec![],
        gains: vec![Gain {
            workload: "oltp_point_select".into(),
            threads: 4,
            ratio: 1.1,
            ci: (1.05, 1.15),
            verdict: "faster".into(),
        }],
        gains_against: None,
        pgoforge_version: "0".into(),
        source_date_epoch: 0,
        binary_note: String::new(),
        debian_source: None,
        cpu: None,
        binary_sha256: String::new(),
        profile_provenance: None,
        engine: Default::default(),
        runtime_packages: vec![],
    }
}

fn leftovers(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_package_unpacks_verifies_and_starts_elsewhere() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("packages");
    let bin = Path::new(MARIADBD);
    let layout = Layout::discover(bin, None, None);
    let p = package(&PackageRequest {
        binary: bin,
        layout: &layout,
        manifest: &manifest("mariadb-test-pgo"),
        out_dir: &out,
    })
    .unwrap();
    assert_eq!(p.path, out.join("mariadb-test-pgo.tar.zst"));
    assert!(p.files >= 8, "{p:?}");
    let mut names = leftovers(&out);
    names.sort();
    assert_eq!(
        names,
        [
            "mariadb-test-pgo.tar.zst",
            // When it was packed: beside the package, so the package's bytes do not depend on it.
            "mariadb-test-pgo.tar.zst.packing.json",
            "mariadb-test-pgo.tar.zst.sha256"
        ]
    );
    let side = fs::read_to_string(out.join("mariadb-test-pgo.tar.zst.sha256")).unwrap();
    assert!(side.starts_with(&p.sha256));

    // A standard tarball: the system tar with zstd unpacks it.
    let dest = t.path().join("elsewhere");
    fs::create_dir_all(&dest).unwrap();
    let st = Command::new("tar")
        .args(["--zstd", "-xf"])
        .arg(&p.path)
        .arg("-C")
        .arg(&dest)
        .status()
        .unwrap();
    assert!(st.success());
    let root = dest.join("mariadb-test-pgo");
    let sums = Command::new("sha256sum")
        .args(["--quiet", "-c", "SHA256SUMS"])
        .current_dir(&root)
        .output()
        .unwrap();
    assert!(
        sums.status.success(),
        "{}",
        String::from_utf8_lossy(&sums.stdout)
    );
    let listed = fs::read_to_string(root.join("SHA256SUMS")).unwrap();
    for f in [
        "bin/mariadbd",
        "manifest.json",
        "share/mariadb/english/errmsg.sys",
        "share/mariadb/charsets/Index.xml",
        "share/mariadb/mysql_system_tables.sql",
    ] {
        assert!(
            listed.contains(&format!("  {f}\n")),
            "{f} not in SHA256SUMS"
        );
    }
    let m: Manifest =
        serde_json::from_str(&fs::read_to_string(root.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(m.gains[0].ratio, 1.1);
    assert!(m.binary_note.starts_with("stripped"), "{}", m.binary_note);
    let sections = Command::new("readelf")
        .args(["-S", "-W"])
        .arg(root.join("bin/mariadbd"))
        .output()
        .unwrap();
    let sections = String::from_utf8_lossy(&sections.stdout);
    assert!(sections.contains(".text"));
    assert!(
        !sections.contains(".symtab") && !sections.contains(".debug_info"),
        "not stripped"
    );

    // The unpacked directory is a prefix the server module runs from; nothing points back at /usr.
    let mut spec = ServerSpec::new(root.join("bin/mariadbd"));
    spec.config.buffer_pool_mb = 128;
    spec.config.redo_log_mb = 32;
    let mut srv = Server::create(&spec, &t.path().join("inst")).unwrap();
    let cnf = fs::read_to_string(t.path().join("inst/my.cnf")).unwrap_or_default();
    let mut conn = srv.state.root().unwrap();
    assert!(conn
        .query_value("SELECT VERSION()")
        .unwrap()
        .unwrap()
        .contains("MariaDB"));
    let msgs = conn
        .query_value("SELECT @@lc_messages_dir")
        .unwrap()
        .unwrap();
    assert!(msgs.starts_with(root.to_str().unwrap()), "{msgs} / {cnf}");
    let e = conn.query("SELECT * FROM no_such_db.t").unwrap_err();
    assert!(e.to_string().contains("doesn't exist"), "{e}");
    let pid = srv.state.pid;
    srv.stop().unwrap();
    assert!(!alive(pid));
}

#[test]
fn bad_package_input_leaves_nothing() {
    let t = tempfile::tempdir().unwrap();
    let out = t.path().join("packages");
    // A lone binary: no share files anywhere near it.
    let lone = t.path().join("bin/mariadbd");
    fs::create_dir_all(lone.parent().unwrap()).unwrap();
    fs::copy(MARIADBD, &lone).unwrap();
    let e = package(&PackageRequest {
        binary: &lone,
        layout: &Layout::discover(&lone, None, None),
        manifest: &manifest("lone"),
        out_dir: &out,
    })
    .unwrap_err();
    assert!(format!("{e:#}").contains("errmsg.sys"), "{e:#}");
    assert!(leftovers(&out).is_empty(), "{:?}", leftovers(&out));

    let bin = Path::new(MARIADBD);
    let e = package(&PackageRequest {
        binary: bin,
        layout: &Layout::discover(bin, None, None),
        manifest: &manifest("a/b"),
        out_dir: &out,
    })
    .unwrap_err();
    assert!(e.to_string().contains("without spaces or slashes"), "{e}");
    assert!(leftovers(&out).is_empty());
}

#[test]
fn run_and_package_usage_errors() {
    let t = tempfile::tempdir().unwrap();
    let w = t.path().to_str().unwrap();
    let r = common::pgoforge(&["run", "--variants", "bogus", "--work-dir", w]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("unknown variant 'bogus'"), "{}", r.stderr);
    let r = common::pgoforge(&["run", "--variants", "pgo-gen", "--work-dir", w]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("used for training"), "{}", r.stderr);
    let r = common::pgoforge(&[
        "run",
        "--variants",
        "lto",
        "--source",
        "/nonexistent/mariadb-src",
        "--work-dir",
        w,
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("/nonexistent/mariadb-src"),
        "{}",
        r.stderr
    );
    assert!(!t.path().join("run.json").exists());
    assert!(!t.path().join("run-state.json").exists());
    let r = common::pgoforge(&["package", "pgo", "--work-dir", w]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("has no finished run"), "{}", r.stderr);
}

/// `run --matrix --plan`: one pgo+lto build per training mix, each its own training and
/// contender, 16 cells each; a matrix that cannot work is refused before anything runs.
#[test]
fn a_matrix_is_planned_one_build_per_training_mix_and_bad_ones_are_refused() {
    let t = tempfile::tempdir().unwrap();
    let w = t.path().to_str().unwrap();
    let r = common::pgoforge(&["run", "--matrix", "--plan", "--work-dir", w]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let plan: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let strings = |v: &serde_json::Value, field: &str| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|x| {
                let x = if field.is_empty() { x } else { &x[field] };
                x.as_str().unwrap().to_string()
            })
            .collect()
    };
    assert_eq!(
        strings(&plan["contenders"], "name"),
        [
            "baseline",
            "pgo+lto@oltp",
            "pgo+lto@tpcc",
            "pgo+lto@oltp+tpcc"
        ]
    );
    let stages = strings(&plan["stages"], "");
    for s in [
        "train",
        "train @tpcc",
        "train @oltp+tpcc",
        "build pgo+lto",
        "build pgo+lto@tpcc",
        "build pgo+lto@oltp+tpcc",
        "bench",
    ] {
        assert!(stages.contains(&s.to_string()), "{s}: {stages:?}");
    }
    let tpcc = &plan["request"]["mixes"][1];
    assert_eq!(tpcc["name"], "tpcc");
    assert_eq!(tpcc["mix"]["phases"][0]["test"], "tpcc");
    let bench = &plan["request"]["bench"];
    assert_eq!(bench["threads"], serde_json::json!([1, 4, 16, 64]));
    // 3 contenders x 4 workloads x 4 thread counts: Holm over 48 comparisons needs 11 rounds,
    // and Williams blocks of 4 make 12.
    assert_eq!(bench["rounds"], 12);
    assert!(!t.path().join("run-state.json").exists(), "planned only");
    // Given a workload file, the matrix trains on it and evaluates on it too.
    let file = t.path().join("app.sql");
    std::fs::write(&file, "SELECT 1;\n").unwrap();
    let f = format!("--replay-file={}", file.display());
    let r = common::pgoforge(&["run", "--matrix", "--plan", "--work-dir", w, &f]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let plan: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let names = strings(&plan["contenders"], "name");
    assert!(
        names.contains(&"pgo+lto@replay".to_string())
            && names.contains(&"pgo+lto@oltp+tpcc+replay".to_string()),
        "{names:?}"
    );
    assert_eq!(plan["request"]["bench"]["workloads"][4], "replay");
    assert_eq!(
        plan["request"]["mixes"][3]["mix"]["replay"]["file_sha256"],
        plan["request"]["bench"]["replay"]["file_sha256"]
    );
    for (args, says) in [
        (
            vec!["--matrix", "--variants", "pgo+lto+bolt"],
            "not built per mix yet",
        ),
        (vec!["--train-mix", "olap"], "unknown training mix 'olap'"),
        (
            vec!["--train-mix", "tpcc", "--train-mix", "tpcc"],
            "tpcc is listed twice",
        ),
        (vec!["--matrix", "--quick"], "cannot be used with"),
        (
            vec!["--train-mix", "replay"],
            "replays --replay-file: give one",
        ),
        (
            vec!["--replay-dataset", "/nonexistent.sql"],
            "give --replay-file too",
        ),
    ] {
        let mut a = vec!["run", "--plan", "--work-dir", w];
        a.extend(args.iter().copied());
        let r = common::pgoforge(&a);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{args:?}: {}", r.stderr);
    }
}

#[test]
fn a_second_pgoforge_on_the_same_work_dir_is_refused_and_told_who_has_it() {
    let t = tempfile::tempdir().unwrap();
    let w = t.path().to_str().unwrap();
    let held = pgoforge::infra::lock::WorkLock::acquire(t.path()).unwrap();
    for args in [
        vec!["package", "pgo", "--work-dir", w],
        vec!["build", "--plan", "--work-dir", w],
        // Real servers: inputs are checked before the lock is taken, so bad ones would be
        // refused first.
        vec![
            "gate",
            "--baseline",
            "/usr/sbin/mariadbd",
            "--candidate",
            "a=/usr/sbin/mariadbd",
            "--work-dir",
            w,
        ],
    ] {
        let r = common::pgoforge(&args);
        assert_eq!(r.code, 1, "{args:?}: {}", r.stderr);
        assert!(
            r.stderr.contains("in use by another pgoforge")
                && r.stderr.contains(&format!("pid {}", std::process::id())),
            "{args:?}: {}",
            r.stderr
        );
    }
    drop(held);
    // Free again: the same command gets past the lock (and fails on what it is about).
    let r = common::pgoforge(&["package", "pgo", "--work-dir", w]);
    assert!(r.stderr.contains("has no finished run"), "{}", r.stderr);
}

#[test]
fn build_plan_fetches_and_builds_nothing() {
    let t = tempfile::tempdir().unwrap();
    let w = t.path().to_str().unwrap();
    let apt_file = std::path::Path::new("/etc/apt/sources.list.d/pgoforge-deb-src.sources");
    let apt_before = std::fs::read_to_string(apt_file).ok();
    // The default recipe's Debian source is not there: a clear error, no apt, no download.
    let r = common::pgoforge(&["build", "--plan", "--work-dir", w]);
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains("is not in") && r.stderr.contains("fetch it first"),
        "{}",
        r.stderr
    );
    assert_eq!(
        std::fs::read_to_string(apt_file).ok(),
        apt_before,
        "nothing under /etc/apt"
    );
    assert!(!t.path().join("sources").exists() && !t.path().join("builds").exists());
    // A directory source is hashed in place: the key and directory are printed, nothing built.
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/pgofix");
    let recipe = format!("{fixture}/recipe.toml");
    let r = common::pgoforge(&[
        "build",
        "--plan",
        "--work-dir",
        w,
        "--recipe",
        &recipe,
        "--source",
        fixture,
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let out = r.stdout.trim();
    assert!(
        out.len() > 17 && out.contains("/builds/pgofix-baseline-"),
        "{out}"
    );
    assert!(!t.path().join("builds").exists(), "planned, not created");
}
