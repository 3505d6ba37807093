//! Flags shared by several subcommands, each defined once and flattened where it is used.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use oltp::settings::TestName;
use pgoforge::bench::load::Guard;
use pgoforge::bench::plan::Contender;
use pgoforge::bench::spec::BenchSpec;
use pgoforge::infra::exit::Refuse;
use pgoforge::infra::lock::WorkLock;
use pgoforge::pipeline::stages::SourceStage;
use pgoforge::profile::train::{Mix, NamedMix, Phases, DEFAULT_MIX};
use pgoforge::recipe::{Recipe, DEFAULT};
use pgoforge::server::ServerConfig;
use pgoforge::source::release::{ReleaseCheck, Want};
use pgoforge::toolchain::{Compiler, FlagFamily};

#[derive(Args, Clone, Debug)]
pub struct WorkDirArgs {
    /// Where sources, builds, profiles, runs, packages and the run state live.
    #[arg(long = "work-dir", default_value = "pgoforge-work")]
    pub work_dir: PathBuf,
}

impl WorkDirArgs {
    /// The work directory, created, as a canonical path.
    pub fn create(&self) -> Result<PathBuf> {
        pgoforge::infra::fs::create_canonical(&self.work_dir)
            .context("the work dir")
            .refused()
    }

    /// The work directory, created, and the lock that keeps a second pgoforge out of it while
    /// the returned guard lives.
    pub fn locked(&self) -> Result<(PathBuf, WorkLock)> {
        let work = self.create()?;
        let lock = WorkLock::acquire(&work)?;
        Ok((work, lock))
    }

    /// The work directory, which must exist already.
    pub fn existing(&self) -> Result<PathBuf> {
        std::fs::canonicalize(&self.work_dir)
            .with_context(|| {
                format!(
                "work dir {} (it must exist: nothing has run there yet — give the --work-dir a \
                 `pgoforge run` used)",
                self.work_dir.display()
            )
            })
            .refused()
    }
}

#[derive(Args, Clone, Debug)]
pub struct SourceArgs {
    /// An embedded recipe name (`pgoforge recipes`) or a recipe TOML file.
    #[arg(long, default_value = DEFAULT)]
    pub recipe: String,
    /// A source directory, tarball or URL (instead of the recipe's source).
    #[arg(long)]
    pub source: Option<String>,
    /// The sha256 of --source (required for URLs; checked for tarballs when given).
    #[arg(long)]
    pub sha256: Option<String>,
    /// Another version of a Debian recipe's source package: a Debian version
    /// (1:10.11.18-0+deb12u1), or `newest`. Every release considered is checked file by file
    /// against the mirror before anything is built; a version whose source cannot be fetched is
    /// refused with the ones that can [the newest release whose source the mirror serves, in the
    /// recipe's suite, its -security and -updates suites].
    #[arg(
        long = "source-version",
        value_name = "VERSION|newest",
        conflicts_with = "source"
    )]
    pub source_version: Option<String>,
    /// Precompiled headers for the heaviest targets, where the recipe offers them on request
    /// (mariadb-10.11: sql, InnoDB and the performance schema: a faster build whose code differs
    /// in a few static initializers; builds of their own key, docs/bench/mariadb-pch.md).
    /// `follow` asks for them [the recipe's own setting: MySQL's recipes use them always]
    #[arg(long = "precompiled-headers")]
    pub precompiled_headers: bool,
}

impl SourceArgs {
    /// The recipe at the release to build, and what the mirror said of its releases (None for
    /// a source that is not a Debian package, or the user's `--source`).
    pub fn recipe(&self) -> Result<(Recipe, Option<ReleaseCheck>)> {
        let mut r = Recipe::load(&self.recipe).refused()?;
        if self.precompiled_headers {
            r = r
                .with_precompiled_headers()
                .unwrap_or_else(|m| super::usage_error(format!("--precompiled-headers: {m}")));
        }
        if self.source.is_some() {
            return Ok((r, None));
        }
        let want = match self.source_version.as_deref() {
            None => Want::Default,
            Some("newest") => Want::Newest,
            Some(v) => {
                // The version's form first: nothing is asked of apt for garbage.
                r.clone().with_source_version(v).refused()?;
                Want::Exact(v.to_string())
            }
        };
        let Some(check) = pgoforge::source::release::resolve(&r.source, &want)? else {
            return Ok((r, None));
        };
        if want == Want::Newest {
            eprintln!("--source-version newest: {}", check.building);
        }
        let r = r.with_source_version(&check.building).refused()?;
        Ok((r, Some(check)))
    }

    /// The release check's warnings on stderr (the commands that have no reporter for them).
    pub fn warn(release: Option<&ReleaseCheck>) {
        for w in release.iter().flat_map(|c| c.warnings()) {
            eprintln!("warning: {w}");
        }
    }

    /// The source stage for `recipe` with these arguments.
    pub fn stage<'a>(&'a self, recipe: &'a Recipe) -> SourceStage<'a> {
        SourceStage {
            recipe,
            user: self.source.as_deref(),
            sha256: self.sha256.as_deref(),
        }
    }
}

#[derive(Args, Clone, Debug)]
pub struct CompilerArgs {
    /// gcc, clang, a versioned name (clang-16, gcc-12), or a path (with --flag-family) [the
    /// recipe's default_compiler (`pgoforge recipes`), else gcc].
    #[arg(long)]
    pub compiler: Option<String>,
    /// The flag dialect of a compiler given by path.
    #[arg(long = "flag-family", value_enum)]
    pub flag_family: Option<FlagFamily>,
}

impl CompilerArgs {
    /// The compiler asked for: `--compiler`, else the recipe's default, else gcc.
    pub fn spec(&self, recipe: &Recipe) -> String {
        self.compiler
            .clone()
            .or_else(|| recipe.build.default_compiler.clone())
            .unwrap_or_else(|| "gcc".into())
    }

    pub fn find(&self, recipe: &Recipe) -> Result<Compiler> {
        Compiler::find(&self.spec(recipe), self.flag_family).refused()
    }
}

/// The configuration of the servers a command starts.
#[derive(Args, Clone, Debug)]
pub struct ServerConfigArgs {
    /// InnoDB buffer pool of every server the command starts (training, BOLT, gate, benchmark;
    /// cachegrind runs use 256).
    #[arg(long = "buffer-pool-mb", default_value_t = 2048)]
    pub buffer_pool_mb: u64,
    /// InnoDB redo log of every server it starts, MiB (half the buffer pool where that is more;
    /// MyRocks: its WAL's limit). Every benchmark round restores each server's datadir, redo log
    /// included: a small machine or a quick look may want it smaller.
    #[arg(
        long = "redo-log-mb",
        default_value_t = ServerConfig::default().redo_log_mb,
        value_parser = clap::value_parser!(u64).range(8..=1_048_576)
    )]
    pub redo_log_mb: u64,
    /// Extra my.cnf lines for every server, NAME=VALUE (repeatable).
    #[arg(long = "set", value_name = "NAME=VALUE", value_parser = server_option)]
    pub set: Vec<String>,
}

/// The benchmark's buffer-pool sweep (`bench` and `run`).
#[derive(Args, Clone, Debug, Default)]
pub struct SweepArgs {
    /// Sweep the buffer pool: run every contender at each size (MiB, comma-separated), with the
    /// same pairing and statistics, each size's contenders compared with that size's baseline;
    /// the report draws the gain against threads, one line per size. The A/A control runs at the
    /// first size only. In a run, training, BOLT and the gate keep --buffer-pool-mb.
    #[arg(
        id = "sweep_buffer_pool_mb",
        long = "sweep-buffer-pool-mb",
        value_name = "MiB,...",
        value_delimiter = ',',
        value_parser = clap::value_parser!(u64).range(5..=16_777_216)
    )]
    pub buffer_pool_mb: Vec<u64>,
}

/// A `--set NAME=VALUE` server option: it becomes one my.cnf line, so the name is an option
/// name and neither part may break the line (a newline would add lines or sections).
pub fn server_option(s: &str) -> Result<String, String> {
    let Some((name, value)) = s.split_once('=') else {
        return Err(format!(
            "'{s}' is not NAME=VALUE (e.g. --set innodb_flush_log_at_trx_commit=2)"
        ));
    };
    let name_ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !name_ok {
        return Err(format!(
            "'{name}' is not a server option name (letters, digits, '_', '-', '.')"
        ));
    }
    if value.chars().any(|c| c.is_control()) {
        return Err(format!(
            "the value of {name} contains a control character (a newline would add my.cnf lines)"
        ));
    }
    Ok(s.to_string())
}

impl ServerConfigArgs {
    pub fn config(&self) -> ServerConfig {
        ServerConfig {
            buffer_pool_mb: self.buffer_pool_mb,
            redo_log_mb: self.redo_log_mb,
            extra: self.set.clone(),
            ..ServerConfig::default()
        }
    }
}

/// The cap of adaptive rounds when --target-ci comes without --max-rounds.
const DEFAULT_MAX_ROUNDS: u32 = 30;

/// What a benchmark measures; unset values come from the standard (or --quick) specification.
#[derive(Args, Clone, Debug, Default)]
pub struct BenchSpecArgs {
    /// Benchmark workloads, comma-separated [point_select, read_only, read_write, tpcc,
    /// select_random_ranges (held out of the default training); --quick: the first two; --matrix:
    /// the first four]; tpcc runs sysbench-tpcc on one warehouse beside the OLTP tables.
    #[arg(long, value_delimiter = ',', value_parser = parse_bench_workload)]
    pub workloads: Vec<TestName>,
    /// Benchmark client threads, comma-separated, or auto: chosen per workload before the first
    /// round, climbing from 4 until the server's vCPU is saturated and the cell runs below half of
    /// what its connections can send at the measured round trip [auto; --matrix 1,4,16,64].
    #[arg(long, value_delimiter = ',', value_name = "N,...|auto", value_parser = parse_threads)]
    pub threads: Vec<Threads>,
    /// Benchmark rounds; every variant runs once per round, orders balanced across rounds [as many
    /// as the exact paired test needs over the run's comparisons, at least 6: 8 for 2 variants × 3
    /// workloads, 9 for 3 × 3].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub rounds: Option<u32>,
    /// Seconds per measured benchmark run [20; --quick 10].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    pub time: Option<u64>,
    /// Seconds of warm-up before each measured run [5; --quick 3].
    #[arg(long, value_parser = clap::value_parser!(u64).range(0..=3_600))]
    pub warmup: Option<u64>,
    /// Tables of the benchmark dataset [4; --quick 2].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub tables: Option<u32>,
    /// Rows per table of the benchmark dataset [100000; --quick 20000].
    #[arg(long = "table-size", value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    pub table_size: Option<u64>,
    /// Warehouses of the tpcc dataset (sysbench-tpcc's --scale) [1]; each is about 120 MB.
    #[arg(long = "tpcc-scale", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub tpcc_scale: Option<u32>,
    /// Copies of the tpcc schema, each with its warehouses (sysbench-tpcc's --tables) [1].
    #[arg(long = "tpcc-tables", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub tpcc_tables: Option<u32>,
    /// Adaptive rounds: after the planned rounds, add one round at a time until every
    /// comparison's 95 % interval is within ± PCT percent (the rule looks at widths only, never
    /// at the sign of an effect), or --max-rounds, or --budget-minutes.
    #[arg(long = "target-ci", value_name = "PCT")]
    pub target_ci: Option<f64>,
    /// With --target-ci: the most rounds [30].
    #[arg(long = "max-rounds", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub max_rounds: Option<u32>,
    /// With --target-ci: add no round that would end after this many minutes of benchmarking.
    #[arg(long = "budget-minutes", value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub budget_minutes: Option<u64>,
    /// The benchmark design: every contender's server up at once each round, the client
    /// alternating between them every SECONDS (a round's slices averaged, so pairing stays by
    /// round and each round still restarts the servers on fresh copies) — seconds-scale noise
    /// then hits all contenders alike: on a noisy host 4x less scatter per round than the plain
    /// design in equal time (docs/bench/trust.md). 0: the plain design, one contender after the
    /// other. Needs memory for every contender's buffer pool at once; where it does not fit, the
    /// benchmark says so and runs plain [2, or --time when shorter].
    #[arg(long = "slice", value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(0..=86_400))]
    pub slice: Option<u64>,
    /// How the benchmark client connects: socket (the server's Unix socket) or tcp (to
    /// 127.0.0.1: what a client on another host has to use, so runs to be compared with such
    /// runs take it too) [socket]. Every run's round-trip time is measured before it either way.
    #[arg(long, value_name = "socket|tcp", value_parser = |s: &str| s.parse::<pgoforge::bench::network::Transport>())]
    pub transport: Option<pgoforge::bench::network::Transport>,
    /// Run the benchmark client on another host, over ssh ([user@]host; ~/.ssh/config applies;
    /// a key or an agent, no password prompt): pgoforge copies itself there for the benchmark and
    /// removes itself after. The servers stay here, listening on 127.0.0.1 and on the one address
    /// the client reaches; the benchmark user is let in from the client's address only. The
    /// transport is TCP (compare with local runs made with --transport tcp).
    #[arg(long = "client-host", value_name = "[USER@]HOST")]
    pub client_host: Option<String>,
    /// An ssh config file for --client-host and --build-host (`ssh -F FILE`) [ssh's own].
    #[arg(long = "ssh-config", value_name = "FILE")]
    pub ssh_config: Option<std::path::PathBuf>,
    /// The replay workload's file (`--workloads …,replay`; a training phase `replay`): a general or
    /// slow query log (long_query_time=0) or SQL, replayed per original connection.
    #[arg(long = "replay-file", value_name = "FILE")]
    pub replay_file: Option<std::path::PathBuf>,
    /// The replay file's kind: auto, general, slow or sql.
    #[arg(long = "replay-format", default_value = "auto")]
    pub replay_format: oltp::replay::Format,
    /// A SQL file (e.g. a mysqldump) loaded into the dataset template: the data the replayed
    /// statements run against (each run starts from a fresh copy, so writes never accumulate).
    #[arg(long = "replay-dataset", value_name = "FILE")]
    pub replay_dataset: Option<std::path::PathBuf>,
    /// A stopped server's datadir holding the replay's data instead of a dump: copied into the
    /// dataset template (the OLTP tables are added to the copy), never written. The copy gets
    /// pgoforge's own accounts; the datadir's users and passwords need not be known.
    #[arg(
        long = "replay-datadir",
        value_name = "DIR",
        conflicts_with = "replay_dataset"
    )]
    pub replay_datadir: Option<std::path::PathBuf>,
}

/// One value of `--threads`: a count, or `auto`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Threads {
    Count(u32),
    Auto,
}

fn parse_threads(s: &str) -> Result<Threads, String> {
    if s == "auto" {
        return Ok(Threads::Auto);
    }
    match s.parse::<u32>() {
        Ok(n) if (1..=4096).contains(&n) => Ok(Threads::Count(n)),
        _ => Err(format!(
            "'{s}': a client thread count from 1 to 4096, or auto (chosen per workload)"
        )),
    }
}

impl BenchSpecArgs {
    /// The thread counts given, if any (`auto`, or nothing: none).
    fn counts(&self) -> Option<Vec<u32>> {
        let c: Vec<u32> = self
            .threads
            .iter()
            .filter_map(|t| match t {
                Threads::Count(n) => Some(*n),
                Threads::Auto => None,
            })
            .collect();
        (!c.is_empty()).then_some(c)
    }

    /// `auto` is a value of its own: mixed with counts, a usage error.
    fn check_threads(&self) {
        if self.threads.contains(&Threads::Auto) && self.threads.len() > 1 {
            super::usage_error(
                "--threads auto chooses one count per workload: give auto alone, or the counts",
            );
        }
    }

    /// Whether --rounds was given (otherwise the rounds follow the comparisons).
    pub fn rounds_given(&self) -> bool {
        self.rounds.is_some()
    }

    pub fn spec(&self, quick: bool) -> BenchSpec {
        self.spec_over(if quick {
            BenchSpec::quick()
        } else {
            BenchSpec::standard()
        })
    }

    /// The given values over the defaults `d`.
    pub fn spec_over(&self, d: BenchSpec) -> BenchSpec {
        self.check_threads();
        BenchSpec {
            workloads: if self.workloads.is_empty() {
                d.workloads
            } else {
                self.workloads.clone()
            },
            threads: match self.counts() {
                Some(c) => c,
                None => d.threads.clone(),
            },
            saturate: match self.counts() {
                Some(_) => false,
                None => d.saturate || !self.threads.is_empty(),
            },
            chosen_threads: Vec::new(),
            rounds: self.rounds.unwrap_or(d.rounds),
            seconds: self.time.unwrap_or(d.seconds),
            warmup_seconds: self.warmup.unwrap_or(d.warmup_seconds),
            tables: self.tables.unwrap_or(d.tables),
            table_size: self.table_size.unwrap_or(d.table_size),
            tpcc: pgoforge::server::template::TpccSize {
                scale: self.tpcc_scale.unwrap_or(d.tpcc.scale),
                tables: self.tpcc_tables.unwrap_or(d.tpcc.tables),
            },
            target_ci_pct: self.target_ci,
            max_rounds: self.max_rounds.or(self
                .target_ci
                .map(|_| DEFAULT_MAX_ROUNDS.max(self.rounds.unwrap_or(0)))),
            budget_minutes: self.budget_minutes,
            replay: self.replay(),
            slice_seconds: match self.slice {
                Some(0) => None,
                Some(s) => Some(s),
                // The default slice never exceeds a short --time (one slice per run then).
                None => d
                    .slice_seconds
                    .map(|s| s.min(self.time.unwrap_or(d.seconds))),
            },
            transport: self.transport_for_client(d.transport),
            client_host: self.client_host.as_ref().map(|h| {
                pgoforge::bench::remote::ClientHost::parse(h, self.ssh_config.clone())
                    .unwrap_or_else(|e| super::usage_error(e))
            }),
        }
    }

    /// `--ssh-config` says how to reach the client host or the build hosts: alone it is a
    /// mistake (it used to be refused by the parser when only --client-host took it).
    pub fn check_ssh_config(&self, build_hosts: bool) {
        if self.ssh_config.is_some() && self.client_host.is_none() && !build_hosts {
            super::usage_error(
                "--ssh-config is for --client-host or --build-host: give one of them, or leave it out",
            );
        }
    }

    /// A client on another host reaches the servers over TCP; asking for the socket with it is a
    /// contradiction, refused.
    fn transport_for_client(
        &self,
        default: pgoforge::bench::network::Transport,
    ) -> pgoforge::bench::network::Transport {
        use pgoforge::bench::network::Transport;
        match (self.client_host.is_some(), self.transport) {
            (true, Some(Transport::Socket)) => super::usage_error(
                "--client-host reaches the servers over TCP: leave out --transport socket",
            ),
            (true, _) => Transport::Tcp,
            (false, t) => t.unwrap_or(default),
        }
    }

    /// The replay file with its digests, checked now (a file that does not parse is a usage
    /// error, exit status 2, before anything runs).
    fn replay(&self) -> Option<pgoforge::server::template::Replay> {
        if (self.replay_dataset.is_some() || self.replay_datadir.is_some())
            && self.replay_file.is_none()
        {
            super::usage_error(
                "--replay-dataset and --replay-datadir hold the data of a replay: give --replay-file too",
            );
        }
        let file = self.replay_file.clone()?;
        let options = oltp::replay::ReplayOptions {
            file,
            format: self.replay_format,
            dataset: self.replay_dataset.clone(),
            datadir: self.replay_datadir.clone(),
        };
        Some(
            pgoforge::server::template::Replay::new(options)
                .unwrap_or_else(|e| super::usage_error(format!("--replay-file: {e:#}"))),
        )
    }
}

/// The training mix.
#[derive(Args, Clone, Debug)]
pub struct MixArgs {
    /// Training phases: test[@text][:seconds[:threads]], comma-separated.
    #[arg(long)]
    pub mix: Option<String>,
    /// Tables of the training dataset.
    #[arg(long = "train-tables", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub train_tables: Option<u32>,
    /// Rows per table of the training dataset.
    #[arg(long = "train-table-size", value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    pub train_table_size: Option<u64>,
}

impl MixArgs {
    /// The mix, or why `--mix` does not parse.
    pub fn mix(&self, quick: bool) -> Result<Mix, String> {
        let mut m = if quick { Mix::quick() } else { Mix::standard() };
        if let Some(spec) = &self.mix {
            m.phases = spec.parse::<Phases>().map_err(|e| format!("--mix: {e}"))?.0;
        }
        if let Some(t) = self.train_tables {
            m.tables = t;
        }
        if let Some(n) = self.train_table_size {
            m.table_size = n;
        }
        if m.phases.is_empty() {
            return Err("--mix has no phases".into());
        }
        Ok(m)
    }

    /// The mix to train on when no `--train-mix` names one: `--mix` as given, the quick mix, or
    /// else the default union of the OLTP mix and tpcc ([`DEFAULT_MIX`]).
    pub fn default_named(&self, quick: bool) -> Result<NamedMix, String> {
        let base = self.mix(quick)?;
        if quick || self.mix.is_some() {
            return Ok(NamedMix {
                name: "oltp".into(),
                mix: base,
            });
        }
        NamedMix::parse(DEFAULT_MIX, &base)
    }
}

/// The training mix of `train` and `bolt`: `--mix`, `--quick`, and the dataset's size under both
/// the names `run` uses and the shorter ones these commands took first.
#[derive(Args, Clone, Debug)]
pub struct TrainingArgs {
    #[command(flatten)]
    pub mix: MixArgs,
    /// Same as --train-tables.
    #[arg(long, hide = true, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub tables: Option<u32>,
    /// Same as --train-table-size.
    #[arg(long = "table-size", hide = true, value_parser = clap::value_parser!(u64).range(1..=1_000_000_000))]
    pub table_size: Option<u64>,
    /// A short mix (about half a minute) for a first look.
    #[arg(long)]
    pub quick: bool,
    /// A server that prepares the dataset once, kept as a template every profiling run starts
    /// on a copy of (what `pgoforge run` does with its baseline); by default the profiled server
    /// prepares the tables itself, which an instrumented server is slow at.
    #[arg(long = "dataset-from")]
    pub dataset_from: Option<std::path::PathBuf>,
}

impl TrainingArgs {
    /// `--dataset-from`, checked to name a file.
    pub fn dataset_from(&self) -> anyhow::Result<Option<std::path::PathBuf>> {
        self.dataset_from
            .as_ref()
            .map(|p| {
                std::fs::canonicalize(p).map_err(|e| {
                    anyhow::anyhow!(
                        "--dataset-from {}: {e}; give the path of a server binary (the baseline build's)",
                        p.display()
                    )
                })
            })
            .transpose()
            .refused()
    }

    /// The mix to train on: `--mix`, the quick mix, or the default union ([`DEFAULT_MIX`]).
    pub fn mix(&self) -> Result<Mix, String> {
        Ok(MixArgs {
            train_tables: self.mix.train_tables.or(self.tables),
            train_table_size: self.mix.train_table_size.or(self.table_size),
            ..self.mix.clone()
        }
        .default_named(self.quick)?
        .mix)
    }
}

/// Splits a space-separated flag list (`--bolt-flags`).
pub fn words(s: &Option<String>) -> Option<Vec<String>> {
    s.as_ref()
        .map(|f| f.split_whitespace().map(str::to_string).collect())
}

/// What a benchmark does on a busy machine.
#[derive(Args, Clone, Debug)]
pub struct GuardArgs {
    /// Benchmark even while other processes use the CPU (a build, a test suite); the report
    /// still flags every disturbed run. By default a benchmark waits up to --busy-wait seconds
    /// for quiet before each round, then stops.
    #[arg(long = "allow-busy")]
    pub allow_busy: bool,
    /// Benchmark even on a host whose per-second throughput is erratic (by default the first
    /// run of an OLTP workload whose per-second TPS varies more than 8 % stops the benchmark,
    /// exit status 5; what was measured is kept, and the same command with this flag resumes).
    #[arg(long = "allow-noisy")]
    pub allow_noisy: bool,
    /// Seconds to wait for a busy machine to calm down before a round.
    #[arg(long = "busy-wait", default_value_t = 600)]
    pub busy_wait: u64,
    /// Refuse, before anything runs (exit 2), a benchmark the plan estimates at more than this
    /// many hours: a sweep or a round count typed one order too large would otherwise occupy
    /// the machine for days.
    #[arg(long = "max-bench-hours", value_name = "HOURS", default_value_t = 24.0, value_parser = positive_hours)]
    pub max_bench_hours: f64,
}

fn positive_hours(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(h) if h > 0.0 && h.is_finite() => Ok(h),
        _ => Err(format!("'{s}' is not a positive number of hours")),
    }
}

impl GuardArgs {
    /// Why a benchmark estimated at `seconds` may not start, if it may not.
    pub fn too_long(&self, seconds: u64) -> Option<String> {
        pgoforge::pipeline::plan::choices::too_long(self.max_bench_hours, seconds)
    }

    pub fn guard(&self) -> Guard {
        Guard {
            allow_busy: self.allow_busy,
            allow_noisy: self.allow_noisy,
            patience: std::time::Duration::from_secs(self.busy_wait),
        }
    }
}

/// Where a benchmark's results go, and whether to continue the one already there.
#[derive(Args, Clone, Debug)]
pub struct RunDirArgs {
    /// The run directory [WORK/runs/<command>-<time>].
    #[arg(long)]
    pub run: Option<PathBuf>,
    /// Continue an interrupted benchmark in --run (a finished one is analysed again).
    #[arg(long)]
    pub resume: bool,
}

impl RunDirArgs {
    /// --run, or a new WORK/runs/PREFIX-TIME; with --resume it must exist.
    pub fn dir(&self, work: &Path, prefix: &str) -> anyhow::Result<PathBuf> {
        let dir = self.run.clone().unwrap_or_else(|| {
            work.join("runs")
                .join(format!("{prefix}-{}", pgoforge::infra::time::now_secs()))
        });
        // Absolute, because the servers' my.cnf names paths inside it and mysqld resolves a
        // relative one against its datadir, not against our working directory.
        let dir =
            std::path::absolute(&dir).with_context(|| format!("the run dir {}", dir.display()))?;
        if self.resume && !dir.is_dir() {
            pgoforge::usage!(
                "--resume: {} does not exist, so there is nothing to continue; give the --run \
                 of an interrupted benchmark, or drop --resume to start a new one",
                dir.display()
            );
        }
        Ok(dir)
    }
}

/// A server given on the command line as NAME=PATH.
pub fn contender(s: &str) -> Result<Contender, String> {
    let (n, p) = s
        .split_once('=')
        .ok_or_else(|| format!("'{s}' is not NAME=PATH"))?;
    if n.is_empty() || n.contains(['/', ' ']) {
        return Err(format!("'{n}' is not a usable name (no spaces or slashes)"));
    }
    if p.is_empty() {
        return Err(format!("'{s}' names no binary: give NAME=PATH to a server"));
    }
    // Absolute for the same reason as the run dir: the server's message directory is found next
    // to the binary and written into a my.cnf that mysqld reads from its datadir.
    let binary = std::path::absolute(p).map_err(|e| format!("'{p}': {e}"))?;
    Ok(Contender {
        name: n.into(),
        binary,
        buffer_pool_mb: None,
    })
}

/// `--min-effect PCT` as a fraction: a percentage from 0 to 100.
pub fn parse_min_effect(s: &str) -> Result<f64, String> {
    match s.trim_end_matches('%').parse::<f64>() {
        Ok(p) if (0.0..100.0).contains(&p) => Ok(p / 100.0),
        _ => Err(format!(
            "'{s}': give the smallest change that counts in percent, from 0 (any significant change) to below 100, e.g. 1 or 0.5"
        )),
    }
}

/// `--margin PCT` as a fraction: above 0, below 50.
pub fn parse_margin(s: &str) -> Result<f64, String> {
    match s.trim_end_matches('%').parse::<f64>() {
        Ok(p) if p > 0.0 && p < 50.0 => Ok(p / 100.0),
        _ => Err(format!(
            "'{s}': give the non-inferiority margin in percent, above 0 and below 50, e.g. 3 (\"not slower than -3%\")"
        )),
    }
}

/// A benchmark workload (`replay` with `--replay-file`).
fn parse_bench_workload(s: &str) -> Result<TestName, String> {
    s.parse()
}

/// Build hosts (`--build-host`).
#[derive(Args)]
pub struct BuildHostArgs {
    /// Build variants on another host too, over ssh ([user@]host, repeatable; ~/.ssh/config
    /// applies; a key or an agent, no password prompt). Its toolchain must be this host's,
    /// package for package (checked; another host is refused); the source and profile go there
    /// at the same paths as here (the work dir's path must be creatable there), pgoforge copies
    /// itself there for the build, and the build comes back without its objects. The baseline
    /// and instrumented builds stay here. A host that fails is reported and the build made here.
    #[arg(long = "build-host", value_name = "[USER@]HOST")]
    pub build_host: Vec<String>,
}

impl BuildHostArgs {
    pub fn hosts(
        &self,
        ssh_config: Option<&std::path::Path>,
    ) -> Vec<pgoforge::infra::ssh::SshTarget> {
        self.build_host
            .iter()
            .map(|h| {
                pgoforge::infra::ssh::SshTarget::parse(
                    "--build-host",
                    h,
                    ssh_config.map(std::path::Path::to_path_buf),
                )
                .unwrap_or_else(|e| super::usage_error(e))
            })
            .collect()
    }
}
