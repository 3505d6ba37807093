//! Benchmarks: running servers side by side ([`run`]), the statistics ([`stats`]) and the reports
//! ([`report`], [`html`]), and deterministic counts under valgrind ([`cachegrind`]).

pub mod cachegrind;
pub mod html;
pub mod report;
pub mod run;
pub mod stats;
