//! MyRocks as the benchmark's engine (issue 51): `bench --engine rocksdb` loads Debian's
//! RocksDB plugin (mariadb-plugin-rocksdb, which CI installs) into every server, prepares the
//! OLTP and tpcc tables in it, measures both workloads; a server without the plugin is refused
//! before anything starts.

use crate::common;

use std::fs;
use std::path::Path;

use pgoforge::server::config::Engine;
use pgoforge::server::{template, ServerConfig, ServerSpec};

/// The one template directory under `work`.
fn template_dir(work: &Path) -> std::path::PathBuf {
    let mut dirs: Vec<_> = fs::read_dir(work.join("datasets"))
        .expect("the benchmark made a dataset template")
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs.remove(0)
}

/// The engines of the sbtest schema's tables, each once.
fn sbtest_engines(root: &mut oltp::proto::Conn) -> Vec<String> {
    root.query_rows(
        "SELECT DISTINCT UPPER(ENGINE) FROM information_schema.TABLES \
         WHERE TABLE_SCHEMA = 'sbtest' AND TABLE_TYPE = 'BASE TABLE'",
    )
    .unwrap()
    .into_iter()
    .filter_map(|r| r.into_iter().next().flatten())
    .collect()
}

#[test]
fn a_myrocks_benchmark_puts_every_table_in_rocksdb_and_measures_oltp_and_tpcc() {
    let w = tempfile::tempdir().unwrap();
    let run = w.path().join("run");
    let r = common::pgoforge_with(
        common::tiny_bench(w.path(), &run, "oltp_read_write,tpcc"),
        &["--engine", "rocksdb"],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    // Both workloads measured on both servers, with transactions.
    let recs = common::records(&run);
    for workload in ["oltp_read_write", "tpcc"] {
        for c in ["a", "b"] {
            let found = recs
                .iter()
                .find(|x| x["contender"] == c && x["workload"] == workload);
            let tx = found
                .and_then(|x| x["result"]["transactions"].as_u64())
                .unwrap_or_else(|| panic!("{c} on {workload}: {recs:?}"));
            assert!(tx > 0, "{c} on {workload}: {tx} transactions");
        }
    }
    // The plan records the engine (its servers' instances are gone with the benchmark).
    let plan: serde_json::Value =
        serde_json::from_str(&fs::read_to_string(run.join("plan.json")).unwrap()).unwrap();
    assert_eq!(plan["config"]["engine"], "rocksdb", "{plan}");
    // The template's tables are MyRocks', with their rows; tpcc's without foreign keys.
    let tpl = template_dir(w.path());
    let spec = ServerSpec {
        config: ServerConfig {
            engine: Engine::RocksDb,
            buffer_pool_mb: 64,
            ..ServerConfig::default()
        },
        ..ServerSpec::new(Path::new(testsupport::MARIADBD))
    };
    let mut srv = template::start_copy(&tpl, &spec, &w.path().join("look")).unwrap();
    let mut root = srv.state.root().unwrap();
    assert_eq!(
        sbtest_engines(&mut root),
        ["ROCKSDB"],
        "every table is MyRocks'"
    );
    let rows = root
        .query_value("SELECT COUNT(*) FROM sbtest.sbtest1")
        .unwrap();
    assert_eq!(rows.as_deref(), Some("100"));
    let warehouses = root
        .query_value("SELECT COUNT(*) FROM sbtest.warehouse1")
        .unwrap();
    assert_eq!(warehouses.as_deref(), Some("1"));
    let fks = root
        .query_value(
            "SELECT COUNT(*) FROM information_schema.REFERENTIAL_CONSTRAINTS \
             WHERE CONSTRAINT_SCHEMA = 'sbtest'",
        )
        .unwrap();
    assert_eq!(fks.as_deref(), Some("0"));
    drop(root);
    srv.stop().unwrap();
}

/// A server in a build tree without storage/rocksdb/ha_rocksdb.so: refused with exit 2 before
/// any dataset is made, naming the plugin, where it was looked for, and the fix.
#[test]
fn a_server_without_the_engines_plugin_is_refused_before_any_work() {
    let w = tempfile::tempdir().unwrap();
    let build = w.path().join("build");
    fs::create_dir_all(build.join("sql")).unwrap();
    fs::write(build.join("CMakeCache.txt"), "").unwrap();
    let bin = build.join("sql/mariadbd");
    fs::copy(testsupport::MARIADBD, &bin).unwrap();
    let work = w.path().join("work");
    let r = common::pgoforge(&[
        "bench",
        &format!("--baseline=debian={}", testsupport::MARIADBD),
        &format!("--binary=built={}", bin.display()),
        "--engine",
        "rocksdb",
        "--workloads",
        "oltp_read_only",
        "--threads",
        "2",
        "--work-dir",
        work.to_str().unwrap(),
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("built: ")
            && r.stderr
                .contains("has no rocksdb engine: ha_rocksdb.so is not in")
            && r.stderr.contains("storage/rocksdb"),
        "{}",
        r.stderr
    );
    assert!(!work.join("datasets").exists(), "nothing made");
    // An engine pgoforge does not benchmark is refused by name.
    let r = common::pgoforge(&[
        "bench",
        &format!("--baseline=debian={}", testsupport::MARIADBD),
        &format!("--binary=b={}", testsupport::MARIADBD),
        "--engine",
        "aria",
    ]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains("innodb or rocksdb"), "{}", r.stderr);
}

/// Training on MyRocks (`run --engine rocksdb`, `--train-engine rocksdb`): a mix on the MyRocks
/// engine makes its dataset template in RocksDB on a server configured by the mix (the plugin
/// loaded), and every phase — OLTP writes and tpcc too — runs against those tables; the rows the
/// phases wrote are in MyRocks afterwards. An InnoDB mix keeps InnoDB's configuration.
#[test]
fn a_training_mix_on_myrocks_prepares_and_writes_rocksdb_tables() {
    use pgoforge::profile::train::{dataset_template, run_mix_from, start_for_mix, Mix, Phases};
    let work = tempfile::tempdir().unwrap();
    let base = ServerConfig {
        buffer_pool_mb: 64,
        redo_log_mb: 32,
        ..ServerConfig::default()
    };
    let mix = Mix {
        tables: 1,
        table_size: 1000,
        phases: "oltp_read_write:2:2,tpcc:3:2".parse::<Phases>().unwrap().0,
        replay: None,
        engine: Engine::RocksDb,
    };
    assert_eq!(mix.server_config(&base).engine, Engine::RocksDb);
    let innodb = Mix {
        engine: Engine::InnoDb,
        ..mix.clone()
    };
    assert_eq!(innodb.server_config(&base), base);
    let spec = ServerSpec {
        config: mix.server_config(&base),
        ..ServerSpec::new(Path::new(testsupport::MARIADBD))
    };
    let (tpl, made) = dataset_template(work.path(), &spec, &mix).unwrap();
    assert!(made);
    let log = |_: &str| {};
    let mut srv = start_for_mix(&spec, &work.path().join("inst"), Some(&tpl), &log).unwrap();
    run_mix_from(&srv.state, &mix, Some(&tpl), &log).unwrap();
    let mut root = srv.state.root().unwrap();
    assert_eq!(sbtest_engines(&mut root), ["ROCKSDB"]);
    // tpcc's phase added orders to the 30 000 the load made, in MyRocks.
    let orders = root
        .query_value("SELECT COUNT(*) FROM sbtest.orders1")
        .unwrap()
        .unwrap();
    assert!(orders.parse::<u64>().unwrap() > 30_000, "{orders}");
    // MyRocks served the writes: its own counters moved.
    let written = root
        .query_value("SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'ROCKSDB_ROWS_INSERTED'")
        .unwrap()
        .unwrap();
    assert!(written.parse::<u64>().unwrap() > 0, "{written}");
    drop(root);
    srv.stop().unwrap();
}
