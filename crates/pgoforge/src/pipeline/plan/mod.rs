//! The resolved plan of a run: every argument checked and every decision taken — which builds,
//! which contenders, which stages, how much disk — before anything touches the machine.
//! [`RunPlan::resolve`] is pure: it reads the request and the environment found beforehand and
//! returns the plan up to the builds or the first reason the run cannot work;
//! `pipeline::resolve` adds the stages after the builds (`stages::AFTER_BUILDS`, each deciding
//! for itself from the request).

use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use crate::bench::order::OrderScheme;
use crate::bench::spec::BenchSpec;
use crate::builder::cluster::{ClusterState, Placement};
use crate::builder::codegen::{Codegen, CpuLevel};
use crate::builder::Variant;
use crate::gate::GateMode;
use crate::infra::ssh::SshTarget;
use crate::pipeline::stage::StageId;
use crate::profile::train::{Mix, NamedMix};
use crate::recipe::Recipe;
use crate::server::ServerConfig;
use crate::toolchain::{Bolt, Compiler};

pub mod choices;
mod env;
mod validate;
pub use env::Env;
pub use validate::PlanError;
use validate::{at_cpu_level, check, check_outside, check_sweep};

/// Buffer pool of servers run under valgrind: a large pool's start-up costs minutes there and
/// the cachegrind dataset (1 table of 10 000 rows) needs little.
pub const CACHEGRIND_BUFFER_POOL_MB: u64 = 256;

/// Everything a run was asked to do, typed (the CLI fills it; tests build it directly).
#[derive(Clone, Debug, Serialize)]
pub struct RunRequest {
    pub recipe: Recipe,
    /// A source directory, tarball or URL instead of the recipe's.
    pub source: Option<String>,
    pub sha256: Option<String>,
    pub compiler: Compiler,
    /// The variants compared with the baseline.
    pub variants: Vec<Variant>,
    /// `--cpu-level`: every build of the run (the baseline too) compiled for this CPU level;
    /// `None`: the compiler's default (x86-64 for Debian's GCC and clang), and the build keys of
    /// runs before the level existed. Absent from the plan's JSON when not given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu_level: Option<CpuLevel>,
    /// A trained profile to use instead of building and training pgo-gen.
    pub profile: Option<PathBuf>,
    /// `--profile-from`: the profiles came from an earlier build's sidecar (`profile` is its
    /// compiler profile); BOLT applies its BOLT profile instead of profiling. Absent from the
    /// plan's JSON when not given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reuse: Option<crate::pipeline::profile_from::Reuse>,
    /// The training mixes, at least one. The first is the one BOLT and cs-pgo train on. Several
    /// make the train × evaluate matrix: each mix its own training and its own build of every
    /// variant that uses a profile, compared as VARIANT@MIX.
    pub mixes: Vec<NamedMix>,
    pub bench: BenchSpec,
    /// The configuration of every server the run starts: training, BOLT's profiling run, the
    /// gate, the benchmark (cachegrind overrides the buffer pool, see
    /// [`CACHEGRIND_BUFFER_POOL_MB`]).
    pub server: ServerConfig,
    pub bolt_flags: Option<Vec<String>>,
    pub work_dir: PathBuf,
    pub package: bool,
    /// The seed of the benchmark's round orders; `None`: a fresh one, drawn once and kept in the
    /// run state (so a rerun resumes the same benchmark).
    pub seed: Option<u64>,
    /// Also count instructions, I1 misses and mispredicts per transaction under cachegrind.
    pub cachegrind: bool,
    /// Servers the run did not build, compared as they are (e.g. the distribution's); gated and
    /// benchmarked, never packaged.
    pub outside: Vec<crate::bench::plan::Contender>,
    /// The distribution's own server of the built release, downloaded by the run's `distro`
    /// stage and compared like an outside server (`debian`): the report's first table is the
    /// winner against it. None: `--no-distro`, or a source that is not this distribution's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distro: Option<crate::source::distro::DistroServer>,
    /// What the benchmark does on a busy machine (not part of any stage's key).
    #[serde(skip)]
    pub guard: crate::bench::load::Guard,
    /// A variant significantly slower on a held-out workload may still be packaged (a decision
    /// policy: not part of any stage's key, the report applies it).
    #[serde(skip)]
    pub allow_regression: bool,
    /// The smallest change counted (`--min-effect`, a fraction; `None`: 2 %): decision policy,
    /// as `allow_regression`.
    #[serde(skip)]
    pub min_effect: Option<f64>,
    /// The non-inferiority margin on held-out workloads (`--margin`, a fraction; `None`: 3 %):
    /// decision policy, as `allow_regression`.
    #[serde(skip)]
    pub margin: Option<f64>,
    /// Serve the baseline's binary again as an A/A control in the benchmark (`baseline-again`):
    /// the run then states its own noise and the smallest change it could detect.
    pub aa: bool,
    /// Benchmark with `--rounds` too few for the exact test to show anything at the run's level
    /// (a smoke run of the pipeline); refused otherwise, before anything is built.
    #[serde(skip)]
    pub allow_few_rounds: bool,
    /// Raise the benchmark's rounds to what the exact test needs for the run's comparisons
    /// (`--rounds` not given).
    pub auto_rounds: bool,
    /// How much the gate checks: quick (CHECKSUM), mtr (and the recipe's MTR subset), full (and
    /// its whole MTR suites).
    pub gate: GateMode,
    /// Tests instead of the recipe's subset (`--mtr-suite`).
    pub mtr_tests: Option<Vec<String>>,
    /// Build a variant listed both plain and +bolt twice (plain, and bolt-ready for BOLT)
    /// instead of letting the bolt-ready build serve both.
    pub separate_bolt_builds: bool,
    /// `--sweep-buffer-pool-mb`: the benchmark runs every contender at each of these buffer
    /// pools (MiB), as `NAME@bpN`; training, BOLT and the gate keep `server`'s. Absent from the
    /// plan's JSON when not given, so other runs keep their benchmark's key.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sweep_buffer_pool_mb: Vec<u64>,
    /// What the contenders are compared with (`--baseline`): a build of the release, or Debian's
    /// own server of it. Absent from the plan's JSON when built, as before it could be chosen.
    #[serde(default, skip_serializing_if = "BaselineFrom::is_build")]
    pub baseline: BaselineFrom,
}

/// The run's baseline: the binary every contender is compared with, the gate's and MTR's
/// reference, the server that prepares the datasets and the A/A control.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum BaselineFrom {
    /// The recipe's plain build of the release (`baseline`).
    #[default]
    Build,
    /// Debian's server of the release, downloaded (`debian`): no baseline build. What a
    /// `follow` cycle compares against anyway, so its one build is the optimized one.
    Debian,
}

impl BaselineFrom {
    pub fn is_build(&self) -> bool {
        *self == BaselineFrom::Build
    }
}

/// Where a build's compiler profile comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProfileFrom {
    /// No profile (baseline, lto); printed `none` in `run --plan`, as before.
    #[serde(rename = "none")]
    NoProfile,
    /// `--profile`.
    Given,
    /// Trained on the pgo-gen build in this run.
    Trained,
    /// The first profile merged with the counts of this run's cs-pgo-gen build, trained on the
    /// same mix.
    CsTrained,
    /// Trained on this run's instrumented build of the same code generation (`pgo-gen+native`
    /// for a +native variant, `pgo-gen+O3+v3` for `pgo+lto+O3+v3`): the variant's own profile.
    /// GCC drops the profile of every function whose control flow differs between the
    /// instrumented and the optimized build, and `-O3 -march=native` changes many (MySQL 9.7: 229
    /// functions, all of InnoDB's inlined hashing among them; docs/bench/mysql.md), so a variant
    /// with its own optimization or CPU level is instrumented with its own flags. Printed `own`
    /// (`native` before other levels existed).
    #[serde(rename = "own")]
    OwnTrained,
}

/// One build of the run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PlannedBuild {
    pub variant: Variant,
    pub profile: ProfileFrom,
    /// The training mix whose profile it uses, for the mixes after the first (the first's builds
    /// keep the names a run with one mix gives them, so they are found again).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mix: Option<String>,
    /// Where its compiles run, when a build cluster is configured (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub compiles: Option<Placement>,
    /// Whether a build host (`--build-host`) may build it (absent: built here).
    #[serde(skip_serializing_if = "std::ops::Not::not", default)]
    pub shared: bool,
}

impl PlannedBuild {
    /// A build of the first mix (or none), placed by the plan's last steps.
    fn new(variant: Variant, profile: ProfileFrom) -> PlannedBuild {
        PlannedBuild {
            variant,
            profile,
            mix: None,
            compiles: None,
            shared: false,
        }
    }
}

/// One binary of the benchmark and how it comes about.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PlannedContender {
    pub name: String,
    /// The build it is (or is BOLTed from): the variant, and its [`PlannedBuild::mix`].
    pub build: Variant,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mix: Option<String>,
    pub bolted: bool,
}

impl RunRequest {
    /// The servers the run benchmarks but did not build: `--binary`'s and the distribution's.
    pub fn outside_count(&self) -> usize {
        self.outside.len() + usize::from(self.distro.is_some())
    }

    /// Their names, as the benchmark's plan lists them reference-only (never packaged).
    pub fn outside_names(&self) -> Vec<String> {
        self.outside
            .iter()
            .map(|c| c.name.clone())
            .chain(
                self.distro
                    .as_ref()
                    .map(|_| crate::source::distro::NAME.to_string()),
            )
            .collect()
    }

    /// The first training mix: the one BOLT's profiling run and cs-pgo's second training use.
    pub fn mix(&self) -> &Mix {
        &self.mixes[0].mix
    }

    /// Whether this run is a train × evaluate matrix (several training mixes).
    pub fn is_matrix(&self) -> bool {
        self.mixes.len() > 1
    }

    /// The buffer pools the benchmark compares at: a sweep's sizes, else the servers' one.
    pub fn bench_pools(&self) -> Vec<u64> {
        if self.sweep_buffer_pool_mb.is_empty() {
            vec![self.server.buffer_pool_mb]
        } else {
            self.sweep_buffer_pool_mb.clone()
        }
    }

    /// The buffer pool of every server the benchmark serves, `compared` contenders (the built
    /// ones and the outside ones) at each pool and the A/A control at the first.
    pub fn bench_servers(&self, compared: usize) -> Vec<u64> {
        let pools = self.bench_pools();
        let mut v: Vec<u64> = pools
            .iter()
            .flat_map(|&mb| std::iter::repeat_n(mb, compared))
            .collect();
        if self.aa {
            v.push(pools[0]);
        }
        v
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct RunPlan {
    pub request: RunRequest,
    /// In build order: baseline, pgo-gen when training, then the variants.
    pub builds: Vec<PlannedBuild>,
    pub contenders: Vec<PlannedContender>,
    /// Stage names in order, as the state file and the stage table show them.
    pub stages: Vec<StageId>,
    /// The BOLT the +bolt variants use.
    #[serde(skip)]
    pub bolt: Option<Bolt>,
    /// The build cluster: not configured (absent from the plan), unavailable (and why), ready.
    #[serde(skip_serializing_if = "ClusterState::is_not_configured")]
    pub cluster: ClusterState,
    /// Build hosts (`--build-host`) that share the optimized builds with this one.
    #[serde(skip_serializing_if = "Vec::is_empty", serialize_with = "destinations")]
    pub build_hosts: Vec<SshTarget>,
    /// The release built against the releases the mirror lists and serves and the installed
    /// server (`source::release::resolve`; absent for other sources, and when the caller did not
    /// look).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source_release: Option<crate::source::release::ReleaseCheck>,
    /// The benchmark's expected wall time in seconds (`bench::estimate`): the part of the run the
    /// benchmark flags decide; the builds' time depends on the machine.
    pub bench_estimate_seconds: u64,
    /// Every stage's expected wall time and the total (`pipeline::estimate`), from an empty work
    /// dir on this machine's cores.
    pub estimate: crate::pipeline::estimate::RunEstimate,
}

impl RunPlan {
    pub fn resolve(mut req: RunRequest, env: &Env) -> Result<RunPlan> {
        req.variants = at_cpu_level(&req.variants, req.cpu_level)?;
        check(&req, env)?;
        let from = profile_source(&req);
        let mut p = Planned::first(&req);
        p.instrumented(&req, from);
        for &v in &req.variants {
            if !v.bolt_ready && served_by_bolt_ready_build(&req, v) {
                // Its contender comes with the bolt-ready build below.
                continue;
            }
            p.variant(&req, v, from);
        }
        check_outside(&req, &p.contenders)?;
        check_sweep(&req, &p.contenders)?;
        let pools = req.bench_pools().len();
        if !req.auto_rounds && !req.allow_few_rounds {
            // A benchmark that can never be significant is refused now, not after the builds.
            // In a sweep every pool's contenders are compared with that pool's baseline.
            let comparisons =
                (p.contenders.len() + req.outside_count() - 1) * req.bench.cells().len() * pools;
            let needed = crate::bench::stats::rounds_needed(comparisons);
            if (req.bench.rounds as usize) < needed {
                return Err(PlanError::TooFewRounds {
                    rounds: req.bench.rounds,
                    comparisons,
                    needed,
                }
                .into());
            }
        }
        let compared = p.contenders.len() + req.outside_count();
        if req.auto_rounds {
            // Every pool's baseline but the first is compared with nothing, as the control.
            req.bench = req.bench.clone().with_rounds_for(
                compared * pools + usize::from(req.aa),
                usize::from(req.aa) + pools - 1,
                OrderScheme::Williams,
            );
        }
        let Planned {
            mut builds,
            stages,
            contenders,
        } = p;
        // Where each build's compiles run, once a cluster is configured at all.
        for b in &mut builds {
            b.compiles = env.cluster.placement(b.variant, &req.compiler);
        }
        let servers = req.bench_servers(compared);
        // Before any build: a dataset or pool this machine cannot hold would fail only after them.
        if let Some(m) = crate::bench::budget::Machine::probe(&req.work_dir) {
            // The largest pool is the one that must fit: in a sweep the largest size, or
            // --buffer-pool-mb where it is larger (training, BOLT and the gate run at it).
            let swept = req.sweep_buffer_pool_mb.iter().copied().max().unwrap_or(0);
            let by_sweep = swept > req.server.buffer_pool_mb;
            let largest = ServerConfig {
                buffer_pool_mb: swept.max(req.server.buffer_pool_mb),
                ..req.server.clone()
            };
            let flag = crate::bench::budget::pool_flag(by_sweep);
            crate::bench::budget::check(&req.bench, &largest, servers.len(), &m, flag)
                .map_err(PlanError::Budget)?;
        }
        let bench_estimate_seconds =
            crate::bench::estimate::wall_time(&req.bench, &servers).as_secs();
        Ok(RunPlan {
            bench_estimate_seconds,
            request: req,
            builds,
            contenders,
            stages,
            bolt: env.bolt.clone(),
            source_release: None,
            cluster: env.cluster.clone(),
            build_hosts: Vec::new(),
            estimate: Default::default(),
        })
    }

    /// Whether the plan lists stage `id` (the stages after the builds decided once, by their
    /// `Step::planned`, when `pipeline::resolve` made the plan); `pipeline::run` asks here.
    pub fn runs(&self, id: &StageId) -> bool {
        self.stages.contains(id)
    }

    /// Shares the builds a build host may make (`builder::host::may_go`) with `hosts`.
    pub fn share_builds(&mut self, hosts: Vec<SshTarget>) {
        if hosts.is_empty() {
            return;
        }
        for b in &mut self.builds {
            // A cs variant's builds need this host's cs-pgo-gen training first.
            b.shared =
                crate::builder::host::may_go(b.variant) && b.profile != ProfileFrom::CsTrained;
        }
        self.build_hosts = hosts;
    }

    /// The configuration of the servers run under cachegrind.
    pub fn cachegrind_server(&self) -> ServerConfig {
        ServerConfig {
            buffer_pool_mb: CACHEGRIND_BUFFER_POOL_MB,
            ..self.request.server.clone()
        }
    }
}

/// Where the variants' profiles come from: none needed, the user's (`--profile`), or trained.
fn profile_source(req: &RunRequest) -> ProfileFrom {
    if !req.variants.iter().any(Variant::needs_profile) {
        ProfileFrom::NoProfile
    } else if req.profile.is_some() {
        ProfileFrom::Given
    } else {
        ProfileFrom::Trained
    }
}

/// The builds, stages and contenders a plan gathers as it goes through the request.
struct Planned {
    builds: Vec<PlannedBuild>,
    stages: Vec<StageId>,
    contenders: Vec<PlannedContender>,
}

impl Planned {
    /// The plan before the variants: the source, and the baseline's build and contender unless
    /// Debian's server is the baseline (`debian`, an outside contender the run puts first).
    fn first(req: &RunRequest) -> Planned {
        let mut baseline: Variant = "baseline".parse().expect("a valid variant");
        baseline.codegen.cpu = req.cpu_level;
        let mut p = Planned {
            builds: Vec::new(),
            stages: vec![StageId::Source],
            contenders: Vec::new(),
        };
        if req.baseline.is_build() {
            p.builds
                .push(PlannedBuild::new(baseline, ProfileFrom::NoProfile));
            p.stages.push(StageId::Build(baseline, None));
            p.contender("baseline".into(), baseline, false);
        } else {
            // Fetched before the builds: everything after them compares with it.
            p.stages.push(StageId::Distro);
        }
        p
    }

    /// The instrumented builds and their trainings: the generic pgo-gen when a variant needs its
    /// profile (one training per mix), and for each other code generation whose variants need
    /// one, its own instrumented build (`pgo-gen+native`, `pgo-gen+v3`: `OwnTrained`).
    fn instrumented(&mut self, req: &RunRequest, from: ProfileFrom) {
        if from != ProfileFrom::Trained {
            return;
        }
        let mut codegens: Vec<Codegen> = req
            .variants
            .iter()
            .filter(|v| v.needs_profile())
            .map(|v| v.codegen)
            .collect();
        codegens.sort();
        codegens.dedup();
        let gen: Variant = "pgo-gen".parse().expect("a valid variant");
        if codegens.contains(&Codegen::default()) {
            self.builds
                .push(PlannedBuild::new(gen, ProfileFrom::NoProfile));
            self.stages
                .extend([StageId::Build(gen, None), StageId::Train(None)]);
            for m in &req.mixes[1..] {
                self.stages.push(StageId::TrainOn(m.name.clone()));
            }
        }
        for codegen in codegens.into_iter().filter(|c| !c.is_default()) {
            let gen = Variant { codegen, ..gen };
            self.builds
                .push(PlannedBuild::new(gen, ProfileFrom::NoProfile));
            self.stages.extend([
                StageId::Build(gen, None),
                StageId::Train(Some(gen.to_string())),
            ]);
        }
    }

    /// One requested variant: its build (and cs-pgo's instrumented build), and its contenders —
    /// one per training mix in a matrix, or the plain and BOLTed binaries of a bolt-ready build.
    fn variant(&mut self, req: &RunRequest, v: Variant, from: ProfileFrom) {
        let profile_of = |v: Variant| {
            if !v.codegen.is_default() && from == ProfileFrom::Trained {
                ProfileFrom::OwnTrained
            } else {
                from
            }
        };
        if let Some(g) = v.cs_gen() {
            // One cs-pgo-gen build and training serve cs-pgo+X and cs-pgo+X+bolt alike.
            if !self.builds.iter().any(|b| b.variant == g) {
                self.builds.push(PlannedBuild::new(g, profile_of(g)));
                self.stages
                    .extend([StageId::Build(g, None), StageId::Train(Some(g.to_string()))]);
            }
        }
        let profile = if v.cs_gen().is_some() {
            ProfileFrom::CsTrained
        } else if v.needs_profile() {
            profile_of(v)
        } else {
            ProfileFrom::NoProfile
        };
        self.builds.push(PlannedBuild::new(v, profile));
        self.stages.push(StageId::Build(v, None));
        if req.is_matrix() && v.needs_profile() {
            self.matrix(req, v, from);
        } else if !v.bolt_ready {
            self.contender(v.to_string(), v, false);
        } else {
            self.bolted(req, v);
        }
    }

    fn contender(&mut self, name: String, build: Variant, bolted: bool) {
        self.contenders.push(PlannedContender {
            name,
            build,
            mix: None,
            bolted,
        });
    }

    /// One build per training mix, each a contender VARIANT@MIX (validate: no BOLT, no cs-pgo
    /// in a matrix).
    fn matrix(&mut self, req: &RunRequest, v: Variant, from: ProfileFrom) {
        self.contender(format!("{v}@{}", req.mixes[0].name), v, false);
        for m in &req.mixes[1..] {
            self.builds.push(PlannedBuild {
                variant: v,
                profile: from,
                mix: Some(m.name.clone()),
                compiles: None,
                shared: false,
            });
            self.stages.push(StageId::Build(v, Some(m.name.clone())));
            self.contenders.push(PlannedContender {
                name: format!("{v}@{}", m.name),
                build: v,
                mix: Some(m.name.clone()),
                bolted: false,
            });
        }
    }

    /// A bolt-ready build serves the BOLTed contender and, when the plain variant is listed
    /// too, the plain one unBOLTed (one build instead of two; what bolt-readiness — no hot/cold
    /// splitting, relocations kept — costs the plain binary is measured by
    /// --separate-bolt-builds, which compares it as NAME-prebolt). The unBOLTed binary is not
    /// benchmarked unless asked: it only attributes BOLT's share, and as a third compared
    /// contender it needs more rounds than the default benchmark's time allows
    /// (docs/bench/bench-shape.md).
    fn bolted(&mut self, req: &RunRequest, v: Variant) {
        let plain = Variant {
            bolt_ready: false,
            ..v
        };
        if req.variants.contains(&plain) {
            let name = if req.separate_bolt_builds {
                format!("{plain}-prebolt")
            } else {
                plain.to_string()
            };
            self.contender(name, v, false);
        }
        self.contender(v.to_string(), v, true);
        self.stages.push(StageId::Bolt(v.to_string()));
    }
}

/// Whether `v`'s contender is the unBOLTed binary of its bolt-ready build (`v+bolt` listed too).
fn served_by_bolt_ready_build(req: &RunRequest, v: Variant) -> bool {
    !req.separate_bolt_builds
        && req.variants.contains(&Variant {
            bolt_ready: true,
            ..v
        })
}

/// Build hosts in a plan: their ssh destinations (how they are reached is not part of it).
fn destinations<S: serde::Serializer>(hosts: &[SshTarget], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(hosts.iter().map(|h| &h.destination))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::toolchain::FlagFamily;

    fn request(variants: &[&str]) -> RunRequest {
        RunRequest {
            recipe: Recipe::load(crate::recipe::DEFAULT).unwrap(),
            source: None,
            sha256: None,
            compiler: Compiler {
                family: FlagFamily::Gcc,
                cc: "/usr/bin/gcc".into(),
                cxx: "/usr/bin/g++".into(),
                version: "gcc 12".into(),
                major: 12,
                profdata: None,
            },
            variants: variants.iter().map(|v| v.parse().unwrap()).collect(),
            cpu_level: None,
            distro: None,
            profile: None,
            reuse: None,
            mixes: vec![NamedMix {
                name: "oltp".into(),
                mix: Mix::quick(),
            }],
            bench: BenchSpec::quick(),
            server: ServerConfig::default(),
            bolt_flags: None,
            work_dir: "/nonexistent/work".into(),
            package: true,
            seed: None,
            cachegrind: false,
            separate_bolt_builds: false,
            sweep_buffer_pool_mb: Vec::new(),
            outside: Vec::new(),
            guard: crate::bench::load::Guard::allow_busy(),
            allow_regression: false,
            min_effect: None,
            margin: None,
            aa: false,
            auto_rounds: false,
            // These tests are about builds and stages; the rounds rule has its own below.
            allow_few_rounds: true,
            gate: GateMode::Quick,
            mtr_tests: None,
            baseline: Default::default(),
        }
    }

    fn with_bolt() -> Env {
        Env {
            cluster: ClusterState::NotConfigured,
            bolt: Some(Bolt {
                major: 22,
                llvm_bolt: "/usr/lib/llvm-22/bin/llvm-bolt".into(),
                merge_fdata: None,
                perf2bolt: None,
            }),
        }
    }

    #[test]
    fn the_plan_names_every_build_contender_and_stage_before_anything_runs() {
        let names =
            |p: &RunPlan| -> Vec<String> { p.contenders.iter().map(|c| c.name.clone()).collect() };
        let builds = |p: &RunPlan| -> Vec<String> {
            p.builds.iter().map(|b| b.variant.to_string()).collect()
        };
        // One bolt-ready build serves pgo and pgo+bolt.
        let p = crate::pipeline::resolve(request(&["pgo", "pgo+bolt"]), &with_bolt()).unwrap();
        assert_eq!(builds(&p), ["baseline", "pgo-gen", "pgo+bolt"]);
        assert_eq!(p.builds[2].profile, ProfileFrom::Trained);
        assert_eq!(names(&p), ["baseline", "pgo", "pgo+bolt"]);
        let plain = &p.contenders[1];
        assert_eq!(
            (plain.build.to_string(), plain.bolted),
            ("pgo+bolt".into(), false)
        );
        assert_eq!(
            p.stages.iter().map(ToString::to_string).collect::<Vec<_>>(),
            [
                "source",
                "build baseline",
                "build pgo-gen",
                "train",
                "build pgo+bolt",
                "bolt pgo+bolt",
                "gate",
                "seed",
                "bench",
                "report",
                "package"
            ]
        );
        // Only the +bolt variant asked for (the default set): the same build, its BOLTed
        // binary the only contender beside the baseline.
        let p = crate::pipeline::resolve(request(&["pgo+lto+bolt"]), &with_bolt()).unwrap();
        assert_eq!(builds(&p), ["baseline", "pgo-gen", "pgo+lto+bolt"]);
        assert_eq!(names(&p), ["baseline", "pgo+lto+bolt"]);
        assert_eq!(p.request.bench.rounds, BenchSpec::quick().rounds);
        // Unless --rounds is given, the rounds follow the comparisons: 2 contenders against the
        // baseline on 2 workloads is 4 comparisons, which the exact test needs 8 rounds for; the
        // 3 contenders' Williams design has blocks of 6 rounds, so 12 complete two.
        let auto_rounds = |variants: &[&str], aa: bool| {
            let mut r = request(variants);
            r.auto_rounds = true;
            r.aa = aa;
            crate::pipeline::resolve(r, &with_bolt())
                .unwrap()
                .request
                .bench
                .rounds
        };
        assert_eq!(auto_rounds(&["pgo+lto", "pgo+lto+bolt"], false), 12);
        // 2 contenders (one variant) on 2 workloads: 2 comparisons need 7 rounds; blocks of 2
        // make it 8.
        assert_eq!(auto_rounds(&["pgo"], false), 8);
        assert_eq!(auto_rounds(&["pgo+lto+bolt"], false), 8);
        // The A/A control is served (a Williams block of 3 is 6 rounds) but tested outside
        // Holm's family: still 2 comparisons, 7 rounds, 12 in whole blocks.
        assert_eq!(auto_rounds(&["pgo+lto+bolt"], true), 12);
        // Separate builds: the plain one, and the bolt-ready one compared unBOLTed too.
        let mut r = request(&["pgo+lto", "pgo+lto+bolt"]);
        r.separate_bolt_builds = true;
        let p = crate::pipeline::resolve(r, &with_bolt()).unwrap();
        assert_eq!(
            builds(&p),
            ["baseline", "pgo-gen", "pgo+lto", "pgo+lto+bolt"]
        );
        assert_eq!(
            names(&p),
            ["baseline", "pgo+lto", "pgo+lto-prebolt", "pgo+lto+bolt"]
        );
        // Context-sensitive PGO: a cs-pgo-gen build on the first profile, its own training, then
        // the cs-pgo build; one of each serves the plain and the +bolt contender.
        let mut r = request(&["pgo+lto", "cs-pgo+lto+bolt", "cs-pgo+lto"]);
        r.compiler.family = FlagFamily::Clang;
        let p = crate::pipeline::resolve(r, &with_bolt()).unwrap();
        assert_eq!(
            builds(&p),
            [
                "baseline",
                "pgo-gen",
                "pgo+lto",
                "cs-pgo-gen+lto",
                "cs-pgo+lto+bolt"
            ]
        );
        assert_eq!(
            (p.builds[3].profile, p.builds[4].profile),
            (ProfileFrom::Trained, ProfileFrom::CsTrained)
        );
        assert_eq!(
            names(&p),
            ["baseline", "pgo+lto", "cs-pgo+lto", "cs-pgo+lto+bolt"]
        );
        assert!(p
            .stages
            .contains(&StageId::Train(Some("cs-pgo-gen+lto".into()))));
        // No profile needed: no pgo-gen, no training.
        let p = crate::pipeline::resolve(request(&["lto"]), &Env::default()).unwrap();
        assert_eq!(p.builds.len(), 2);
        assert!(!p.stages.contains(&StageId::Train(None)));
    }

    #[test]
    fn a_native_variant_is_trained_on_its_own_native_instrumented_build() {
        let builds = |p: &RunPlan| -> Vec<(String, ProfileFrom)> {
            p.builds
                .iter()
                .map(|b| (b.variant.to_string(), b.profile))
                .collect()
        };
        let stages =
            |p: &RunPlan| -> Vec<String> { p.stages.iter().map(ToString::to_string).collect() };
        let p = crate::pipeline::resolve(request(&["pgo+lto", "pgo+lto+native"]), &with_bolt())
            .unwrap();
        assert_eq!(
            builds(&p),
            [
                ("baseline".into(), ProfileFrom::NoProfile),
                ("pgo-gen".into(), ProfileFrom::NoProfile),
                ("pgo-gen+native".into(), ProfileFrom::NoProfile),
                ("pgo+lto".into(), ProfileFrom::Trained),
                ("pgo+lto+native".into(), ProfileFrom::OwnTrained),
            ]
        );
        let s = stages(&p);
        let at = |x: &str| s.iter().position(|y| y == x).unwrap();
        // The first training keeps its name (finished runs find it); the native one is named
        // by its build and comes before the build that uses it.
        assert!(at("train") < at("build pgo-gen+native"));
        assert!(at("train pgo-gen+native") < at("build pgo+lto+native"));
        // Only native variants need a profile: no generic pgo-gen at all.
        let p =
            crate::pipeline::resolve(request(&["pgo+lto+native", "lto"]), &with_bolt()).unwrap();
        assert_eq!(
            builds(&p).iter().map(|b| b.0.as_str()).collect::<Vec<_>>(),
            ["baseline", "pgo-gen+native", "pgo+lto+native", "lto"]
        );
        assert!(!stages(&p).contains(&"train".to_string()));
        // A baseline with -O3 -march=native needs no profile, and a given profile serves every
        // variant as the user asked (no instrumented build).
        let p = crate::pipeline::resolve(request(&["baseline+native"]), &with_bolt()).unwrap();
        assert_eq!(p.builds.len(), 2);
        let mut r = request(&["pgo+lto", "pgo+lto+native"]);
        r.profile = Some("/bin".into());
        let p = crate::pipeline::resolve(r, &with_bolt()).unwrap();
        assert_eq!(
            builds(&p)[1..],
            [
                ("pgo+lto".into(), ProfileFrom::Given),
                ("pgo+lto+native".into(), ProfileFrom::Given),
            ]
        );
        // The plan's JSON names where the native variant's profile comes from.
        let p = crate::pipeline::resolve(request(&["pgo+lto+native"]), &with_bolt()).unwrap();
        let j = serde_json::to_value(&p.builds).unwrap();
        assert_eq!(j[2]["profile"], "own");
    }

    fn debian() -> crate::source::distro::DistroServer {
        crate::source::distro::DistroServer {
            package: "mariadb-server-core".into(),
            version: "1:10.11.18-0+deb12u1".into(),
            suite: "bookworm".into(),
            with: Vec::new(),
        }
    }

    #[test]
    fn debians_server_is_fetched_after_the_builds_gated_and_counted_as_a_comparison() {
        let mut r = request(&["pgo"]);
        r.distro = Some(debian());
        let p = crate::pipeline::resolve(r.clone(), &with_bolt()).unwrap();
        let stages: Vec<String> = p.stages.iter().map(ToString::to_string).collect();
        let at = |x: &str| stages.iter().position(|y| y == x).unwrap();
        assert!(
            at("build pgo") < at("distro") && at("distro") < at("gate"),
            "{stages:?}"
        );
        let j = serde_json::to_value(&p.request).unwrap();
        assert_eq!(j["distro"]["package"], "mariadb-server-core");
        // pgo and debian against the baseline on the quick spec's two workloads: four
        // comparisons, which the rounds enough for two (without debian) cannot show.
        assert_eq!(r.bench.workloads.len(), 2);
        r.allow_few_rounds = false;
        r.bench.rounds = crate::bench::stats::rounds_needed(2) as u32;
        assert!(crate::bench::stats::rounds_needed(4) > crate::bench::stats::rounds_needed(2));
        let e = crate::pipeline::resolve(r.clone(), &with_bolt()).unwrap_err();
        assert!(e.to_string().contains("makes 4 comparisons"), "{e}");
        r.distro = None;
        assert!(crate::pipeline::resolve(r, &with_bolt()).is_ok());
        // Without it, no stage and no field.
        let p = crate::pipeline::resolve(request(&["pgo"]), &with_bolt()).unwrap();
        assert!(!p.stages.iter().any(|s| s.to_string() == "distro"));
        assert!(serde_json::to_value(&p.request)
            .unwrap()
            .get("distro")
            .is_none());
    }

    #[test]
    fn with_debians_server_as_the_baseline_nothing_builds_it_and_it_is_fetched_first() {
        let mut r = request(&["pgo+lto+bolt"]);
        r.profile = Some("/".into());
        r.baseline = BaselineFrom::Debian;
        // Debian's server must be in the plan to be the baseline.
        let e = crate::pipeline::resolve(r.clone(), &with_bolt()).unwrap_err();
        assert!(e.to_string().contains("--baseline debian"), "{e}");
        r.distro = Some(debian());
        let p = crate::pipeline::resolve(r.clone(), &with_bolt()).unwrap();
        let builds: Vec<String> = p.builds.iter().map(|b| b.variant.to_string()).collect();
        assert_eq!(builds, ["pgo+lto+bolt"]);
        let names: Vec<&str> = p.contenders.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["pgo+lto+bolt"]);
        let stages: Vec<String> = p.stages.iter().map(ToString::to_string).collect();
        assert_eq!(
            stages,
            [
                "source",
                "distro",
                "build pgo+lto+bolt",
                "bolt pgo+lto+bolt",
                "gate",
                "seed",
                "bench",
                "report",
                "package"
            ]
        );
        assert_eq!(
            serde_json::to_value(&p.request).unwrap()["baseline"],
            "debian"
        );
        // One comparison per workload (pgo+lto+bolt against debian), not two.
        r.allow_few_rounds = false;
        r.bench.rounds = crate::bench::stats::rounds_needed(2) as u32;
        assert!(crate::pipeline::resolve(r.clone(), &with_bolt()).is_ok());
        // A sweep compares with each pool's built baseline: refused.
        r.sweep_buffer_pool_mb = vec![512, 1024];
        let e = crate::pipeline::resolve(r, &with_bolt()).unwrap_err();
        assert!(e.to_string().contains("sweep"), "{e}");
        // The built baseline's plans say nothing new.
        let p = crate::pipeline::resolve(request(&["pgo"]), &with_bolt()).unwrap();
        assert!(serde_json::to_value(&p.request)
            .unwrap()
            .get("baseline")
            .is_none());
    }

    #[test]
    fn each_code_generation_trains_its_own_profile_and_cpu_level_reaches_every_build() {
        let names = |p: &RunPlan| -> Vec<String> {
            p.builds.iter().map(|b| b.variant.to_string()).collect()
        };
        // The split of seed 000's gain, one run: -O3 alone, then v3, then the host's CPU.
        let p = crate::pipeline::resolve(
            request(&["pgo+lto", "pgo+lto+O3", "pgo+lto+O3+v3", "pgo+lto+native"]),
            &with_bolt(),
        )
        .unwrap();
        assert_eq!(
            names(&p),
            [
                "baseline",
                "pgo-gen",
                "pgo-gen+O3",
                "pgo-gen+O3+v3",
                "pgo-gen+native",
                "pgo+lto",
                "pgo+lto+O3",
                "pgo+lto+O3+v3",
                "pgo+lto+native"
            ]
        );
        let stages: Vec<String> = p.stages.iter().map(ToString::to_string).collect();
        assert!(stages.contains(&"train pgo-gen+O3+v3".to_string()));
        // --cpu-level: the baseline, the instrumented build and the variants, all at v3.
        let mut r = request(&["pgo+lto+bolt"]);
        r.cpu_level = Some(CpuLevel::V3);
        let p = crate::pipeline::resolve(r, &with_bolt()).unwrap();
        assert_eq!(names(&p), ["baseline+v3", "pgo-gen+v3", "pgo+lto+bolt+v3"]);
        let contenders: Vec<&str> = p.contenders.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(contenders, ["baseline", "pgo+lto+bolt+v3"]);
        assert_eq!(
            serde_json::to_value(&p.request).unwrap()["cpu_level"],
            "x86-64-v3"
        );
        // A variant built for another level already is refused, naming both.
        let mut r = request(&["pgo+lto+native"]);
        r.cpu_level = Some(CpuLevel::V3);
        let e = crate::pipeline::resolve(r, &with_bolt())
            .unwrap_err()
            .to_string();
        assert!(e.contains("native") && e.contains("x86-64-v3"), "{e}");
        // Without --cpu-level the plan's request has no such field: old plans read the same.
        let p = crate::pipeline::resolve(request(&["pgo"]), &with_bolt()).unwrap();
        assert!(serde_json::to_value(&p.request)
            .unwrap()
            .get("cpu_level")
            .is_none());
    }

    #[test]
    fn a_matrix_builds_each_profile_variant_once_per_training_mix() {
        let mut r = request(&["pgo+lto", "lto"]);
        let oltp = r.mixes[0].mix.clone();
        for n in ["tpcc", "oltp+tpcc"] {
            r.mixes.push(NamedMix::parse(n, &oltp).unwrap());
        }
        let p = crate::pipeline::resolve(r, &with_bolt()).unwrap();
        let builds: Vec<String> = p
            .builds
            .iter()
            .map(|b| match &b.mix {
                Some(m) => format!("{}@{m}", b.variant),
                None => b.variant.to_string(),
            })
            .collect();
        // The first mix's build keeps its plain name (a run of one mix finds it again).
        assert_eq!(
            builds,
            [
                "baseline",
                "pgo-gen",
                "pgo+lto",
                "pgo+lto@tpcc",
                "pgo+lto@oltp+tpcc",
                "lto"
            ]
        );
        let names: Vec<&str> = p.contenders.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "baseline",
                "pgo+lto@oltp",
                "pgo+lto@tpcc",
                "pgo+lto@oltp+tpcc",
                "lto"
            ]
        );
        assert_eq!(p.contenders[2].mix.as_deref(), Some("tpcc"));
        let stages: Vec<String> = p.stages.iter().map(ToString::to_string).collect();
        let at = |s: &str| stages.iter().position(|x| x == s).unwrap();
        // Every mix is trained before any build uses a profile.
        assert!(at("train") < at("train @tpcc") && at("train @oltp+tpcc") < at("build pgo+lto"));
        assert!(at("build pgo+lto@oltp+tpcc") < at("gate"));
        // What a matrix cannot do yet, refused by name.
        let e = |variants: &[&str], given: bool| {
            let mut r = request(variants);
            r.mixes.push(NamedMix::parse("tpcc", &oltp).unwrap());
            if given {
                r.profile = Some("/bin".into());
            }
            crate::pipeline::resolve(r, &with_bolt())
                .unwrap_err()
                .downcast::<PlanError>()
                .unwrap()
        };
        assert_eq!(
            e(&["pgo+lto+bolt"], false),
            PlanError::MatrixVariant("pgo+lto+bolt".parse().unwrap())
        );
        assert_eq!(
            e(&["pgo+lto+native"], false),
            PlanError::MatrixVariant("pgo+lto+native".parse().unwrap())
        );
        assert_eq!(e(&["pgo"], true), PlanError::MatrixWithProfile);
        let mut r = request(&["pgo"]);
        r.mixes.push(r.mixes[0].clone());
        assert_eq!(
            crate::pipeline::resolve(r, &with_bolt())
                .unwrap_err()
                .downcast::<PlanError>()
                .unwrap(),
            PlanError::MixTwice("oltp".into())
        );
    }

    #[test]
    fn bad_requests_fail_before_any_side_effect() {
        let e = |r: RunRequest, env: &Env| {
            crate::pipeline::resolve(r, env)
                .unwrap_err()
                .downcast::<PlanError>()
                .expect("a plan error")
        };
        assert_eq!(e(request(&[]), &with_bolt()), PlanError::NoVariants);
        assert_eq!(
            e(request(&["pgo-gen"]), &with_bolt()),
            PlanError::Instrumented
        );
        assert_eq!(
            e(request(&["cs-pgo-gen+lto"]), &with_bolt()),
            PlanError::Instrumented
        );
        let cs = e(request(&["cs-pgo+lto"]), &with_bolt());
        assert!(matches!(cs, PlanError::CsPgoNeedsClang { .. }));
        assert!(cs.to_string().contains("only clang has"), "{cs}");
        assert_eq!(
            e(request(&["pgo", "pgo"]), &with_bolt()).to_string(),
            "variant pgo is listed twice"
        );
        let outside = |name: &str, path: &str| {
            let mut r = request(&["pgo"]);
            r.outside.push(crate::bench::plan::Contender {
                name: name.into(),
                binary: path.into(),
                buffer_pool_mb: None,
            });
            r
        };
        assert_eq!(
            e(outside("pgo", "/bin/true"), &with_bolt()),
            PlanError::NameTaken("pgo".into())
        );
        assert!(matches!(
            e(outside("debian", "/nonexistent/mariadbd"), &with_bolt()),
            PlanError::NoSuchBinary { .. }
        ));
        // Debian's server planned, and a --binary under its name too: one name, two servers.
        let mut r = outside("debian", "/bin/true");
        r.distro = Some(debian());
        assert_eq!(e(r, &with_bolt()), PlanError::NameTaken("debian".into()));
        assert!(crate::pipeline::resolve(outside("debian", "/bin/true"), &with_bolt()).is_ok());
        let nb = e(request(&["pgo+bolt"]), &Env::default());
        assert!(matches!(nb, PlanError::NoBolt { .. }));
        assert!(nb.to_string().contains("apt-get install bolt-22"), "{nb}");
        let mut r = request(&["pgo"]);
        r.bench.rounds = 0;
        assert!(matches!(e(r, &with_bolt()), PlanError::Bench(m) if m.contains("at least 1")));
        let mut r = request(&["pgo"]);
        r.gate = GateMode::Mtr;
        r.recipe.mtr = None;
        assert!(matches!(e(r, &with_bolt()), PlanError::NoMtrTests { .. }));
        let mut r = request(&["pgo"]);
        r.mtr_tests = Some(vec!["main.ps".into()]);
        assert_eq!(e(r, &with_bolt()), PlanError::MtrSuiteWithQuickGate);
        let mut r = request(&["pgo"]);
        r.gate = GateMode::Mtr;
        r.mtr_tests = Some(vec![]);
        assert_eq!(e(r, &with_bolt()), PlanError::EmptyMtrSuite);
        let mut r = request(&["pgo"]);
        r.gate = GateMode::Mtr;
        assert!(crate::pipeline::resolve(r, &with_bolt())
            .unwrap()
            .stages
            .contains(&StageId::Mtr));
        let mut r = request(&["pgo"]);
        r.mixes[0].mix.phases.clear();
        assert_eq!(e(r, &with_bolt()), PlanError::EmptyMix);
        // --rounds that can never be significant over the run's comparisons: refused with the
        // number that can, before anything is built; that number passes.
        let mut r = request(&["pgo"]);
        r.allow_few_rounds = false;
        r.bench.rounds = 3;
        let m = r.bench.cells().len();
        let needed = crate::bench::stats::rounds_needed(m);
        assert_eq!(
            e(r.clone(), &with_bolt()),
            PlanError::TooFewRounds {
                rounds: 3,
                comparisons: m,
                needed
            }
        );
        r.bench.rounds = needed as u32;
        assert!(crate::pipeline::resolve(r, &with_bolt()).is_ok());
        let mut r = request(&["pgo"]);
        r.profile = Some("/nonexistent/gcda".into());
        assert_eq!(
            e(r, &with_bolt()),
            PlanError::NoProfile("/nonexistent/gcda".into())
        );
        assert_eq!(
            crate::pipeline::resolve(request(&["pgo"]), &Env::default())
                .unwrap()
                .cachegrind_server()
                .buffer_pool_mb,
            CACHEGRIND_BUFFER_POOL_MB
        );
    }
}
