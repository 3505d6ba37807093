//! Benchmarks: running servers side by side ([`run`]) for a fixed number of rounds or until the
//! intervals are narrow enough ([`adaptive`]), the statistics ([`stats`], and the round orders
//! [`order`]: both the pure crate crates/stats, re-exported here under their old paths) and the reports
//! ([`report`], rendered by [`export`]), the machine's noise floor measured A/A ([`calibrate`]),
//! and deterministic counts under valgrind ([`cachegrind`]); what a benchmark measures is one
//! [`spec::BenchSpec`].

pub mod adaptive;
pub mod budget;
pub mod cache_probe;
pub mod cachegrind;
pub mod calibrate;
pub mod client;
pub mod design;
pub mod environment;
pub mod estimate;
pub mod export;
pub mod hot_functions;
pub mod load;
pub mod measure;
pub mod network;
pub mod plan;
pub mod pool;
pub mod remote;
pub mod report;
pub mod run;
pub mod run_dir;
pub mod saturate;
pub mod spec;
pub mod steal;

pub use ::stats;
pub use ::stats::order;
