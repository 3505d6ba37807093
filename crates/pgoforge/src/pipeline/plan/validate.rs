//! Everything that can be wrong with a run request, found before anything runs, as one typed
//! error per rule (exit status 2: usage).

use std::path::PathBuf;

use super::{Env, PlannedContender, RunRequest};
use crate::builder::codegen::CpuLevel;
use crate::builder::{PgoPhase, Variant};
use crate::gate::GateMode;

#[derive(Debug, PartialEq, thiserror::Error)]
pub enum PlanError {
    #[error("no variants to compare with the baseline")]
    NoVariants,
    #[error("variant {0} is listed twice")]
    Twice(Variant),
    #[error("pgo-gen and cs-pgo-gen are the instrumented builds used for training, not variants to compare; choose from pgo, pgo+lto, lto, cs-pgo+lto (each optionally +bolt)")]
    Instrumented,
    #[error("variant {variant} is context-sensitive PGO, which only clang has; add --compiler clang, or leave {variant} out for {compiler}")]
    CsPgoNeedsClang { variant: Variant, compiler: String },
    /// The benchmark's settings (rounds, seconds, threads...), as `BenchSpec::check` words it.
    #[error("{0}")]
    Bench(String),
    /// The dataset or the servers do not fit this machine, as `bench::budget::check` words it.
    #[error("{0}")]
    Budget(String),
    #[error("--mix has no phases")]
    EmptyMix,
    /// A mix that cannot run, as `Mix::check` words it.
    #[error("{0}")]
    Mix(String),
    #[error("training mix {0} is listed twice")]
    MixTwice(String),
    #[error("variant {0} in a train × evaluate matrix: each mix gets its own build of each variant, and +bolt, cs-pgo and variants with their own code generation (+O3, a CPU level, +native or --cpu-level: each trains its own instrumented build) are not built per mix yet; use pgo, pgo+lto or lto")]
    MatrixVariant(Variant),
    #[error("variant {variant}: {reason}; drop one of the two")]
    CpuLevel { variant: Variant, reason: String },
    #[error("--profile gives one profile, a train × evaluate matrix trains one per mix; drop one of --profile and --train-mixes")]
    MatrixWithProfile,
    #[error("--gate {gate}: recipe {recipe} names no MTR tests (no [mtr] section); add one to a recipe that extends it, or use --gate quick")]
    NoMtrTests { gate: GateMode, recipe: String },
    #[error("--mtr-suite names MTR tests, but --gate quick runs none; drop one of them")]
    MtrSuiteWithQuickGate,
    #[error("--mtr-suite is empty; name tests as suite.test, comma-separated")]
    EmptyMtrSuite,
    #[error("--rounds {rounds}: this run makes {comparisons} comparisons (variants × workloads × thread counts), and the exact test needs at least {needed} paired rounds to show anything at their level; give --rounds {needed} or more, leave --rounds out (the plan then picks enough), or pass --allow-few-rounds for a smoke run whose report cannot call anything faster")]
    TooFewRounds {
        rounds: u32,
        comparisons: usize,
        needed: usize,
    },
    #[error("a +bolt variant needs llvm-bolt; {hint}")]
    NoBolt { hint: String },
    #[error("--profile {} does not exist (give a gcda directory or a .profdata file)", .0.display())]
    NoProfile(PathBuf),
    #[error("--sweep-buffer-pool-mb in a train × evaluate matrix: both name every contender anew (VARIANT@MIX, NAME@bpN), and a matrix's question is the training mix; run the sweep on the matrix's winner alone")]
    SweepInMatrix,
    /// A sweep that cannot run, as `bench::plan::sweep_refusal` words it.
    #[error("{0}")]
    Sweep(String),
    #[error("--binary {0}=...: the run already has a contender named {0}; name it otherwise")]
    NameTaken(String),
    #[error("--baseline debian compares with Debian's own server of the built release, and this run has none: {0}")]
    NoDebianBaseline(&'static str),
    #[error("--binary {name}={}: no such file (give the path of a server binary, e.g. /usr/sbin/mariadbd)", .path.display())]
    NoSuchBinary { name: String, path: PathBuf },
}

/// The first rule `req` breaks on this machine (`env`), if any.
pub(super) fn check(req: &RunRequest, env: &Env) -> Result<(), PlanError> {
    if req.variants.is_empty() {
        return Err(PlanError::NoVariants);
    }
    for (i, v) in req.variants.iter().enumerate() {
        if req.variants[..i].contains(v) {
            return Err(PlanError::Twice(*v));
        }
    }
    if req.variants.iter().any(Variant::instrumented) {
        return Err(PlanError::Instrumented);
    }
    if let Some(v) = req
        .variants
        .iter()
        .find(|v| v.phase == PgoPhase::CsUse)
        .filter(|_| req.compiler.family != crate::toolchain::FlagFamily::Clang)
    {
        return Err(PlanError::CsPgoNeedsClang {
            variant: *v,
            compiler: req.compiler.label(),
        });
    }
    req.bench.check().map_err(PlanError::Bench)?;
    if req.mixes.is_empty() || req.mixes.iter().any(|m| m.mix.phases.is_empty()) {
        return Err(PlanError::EmptyMix);
    }
    for m in &req.mixes {
        m.mix.check().map_err(PlanError::Mix)?;
    }
    for (i, m) in req.mixes.iter().enumerate() {
        if req.mixes[..i].iter().any(|x| x.name == m.name) {
            return Err(PlanError::MixTwice(m.name.clone()));
        }
    }
    if req.is_matrix() {
        if let Some(v) = req.variants.iter().find(|v| {
            v.bolt_ready
                || v.phase == PgoPhase::CsUse
                || (!v.codegen.is_default() && v.needs_profile())
        }) {
            return Err(PlanError::MatrixVariant(*v));
        }
        if req.profile.is_some() {
            return Err(PlanError::MatrixWithProfile);
        }
    }
    if !req.baseline.is_build() {
        if req.distro.is_none() {
            return Err(PlanError::NoDebianBaseline(
                "it is left out with --no-distro, with --matrix, with --source (not Debian's \
                 source), or by a --binary named debian; drop that, or leave --baseline out",
            ));
        }
        if !req.sweep_buffer_pool_mb.is_empty() {
            return Err(PlanError::NoDebianBaseline(
                "a sweep compares each pool's contenders with that pool's built baseline; run \
                 the sweep without --baseline debian",
            ));
        }
    }
    if req.gate != GateMode::Quick && req.recipe.mtr.is_none() {
        return Err(PlanError::NoMtrTests {
            gate: req.gate,
            recipe: req.recipe.name.clone(),
        });
    }
    if req.gate == GateMode::Quick && req.mtr_tests.is_some() {
        return Err(PlanError::MtrSuiteWithQuickGate);
    }
    if req.mtr_tests.as_ref().is_some_and(Vec::is_empty) {
        return Err(PlanError::EmptyMtrSuite);
    }
    if req.variants.iter().any(|v| v.bolt_ready) && env.bolt.is_none() {
        return Err(PlanError::NoBolt {
            hint: crate::infra::tools::install_hint("llvm-bolt"),
        });
    }
    let needs_profile = req.variants.iter().any(Variant::needs_profile);
    if let Some(p) = req.profile.as_ref().filter(|_| needs_profile) {
        if !p.exists() {
            return Err(PlanError::NoProfile(p.clone()));
        }
    }
    Ok(())
}

/// The variants built for `level` (`--cpu-level`): each takes the level into its name
/// (`pgo+lto+v3`), so what a contender was compiled for is never hidden; a variant that names
/// another level already is refused.
pub(super) fn at_cpu_level(
    variants: &[Variant],
    level: Option<CpuLevel>,
) -> Result<Vec<Variant>, PlanError> {
    let Some(level) = level else {
        return Ok(variants.to_vec());
    };
    variants
        .iter()
        .map(|&v| {
            let codegen = v
                .codegen
                .at_level(level)
                .map_err(|reason| PlanError::CpuLevel { variant: v, reason })?;
            Ok(Variant { codegen, ..v })
        })
        .collect()
}

/// The servers the run did not build (`--binary`): names not taken, binaries that exist.
pub(super) fn check_outside(
    req: &RunRequest,
    contenders: &[PlannedContender],
) -> Result<(), PlanError> {
    if req.distro.is_some() {
        let name = crate::source::distro::NAME;
        if contenders.iter().any(|c| c.name == name) || req.outside.iter().any(|o| o.name == name) {
            return Err(PlanError::NameTaken(name.into()));
        }
    }
    for o in &req.outside {
        let control = req.aa && o.name == crate::bench::plan::AA_CONTROL;
        if o.name == "baseline" || control || contenders.iter().any(|c| c.name == o.name) {
            return Err(PlanError::NameTaken(o.name.clone()));
        }
        if !o.binary.is_file() {
            return Err(PlanError::NoSuchBinary {
                name: o.name.clone(),
                path: o.binary.clone(),
            });
        }
    }
    Ok(())
}

/// A buffer-pool sweep the run can make: not in a matrix (whose contenders are already named
/// by their training mix), each size once, and no contender named like another pool's.
pub(super) fn check_sweep(
    req: &RunRequest,
    contenders: &[PlannedContender],
) -> Result<(), PlanError> {
    if req.sweep_buffer_pool_mb.is_empty() {
        return Ok(());
    }
    if req.is_matrix() {
        return Err(PlanError::SweepInMatrix);
    }
    let outside = req.outside_names();
    let names = contenders
        .iter()
        .map(|c| c.name.as_str())
        .chain(outside.iter().map(String::as_str));
    match crate::bench::plan::sweep_refusal(names, &req.sweep_buffer_pool_mb) {
        Some(e) => Err(PlanError::Sweep(e)),
        None => Ok(()),
    }
}
