//! `pgoforge run`: every stage in one pipeline — source, baseline, pgo-gen, training, the optimized
//! builds, BOLT, the correctness gate, the benchmark, the report and the package of the variant that
//! measurably wins.
//!
//! Builds are cached by their own keys; the other stages are recorded in the run state
//! (`state.rs`), so a rerun after Ctrl-C, a crash or a reboot continues from the last finished
//! stage, and a rerun with nothing changed only regenerates the report.

pub mod deps;
pub mod state;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use oltp::settings::TestName;
use serde::{Deserialize, Serialize};

use crate::bench::cachegrind::{self, CgPlan};
use crate::bench::report::{self, Report};
use crate::bench::run::{self as bench_run, Contender, Plan};
use crate::build::{self, BuildOutput, BuildRequest, ProfileInput, Stage, Variant};
use crate::package::{self, Gain, Manifest, Package, PackageRequest};
use crate::profile::bolt::{self, BoltOutput, BoltRequest};
use crate::profile::gate::{self, Checksums, GateWorkload};
use crate::profile::train::{self, Mix, TrainRequest};
use crate::profile::{check_belongs, Stored};
use crate::recipe::Recipe;
use crate::server::{Flavor, Layout, ServerConfig, ServerSpec};
use crate::source::{self, Source};
use crate::toolchain::{Bolt, Compiler};
use state::{human, inputs_hash, StageTiming, Tracker};

/// The benchmark part of a run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BenchSettings {
    pub workloads: Vec<TestName>,
    pub threads: Vec<u32>,
    pub rounds: u32,
    pub seconds: u64,
    pub warmup_seconds: u64,
    pub tables: u32,
    pub table_size: u64,
    pub buffer_pool_mb: u64,
}

pub struct Options<'a> {
    pub recipe: &'a Recipe,
    pub source: Option<String>,
    pub sha256: Option<String>,
    pub compiler: &'a Compiler,
    /// The variants compared with the baseline.
    pub variants: Vec<Variant>,
    /// A trained profile to use instead of building and training pgo-gen.
    pub profile: Option<PathBuf>,
    pub mix: Mix,
    pub bench: BenchSettings,
    pub bolt_flags: Option<Vec<String>>,
    pub work_dir: PathBuf,
    pub package: bool,
    /// Also count instructions, I1 misses and mispredicts per transaction under cachegrind.
    pub cachegrind: bool,
    pub show_progress: bool,
}

/// A binary in the comparison and how it was made.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Built {
    /// The contender's name in the benchmark (`pgo+bolt`, `pgo-prebolt`, ...).
    pub name: String,
    pub binary: PathBuf,
    pub build: BuildOutput,
    pub bolt: Option<BoltOutput>,
}

impl Built {
    /// What distinguishes this binary from any other at the same path.
    fn identity(&self) -> String {
        match &self.bolt {
            Some(b) => format!("{}+bolt:{}", self.build.key, b.profile.meta.hash),
            None => self.build.key.clone(),
        }
    }
}

/// What a run produced; also written to `WORK/run.json` for `pgoforge package`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Outcome {
    pub recipe: String,
    pub source: Source,
    pub contenders: Vec<Built>,
    pub profile: Option<Stored>,
    pub run_dir: PathBuf,
    /// The contender that measurably beat the baseline with the best geometric mean, if any.
    pub winner: Option<String>,
    pub package: Option<Package>,
    pub warnings: Vec<String>,
    pub timings: Vec<StageTiming>,
}

pub fn outcome_path(work: &Path) -> PathBuf {
    work.join("run.json")
}

impl Outcome {
    pub fn load(work: &Path) -> Result<Outcome> {
        let p = outcome_path(work);
        let text = fs::read_to_string(&p).with_context(|| {
            format!(
                "{} has no finished run ({} is missing); run `pgoforge run --work-dir {}` first",
                work.display(),
                p.display(),
                work.display()
            )
        })?;
        serde_json::from_str(&text).with_context(|| format!("parsing {}", p.display()))
    }

    fn save(&self, work: &Path) -> Result<()> {
        let p = outcome_path(work);
        let tmp = p.with_extension("json.tmp");
        fs::write(&tmp, serde_json::to_string_pretty(self)?)?;
        fs::rename(&tmp, &p).with_context(|| format!("writing {}", p.display()))
    }
}

/// The server settings training, BOLT and the gate run with (the binary is filled in per use).
pub fn server_spec(buffer_pool_mb: u64) -> ServerSpec {
    ServerSpec {
        config: ServerConfig {
            buffer_pool_mb,
            ..ServerConfig::default()
        },
        ..ServerSpec::new("")
    }
}

/// Runs `f`, recording its time under `name` in the tracker's timings (builds are cached by
/// their own keys, so they need no state record). `f` returns, for a result it found cached, the
/// time the work took when it was done.
fn timed<T>(
    t: &mut Tracker,
    log: &dyn Fn(&str),
    name: &str,
    f: impl FnOnce() -> Result<(T, Option<f64>)>,
) -> Result<T> {
    log(&format!("{name}: running"));
    let t0 = Instant::now();
    let (out, cached) = f().with_context(|| format!("stage {name} failed"))?;
    let seconds = t0.elapsed().as_secs_f64();
    match cached {
        Some(w) => log(&format!("{name}: cached (took {} when built)", human(w))),
        None => log(&format!("{name}: done in {}", human(seconds))),
    }
    t.timings.push(StageTiming {
        stage: name.into(),
        seconds,
        work_seconds: cached.unwrap_or(seconds),
        reused: cached.is_some(),
    });
    Ok(out)
}

/// Runs `f` under a progress bar (or a spinner when `bar` is false) that stays below the log
/// lines; `f` gets a log function and a `(done, total)` ticker.
pub fn with_progress<T>(
    show: bool,
    what: &str,
    bar: bool,
    log: &dyn Fn(&str),
    f: impl FnOnce(&dyn Fn(&str), &dyn Fn(u64, u64)) -> T,
) -> T {
    if !show {
        return f(log, &|_, _| {});
    }
    let pb = if bar {
        let b = ProgressBar::with_draw_target(Some(0), ProgressDrawTarget::stderr());
        b.set_style(
            ProgressStyle::with_template(
                "{prefix} [{bar:40}] {pos}/{len} runs {elapsed_precise} (about {eta} left)",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        b
    } else {
        let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        b.set_style(
            ProgressStyle::with_template("{prefix} {spinner} {elapsed_precise} {msg}")
                .expect("valid template"),
        );
        b.enable_steady_tick(std::time::Duration::from_millis(200));
        b
    };
    pb.set_prefix(what.to_string());
    let out = f(
        &|l: &str| {
            pb.set_message(l.to_string());
            pb.suspend(|| log(l));
        },
        &|d, t| {
            pb.set_length(t);
            pb.set_position(d);
        },
    );
    pb.finish_and_clear();
    out
}

/// The contender that measurably wins: faster with significance in at least one cell, slower with
/// significance in none; the best geometric mean among those.
pub fn winner(r: &Report) -> Option<String> {
    let mut best: Option<(f64, String)> = None;
    for c in r.plan.contenders.iter().skip(1) {
        let cells: Vec<_> = r.cells.iter().filter(|x| x.contender == c.name).collect();
        let cmp: Vec<_> = cells
            .iter()
            .filter_map(|x| x.tps_vs_baseline.as_ref())
            .collect();
        let faster = cmp.iter().any(|k| k.significant && k.ratio > 1.0);
        let slower = cmp.iter().any(|k| k.significant && k.ratio < 1.0);
        if !faster || slower {
            continue;
        }
        let g: Vec<f64> = r
            .geomeans
            .iter()
            .filter(|(n, _, _)| *n == c.name)
            .map(|(_, _, g)| *g)
            .collect();
        let score = crate::bench::stats::geomean(&g);
        if best.as_ref().is_none_or(|(s, _)| score > *s) {
            best = Some((score, c.name.clone()));
        }
    }
    best.map(|(_, n)| n)
}

/// The gains of `name` over the baseline, cell by cell.
pub fn gains(r: &Report, name: &str) -> Vec<Gain> {
    r.cells
        .iter()
        .filter(|c| c.contender == name)
        .filter_map(|c| {
            let k = c.tps_vs_baseline.as_ref()?;
            Some(Gain {
                workload: c.workload.clone(),
                threads: c.threads,
                ratio: k.ratio,
                ci: k.ratio_ci95,
                verdict: k.verdict.clone(),
            })
        })
        .collect()
}

/// Packages contender `name` of a finished run into `WORK/packages/`.
pub fn package_contender(
    work: &Path,
    outcome: &Outcome,
    report: Option<&Report>,
    name: &str,
) -> Result<Package> {
    let Some(c) = outcome.contenders.iter().find(|c| c.name == name) else {
        let names: Vec<&str> = outcome.contenders.iter().map(|c| c.name.as_str()).collect();
        bail!(
            "no variant '{name}' in the run in {}; it has: {}",
            work.display(),
            names.join(", ")
        );
    };
    if !c.binary.is_file() {
        bail!(
            "{} is gone; rerun `pgoforge run` to rebuild it",
            c.binary.display()
        );
    }
    let flavor = Flavor::detect(&c.binary)?;
    let layout = Layout::discover(&c.binary, None, Some(&outcome.source.dir));
    let mut profiles = Vec::new();
    if let Some(h) = &c.build.profile_hash {
        profiles.push(format!("compiler:{h}"));
    }
    if let Some(b) = &c.bolt {
        profiles.push(format!("bolt:{}", b.profile.meta.hash));
    }
    let version = format!("{}.{}.{}", flavor.major, flavor.minor, flavor.patch);
    let family = format!("{:?}", flavor.family).to_lowercase();
    let manifest = Manifest {
        name: format!("{family}-{version}-{}-{}", c.name, c.build.compiler.label()),
        server_version: flavor.version.clone(),
        variant: c.name.clone(),
        recipe: outcome.recipe.clone(),
        source: outcome.source.origin.clone(),
        source_hash: outcome.source.hash.clone(),
        compiler: c.build.compiler.version.clone(),
        cflags: c.build.flags.cflags.clone(),
        ldflags: c.build.flags.ldflags.clone(),
        cmake_defs: c.build.flags.cmake_defs.clone(),
        profiles,
        bolt_flags: c.bolt.as_ref().map(|b| b.flags.clone()).unwrap_or_default(),
        gains: report.map(|r| gains(r, name)).unwrap_or_default(),
        pgoforge_version: env!("CARGO_PKG_VERSION").into(),
        created: crate::profile::now_secs(),
        binary_note: String::new(),
    };
    package::package(&PackageRequest {
        binary: &c.binary,
        layout: &layout,
        manifest: &manifest,
        out_dir: &work.join("packages"),
    })
}

fn build_request<'a>(
    o: &'a Options,
    src: &'a Source,
    work: &'a Path,
    variant: Variant,
    profile: Option<&'a ProfileInput>,
) -> BuildRequest<'a> {
    BuildRequest {
        recipe: o.recipe,
        source: src,
        variant,
        compiler: o.compiler,
        profile,
        work_dir: work,
        jobs: 0,
        show_progress: o.show_progress,
    }
}

/// Runs the whole pipeline; returns what it made and the benchmark's report.
pub fn run(o: &Options, log: &dyn Fn(&str)) -> Result<(Outcome, Report)> {
    if o.variants.is_empty() {
        bail!("no variants to compare with the baseline");
    }
    if o.variants.iter().any(|v| v.stage == Stage::PgoGen) {
        bail!("pgo-gen is the instrumented build used for training, not a variant to compare; choose from pgo, pgo+lto, lto (each optionally +bolt)");
    }
    fs::create_dir_all(&o.work_dir)
        .with_context(|| format!("creating {}", o.work_dir.display()))?;
    let work = fs::canonicalize(&o.work_dir)?;
    let mut t = Tracker::open(&work, log)?;
    let mut warnings = Vec::new();
    let bolt_tool = if o.variants.iter().any(|v| v.bolt_ready) {
        Some(Bolt::find().context("a +bolt variant needs llvm-bolt: apt-get install bolt-22")?)
    } else {
        None
    };

    let src = timed(&mut t, log, "source", || {
        Ok((
            source::fetch(o.recipe, o.source.as_deref(), o.sha256.as_deref(), &work)?,
            None,
        ))
    })?;
    let build_one =
        |variant: Variant, profile: Option<&ProfileInput>| -> Result<(BuildOutput, Option<f64>)> {
            let b = build::build(&build_request(o, &src, &work, variant, profile))?;
            if !b.cached && b.attempts > 1 {
                log(&format!(
                    "build {variant}: resumed an unfinished build; {} in {} attempts",
                    human(b.seconds),
                    b.attempts
                ));
            }
            let cached = b.cached.then_some(b.seconds);
            Ok((b, cached))
        };
    let baseline_variant: Variant = "baseline".parse().expect("valid");
    let needs_profile = o.variants.iter().any(Variant::needs_profile);
    // A given profile is resolved and checked once; the space check and the builds use it.
    let given: Option<(ProfileInput, Option<Stored>)> = match &o.profile {
        Some(p) if needs_profile => {
            let p = fs::canonicalize(p).with_context(|| format!("--profile {}", p.display()))?;
            let stored = p.parent().and_then(|d| Stored::load(d).ok());
            if let Some(s) = &stored {
                check_belongs(s, &src.hash, &o.compiler.label())?;
            }
            Some((ProfileInput::from_path(p), stored))
        }
        _ => None,
    };
    // Builds not yet finished (those needing a profile not yet trained count as not finished).
    let finished = |v: Variant, p: Option<&ProfileInput>| {
        build::plan(&build_request(o, &src, &work, v, p))
            .map(|(_, d)| d.join("build.json").is_file())
            .unwrap_or(false)
    };
    let mut to_build = usize::from(!finished(baseline_variant, None));
    if o.profile.is_none() && needs_profile {
        to_build += usize::from(!finished("pgo-gen".parse().expect("valid"), None));
    }
    for &v in &o.variants {
        let p = if v.needs_profile() {
            given.as_ref().map(|(i, _)| i)
        } else {
            None
        };
        if v.needs_profile() && p.is_none() || !finished(v, p) {
            to_build += 1;
        }
    }
    deps::check_space(&work, to_build)?;
    let baseline = timed(&mut t, log, "build baseline", || {
        build_one(baseline_variant, None)
    })?;

    // The compiler profile: given, or trained on the instrumented build.
    let profile: Option<(ProfileInput, Option<Stored>)> = if !needs_profile {
        None
    } else if given.is_some() {
        given
    } else {
        let gen_variant: Variant = "pgo-gen".parse().expect("valid");
        let gen = timed(&mut t, log, "build pgo-gen", || {
            build_one(gen_variant, None)
        })?;
        let stored = t.stage(
            "train",
            &(&gen.key, &o.mix, o.bench.buffer_pool_mb),
            |s: &Stored| s.data().exists(),
            || {
                with_progress(o.show_progress, "training", false, log, |log, _| {
                    train::train(
                        &TrainRequest {
                            gen: &gen,
                            spec: server_spec(o.bench.buffer_pool_mb),
                            mix: &o.mix,
                            work_dir: &work,
                        },
                        log,
                    )
                })
            },
        )?;
        log(&format!(
            "train: profile {} ({} files, {} bytes)",
            stored.dir.display(),
            stored.meta.summary.files,
            stored.meta.summary.bytes
        ));
        Some((stored.input(), Some(stored)))
    };

    let mut contenders = vec![Built {
        name: "baseline".into(),
        binary: baseline.binary.clone(),
        build: baseline.clone(),
        bolt: None,
    }];
    for &v in &o.variants {
        let input = if v.needs_profile() {
            profile.as_ref().map(|(i, _)| i)
        } else {
            None
        };
        // One variant failing to build (LTO on a new compiler, say) leaves the others to compare;
        // a failed build is never cached, so a rerun tries it again.
        let b = match timed(&mut t, log, &format!("build {v}"), || build_one(v, input)) {
            Ok(b) => b,
            Err(e) => {
                let msg = format!("{v}: build failed, left out of the comparison: {e:#}");
                log(&msg);
                warnings.push(msg);
                continue;
            }
        };
        if v.needs_profile() && b.missing_profile_warnings > 0 {
            warnings.push(format!(
                "{v}: {} missing-profile warnings (functions or files without profile data); log {}",
                b.missing_profile_warnings,
                b.log.display()
            ));
        }
        if !v.bolt_ready {
            contenders.push(Built {
                name: v.to_string(),
                binary: b.binary.clone(),
                build: b,
                bolt: None,
            });
            continue;
        }
        let plain = Variant {
            bolt_ready: false,
            ..v
        };
        if !o.variants.contains(&plain) {
            // The bolt-ready build stands in for the plain variant (same code, relocations kept,
            // no hot/cold splitting), so BOLT's own share of the gain shows.
            contenders.push(Built {
                name: format!("{plain}-prebolt"),
                binary: b.binary.clone(),
                build: b.clone(),
                bolt: None,
            });
        }
        let bolt_tool = bolt_tool.as_ref().expect("found above");
        let bolted = t.stage(
            &format!("bolt {v}"),
            &(&b.key, &o.mix, &o.bolt_flags, &bolt_tool.llvm_bolt),
            |x: &BoltOutput| x.binary.is_file(),
            || {
                with_progress(o.show_progress, "BOLT", false, log, |log, _| {
                    bolt::optimize(
                        &BoltRequest {
                            binary: &b.binary,
                            bolt: bolt_tool,
                            spec: server_spec(o.bench.buffer_pool_mb),
                            mix: &o.mix,
                            work_dir: &work,
                            flags: o.bolt_flags.clone(),
                            source_hash: src.hash.clone(),
                            build_key: b.key.clone(),
                        },
                        log,
                    )
                })
            },
        );
        match bolted {
            Ok(x) => {
                if let Some(c) = &x.coverage {
                    log(&format!("bolt {v}: {c}"));
                }
                contenders.push(Built {
                    name: v.to_string(),
                    binary: x.binary.clone(),
                    build: b,
                    bolt: Some(x),
                })
            }
            Err(e) => {
                // BOLT failing leaves the unBOLTed build usable: compare that one.
                let msg = format!("{v}: BOLT failed, compared without it: {e:#}");
                log(&msg);
                warnings.push(msg);
                if o.variants.contains(&plain) {
                    continue;
                }
            }
        }
    }

    if contenders.len() < 2 {
        bail!(
            "no variant was built, nothing to compare with the baseline:\n{}",
            warnings.join("\n")
        );
    }
    let identities: Vec<(String, String)> = contenders
        .iter()
        .map(|c| (c.name.clone(), c.identity()))
        .collect();
    t.stage(
        "gate",
        &identities,
        |_: &Vec<Checksums>| true,
        || {
            let cands: Vec<(String, PathBuf)> = contenders[1..]
                .iter()
                .map(|c| (c.name.clone(), c.binary.clone()))
                .collect();
            let sums = gate::gate(
                &server_spec(512),
                &baseline.binary,
                &cands,
                &work,
                &GateWorkload::default(),
            )?;
            log(&format!(
                "gate: {} binaries leave the baseline's checksums",
                cands.len()
            ));
            Ok(sums)
        },
    )?;

    let b = &o.bench;
    let plan = Plan {
        contenders: contenders
            .iter()
            .map(|c| Contender {
                name: c.name.clone(),
                binary: c.binary.clone(),
                buffer_pool_mb: None,
            })
            .collect(),
        workloads: b.workloads.clone(),
        threads: b.threads.clone(),
        rounds: b.rounds,
        seconds: b.seconds,
        warmup_seconds: b.warmup_seconds,
        tables: b.tables,
        table_size: b.table_size,
        config: ServerConfig {
            buffer_pool_mb: b.buffer_pool_mb,
            ..ServerConfig::default()
        },
        pin: true,
        seed: 2026,
        // The binaries' identities: a rebuilt binary at the same path is a new benchmark.
        label: format!(
            "recipe {} source {} {}",
            o.recipe.name,
            &src.hash[..12.min(src.hash.len())],
            identities
                .iter()
                .map(|(n, i)| format!("{n}={i}"))
                .collect::<Vec<_>>()
                .join(" ")
        ),
    };
    let run_dir = work
        .join("runs")
        .join(format!("run-{}", inputs_hash(&plan)?));
    let run_dir = t.stage(
        "bench",
        &plan,
        |d: &PathBuf| report::build(d).is_ok(),
        || {
            // Resuming is always right here: the directory is named by the plan's hash.
            with_progress(o.show_progress, "benchmark", true, log, |log, tick| {
                bench_run::run_with_progress(&plan, &work, &run_dir, true, log, tick)
            })?;
            Ok(run_dir.clone())
        },
    )?;
    if o.cachegrind {
        let cg = CgPlan {
            contenders: plan.contenders.clone(),
            workloads: b.workloads.clone(),
            events: 0,
            warmup_events: 100,
            tables: 1,
            table_size: 10_000,
            config: ServerConfig {
                buffer_pool_mb: 256,
                ..ServerConfig::default()
            },
        };
        t.stage(
            "cachegrind",
            &(&cg, &plan.label),
            |n: &usize| cachegrind::read_records(&run_dir).is_ok_and(|r| r.len() == *n),
            || {
                with_progress(o.show_progress, "cachegrind", false, log, |log, _| {
                    Ok(cachegrind::measure(&cg, &work, &run_dir, true, log)?.len())
                })
            },
        )?;
    }
    let rep = timed(&mut t, log, "report", || {
        let r = report::build(&run_dir)?;
        report::write_all(&run_dir, &r)?;
        Ok((r, None))
    })?;
    let win = winner(&rep);
    let mut outcome = Outcome {
        recipe: o.recipe.name.clone(),
        source: src.clone(),
        contenders,
        profile: profile.and_then(|(_, s)| s),
        run_dir: run_dir.clone(),
        winner: win.clone(),
        package: None,
        warnings,
        timings: Vec::new(),
    };
    outcome.save(&work)?;
    match (&win, o.package) {
        (Some(w), true) => {
            let c = outcome
                .contenders
                .iter()
                .find(|c| &c.name == w)
                .expect("the winner is a contender");
            let pkg = t.stage(
                "package",
                &(c.identity(), &run_dir),
                |p: &Package| crate::source::sha256_file(&p.path).is_ok_and(|h| h == p.sha256),
                || package_contender(&work, &outcome, Some(&rep), w),
            )?;
            outcome.package = Some(pkg);
        }
        (None, true) => {
            let msg = "no variant measurably beat the baseline; nothing packaged (`pgoforge package NAME` packages one anyway)".to_string();
            log(&msg);
            outcome.warnings.push(msg);
        }
        _ => {}
    }
    outcome.timings = t.timings.clone();
    outcome.save(&work)?;
    Ok((outcome, rep))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::report::Cell;
    use crate::bench::stats::{describe, Comparison};

    fn report(cells: &[(&str, &str, f64, bool)]) -> Report {
        let c = |n: &str| Contender {
            name: n.into(),
            binary: "/x".into(),
            buffer_pool_mb: None,
        };
        let mut names = vec!["baseline"];
        for (n, ..) in cells {
            if !names.contains(n) {
                names.push(n);
            }
        }
        let cells: Vec<Cell> = cells
            .iter()
            .map(|&(n, w, ratio, significant)| Cell {
                contender: n.into(),
                workload: w.into(),
                threads: 4,
                tps: describe(&[1.0, 2.0]),
                p95_ms: describe(&[1.0, 2.0]),
                tps_vs_baseline: Some(Comparison {
                    ratio,
                    ratio_ci95: (ratio - 0.05, ratio + 0.05),
                    p_value: if significant { 0.01 } else { 0.5 },
                    significant,
                    verdict: String::new(),
                    warnings: Vec::new(),
                }),
                p95_vs_baseline: None,
                warnings: Vec::new(),
            })
            .collect();
        let mut geomeans = Vec::new();
        for n in &names[1..] {
            let r: Vec<f64> = cells
                .iter()
                .filter(|x| x.contender == *n)
                .map(|x| x.tps_vs_baseline.as_ref().unwrap().ratio)
                .collect();
            geomeans.push((n.to_string(), 4, crate::bench::stats::geomean(&r)));
        }
        Report {
            plan: Plan {
                contenders: names.iter().map(|n| c(n)).collect(),
                workloads: vec![TestName::OltpPointSelect],
                threads: vec![4],
                rounds: 5,
                seconds: 1,
                warmup_seconds: 0,
                tables: 1,
                table_size: 1,
                config: ServerConfig::default(),
                pin: false,
                seed: 1,
                label: String::new(),
            },
            environment: Default::default(),
            cells,
            geomeans,
            rounds_found: 5,
            cachegrind: Vec::new(),
        }
    }

    #[test]
    fn the_winner_is_measurably_faster_and_never_measurably_slower() {
        // lto has the best mean but loses significantly on one workload; pgo+bolt beats pgo.
        let r = report(&[
            ("pgo", "a", 1.20, true),
            ("pgo", "b", 1.01, false),
            ("pgo+bolt", "a", 1.25, true),
            ("pgo+bolt", "b", 1.05, true),
            ("lto", "a", 1.90, true),
            ("lto", "b", 0.90, true),
        ]);
        assert_eq!(winner(&r).as_deref(), Some("pgo+bolt"));
        let g = gains(&r, "pgo+bolt");
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].ratio, 1.25);
        // Nothing significant: no winner, nothing packaged.
        let r = report(&[("pgo", "a", 1.30, false), ("pgo+bolt", "a", 0.99, false)]);
        assert_eq!(winner(&r), None);
    }
}
