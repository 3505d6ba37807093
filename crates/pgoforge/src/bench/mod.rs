//! Benchmarks: running servers side by side ([`run`]), the statistics ([`stats`]) and the reports
//! ([`report`], [`html`]).

pub mod html;
pub mod report;
pub mod run;
pub mod stats;
