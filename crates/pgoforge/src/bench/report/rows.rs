//! The rows of report.json that were tuples before they had names: a contender's geometric mean,
//! the winner against the runner-up on one cell, one round's order. Each is stored as the array it
//! always was (docs/FORMATS.md), so reports written before keep their bytes.

use serde::{Deserialize, Serialize};

use crate::bench::stats::Comparison;

/// One contender's geometric mean of TPS ratios over the workloads, at one thread count. Stored
/// in report.json as the array `[contender, threads, ratio]` it has always been.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "(String, u32, f64)", into = "(String, u32, f64)")]
pub struct Geomean {
    pub contender: String,
    /// The cells' thread count; 0 when the counts were chosen per workload (one mean over all).
    pub threads: u32,
    pub ratio: f64,
}

impl Geomean {
    /// "at 4 threads", or "at the threads chosen per workload".
    pub fn at(&self) -> String {
        match self.threads {
            0 => "at the threads chosen per workload".into(),
            t => format!("at {t} threads"),
        }
    }
}

impl From<(String, u32, f64)> for Geomean {
    fn from((contender, threads, ratio): (String, u32, f64)) -> Geomean {
        Geomean {
            contender,
            threads,
            ratio,
        }
    }
}

impl From<Geomean> for (String, u32, f64) {
    fn from(g: Geomean) -> Self {
        (g.contender, g.threads, g.ratio)
    }
}

/// The winner against the runner-up on one cell. Stored as `[workload, threads, comparison]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "(String, u32, Comparison)", into = "(String, u32, Comparison)")]
pub struct CellComparison {
    pub workload: String,
    pub threads: u32,
    pub comparison: Comparison,
}

impl From<(String, u32, Comparison)> for CellComparison {
    fn from((workload, threads, comparison): (String, u32, Comparison)) -> CellComparison {
        CellComparison {
            workload,
            threads,
            comparison,
        }
    }
}

impl From<CellComparison> for (String, u32, Comparison) {
    fn from(c: CellComparison) -> Self {
        (c.workload, c.threads, c.comparison)
    }
}

/// The order the contenders ran in during one round. Stored as `[round, [names...]]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(from = "(u32, Vec<String>)", into = "(u32, Vec<String>)")]
pub struct RoundOrder {
    pub round: u32,
    pub contenders: Vec<String>,
}

impl From<(u32, Vec<String>)> for RoundOrder {
    fn from((round, contenders): (u32, Vec<String>)) -> RoundOrder {
        RoundOrder { round, contenders }
    }
}

impl From<RoundOrder> for (u32, Vec<String>) {
    fn from(o: RoundOrder) -> Self {
        (o.round, o.contenders)
    }
}
