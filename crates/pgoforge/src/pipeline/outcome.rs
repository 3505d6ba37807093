//! What a run produced (`WORK/run.json`, read by `pgoforge package`): the contenders and how each
//! was made, the winner, the package, the warnings and the stage timings; and the rules that pick
//! the winner.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::state::StageTiming;
use crate::bench::report::Report;
use crate::builder::BuildOutput;
use crate::infra::exit::ExitStatus;
use crate::package::{self, Gain, Manifest, Package, PackageRequest};
use crate::profile::bolt::BoltOutput;
use crate::profile::Stored;
use crate::server::config::Engine;
use crate::server::{Flavor, Layout};
use crate::source::Source;

/// A binary in the comparison and how it was made.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct RunContender {
    /// The contender's name in the benchmark (`pgo+bolt`, `pgo-prebolt`, ...).
    pub name: String,
    pub binary: PathBuf,
    /// `None` for a binary given with `--binary` (compared as it is, never packaged).
    pub build: Option<BuildOutput>,
    pub bolt: Option<BoltOutput>,
    /// The SHA-256 of a `--binary` (its identity: the run did not make it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
}

impl RunContender {
    /// A server the run did not build (`--binary`, Debian's): compared as it is, its hash its
    /// identity.
    pub fn not_built(name: &str, binary: PathBuf) -> Result<RunContender> {
        Ok(RunContender {
            name: name.to_string(),
            sha256: Some(crate::infra::fs::sha256_file(&binary)?),
            binary,
            build: None,
            bolt: None,
        })
    }

    /// What distinguishes this binary from any other at the same path.
    pub fn identity(&self) -> String {
        let key = match (&self.build, &self.sha256) {
            (Some(b), _) => b.key.clone(),
            (None, Some(h)) => format!("sha256:{h}"),
            (None, None) => "unknown".into(),
        };
        match &self.bolt {
            Some(b) => format!("{key}+bolt:{}", b.profile.meta.hash),
            None => key,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Outcome {
    pub recipe: String,
    pub source: Source,
    pub contenders: Vec<RunContender>,
    pub profile: Option<Stored>,
    pub run_dir: PathBuf,
    /// The contender that measurably beat the baseline with the best geometric mean, if any.
    pub winner: Option<String>,
    pub package: Option<Package>,
    pub warnings: Vec<String>,
    pub timings: Vec<StageTiming>,
    /// The recipe as the run resolved it (the release pinned): what a package's rebuild
    /// sidecar carries (absent in runs recorded before 2026-12-05: the recipe is loaded again
    /// by name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipe_resolved: Option<crate::recipe::Recipe>,
    /// Where the profiles came from when the run took them from an earlier build
    /// (`--profile-from`); the package's manifest records it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_provenance: Option<crate::package::sidecar::ProfileProvenance>,
    /// The engine of the benchmark's tables (absent: InnoDB): a package of the run carries its
    /// plugin.
    #[serde(default, skip_serializing_if = "Engine::is_innodb")]
    pub engine: Engine,
}

impl Outcome {
    /// The finished run's exit status: success when a variant won; otherwise the gate's stop
    /// when it dropped a variant (which might have won), else "no winner".
    pub fn status(&self, r: &Report) -> ExitStatus {
        if self.winner.is_some() {
            ExitStatus::Success
        } else if r.gate.as_ref().is_some_and(|g| !g.regressions.is_empty()) {
            ExitStatus::GateStopped
        } else {
            ExitStatus::NoWinner
        }
    }
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

    pub fn save(&self, work: &Path) -> Result<()> {
        crate::infra::fs::write_json(&outcome_path(work), self)
    }

    /// The run's contender `name` names: itself, or in a buffer-pool sweep the contender a
    /// `NAME@bpN` of the benchmark serves (the package is the binary; the pool is a setting).
    pub fn contender(&self, name: &str) -> Result<&RunContender> {
        let find = |n: &str| self.contenders.iter().find(|c| c.name == n);
        match find(name).or_else(|| find(crate::bench::plan::split_pool(name).0)) {
            Some(c) => Ok(c),
            None => {
                let names: Vec<&str> = self.contenders.iter().map(|c| c.name.as_str()).collect();
                bail!(
                    "no variant '{name}' in the run; it has: {}",
                    names.join(", ")
                )
            }
        }
    }
}

/// The contender to package: the report's decision (it beat the baseline after Holm, lost
/// nowhere, has the best geometric mean; whether it also beat the runner-up is in the decision).
pub fn winner(r: &Report) -> Option<String> {
    r.decision.as_ref().and_then(|d| d.winner.clone())
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
                ci: k.shown_interval(),
                verdict: k.sentence(),
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
    let c = outcome
        .contender(name)
        .with_context(|| format!("packaging from {}", work.display()))?;
    if !c.binary.is_file() {
        bail!(
            "{} is gone; rerun `pgoforge run` to rebuild it",
            c.binary.display()
        );
    }
    let Some(build) = &c.build else {
        bail!(
            "{name} ({}) was given with --binary, not built by this run: there is no build to \
             package; package one of the run's variants",
            c.binary.display()
        );
    };
    let flavor = Flavor::detect(&c.binary)?;
    let layout = Layout::discover(&c.binary, None, Some(&outcome.source.dir));
    let mut profiles = Vec::new();
    if let Some(h) = &build.profile_hash {
        profiles.push(format!("compiler:{h}"));
    }
    if let Some(b) = &c.bolt {
        profiles.push(format!("bolt:{}", b.profile.meta.hash));
    }
    let version = format!("{}.{}.{}", flavor.major, flavor.minor, flavor.patch);
    // The CPU level it was compiled for, which its checks will demand of every machine (for
    // -march=native, this machine's instruction sets: the build ran here, build hosts never
    // take native builds).
    let level = build
        .variant
        .parse::<crate::builder::Variant>()
        .map_err(anyhow::Error::msg)?
        .codegen
        .cpu;
    let cpu = crate::package::cpu::CpuRequirement::of_this_machine(level)?;
    let family = format!("{:?}", flavor.family).to_lowercase();
    let manifest = Manifest {
        name: format!("{family}-{version}-{}-{}", c.name, build.compiler.label()),
        server_version: flavor.version.clone(),
        variant: c.name.clone(),
        recipe: outcome.recipe.clone(),
        source: outcome.source.origin.clone(),
        source_hash: outcome.source.hash.clone(),
        compiler: build.compiler.version.clone(),
        cflags: build.flags.compile_flags(),
        ldflags: build.flags.ldflags.clone(),
        cmake_defs: build.flags.cmake_defs.clone(),
        profiles,
        bolt_flags: c.bolt.as_ref().map(|b| b.flags.clone()).unwrap_or_default(),
        gains: report.map(|r| gains(r, name)).unwrap_or_default(),
        // A baseline the run did not build is Debian's server (`--baseline debian`).
        gains_against: outcome
            .contenders
            .first()
            .filter(|c| c.build.is_none())
            .map(|c| c.name.clone()),
        pgoforge_version: env!("CARGO_PKG_VERSION").into(),
        source_date_epoch: crate::package::reproducible::source_date_epoch(Some(
            &outcome.source.dir,
        )),
        binary_note: String::new(),
        // What was fetched (a --source-version, or a recipe pinning another version since, may
        // differ from the recipe now); runs recorded before the source carried it say it in
        // their origin.
        debian_source: outcome
            .source
            .debian
            .clone()
            .or_else(|| crate::source::debian_from_origin(&outcome.source.origin)),
        cpu,
        binary_sha256: String::new(),
        profile_provenance: outcome.profile_provenance.clone(),
        engine: outcome.engine,
        // Read from the packed binary by package().
        runtime_packages: Vec::new(),
    };
    let out_dir = package::packages_dir(work);
    let pkg = package::package(&PackageRequest {
        binary: &c.binary,
        layout: &layout,
        manifest: &manifest,
        out_dir: &out_dir,
    })?;
    write_sidecar(work, outcome, c, build, &pkg, &manifest)?;
    Ok(pkg)
}

/// The package's rebuild sidecar beside it (package/sidecar.rs): the resolved recipe, the
/// source's identity, the contender's compiler and BOLT profiles, the toolchain.
fn write_sidecar(
    work: &Path,
    outcome: &Outcome,
    c: &RunContender,
    build: &crate::builder::BuildOutput,
    pkg: &Package,
    manifest: &Manifest,
) -> Result<()> {
    let recipe = match &outcome.recipe_resolved {
        Some(r) => r.clone(),
        None => {
            let r = crate::recipe::Recipe::load(&outcome.recipe).with_context(|| {
                format!(
                    "the rebuild sidecar needs the run's recipe {}; rerun `pgoforge run` to \
                     record it",
                    outcome.recipe
                )
            })?;
            match &outcome.source.debian {
                Some(d) => r.with_source_version(&d.version)?,
                None => r,
            }
        }
    };
    let (compiler_profile, training) = match &build.profile_hash {
        Some(h) => {
            let (p, t) = profile_of(work, build, h)?;
            (Some(p), t)
        }
        None => (None, Vec::new()),
    };
    let fdata = c.bolt.as_ref().map(|b| b.profile.data());
    crate::package::sidecar::write(
        &crate::package::sidecar::SidecarInputs {
            package: pkg,
            recipe: &recipe,
            source: &outcome.source,
            build,
            compiler_profile: compiler_profile.as_ref(),
            training: &training,
            bolt: c
                .bolt
                .as_ref()
                .zip(fdata.as_deref())
                .map(|(b, f)| (f, b.flags.as_slice())),
            bolt_ready: c.bolt.as_ref().map(|b| b.input.as_path()),
            epoch: manifest.source_date_epoch,
        },
        &manifest.name,
        &package::packages_dir(work),
    )?;
    Ok(())
}

/// The profile a build used, with the hash its key holds — in the store (with what its training
/// ran), or where `--profile` named it (training not known).
fn profile_of(
    work: &Path,
    build: &crate::builder::BuildOutput,
    hash: &str,
) -> Result<(crate::builder::ProfileInput, Vec<String>)> {
    let stored = work.join("profiles").join(&hash[..16.min(hash.len())]);
    let candidates = crate::profile::Stored::load(&stored)
        .ok()
        .map(|s| (s.input(), s.meta.training))
        .into_iter()
        .chain(
            build
                .profile_path
                .clone()
                .map(|p| (crate::builder::ProfileInput::from_path(p), Vec::new())),
        );
    for c in candidates {
        if c.0.content_hash().is_ok_and(|h| h == hash) {
            return Ok(c);
        }
    }
    bail!(
        "the profile {} the packaged build used is neither in {} nor where it was given; the \
         rebuild sidecar must carry it (rerun `pgoforge run`, which trains it again)",
        &hash[..16.min(hash.len())],
        stored.display()
    )
}

pub fn identities(contenders: &[RunContender]) -> Vec<(String, String)> {
    contenders
        .iter()
        .map(|c| (c.name.clone(), c.identity()))
        .collect()
}

/// Every contender but the baseline, as the gate's steps take them.
pub fn candidates(contenders: &[RunContender]) -> Vec<(String, std::path::PathBuf)> {
    contenders[1..]
        .iter()
        .map(|c| (c.name.clone(), c.binary.clone()))
        .collect()
}
