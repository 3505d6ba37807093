//! The correctness gate: an optimized binary must compute what the baseline computes. The quick
//! gate (here): the same deterministic single-connection write workload (fixed seed) runs on each
//! binary from the same data; the tables' CHECKSUM TABLE values must be equal. Then, for recipes
//! that name a test subset, the server's own regression tests ([`mtr`]).

pub mod mtr;

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use oltp::settings::{Settings, TestName};
use serde::{Deserialize, Serialize};

use crate::infra::exit::Stop;
use crate::server::{Server, ServerSpec};

/// How much the gate checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GateMode {
    /// The seeded write workload and CHECKSUM TABLE only.
    Quick,
    /// Quick, then the recipe's curated MTR subset (minutes per binary).
    Mtr,
    /// Quick, then the recipe's whole MTR suites.
    Full,
}

impl std::fmt::Display for GateMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            GateMode::Quick => "quick",
            GateMode::Mtr => "mtr",
            GateMode::Full => "full",
        })
    }
}

impl std::str::FromStr for GateMode {
    type Err = String;
    fn from_str(s: &str) -> Result<GateMode, String> {
        match s {
            "quick" => Ok(GateMode::Quick),
            "mtr" => Ok(GateMode::Mtr),
            "full" => Ok(GateMode::Full),
            _ => Err(format!("unknown gate '{s}'; choose quick, mtr or full")),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checksums {
    pub binary: PathBuf,
    /// (table, CHECKSUM TABLE value)
    pub tables: Vec<(String, String)>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GateWorkload {
    pub tables: u32,
    pub table_size: u64,
    pub events: u64,
    pub seed: u64,
}

impl Default for GateWorkload {
    fn default() -> Self {
        GateWorkload {
            tables: 2,
            table_size: 2000,
            events: 2000,
            seed: 42,
        }
    }
}

/// Runs the deterministic workload on `binary` and returns the table checksums.
pub fn checksums(
    spec: &ServerSpec,
    binary: &Path,
    dir: &Path,
    w: &GateWorkload,
) -> Result<Checksums> {
    let mut spec = spec.clone();
    spec.binary = binary.to_path_buf();
    // A gate killed mid-way leaves its scratch instance (its server died with it; the work-dir
    // lock keeps other pgoforges out): it is the gate's own, so it is cleared, not reported.
    if dir.exists() {
        fs::remove_dir_all(dir)
            .with_context(|| format!("removing {}, left by an interrupted gate", dir.display()))?;
    }
    let result = (|| -> Result<Checksums> {
        let mut srv = Server::create(&spec, dir)?;
        let mut s = Settings::new(TestName::OltpReadWrite);
        s.conn = srv.state.conn_settings();
        // The tables in the run's engine: on MyRocks the gate checks MyRocks' answers.
        if !spec.config.engine.is_innodb() {
            s.schema.storage_engine = spec.config.engine.name().to_string();
        }
        s.schema.tables = w.tables;
        s.schema.table_size = w.table_size;
        s.rand.seed = w.seed;
        s.threads = 1;
        s.time_s = 0;
        s.events = w.events;
        oltp::schema::prepare(&s, &|_| {})?;
        let r = oltp::run(&s, &mut oltp::Quiet).map_err(|e| anyhow::anyhow!("{e}"))?;
        if r.transactions != w.events {
            bail!(
                "the gate workload finished {} of {} transactions",
                r.transactions,
                w.events
            );
        }
        let mut root = srv.state.root()?;
        let mut tables = Vec::new();
        for t in 1..=w.tables {
            let name = format!("sbtest{t}");
            let rows = root.query_rows(&format!("CHECKSUM TABLE sbtest.{name}"))?;
            let sum = rows
                .first()
                .and_then(|r| r.get(1).cloned().flatten())
                .context("CHECKSUM TABLE returned nothing")?;
            tables.push((name, sum));
        }
        srv.stop()?;
        Ok(Checksums {
            binary: binary.to_path_buf(),
            tables,
        })
    })();
    let _ = fs::remove_dir_all(dir);
    result.with_context(|| format!("running the correctness workload on {}", binary.display()))
}

/// Compares every candidate with the baseline; stops at the first mismatch, showing both.
pub fn gate(
    spec: &ServerSpec,
    baseline: &Path,
    candidates: &[(String, PathBuf)],
    work: &Path,
    w: &GateWorkload,
) -> Result<Vec<Checksums>> {
    let dir = work.join("gate");
    let base = checksums(spec, baseline, &dir.join("baseline"), w)?;
    let mut all = vec![base.clone()];
    for (i, (name, bin)) in candidates.iter().enumerate() {
        let c = checksums(spec, bin, &dir.join(format!("candidate{i}")), w)?;
        if c.tables != base.tables {
            let show = |x: &Checksums| {
                x.tables
                    .iter()
                    .map(|(t, s)| format!("{t}={s}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            return Err(Stop::GateStopped {
                variants: vec![name.clone()],
                message: format!(
                    "correctness gate failed: {name} ({}) computes different data than the baseline ({}):\n  baseline: {}\n  {name}: {}",
                    bin.display(),
                    baseline.display(),
                    show(&base),
                    show(&c)
                ),
            }
            .into());
        }
        all.push(c);
    }
    Ok(all)
}
