//! `pgoforge run`: the whole pipeline.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Result};
use clap::Args;
use pgoforge::bench::report;
use pgoforge::bench::spec::BenchSpec;
use pgoforge::builder::Variant;
use pgoforge::events::Reporter;
use pgoforge::gate::GateMode;
use pgoforge::infra::time::human;
use pgoforge::pipeline::plan::choices;
use pgoforge::pipeline::{self, deps, BaselineFrom, Env, Outcome, RunPlan, RunRequest};
use pgoforge::profile::train::{Mix, NamedMix};
use pgoforge::recipe::Recipe;
use pgoforge::server::config::Engine;

use super::args::{
    contender, words, BenchSpecArgs, BuildHostArgs, CompilerArgs, GuardArgs, MixArgs,
    ServerConfigArgs, SourceArgs, WorkDirArgs,
};

#[derive(Args)]
pub struct RunArgs {
    #[command(flatten)]
    source: SourceArgs,
    #[command(flatten)]
    compiler: CompilerArgs,
    /// Variants compared with the baseline, comma-separated [default: pgo+lto+bolt — three builds
    /// (baseline, pgo-gen, a bolt-ready pgo+lto) and three contenders: baseline, pgo+lto (the
    /// bolt-ready build as linked) and pgo+lto+bolt]. A +bolt variant is built bolt-ready once and
    /// serves two contenders: X (unBOLTed) and X+bolt. +O3, a CPU level (+x86-64, +v2, +v3, +v4,
    /// +march-native) and +native (-O3 -march=native) change the code generation; a variant with
    /// a profile and its own code generation trains its own instrumented build (pgo-gen+v3: the
    /// same flags, so GCC keeps every function's profile) — one more build and training. MariaDB
    /// 10.11 here: ~14 min per build on an idle 2-core machine; MySQL 9.7: about an hour.
    #[arg(long, value_delimiter = ',')]
    variants: Vec<Variant>,
    /// Compile every build of the run (the baseline too) for this CPU level: x86-64, x86-64-v2,
    /// x86-64-v3, x86-64-v4 (or v2, v3, v4), native. The variants take it into their names
    /// (pgo+lto+v3); the package records it, and its checks (`package verify`, the .deb's
    /// preinst, the systemd unit) refuse a CPU that lacks it [the compiler's default, x86-64:
    /// every amd64 machine Debian runs on].
    #[arg(long, value_name = "LEVEL")]
    cpu_level: Option<pgoforge::builder::codegen::CpuLevel>,
    /// Short training and benchmark, one variant (pgo): the cheapest useful look, three builds
    /// and no BOLT.
    #[arg(long, conflicts_with = "matrix")]
    quick: bool,
    /// The full evaluation: every standard workload (oltp_read_only and tpcc beside the default
    /// benchmark's point_select, read_write and held-out select_random_ranges), runs of 20 s
    /// after 5 s, and the bolt-ready build compared unBOLTed too (pgo+lto: BOLT's own share)
    /// [the default benchmark: those three workloads, 6-s runs after 3 s, about 20 minutes on 2
    /// cores; the full one about two hours].
    #[arg(long, conflicts_with_all = ["quick", "matrix"])]
    full: bool,
    /// The engine of the benchmark's tables: innodb, or rocksdb (MyRocks: every build of the
    /// run also builds its plugin, about 8 min more each on 2 cores; Debian's server is compared
    /// with Debian's plugin of the same release) [innodb].
    #[arg(long, default_value = "innodb", value_parser = super::bench::parse_engine)]
    engine: Engine,
    /// The engine of the training's tables, comma-separated; two make a train × evaluate
    /// matrix whose mixes are named MIX-ENGINE (an InnoDB-trained profile measured on MyRocks
    /// beside a MyRocks-trained one: --engine rocksdb --train-engine innodb,rocksdb) [--engine].
    #[arg(long = "train-engine", value_delimiter = ',', value_parser = super::bench::parse_engine)]
    train_engine: Vec<Engine>,
    /// The train × evaluate matrix: one build per training mix [--variants pgo+lto, --train-mix
    /// oltp, tpcc and oltp+tpcc; with --replay-file also replay and oltp+tpcc+replay], each
    /// benchmarked against the baseline on every workload [the standard four, and replay with
    /// --replay-file] at 1, 4, 16 and 64 client threads [--time 5 --warmup 2]; the report adds a
    /// table of gains by mix, workload and threads, and flags every significantly slower cell.
    #[arg(long)]
    matrix: bool,
    /// A training mix (repeatable; several make a train × evaluate matrix, each contender named
    /// VARIANT@MIX): oltp (the standard mix, or --mix), tpcc (sysbench-tpcc for 300 s), replay
    /// (--replay-file for 300 s), a union such as oltp+tpcc (their phases one after the other),
    /// or NAME=PHASES (test[@text][:seconds[:threads]], comma-separated) [oltp+tpcc, about ten
    /// minutes; oltp alone with --mix or --quick].
    #[arg(long = "train-mix", value_name = "MIX")]
    train_mix: Vec<String>,
    /// Build X separately when X and X+bolt are both listed (instead of X being the bolt-ready
    /// build unBOLTed); the bolt-ready build is then compared unBOLTed too, as X-prebolt, which
    /// shows what bolt-readiness costs.
    #[arg(long = "separate-bolt-builds")]
    separate_bolt_builds: bool,
    /// Also compare a server this run does not build, NAME=PATH (repeatable; e.g.
    /// debian=/usr/sbin/mariadbd): gated and benchmarked with the variants, never packaged.
    #[arg(long = "binary", value_parser = contender)]
    binaries: Vec<pgoforge::bench::plan::Contender>,
    #[command(flatten)]
    sweep: super::args::SweepArgs,
    /// Leave out Debian's own server of the built release. By default a run of a Debian recipe
    /// of this machine's distribution downloads it (the binary package, e.g. mariadb-server-core
    /// at the built version, unpacked into the work dir; nothing installed) and benchmarks it as
    /// `debian` beside the variants: the report's first table is the winner against it, its gain
    /// over the baseline beside. One more contender's share of the benchmark (a train × evaluate
    /// matrix leaves it out: it compares training mixes).
    #[arg(long)]
    no_distro: bool,
    /// What the variants are compared with: `build`, the recipe's plain build of the release;
    /// or `debian`, Debian's own server of the release (downloaded, nothing installed) — no
    /// baseline build: it is the gate's and MTR's reference (MTR's tools are then built in the
    /// first optimized build's tree), prepares the datasets and serves the A/A control. One build
    /// less; `pgoforge follow` runs this way, since its question is Debian's server anyway
    #[arg(long, value_enum, default_value_t = BaselineFrom::Build)]
    baseline: BaselineFrom,
    #[command(flatten)]
    work: WorkDirArgs,
    /// Install missing dependencies with apt (as root, or through sudo).
    #[arg(long = "install-deps")]
    install_deps: bool,
    /// Use this trained profile (a gcda directory or .profdata) instead of training pgo-gen.
    #[arg(long, conflicts_with = "profile_from")]
    profile: Option<PathBuf>,
    /// Take the profiles of an earlier build instead of training: a package (NAME.tar.zst, its
    /// NAME.rebuild.tar.zst beside it), the sidecar itself, or a finished run's work dir (its
    /// package, or the one `pgoforge package` made there when the run had no winner). One
    /// optimized build (and BOLT with its BOLT profile) instead of three builds and two
    /// trainings — for the next release of the same server. Refused before any build when its
    /// compiler is not this run's (family and major).
    #[arg(long, value_name = "PACKAGE|SIDECAR|WORK_DIR")]
    profile_from: Option<PathBuf>,
    /// With --profile-from: the share of the profile's functions with counts whose code changed
    /// so much that the compiler dropped their counts, in percent, at which the run warns (or,
    /// with --retrain-if-stale, retrains); 0: always [10]
    #[arg(long, value_name = "PCT", requires = "profile_from", value_parser = percent)]
    stale_threshold: Option<f64>,
    /// With --profile-from: when the optimized build shows the profile stale at the threshold,
    /// stop there and run the full training instead (instrumented build, training, build) —
    /// the source and baseline already built are reused.
    #[arg(long, requires = "profile_from")]
    retrain_if_stale: bool,
    #[command(flatten)]
    mix: MixArgs,
    #[command(flatten)]
    bench: BenchSpecArgs,
    #[command(flatten)]
    build_hosts: BuildHostArgs,
    #[command(flatten)]
    server: ServerConfigArgs,
    #[command(flatten)]
    guard: GuardArgs,
    /// How much the correctness gate checks: quick (a seeded write workload, CHECKSUM TABLE),
    /// mtr (quick, then the recipe's subset of the server's own regression tests, a few minutes
    /// per binary), full (quick, then the recipe's whole MTR suites: hours) [mtr when the recipe
    /// names MTR tests, else quick].
    #[arg(long, value_parser = |s: &str| s.parse::<GateMode>())]
    gate: Option<GateMode>,
    /// MTR tests instead of the recipe's subset, comma-separated suite.test names (e.g.
    /// main.ps,innodb.foreign_key).
    #[arg(long = "mtr-suite", value_delimiter = ',')]
    mtr_suite: Option<Vec<String>>,
    /// BOLT optimization flags instead of the probed ones, space-separated.
    #[arg(long = "bolt-flags")]
    bolt_flags: Option<String>,
    /// Also measure each variant under valgrind's cachegrind: instructions, I1 misses and
    /// mispredicted branches per transaction (deterministic; adds minutes per variant and workload).
    #[arg(long)]
    cachegrind: bool,
    /// Package a variant even if it is significantly slower than the baseline on a held-out
    /// workload (one its profile was not trained on, such as tpcc); the report still names it.
    #[arg(long = "allow-regression")]
    allow_regression: bool,
    /// The smallest change, in percent, that counts as faster or slower [2]: a significant change
    /// below it is reported as below the minimum, not as a finding. A decision policy: stored
    /// with the run, changeable later with `pgoforge report --min-effect`.
    #[arg(long = "min-effect", value_name = "PCT", value_parser = super::args::parse_min_effect)]
    min_effect: Option<f64>,
    /// The non-inferiority margin, in percent, on held-out workloads [3]: a variant is packaged
    /// only when the benchmark shows it not slower than minus this there (one-sided bound at
    /// 5%). A decision policy, stored like --min-effect.
    #[arg(long, value_name = "PCT", value_parser = super::args::parse_margin)]
    margin: Option<f64>,
    /// Serve the baseline again as an A/A control in the benchmark (`baseline-again`,
    /// interleaved like every contender, never chosen, outside Holm's family): the report states
    /// this run's own noise and the smallest change it could detect [on, except with --matrix,
    /// where a fifth contender doubles the Williams blocks — about 1 h 44 min to 3 h 37 min of
    /// benchmark; its report pools the comparisons' own scatter instead]. Costs one
    /// contender's share of the benchmark; --no-aa leaves it out.
    #[arg(long, overrides_with = "no_aa")]
    aa: bool,
    /// Benchmark with --rounds too few for the exact test to show anything at the run's level:
    /// a smoke run of the pipeline (refused otherwise, before any build).
    #[arg(long)]
    allow_few_rounds: bool,
    /// No A/A control in the benchmark.
    #[arg(long = "no-aa")]
    no_aa: bool,
    /// The seed of the benchmark's round orders, to replay a run's design [a fresh one per run,
    /// kept across reruns].
    #[arg(long)]
    seed: Option<u64>,
    /// Do not package the winning variant.
    #[arg(long = "no-package")]
    no_package: bool,
    /// Print the resolved plan (builds, contenders, stages) as JSON and stop: nothing is fetched,
    /// built or installed.
    #[arg(long)]
    plan: bool,
    /// Print the outcome as JSON (progress events go to stderr as JSON lines).
    #[arg(long)]
    json: bool,
}

/// What `run` says on Ctrl-C (or SIGTERM) before it dies of the signal: unfinished stages were
/// never recorded, so a rerun redoes exactly those.
const INTERRUPTED: &str = "\npgoforge run: interrupted. Finished stages are kept (run-state.json, \
finished builds, benchmark rounds already written); rerun the same command to continue.\n";

/// The mixes of `--train-mix` (or of `--matrix`), parsed; the default
/// ([`MixArgs::default_named`]) when none is given.
fn training_mixes(a: &RunArgs, oltp: &Mix) -> Result<Vec<NamedMix>, String> {
    let Some(names) = choices::mix_names(&a.train_mix, a.matrix, oltp.replay.is_some()) else {
        let mut m = a.mix.default_named(a.quick)?;
        m.mix.replay = oltp.replay.clone();
        return Ok(vec![m]);
    };
    names
        .iter()
        .map(|n| NamedMix::parse(n, oltp).map_err(|e| format!("--train-mix: {e}")))
        .collect()
}

/// Installs (or names) what the run needs and this machine lacks.
fn ensure_deps(
    a: &RunArgs,
    recipe: &Recipe,
    plan_needs_bolt: bool,
    reporter: &dyn Reporter,
) -> Result<()> {
    let check = deps::check(recipe, &a.compiler.spec(recipe), plan_needs_bolt);
    if !check.unchecked.is_empty() {
        reporter.message(
            "deps",
            &format!(
                "cannot check packages on this system (no dpkg-query): {}; CMake will name what is missing",
                check.unchecked.join(" ")
            ),
        );
    }
    if check.missing.is_empty() {
        return Ok(());
    }
    let what: Vec<String> = check.missing.iter().map(|m| m.what.clone()).collect();
    if !a.install_deps {
        bail!(
            "missing dependencies: {}\ninstall them with:\n  sudo {}\nor rerun with --install-deps",
            what.join(", "),
            check.command()
        );
    }
    reporter.message(
        "deps",
        &format!(
            "missing: {}; installing with apt: {}",
            what.join(", "),
            check.packages().join(" ")
        ),
    );
    deps::install(&check)
}

/// Debian's server of the built release, unless left out, the run is a matrix (its question is
/// the training mix, and a fifth contender doubles its Williams blocks), the source is the
/// user's, or a `--binary debian=…` names it already.
fn distro(
    a: &RunArgs,
    recipe: &pgoforge::recipe::Recipe,
) -> Option<pgoforge::source::distro::DistroServer> {
    let named = a
        .binaries
        .iter()
        .any(|b| b.name == pgoforge::source::distro::NAME);
    if a.no_distro || a.matrix || a.source.source.is_some() || named {
        return None;
    }
    let mut d = pgoforge::source::distro::DistroServer::of_recipe(recipe)?;
    // On a plugin engine Debian's server is compared with Debian's plugin of the same release.
    if let Some(package) = recipe
        .engines
        .get(a.engine.name())
        .and_then(|e| e.debian_package.clone())
        .filter(|_| !a.engine.is_innodb())
    {
        d.with.push(package);
    }
    Some(d)
}

/// The benchmark: the default's, --quick's, --full's or the matrix's, with the flags over it.
fn bench_spec(a: &RunArgs) -> BenchSpec {
    let mut bench = a.bench.spec_over(if a.matrix {
        BenchSpec::matrix()
    } else if a.quick {
        BenchSpec::quick()
    } else if a.full {
        BenchSpec::standard()
    } else {
        BenchSpec::short()
    });
    if a.matrix && bench.replay.is_some() && a.bench.workloads.is_empty() {
        // A matrix evaluates on the file it was given as well.
        bench.workloads.push(oltp::settings::TestName::Replay);
    }
    bench
}

/// The recipe whose builds carry the plugin of an engine the run benchmarks or trains on
/// (refused, exit 2, when the recipe cannot build it).
fn with_engines(a: &RunArgs, recipe: Recipe) -> Recipe {
    let plugin = train_engines(a)
        .into_iter()
        .chain([a.engine])
        .find(|e| !e.is_innodb());
    match plugin {
        Some(e) => recipe
            .with_engine(e.name())
            .unwrap_or_else(|m| super::usage_error(format!("--engine {e}: {m}"))),
        None => recipe,
    }
}

/// The engines the training runs on: `--train-engine`, or the benchmark's.
fn train_engines(a: &RunArgs) -> Vec<Engine> {
    let mut v: Vec<Engine> = Vec::new();
    for &e in &a.train_engine {
        if !v.contains(&e) {
            v.push(e);
        }
    }
    if v.is_empty() {
        v.push(a.engine);
    }
    v
}

/// `--profile-from`: the earlier build's sidecar opened into WORK/reuse/ (a temporary directory
/// for `--plan`, which writes nothing), checked against this run's compiler.
fn profile_from(
    a: &RunArgs,
    compiler: &pgoforge::toolchain::Compiler,
    recipe: &pgoforge::recipe::Recipe,
    reporter: &dyn pgoforge::events::Reporter,
) -> Result<(
    Option<pgoforge::pipeline::profile_from::Reuse>,
    Option<tempfile::TempDir>,
)> {
    let Some(from) = &a.profile_from else {
        return Ok((None, None));
    };
    let (into, scratch) = if a.plan {
        let t = tempfile::Builder::new()
            .prefix("pgoforge-profile-from-")
            .tempdir()?;
        (t.path().join("sidecar"), Some(t))
    } else {
        (a.work.create()?.join("reuse"), None)
    };
    let r = pgoforge::pipeline::profile_from::resolve(from, &into, compiler, recipe)?;
    let p = &r.provenance;
    reporter.message(
        "profile",
        &format!(
            "from {} (built from {}, {}; trained on {}): no instrumented build, no training{}",
            p.package,
            p.source_origin,
            p.compiler,
            if p.training.is_empty() {
                "a mix not recorded".to_string()
            } else {
                p.training.join(", ")
            },
            if r.bolt_profile.is_some() {
                "; BOLT applies its BOLT profile"
            } else {
                ""
            }
        ),
    );
    Ok((Some(r), scratch))
}

pub fn main(a: RunArgs) -> Result<i32> {
    let t0 = Instant::now();
    a.bench
        .check_ssh_config(!a.build_hosts.build_host.is_empty());
    let variants = if a.variants.is_empty() {
        // Several training engines are a matrix too: one build per mix, which +bolt is not yet.
        choices::default_variants(a.quick, a.matrix || train_engines(&a).len() > 1, a.full)
    } else {
        a.variants.clone()
    };
    let bench = bench_spec(&a);
    let mut mix = a.mix.mix(a.quick).unwrap_or_else(|e| super::usage_error(e));
    mix.replay = bench.replay.clone();
    let mixes = choices::on_train_engines(
        training_mixes(&a, &mix).unwrap_or_else(|e| super::usage_error(e)),
        &train_engines(&a),
    );
    if let Err(e) = bench.check() {
        super::usage_error(e);
    }
    let reporter = super::reporter(a.json);
    let needs_bolt = variants.iter().any(|v| v.bolt_ready);
    let (recipe, source_release) = a.source.recipe()?;
    let recipe = with_engines(&a, recipe);
    say_compiler(&a, &recipe, reporter.as_ref());
    if !a.plan {
        ensure_deps(&a, &recipe, needs_bolt, reporter.as_ref())?;
    }
    let recipe_has_mtr = recipe.mtr.is_some();
    let compiler = a.compiler.find(&recipe)?;
    let distro = distro(&a, &recipe);
    let (mut reuse, _reuse_scratch) = profile_from(&a, &compiler, &recipe, reporter.as_ref())?;
    if let Some(r) = reuse.as_mut() {
        r.stale.threshold_pct = a.stale_threshold.unwrap_or(r.stale.threshold_pct);
        r.stale.retrain = a.retrain_if_stale;
    }
    let request = RunRequest {
        recipe,
        source: a.source.source.clone(),
        sha256: a.source.sha256.clone(),
        compiler,
        variants,
        cpu_level: a.cpu_level,
        profile: a
            .profile
            .clone()
            .or_else(|| reuse.as_ref().map(|r| r.compiler_profile.clone())),
        reuse,
        mixes,
        bench,
        server: pgoforge::server::ServerConfig {
            engine: a.engine,
            ..a.server.config()
        },
        bolt_flags: words(&a.bolt_flags),
        work_dir: a.work.work_dir.clone(),
        package: !a.no_package,
        seed: a.seed,
        cachegrind: a.cachegrind,
        separate_bolt_builds: a.separate_bolt_builds,
        sweep_buffer_pool_mb: a.sweep.buffer_pool_mb.clone(),
        outside: a.binaries.clone(),
        distro,
        guard: a.guard.guard(),
        allow_regression: a.allow_regression,
        min_effect: a.min_effect,
        margin: a.margin,
        // A matrix leaves it out unless asked: a fifth contender doubles its Williams blocks
        // (the plan's estimate: 6235 s without, 12990 s with); its report's noise line pools
        // the comparisons' own scatter instead.
        aa: a.aa || !(a.no_aa || a.matrix),
        auto_rounds: !a.bench.rounds_given(),
        allow_few_rounds: a.allow_few_rounds,
        gate: a.gate.unwrap_or(if recipe_has_mtr {
            GateMode::Mtr
        } else {
            GateMode::Quick
        }),
        mtr_tests: a.mtr_suite.clone(),
        baseline: a.baseline,
    };
    let mut plan = pipeline::resolve(request, &Env::probe())?;
    if let Some(e) = a.guard.too_long(plan.bench_estimate_seconds) {
        super::usage_error(e);
    }
    plan.share_builds(a.build_hosts.hosts(a.bench.ssh_config.as_deref()));
    plan.source_release = source_release;
    if a.plan {
        println!("{}", serde_json::to_string_pretty(&plan)?);
        SourceArgs::warn(plan.source_release.as_ref());
        return Ok(0);
    }
    // Said up front: the whole run, then the benchmark, the part its flags decide.
    reporter.message("plan", &plan.estimate.sentence());
    reporter.message(
        "plan",
        &format!(
            "the benchmark will take about {} (--full, --rounds, --time, --workloads, --no-aa \
             change it)",
            pgoforge::infra::time::human(plan.bench_estimate_seconds as f64)
        ),
    );
    reporter.message("plan", &choices::planned_power(&plan));
    pgoforge::infra::interrupt::install(Some(INTERRUPTED));
    let (out, rep) = run_or_retrain(plan, reporter.as_ref())?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        print_summary(&out, &rep, t0.elapsed().as_secs_f64());
    }
    Ok(out.status(&rep).code())
}

fn print_summary(out: &Outcome, r: &report::Report, total: f64) {
    println!(
        "\nStages (this run's wall time; reused stages show the time they took when they ran):"
    );
    for s in &out.timings {
        let how = if s.reused {
            format!("reused (took {})", human(s.work_seconds))
        } else {
            human(s.seconds)
        };
        println!("  {:<24} {how}", s.stage);
    }
    println!("  {:<24} {}", "total", human(total));
    println!();
    let shown = pgoforge::bench::export::text::text(r);
    print!("{shown}");
    // The report already states the source's warnings: each once.
    for w in out.warnings.iter().filter(|w| !shown.contains(w.as_str())) {
        println!("warning: {w}");
    }
    println!(
        "\nReport: {} (also report.md, report.json, report.csv)",
        out.run_dir.join("report.html").display()
    );
    match (&out.winner, &out.package) {
        (Some(w), Some(p)) => println!(
            "Package ({w}, by the decision above): {}\n  sha256 {}  ({:.1} MiB, {} files)\n  \
             rebuild sidecar beside it: {} (anyone can rebuild and compare: pgoforge rebuild {})\n  \
             check it on any host: pgoforge package verify {}; deploy it: README.md inside it{}",
            p.path.display(),
            p.sha256,
            p.bytes as f64 / 1048576.0,
            p.files,
            pgoforge::package::sidecar::beside(&p.path).display(),
            p.path.display(),
            p.path.display(),
            // The .deb replaces Debian 12's MariaDB (MySQL from Debian unstable has none to
            // replace).
            if out
                .source
                .debian
                .as_ref()
                .is_some_and(|d| d.package == "mariadb")
            {
                format!(
                    ", or in Debian's place: pgoforge package {w} --deb{}",
                    work_dir_arg(out)
                )
            } else {
                String::new()
            }
        ),
        (Some(w), None) => println!("Winner: {w} (not packaged: --no-package)"),
        (None, _) => println!("No variant measurably beat the baseline; nothing packaged."),
    }
}

/// `--work-dir DIR` for a command suggested to the user, when the run's work dir is not the
/// default one.
fn work_dir_arg(out: &Outcome) -> String {
    let work = out.run_dir.parent().and_then(Path::parent);
    match work {
        Some(w) if !w.ends_with("pgoforge-work") => format!(" --work-dir {}", w.display()),
        _ => String::new(),
    }
}

/// The compilers (labels, e.g. gcc-12) of the finished builds of `recipe` in the work dir: a
/// work dir begun before a recipe's default compiler changed is continued by naming its own.
fn earlier_compilers(work: &std::path::Path, recipe: &str) -> std::collections::BTreeSet<String> {
    let Ok(dir) = std::fs::read_dir(work.join("builds")) else {
        return Default::default();
    };
    dir.filter_map(|e| e.ok())
        .filter_map(|e| std::fs::read_to_string(e.path().join("build.json")).ok())
        .filter_map(|t| serde_json::from_str::<pgoforge::builder::BuildOutput>(&t).ok())
        .filter(|b| b.recipe == recipe)
        .map(|b| b.compiler.label())
        .collect()
}

/// The compiler a run without `--compiler` uses, said once up front (it decides every build key
/// and the package's name), and how to continue a work dir of another compiler's builds.
fn say_compiler(a: &RunArgs, recipe: &pgoforge::recipe::Recipe, reporter: &dyn Reporter) {
    let (None, Some(c)) = (&a.compiler.compiler, &recipe.build.default_compiler) else {
        return;
    };
    let earlier = earlier_compilers(&a.work.work_dir, &recipe.name)
        .into_iter()
        .filter(|l| !l.starts_with(c.as_str()))
        .collect::<Vec<_>>();
    let continued = match earlier.first() {
        Some(l) => format!(
            "; this work dir's earlier builds are {}'s: --compiler {} continues them",
            earlier.join(", "),
            l.split('-').next().unwrap_or(l)
        ),
        None => String::new(),
    };
    reporter.message(
        "compiler",
        &format!(
            "{c}, recipe {}'s default (--compiler gcc for GCC){continued}",
            recipe.name
        ),
    );
}

/// The pipeline; when a profile from `--profile-from` proved too stale and `--retrain-if-stale`
/// was given, the same run again with its own instrumented build and training (the stages
/// already finished, such as the source and the baseline, are reused).
fn run_or_retrain(
    plan: RunPlan,
    reporter: &dyn Reporter,
) -> Result<(Outcome, pgoforge::bench::report::Report)> {
    match pipeline::run(&plan, reporter) {
        Err(e)
            if e.downcast_ref::<pgoforge::pipeline::stale_check::TooStale>()
                .is_some() =>
        {
            reporter.message("profile", &format!("{e}"));
            let mut req = plan.request.clone();
            req.reuse = None;
            req.profile = None;
            let mut again = pipeline::resolve(req, &Env::probe())?;
            again.source_release = plan.source_release.clone();
            again.build_hosts = plan.build_hosts.clone();
            pipeline::run(&again, reporter)
        }
        other => other,
    }
}

fn percent(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=100.0).contains(&v) => Ok(v),
        _ => Err(format!("'{s}' is not a percentage from 0 to 100")),
    }
}
