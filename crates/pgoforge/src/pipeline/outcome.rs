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
use crate::package::{self, Gain, Manifest, Package, PackageRequest};
use crate::profile::bolt::BoltOutput;
use crate::profile::Stored;
use crate::server::{Flavor, Layout};
use crate::source::Source;

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
    pub fn identity(&self) -> String {
        match &self.bolt {
            Some(b) => format!("{}+bolt:{}", self.build.key, b.profile.meta.hash),
            None => self.build.key.clone(),
        }
    }
}

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

    pub fn save(&self, work: &Path) -> Result<()> {
        crate::infra::fs::write_json(&outcome_path(work), self)
    }

    pub fn contender(&self, name: &str) -> Result<&Built> {
        match self.contenders.iter().find(|c| c.name == name) {
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

/// The contender that measurably wins: faster with significance in at least one cell, slower with
/// significance in none; the best geometric mean among those.
pub fn winner(r: &Report) -> Option<String> {
    let mut best: Option<(f64, String)> = None;
    for c in r.plan.contenders.iter().skip(1) {
        let cmp: Vec<_> = r
            .cells
            .iter()
            .filter(|x| x.contender == c.name)
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
        created: crate::infra::time::now_secs(),
        binary_note: String::new(),
    };
    package::package(&PackageRequest {
        binary: &c.binary,
        layout: &layout,
        manifest: &manifest,
        out_dir: &package::packages_dir(work),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::report::Cell;
    use crate::bench::run::{Contender, Plan};
    use crate::bench::spec::BenchSpec;
    use crate::bench::stats::{describe, Comparison};
    use crate::server::ServerConfig;
    use oltp::settings::TestName;

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
                    verdict: crate::bench::stats::Verdict::NoSignificantDifference,
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
                spec: BenchSpec {
                    workloads: vec![TestName::OltpPointSelect],
                    threads: vec![4],
                    rounds: 5,
                    seconds: 1,
                    warmup_seconds: 0,
                    tables: 1,
                    table_size: 1,
                },
                config: ServerConfig::default(),
                pin: false,
                seed: 1,
                label: String::new(),
                order_scheme: 0,
            },
            environment: Default::default(),
            cells,
            geomeans,
            rounds_found: 5,
            cachegrind: Vec::new(),
            orders: Vec::new(),
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
