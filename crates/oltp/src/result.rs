//! The typed result of a run: every counter, the latency figures, the interval series, the
//! settings and the server it ran against. Training and benchmarking consume this directly.

use serde::{Deserialize, Serialize};

use crate::settings::Settings;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Queries {
    pub read: u64,
    pub write: u64,
    pub other: u64,
    pub total: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HdrPercentiles {
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

/// Latencies in milliseconds.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub min: f64,
    pub avg: f64,
    pub max: f64,
    pub sum: f64,
    /// The `--percentile` value from sysbench's log histogram (None when `--percentile=0`).
    pub percentile: Option<f64>,
    /// Exact-to-3-digits percentiles from an HDR histogram.
    pub hdr: HdrPercentiles,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Fairness {
    pub events_avg: f64,
    pub events_stddev: f64,
    pub time_avg_s: f64,
    pub time_stddev_s: f64,
}

/// One `--report-interval` line.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// Seconds since the start of measurement, as printed ("[ 3s ]").
    pub at_s: f64,
    pub threads: u32,
    pub tps: f64,
    pub qps: f64,
    pub reads_per_s: f64,
    pub writes_per_s: f64,
    pub others_per_s: f64,
    /// The interval's `--percentile` latency, ms.
    pub latency_ms: f64,
    pub errors_per_s: f64,
    pub reconnects_per_s: f64,
    /// `--rate` mode only.
    pub queue_length: Option<u64>,
    pub concurrency: Option<u64>,
}

/// Per connection, for the fairness figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadStats {
    pub events: u64,
    pub time_s: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerSide {
    pub version: String,
    /// "unix-socket" or "tcp".
    pub transport: String,
    pub endpoints: Vec<String>,
    /// We never negotiate TLS; recorded so results say so explicitly.
    pub tls: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    pub tool: String,
    pub test: String,
    pub settings: Settings,
    /// The seed actually used (the clock's when `--rand-seed=0`).
    pub seed: u64,
    pub server: ServerSide,
    pub queries: Queries,
    pub transactions: u64,
    pub ignored_errors: u64,
    pub reconnects: u64,
    /// Seconds of measurement (warm-up excluded).
    pub total_time_s: f64,
    pub latency: Latency,
    pub fairness: Fairness,
    pub threads: Vec<ThreadStats>,
    pub intervals: Vec<Interval>,
    /// Non-empty buckets of sysbench's histogram: (bucket value in ms, count).
    pub histogram: Vec<(f64, u64)>,
    /// False when the run ended early on an error; the figures cover what finished.
    pub complete: bool,
    /// A replay's own counts (absent for the other tests).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<crate::replay::ReplayCounts>,
}

impl RunResult {
    pub fn tps(&self) -> f64 {
        per_sec(self.transactions, self.total_time_s)
    }

    pub fn qps(&self) -> f64 {
        per_sec(self.queries.total, self.total_time_s)
    }
}

pub fn per_sec(n: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        n as f64 / secs
    } else {
        0.0
    }
}
