//! Training: run the instrumented server on the OLTP mix, stop it cleanly, collect and store the
//! profile.
//!
//! The default mix follows the best published sysbench-trained PGO recipe (point selects, then
//! read-only transactions) plus a write
//! phase and a text-protocol phase, since prepared statements and plain queries take different paths
//! through the server (parser vs. execution of prepared statements).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use oltp::settings::{PsMode, Settings, TestName};
use serde::{Deserialize, Serialize};

use super::{check_gcda, check_profdata, store, Kind, Meta, Stored};
use crate::builder::{BuildOutput, ProfileInput};
use crate::infra::time::now_secs;
use crate::server::config::Engine;
use crate::server::{Server, ServerConfig, ServerSpec, ServerState};
use crate::toolchain::FlagFamily;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Phase {
    pub test: TestName,
    pub seconds: u64,
    pub threads: u32,
    /// Prepared statements (true) or the text protocol.
    pub prepared: bool,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mix {
    pub tables: u32,
    pub table_size: u64,
    pub phases: Vec<Phase>,
    /// The workload file of `replay` phases (`--replay-file`). Absent from mixes without it, so
    /// their training keys stay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<crate::server::template::Replay>,
    /// The engine of the training's tables (`run --train-engine`; by default the run's
    /// `--engine`): a profile of MyRocks' code needs tables in MyRocks. Absent for InnoDB, so
    /// the training keys made before stay.
    #[serde(default, skip_serializing_if = "Engine::is_innodb")]
    pub engine: Engine,
}

impl Mix {
    /// The configuration of a server this mix trains on: `server`'s, with the mix's engine
    /// (MyRocks' plugin loaded and the pool's memory as its block cache; InnoDB's pool as given).
    pub fn server_config(&self, server: &ServerConfig) -> ServerConfig {
        ServerConfig {
            engine: self.engine,
            ..server.clone()
        }
    }

    /// The OLTP mix (`oltp` in a mix's name): point_select, read_only (prepared and text),
    /// read_write, about five minutes. The default training adds tpcc ([`DEFAULT_MIX`]).
    pub fn standard() -> Mix {
        Mix {
            tables: 4,
            table_size: 100_000,
            phases:
                "oltp_point_select:60,oltp_read_only:120,oltp_read_only@text:40,oltp_read_write:80"
                    .parse::<Phases>()
                    .expect("valid mix")
                    .0,
            replay: None,
            engine: Engine::InnoDb,
        }
    }

    /// Why the mix cannot run, if it cannot: a `replay` phase needs the file to replay.
    pub fn check(&self) -> Result<(), String> {
        if self.replay.is_none() && self.phases.iter().any(|p| p.test == TestName::Replay) {
            return Err(
                "a replay phase in the training mix needs --replay-file FILE (and --replay-dataset DUMP or --replay-datadir DIR for its data)"
                    .into(),
            );
        }
        Ok(())
    }

    /// A short mix for a first look and for tests.
    pub fn quick() -> Mix {
        Mix {
            tables: 1,
            table_size: 10_000,
            phases: "oltp_point_select:8,oltp_read_only:8,oltp_read_only@text:4,oltp_read_write:8"
                .parse::<Phases>()
                .expect("valid mix")
                .0,
            replay: None,
            engine: Engine::InnoDb,
        }
    }

    /// The mix BOLT's profiling run uses in `pgoforge run`: every phase half as long (at least
    /// 4 s), the same dataset. Measured on MariaDB's bolt-ready PGO+LTO build
    /// (docs/bench/train.md): BOLT's output from the half-length profile has the same I1 misses
    /// and instructions per transaction within 1 % under cachegrind as from the full one, and an
    /// eighth-length one within 1.2 %; the half saves 2.5 minutes per BOLTed variant.
    pub fn for_bolt(&self) -> Mix {
        let mut m = self.clone();
        for p in &mut m.phases {
            p.seconds = (p.seconds / 2).max(4);
        }
        m
    }

    pub fn describe(&self) -> Vec<String> {
        let mut v = vec![format!(
            "dataset {} tables x {} rows",
            self.tables, self.table_size
        )];
        v.extend(self.phases.iter().map(|p| {
            format!(
                "{} {}s {} threads {}",
                p.test,
                p.seconds,
                p.threads,
                if p.prepared { "prepared" } else { "text" }
            )
        }));
        v
    }

    /// The settings a phase of `test` starts from: the mix's OLTP tables, the tpcc dataset, or
    /// the replayed file.
    pub fn settings(&self, test: TestName) -> Settings {
        if matches!(test, TestName::Tpcc | TestName::Replay) {
            // Training keeps tpcc's default size and InnoDB: a profile sees the code paths of one
            // warehouse as of a hundred, and the mix stays short.
            return crate::server::template::run_settings(
                test,
                self.tables,
                self.table_size,
                Default::default(),
                self.engine,
                self.replay.as_ref(),
            );
        }
        let mut s = Settings::new(test);
        s.schema.storage_engine = self.engine.name().to_string();
        s.schema.tables = self.tables;
        s.schema.table_size = self.table_size;
        s.rand.seed = 1;
        s
    }
}

/// A training mix with the name the train × evaluate matrix shows it under.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamedMix {
    pub name: String,
    pub mix: Mix,
}

/// The tpcc training phase: sysbench-tpcc's mix for as long as the standard OLTP mix runs, at its
/// thread count.
pub const TPCC_PHASES: &str = "tpcc:300:4";

/// The training mix of `run`, `train` and `bolt` when none is named: the OLTP mix and tpcc one
/// after the other (about ten minutes). The train × evaluate matrix on MariaDB 10.11
/// (docs/results/mariadb-10.11-matrix/) ranked it first by geometric mean over 16 cells: faster
/// than the tpcc-trained build in 3 cells and slower nowhere, no cell significantly different from
/// the OLTP-trained one; and it runs tpcc's code paths. The OLTP mix alone is `--train-mix oltp`.
pub const DEFAULT_MIX: &str = "oltp+tpcc";

/// The replay training phase: the workload file (`--replay-file`) for as long, at 4 connections.
pub const REPLAY_PHASES: &str = "replay:300:4";

impl NamedMix {
    /// A mix by name, on `oltp`'s dataset size: `oltp` is `oltp` itself (the standard mix, or
    /// `--mix`), `tpcc` is [`TPCC_PHASES`], a `+`-joined list of those is their phases one after
    /// the other (`oltp+tpcc`: the union), and `NAME=PHASES` is a mix of one's own.
    pub fn parse(spec: &str, oltp: &Mix) -> Result<NamedMix, String> {
        let spec = spec.trim();
        let (name, phases) = match spec.split_once('=') {
            Some((n, p)) => (n.trim(), Some(p)),
            None => (spec, None),
        };
        let well_formed = !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+_-".contains(c));
        if !well_formed {
            return Err(format!(
                "training mix '{spec}': a name is letters, digits, '+', '_' or '-' (e.g. oltp, tpcc, oltp+tpcc, mine=oltp_point_select:60,tpcc:120)"
            ));
        }
        let phases = match phases {
            Some(p) => {
                p.parse::<Phases>()
                    .map_err(|e| format!("training mix {name}: {e}"))?
                    .0
            }
            None => {
                let mut v = Vec::new();
                for part in name.split('+') {
                    match part {
                        "oltp" => v.extend(oltp.phases.iter().cloned()),
                        "tpcc" => v.extend(TPCC_PHASES.parse::<Phases>().expect("valid phases").0),
                        "replay" if oltp.replay.is_some() => v.extend(
                            REPLAY_PHASES.parse::<Phases>().expect("valid phases").0,
                        ),
                        "replay" => {
                            return Err(
                                "training mix 'replay' replays --replay-file: give one".into()
                            )
                        }
                        _ => {
                            return Err(format!(
                                "unknown training mix '{part}' (known: oltp, tpcc, replay with --replay-file, and their unions such as oltp+tpcc; give your own as NAME=PHASES)"
                            ))
                        }
                    }
                }
                v
            }
        };
        Ok(NamedMix {
            name: name.to_string(),
            mix: Mix {
                phases,
                ..oltp.clone()
            },
        })
    }

    /// The workloads the mix trains on, each once.
    pub fn workloads(&self) -> Vec<TestName> {
        let mut v: Vec<TestName> = Vec::new();
        for p in &self.mix.phases {
            if !v.contains(&p.test) {
                v.push(p.test);
            }
        }
        v
    }
}

/// Phases as `test[@text][:seconds[:threads]]`, comma-separated.
#[derive(Debug)]
pub struct Phases(pub Vec<Phase>);

impl FromStr for Phases {
    type Err = String;
    fn from_str(s: &str) -> Result<Phases, String> {
        s.split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| {
                let mut parts = p.split(':');
                let head = parts.next().unwrap_or_default();
                let (name, prepared) = match head.split_once('@') {
                    Some((n, "text")) => (n, false),
                    Some((n, "ps")) => (n, true),
                    Some((_, m)) => {
                        return Err(format!(
                            "unknown protocol '@{m}' in '{p}' (use @text or @ps)"
                        ))
                    }
                    None => (head, true),
                };
                let test: TestName = name.parse()?;
                let seconds = parts.next().map_or(Ok(30), |v| {
                    v.parse().map_err(|_| {
                        format!("bad seconds '{v}' in '{p}' (a phase is test[@text|@ps][:seconds[:threads]])")
                    })
                })?;
                let threads = parts.next().map_or(Ok(4), |v| {
                    v.parse().map_err(|_| {
                        format!("bad threads '{v}' in '{p}' (a phase is test[@text|@ps][:seconds[:threads]])")
                    })
                })?;
                if seconds == 0 || threads == 0 {
                    return Err(format!("'{p}': seconds and threads must be at least 1"));
                }
                Ok(Phase {
                    test,
                    seconds,
                    threads,
                    // sysbench-tpcc sends every statement as text.
                    prepared: prepared && test != TestName::Tpcc,
                })
            })
            .collect::<Result<Vec<_>, _>>()
            .and_then(|v| {
                if v.is_empty() {
                    Err("an empty training mix".into())
                } else {
                    Ok(v)
                }
            })
            .map(Phases)
    }
}

impl FromStr for Mix {
    type Err = String;
    fn from_str(s: &str) -> Result<Mix, String> {
        Ok(Mix {
            phases: s.parse::<Phases>()?.0,
            ..Mix::standard()
        })
    }
}

/// The mix's tables, in the shape of every dataset template (the benchmark's too): the OLTP
/// tables, and sysbench-tpcc's when a phase runs tpcc.
fn datasets(mix: &Mix) -> Vec<Settings> {
    let tests: Vec<TestName> = mix.phases.iter().map(|p| p.test).collect();
    crate::server::template::datasets(
        &tests,
        mix.tables,
        mix.table_size,
        Default::default(),
        mix.engine,
        mix.replay.as_ref(),
    )
}

fn prepare(state: &ServerState, mix: &Mix, log: &dyn Fn(&str)) -> Result<()> {
    log(&format!(
        "preparing {} tables x {} rows",
        mix.tables, mix.table_size
    ));
    for mut s in datasets(mix) {
        s.conn = state.conn_settings();
        oltp::schema::prepare(&s, &|_| {})
            .with_context(|| format!("preparing the training dataset ({})", s.test))?;
    }
    Ok(())
}

/// The mix's dataset as a template made by `server` (the baseline build): training and BOLT's
/// profiling run start on copies of it instead of each preparing the tables on an instrumented
/// server, several times slower at it; the benchmark, whose dataset is the same by default,
/// finds it made. Also says whether it was made now (false: found made).
pub fn dataset_template(
    work_dir: &Path,
    server: &ServerSpec,
    mix: &Mix,
) -> Result<(PathBuf, bool)> {
    crate::server::template::ensure_made(work_dir, server, &datasets(mix)).with_context(|| {
        format!(
            "preparing the training dataset with {}",
            server.binary.display()
        )
    })
}

/// Starts `spec`'s server in `inst`: on a copy of `template`, or on a new datadir (whose tables
/// [`run_mix_from`] then prepares).
pub fn start_for_mix(
    spec: &ServerSpec,
    inst: &Path,
    template: Option<&Path>,
    log: &dyn Fn(&str),
) -> Result<Server> {
    let _ = fs::remove_dir_all(inst);
    match template {
        Some(t) => {
            log(&format!(
                "starting on a copy of the dataset {}",
                t.display()
            ));
            crate::server::template::start_copy(t, spec, inst)
        }
        None => Server::create(spec, inst),
    }
}

/// Runs the mix on a server started by [`start_for_mix`], preparing the tables first unless it
/// started on a template.
pub fn run_mix_from(
    state: &ServerState,
    mix: &Mix,
    template: Option<&Path>,
    log: &dyn Fn(&str),
) -> Result<()> {
    if template.is_none() {
        prepare(state, mix, log)?;
    }
    run_phases(state, mix, log)
}

/// Runs every phase of the mix against `state`'s server, whose tables are prepared.
fn run_phases(state: &ServerState, mix: &Mix, log: &dyn Fn(&str)) -> Result<()> {
    for p in &mix.phases {
        let mut r = mix.settings(p.test);
        r.conn = state.conn_settings();
        r.threads = p.threads;
        r.time_s = p.seconds;
        r.rand.seed = 0;
        r.ps_mode = if p.prepared {
            PsMode::Auto
        } else {
            PsMode::Disable
        };
        // Training must survive the odd deadlock or duplicate of a write phase.
        r.ignore_errors = oltp::settings::IgnoreErrors::survivable();
        if p.test == TestName::BulkInsert {
            oltp::schema::prepare(&r, &|_| {}).context("preparing bulk_insert tables")?;
        }
        let t0 = Instant::now();
        let res = oltp::run(&r, &mut oltp::Quiet)
            .map_err(|e| anyhow::anyhow!("training phase {}: {e}", p.test))?;
        log(&format!(
            "{} ({}): {:.0} tps for {:.0} s",
            p.test,
            if p.prepared { "prepared" } else { "text" },
            res.tps(),
            t0.elapsed().as_secs_f64()
        ));
    }
    Ok(())
}

pub struct TrainRequest<'a> {
    /// The instrumented build: pgo-gen, or cs-pgo-gen.
    pub gen: &'a BuildOutput,
    /// For a cs-pgo-gen build, the profile it was optimized with: the stored profile is that one
    /// merged with the context-sensitive counts, as the cs-pgo build needs both.
    pub base: Option<&'a Path>,
    /// Server settings; the binary is replaced by the instrumented one.
    pub spec: ServerSpec,
    pub mix: &'a Mix,
    /// A template of the mix's dataset ([`dataset_template`]); without one the instrumented
    /// server prepares the tables itself.
    pub dataset: Option<&'a Path>,
    pub work_dir: &'a Path,
}

/// Trains the instrumented build and stores its profile.
pub fn train(req: &TrainRequest, log: &dyn Fn(&str)) -> Result<Stored> {
    let gen = req.gen;
    if !gen
        .variant
        .parse::<crate::builder::Variant>()
        .is_ok_and(|v| v.instrumented())
    {
        bail!(
            "training needs an instrumented (pgo-gen or cs-pgo-gen) build; {} is {}",
            gen.binary.display(),
            gen.variant
        );
    }
    let gen_dir = gen
        .profile_gen_dir
        .clone()
        .context("the pgo-gen build records no profile directory")?;
    // Profiles accumulate (GCC merges into existing gcda files): start from nothing.
    let _ = fs::remove_dir_all(&gen_dir);
    fs::create_dir_all(&gen_dir).with_context(|| format!("creating {}", gen_dir.display()))?;
    let mut spec = req.spec.clone();
    spec.binary = gen.binary.clone();
    // Instrumented servers run slower: give them time.
    spec.start_timeout = spec.start_timeout.max(Duration::from_secs(300));
    spec.stop_timeout = spec.stop_timeout.max(Duration::from_secs(600));
    if gen.compiler.family == FlagFamily::Clang {
        spec.env.push((
            "LLVM_PROFILE_FILE".into(),
            gen_dir.join("%m-%p.profraw").display().to_string(),
        ));
    }
    let inst = req
        .work_dir
        .join("train")
        .join(format!("{}-{}", gen.key, now_secs()));
    let t0 = Instant::now();
    log(&format!(
        "starting the instrumented server {}",
        gen.binary.display()
    ));
    let result = train_on(&spec, &inst, req.mix, req.dataset, log);
    let _ = fs::remove_dir_all(&inst);
    result?;
    let seconds = t0.elapsed().as_secs_f64();
    let (data, kind, summary) = match gen.compiler.family {
        FlagFamily::Gcc => {
            let summary = check_gcda(&gen_dir, gen)?;
            (ProfileInput::GccDir(gen_dir.clone()), Kind::Gcda, summary)
        }
        FlagFamily::Clang => {
            let merged = merge_profraw(gen, &gen_dir, req.base)?;
            let summary = check_profdata(&merged, gen.compiler.profdata()?)?;
            (ProfileInput::Profdata(merged), Kind::Profdata, summary)
        }
    };
    store(
        req.work_dir,
        &data,
        kind,
        Meta {
            hash: String::new(),
            kind,
            source_hash: gen.source_hash.clone(),
            build_key: gen.key.clone(),
            recipe: gen.recipe.clone(),
            variant: gen.variant.clone(),
            compiler: gen.compiler.label(),
            compiler_version: gen.compiler.version.clone(),
            training: req.mix.describe(),
            seconds,
            created: now_secs(),
            summary,
            source_paths: gen.source_paths,
        },
    )
}

/// Starts `spec`'s server in `inst` (on a copy of `dataset` when given), runs the mix and stops
/// it; a server that does not exit cleanly has written no (complete) profile, whatever else went
/// wrong.
pub fn train_on(
    spec: &ServerSpec,
    inst: &Path,
    mix: &Mix,
    dataset: Option<&Path>,
    log: &dyn Fn(&str),
) -> Result<()> {
    let mut srv = start_for_mix(spec, inst, dataset, log)?;
    let ran = run_mix_from(&srv.state, mix, dataset, log);
    let stopped = srv.stop();
    match (ran, stopped) {
        (Ok(()), Ok(())) => Ok(()),
        (ran, Err(e)) => {
            let why = ran.err().map(|r| format!(" (the workload failed first: {r:#})")).unwrap_or_default();
            bail!("no profile written: the server did not exit cleanly: {e:#}{why}")
        }
        (Err(r), Ok(())) => Err(r.context("training failed; the server stopped cleanly but the profile is incomplete and was not stored")),
    }
}

/// Merges the .profraw files of a clang instrumented run with the matching llvm-profdata, and
/// with `base` (the profile a cs-pgo-gen build used) when given.
pub fn merge_profraw(gen: &BuildOutput, dir: &Path, base: Option<&Path>) -> Result<PathBuf> {
    let raws: Vec<PathBuf> = fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "profraw"))
        .collect();
    if raws.is_empty() {
        bail!(
            "no profile written: {} holds no .profraw files (the server did not exit cleanly?)",
            dir.display()
        );
    }
    let merged = dir.join("merged.profdata");
    let tool = gen.compiler.profdata()?;
    crate::infra::runner::run_tool(
        Command::new(tool)
            .arg("merge")
            .arg("-o")
            .arg(&merged)
            .args(base)
            .args(&raws),
        &format!("{} merge", tool.display()),
        Some(&dir.join("merge.log")),
    )?;
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phases_parse() {
        let p: Phases = "oltp_point_select:5,oltp_read_only@text:7:2"
            .parse()
            .unwrap();
        assert_eq!(p.0.len(), 2);
        assert_eq!(
            p.0[1],
            Phase {
                test: TestName::OltpReadOnly,
                seconds: 7,
                threads: 2,
                prepared: false
            }
        );
        assert!("oltp_nothing:5".parse::<Phases>().is_err());
        assert!("oltp_read_only@xml"
            .parse::<Phases>()
            .unwrap_err()
            .contains("@xml"));
        assert!("".parse::<Phases>().is_err());
        assert_eq!(Mix::standard().phases.len(), 4);
    }

    #[test]
    fn bolt_profiles_for_half_the_training_phases() {
        let b = Mix::standard().for_bolt();
        let secs: Vec<u64> = b.phases.iter().map(|p| p.seconds).collect();
        assert_eq!(secs, vec![30, 60, 20, 40]);
        assert_eq!((b.tables, b.table_size), (4, 100_000));
        // Short phases keep a few seconds.
        assert!(Mix::quick()
            .for_bolt()
            .phases
            .iter()
            .all(|p| p.seconds >= 4));
    }

    #[test]
    fn named_mixes_are_oltp_tpcc_their_union_or_your_own() {
        let oltp = Mix::quick();
        let m = NamedMix::parse("oltp", &oltp).unwrap();
        assert_eq!(m.mix, oltp);
        let t = NamedMix::parse("tpcc", &oltp).unwrap();
        assert_eq!(t.workloads(), [TestName::Tpcc]);
        assert!(!t.mix.phases[0].prepared, "sysbench-tpcc speaks text");
        assert_eq!(
            (t.mix.tables, t.mix.table_size),
            (oltp.tables, oltp.table_size)
        );
        let u = NamedMix::parse("oltp+tpcc", &oltp).unwrap();
        assert_eq!(u.mix.phases.len(), oltp.phases.len() + 1);
        assert_eq!(u.mix.phases[..oltp.phases.len()], oltp.phases[..]);
        assert_eq!(
            u.workloads(),
            [
                TestName::OltpPointSelect,
                TestName::OltpReadOnly,
                TestName::OltpReadWrite,
                TestName::Tpcc
            ]
        );
        let own = NamedMix::parse("mine=oltp_point_select:60,tpcc:120:8", &oltp).unwrap();
        assert_eq!(own.name, "mine");
        assert_eq!(own.mix.phases[1].threads, 8);
        for (bad, says) in [
            ("olap", "unknown training mix 'olap'"),
            ("a b", "a name is letters"),
            ("=tpcc:5", "a name is letters"),
            ("x=tpcc:zero", "training mix x: bad seconds"),
            ("replay", "training mix 'replay' replays --replay-file"),
        ] {
            let e = NamedMix::parse(bad, &oltp).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
        }
        // A replay phase parses; without the file the mix refuses to run.
        let r = NamedMix::parse("r=replay:5", &oltp).unwrap();
        assert!(r.mix.check().unwrap_err().contains("--replay-file"));
    }
}
