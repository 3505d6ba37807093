//! Dataset templates: prepare the OLTP tables (and sysbench-tpcc's, when asked) once, stop, keep
//! the datadir; every later run starts from a fresh copy, so each round begins with identical data
//! without preparing again.
//!
//! A template is keyed by the server version and everything that shapes the data (test, tables,
//! rows, schema options, seed). It is built under a temporary name and renamed when complete.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use oltp::settings::Settings;
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::{Server, ServerSpec, ServerState};

#[derive(Serialize)]
struct Key<'a> {
    version: &'a str,
    test: &'a str,
    schema: &'a oltp::settings::Schema,
    threads_for_bulk: u32,
    seed: u64,
    rand: &'a oltp::rng::RandSettings,
    /// sysbench-tpcc's options, for a tpcc dataset only (other keys hash as before it existed).
    #[serde(skip_serializing_if = "Option::is_none")]
    tpcc: Option<&'a oltp::settings::TpccOptions>,
    /// The further datasets loaded into the same template (tpcc beside the OLTP tables).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    also: Vec<Key<'a>>,
    /// A replay dataset's content (its SQL file's SHA-256): a changed dump is another template.
    #[serde(skip_serializing_if = "Option::is_none")]
    replay_dataset: Option<String>,
    /// A replay datadir's fingerprint (every file's path, size and mtime): a datadir a server has
    /// run on since is another template.
    #[serde(skip_serializing_if = "Option::is_none")]
    replay_datadir: Option<String>,
}

impl<'a> Key<'a> {
    fn of(version: &'a str, dataset: &'a Settings) -> Result<Key<'a>> {
        let replay_dataset = match &dataset.replay.dataset {
            Some(p) if dataset.test == oltp::TestName::Replay => {
                Some(crate::infra::fs::sha256_file(p).context("the replay dataset")?)
            }
            _ => None,
        };
        let replay_datadir = match &dataset.replay.datadir {
            Some(d) if dataset.test == oltp::TestName::Replay => {
                Some(super::adopt::fingerprint(d).context("the replay datadir")?)
            }
            _ => None,
        };
        Ok(Key {
            version,
            test: dataset.test.name(),
            schema: &dataset.schema,
            threads_for_bulk: if dataset.test == oltp::TestName::BulkInsert {
                dataset.threads
            } else {
                0
            },
            seed: dataset.rand.seed,
            rand: &dataset.rand,
            tpcc: (dataset.test == oltp::TestName::Tpcc).then_some(&dataset.tpcc),
            also: Vec::new(),
            replay_dataset,
            replay_datadir,
        })
    }
}

/// A workload file replayed as a benchmark or training workload, with the digests that make its
/// content (not its path) part of every key: a changed log is another benchmark, a changed dump
/// another template.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Replay {
    #[serde(flatten)]
    pub options: oltp::replay::ReplayOptions,
    pub file_sha256: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset_sha256: Option<String>,
    /// The replay datadir's [`super::adopt::fingerprint`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub datadir_fingerprint: Option<String>,
}

impl Replay {
    /// The options with their files' digests; the log must parse (a bad file is refused before
    /// anything runs).
    pub fn new(options: oltp::replay::ReplayOptions) -> Result<Replay> {
        let mut s = Settings::new(oltp::TestName::Replay);
        s.replay = options.clone();
        oltp::replay::load(&s).map_err(|e| anyhow::anyhow!("{e}"))?;
        if options.dataset.is_some() && options.datadir.is_some() {
            crate::usage!(
                "a replay's data comes from a SQL dump (--replay-dataset) or a datadir \
                 (--replay-datadir), not both"
            );
        }
        let datadir_fingerprint = match &options.datadir {
            Some(d) => {
                super::adopt::check_source(d)?;
                Some(super::adopt::fingerprint(d)?)
            }
            None => None,
        };
        Ok(Replay {
            file_sha256: crate::infra::fs::sha256_file(&options.file)?,
            dataset_sha256: match &options.dataset {
                Some(d) => Some(crate::infra::fs::sha256_file(d)?),
                None => None,
            },
            datadir_fingerprint,
            options,
        })
    }
}

/// The OLTP tables a template holds: sysbench's read_write schema, `tables` × `table_size` rows,
/// seed 1, loaded over two connections (the rows do not depend on how many). The benchmark, the
/// cachegrind measurement and the profiling runs all ask for this one shape, so with the same sizes
/// they share one template.
pub fn oltp_dataset(tables: u32, table_size: u64) -> Settings {
    let mut s = Settings::new(oltp::TestName::OltpReadWrite);
    s.schema.tables = tables;
    s.schema.table_size = table_size;
    s.rand.seed = 1;
    s.threads = 2;
    s
}

/// The warehouses of the tpcc dataset benchmarks and training mixes use unless told: one
/// warehouse (about 100 MB, prepared in well under a minute) keeps a 2-core machine CPU-bound;
/// with 10 districts, high client counts test lock contention.
pub const TPCC_SCALE: u32 = 1;

/// The size of a tpcc dataset: sysbench-tpcc's `--scale` (warehouses) and `--tables` (copies of
/// the whole schema, each with its own warehouses). Seed 004 measured 10 x 10.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct TpccSize {
    pub scale: u32,
    pub tables: u32,
}

impl Default for TpccSize {
    fn default() -> TpccSize {
        TpccSize {
            scale: TPCC_SCALE,
            tables: 1,
        }
    }
}

impl TpccSize {
    /// Whether this is the default size (plans leave it out then, so their hashes stay).
    pub fn is_default(&self) -> bool {
        *self == TpccSize::default()
    }

    /// Warehouses over all table copies: what the data's size goes with.
    pub fn warehouses(&self) -> u64 {
        u64::from(self.scale) * u64::from(self.tables)
    }
}

/// `s` with its tables in `engine`. MyRocks has no foreign keys, so tpcc goes without them
/// there, as sysbench-tpcc would have to be told (`--use_fk=0`).
fn on_engine(mut s: Settings, engine: super::config::Engine) -> Settings {
    s.schema.storage_engine = engine.name().to_string();
    if engine != super::config::Engine::InnoDb {
        s.tpcc.use_fk = false;
    }
    s
}

/// sysbench-tpcc's tables at `size`, foreign keys as the script's default, seed 1: what a
/// template adds beside the OLTP tables when a tpcc workload runs on it.
pub fn tpcc_dataset(size: TpccSize) -> Settings {
    let mut s = Settings::new(oltp::TestName::Tpcc);
    s.schema.tables = size.tables;
    s.tpcc.scale = size.scale;
    s.rand.seed = 1;
    s.threads = 2;
    s
}

/// What a template for `workloads` holds: the OLTP tables, sysbench-tpcc's when a workload is
/// tpcc, and a replay's data when a workload is replay and the replay has some — a dump loaded
/// into it, or a datadir the template is a copy of (without either, the statements run against
/// the OLTP tables' database as it is), every table in `engine`. The benchmark, the cachegrind
/// measurement and the training mixes all ask for this.
pub fn datasets(
    workloads: &[oltp::TestName],
    tables: u32,
    table_size: u64,
    tpcc: TpccSize,
    engine: super::config::Engine,
    replay: Option<&Replay>,
) -> Vec<Settings> {
    let mut v = vec![oltp_dataset(tables, table_size)];
    if workloads.contains(&oltp::TestName::Tpcc) {
        v.push(tpcc_dataset(tpcc));
    }
    if let Some(r) = replay.filter(|_| workloads.contains(&oltp::TestName::Replay)) {
        if r.options.dataset.is_some() || r.options.datadir.is_some() {
            let mut s = Settings::new(oltp::TestName::Replay);
            s.replay.dataset = r.options.dataset.clone();
            s.replay.datadir = r.options.datadir.clone();
            v.push(s);
        }
    }
    v.into_iter().map(|s| on_engine(s, engine)).collect()
}

/// The settings a run of `w` starts from on such a template (its threads and time still to set).
/// A replay without its file here is refused by the driver when it runs.
pub fn run_settings(
    w: oltp::TestName,
    tables: u32,
    table_size: u64,
    tpcc: TpccSize,
    engine: super::config::Engine,
    replay: Option<&Replay>,
) -> Settings {
    on_engine(settings_of(w, tables, table_size, tpcc, replay), engine)
}

fn settings_of(
    w: oltp::TestName,
    tables: u32,
    table_size: u64,
    tpcc: TpccSize,
    replay: Option<&Replay>,
) -> Settings {
    if w == oltp::TestName::Tpcc {
        return tpcc_dataset(tpcc);
    }
    if w == oltp::TestName::Replay {
        let mut s = Settings::new(w);
        if let Some(r) = replay {
            s.replay = r.options.clone();
        }
        s.rand.seed = 1;
        return s;
    }
    let mut s = oltp_dataset(tables, table_size);
    s.test = w;
    s
}

/// The template directory holding `datasets` (the first one names it) on the server of `spec`,
/// created if missing.
pub fn ensure(work_dir: &Path, spec: &ServerSpec, datasets: &[Settings]) -> Result<PathBuf> {
    ensure_made(work_dir, spec, datasets).map(|(dir, _)| dir)
}

/// [`ensure`], also saying whether the template was made now (false: found made).
pub fn ensure_made(
    work_dir: &Path,
    spec: &ServerSpec,
    datasets: &[Settings],
) -> Result<(PathBuf, bool)> {
    ensure_logged(work_dir, spec, datasets, &|_| {})
}

/// Seconds between the lines a template's load logs while it runs: a 10 GB dataset loads for
/// minutes, and a log that is not a terminal shows no progress bar.
const LOAD_HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(30);

/// [`ensure_made`], logging a load when it happens: its start, every [`LOAD_HEARTBEAT`] the
/// loader's latest step, and its end with the time it took.
pub fn ensure_logged(
    work_dir: &Path,
    spec: &ServerSpec,
    datasets: &[Settings],
    log: &dyn Fn(&str),
) -> Result<(PathBuf, bool)> {
    let flavor = super::Flavor::detect(&spec.binary)?;
    let (dataset, also) = datasets
        .split_first()
        .context("a dataset template needs at least one dataset")?;
    let mut key = Key::of(&flavor.version, dataset)?;
    key.also = also
        .iter()
        .map(|d| Key::of(&flavor.version, d))
        .collect::<Result<_>>()?;
    let hash = crate::infra::fs::hex(&Sha256::digest(serde_json::to_vec(&key)?))[..16].to_string();
    let extra: String = also
        .iter()
        .map(|d| match d.test {
            // One copy keeps the name templates always had.
            oltp::TestName::Tpcc if d.schema.tables == 1 => format!("+tpcc{}w", d.tpcc.scale),
            oltp::TestName::Tpcc => format!("+tpcc{}wx{}", d.tpcc.scale, d.schema.tables),
            oltp::TestName::Replay if d.replay.datadir.is_some() => "+datadir".to_string(),
            oltp::TestName::Replay => "+replay".to_string(),
            t => format!("+{t}"),
        })
        .collect();
    let dir = work_dir.join("datasets").join(format!(
        "{}-{}t-{}r{extra}-{hash}",
        dataset.test, dataset.schema.tables, dataset.schema.table_size
    ));
    if dir.join("data/mysql").is_dir() && dir.join("state.json").is_file() {
        return Ok((dir, false));
    }
    let building = dir.with_extension("building");
    let _ = fs::remove_dir_all(&building);
    let t0 = std::time::Instant::now();
    log(&format!(
        "loading the dataset template into {}",
        dir.display()
    ));
    // A replay's datadir is the template's starting point; the other datasets go into a copy of it.
    let adopted = datasets.iter().find_map(|d| d.replay.datadir.as_deref());
    let made = (|| -> Result<()> {
        let mut srv = match adopted {
            Some(source) => Server::adopt(spec, &building, source)?,
            None => Server::create(spec, &building)?,
        };
        for d in datasets.iter().filter(|d| d.replay.datadir.is_none()) {
            let mut s = d.clone();
            s.conn = srv.state.conn_settings();
            with_heartbeat(t0, LOAD_HEARTBEAT, log, |note| {
                oltp::schema::prepare(&s, note)
            })
            .with_context(|| format!("preparing the dataset template ({})", d.test))?;
        }
        srv.stop()?;
        Ok(())
    })();
    if let Err(e) = made {
        let _ = fs::remove_dir_all(&building);
        return Err(e);
    }
    // Leave no run-time leftovers in the template; each copy gets its own.
    for d in ["run", "tmp"] {
        let _ = fs::remove_dir_all(building.join(d));
    }
    let _ = fs::remove_file(building.join("error.log"));
    fs::write(
        building.join("dataset.json"),
        serde_json::to_string_pretty(&key)?,
    )?;
    fs::rename(&building, &dir)
        .with_context(|| format!("renaming {} to {}", building.display(), dir.display()))?;
    log(&format!(
        "dataset template loaded in {:.0} s",
        t0.elapsed().as_secs_f64()
    ));
    Ok((dir, true))
}

/// Runs `load` (which reports its steps to the `note` it is given, from any of its threads) on
/// another thread, and logs its latest step every `every` here, where `log` may be called from
/// (it need not be thread-safe); the times logged count from `t0`.
fn with_heartbeat<T: Send>(
    t0: std::time::Instant,
    every: std::time::Duration,
    log: &dyn Fn(&str),
    load: impl FnOnce(oltp::tables::Log) -> T + Send,
) -> T {
    let latest = std::sync::Mutex::new(String::new());
    let note = |l: &str| {
        if let Ok(mut g) = latest.lock() {
            *g = l.trim().to_string();
        }
    };
    std::thread::scope(|sc| {
        let h = sc.spawn(|| load(&note));
        let mut next = std::time::Instant::now() + every;
        while !h.is_finished() {
            std::thread::sleep(every.min(std::time::Duration::from_millis(200)));
            if std::time::Instant::now() >= next {
                next += every;
                let step = latest.lock().map(|g| g.clone()).unwrap_or_default();
                log(&format!(
                    "loading the dataset template, {:.0} s: {step}",
                    t0.elapsed().as_secs_f64()
                ));
            }
        }
        match h.join() {
            Ok(v) => v,
            // A panic in the loader is the loader's; carry it on here.
            Err(p) => std::panic::resume_unwind(p),
        }
    })
}

/// Copies the template into `instance_dir` (which must not exist) and starts a server on the copy.
pub fn start_copy(template: &Path, spec: &ServerSpec, instance_dir: &Path) -> Result<Server> {
    if instance_dir.exists() {
        anyhow::bail!(
            "{} already exists; refusing to overwrite it",
            instance_dir.display()
        );
    }
    start_synced(template, spec, instance_dir).map(|(srv, _)| srv)
}

/// [`start_copy`] for a directory a previous round may have left: the first time a copy of the
/// template, after that only the files the last server there wrote are restored (a round of
/// read-only workloads restores a few small files, not the dataset). Returns what was restored.
pub fn start_synced(
    template: &Path,
    spec: &ServerSpec,
    instance_dir: &Path,
) -> Result<(Server, crate::infra::fs::Synced)> {
    let state = ServerState::load(template)?;
    // Never replace the files of a server that still runs there (a crashed run's).
    if let Some(old) = ServerState::load(instance_dir)
        .ok()
        .filter(ServerState::is_running)
    {
        anyhow::bail!(
            "a server from {} is still running (pid {}); stop it first",
            instance_dir.display(),
            old.pid
        );
    }
    fs::create_dir_all(instance_dir)
        .with_context(|| format!("creating {}", instance_dir.display()))?;
    let synced = crate::infra::fs::sync_tree(&template.join("data"), &instance_dir.join("data"));
    let synced = match synced {
        Ok(s) => s,
        Err(e) => {
            // Half-restored data must not be taken for the template's next time.
            let _ = fs::remove_dir_all(instance_dir);
            return Err(e.context(format!("restoring the template {}", template.display())));
        }
    };
    // The last server's leftovers go: each start gets a fresh log and scratch directory.
    for d in ["run", "tmp"] {
        let _ = fs::remove_dir_all(instance_dir.join(d));
    }
    let _ = fs::remove_file(instance_dir.join("error.log"));
    let moved = ServerState {
        instance_dir: instance_dir.to_path_buf(),
        datadir: instance_dir.join("data"),
        pid: 0,
        ..state
    };
    fs::write(
        instance_dir.join("state.json"),
        serde_json::to_string_pretty(&moved)?,
    )?;
    let mut srv = Server::start(spec, instance_dir)?;
    srv.rotate_password()?;
    Ok((srv, synced))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    #[test]
    fn a_long_load_logs_its_latest_step_while_it_runs_and_returns_its_result() {
        let lines = std::cell::RefCell::new(Vec::<String>::new());
        let log = |l: &str| lines.borrow_mut().push(l.to_string());
        let got = with_heartbeat(Instant::now(), Duration::from_millis(50), &log, |note| {
            // Steps noted from another thread, as a loader's worker threads do.
            std::thread::scope(|sc| {
                sc.spawn(|| note("Inserting 1000000 records into 'sbtest1'\n"));
            });
            std::thread::sleep(Duration::from_millis(300));
            note("loading tables: 3 for warehouse: 7");
            std::thread::sleep(Duration::from_millis(300));
            42
        });
        assert_eq!(got, 42);
        let lines = lines.into_inner();
        assert!(
            lines
                .iter()
                .any(|l| l.ends_with(": Inserting 1000000 records into 'sbtest1'")),
            "{lines:?}"
        );
        assert!(
            lines
                .iter()
                .any(|l| l.ends_with(": loading tables: 3 for warehouse: 7")),
            "{lines:?}"
        );
        assert!(lines
            .iter()
            .all(|l| l.starts_with("loading the dataset template, ")));
        // A quick load logs nothing between its start and end.
        let quiet = std::cell::RefCell::new(0);
        with_heartbeat(
            Instant::now(),
            Duration::from_secs(30),
            &|_| *quiet.borrow_mut() += 1,
            |_| (),
        );
        assert_eq!(quiet.into_inner(), 0);
    }
}
