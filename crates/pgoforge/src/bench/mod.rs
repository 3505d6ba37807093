//! Benchmarks: running servers side by side ([`run`]), the statistics ([`stats`]) and the reports
//! ([`report`], rendered by [`export`]), and deterministic counts under valgrind ([`cachegrind`]); what a benchmark
//! measures is one [`spec::BenchSpec`].

pub mod cachegrind;
pub mod export;
pub mod load;
pub mod report;
pub mod run;
pub mod spec;
pub mod stats;
