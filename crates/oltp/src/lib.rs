//! `oltp`: sysbench's OLTP workloads, natively.
//!
//! A workload engine that reproduces sysbench 1.0.20's `oltp_*`, `select_random_*` and
//! `bulk_insert` tests — schema, statement texts, random distributions, counting rules, error
//! policy, timing and report layout — over its own lean MySQL protocol client. It knows nothing
//! about builds; the pgoforge pipeline calls [`runner::run`] and gets a typed [`RunResult`].
//!
//! Modules follow the life of a run: [`settings`] (what to do), [`schema`] (prepare, prewarm,
//! cleanup), [`workload`] (what one event executes), [`rng`] (sysbench's draws), [`runner`] (driving
//! connections and timing), [`histogram`] and [`result`] (what was measured), [`report`] (sysbench's
//! text), and [`proto`] (the wire protocol).

pub mod affinity;
pub mod histogram;
pub mod proto;
pub mod replay;
pub mod report;
pub mod result;
pub mod rng;
pub mod runner;
pub mod schema;
pub mod script;
pub mod settings;
pub mod tables;
pub mod tpcc;
pub mod workload;

pub use result::RunResult;
pub use runner::{run, Observer, Quiet, RunError};
pub use settings::{Settings, TestName};
