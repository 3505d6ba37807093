//! How long a benchmark will take, told before it starts: the part of a run's time its flags
//! decide (`--rounds`, `--time`, `--warmup`, the workloads, the contenders), and on a 2-core machine
//! the largest part of a default run after the builds.
//!
//! The rates are fitted to MySQL 9.7's sliced runs on the AMD instance (2026-12-02/03): the
//! one-variant clang run (2 servers × 4 cells × 8 rounds: 1 692 s) and the BOLT run (3 × 2 × 12:
//! 1 963 s) give 0.6 s per measured run beyond its warm-up and measured seconds (connections, the
//! round trip, recording) and 3.3 s per server start (the datadir copy, the start itself); the
//! prewarm (server/prewarm.rs) adds about 5 s per start on MySQL's default dataset. The six-server
//! GCC run took 10 % longer than this predicts (8 372 s against 7 614 s): an estimate, not a promise.

use std::time::Duration;

use super::spec::BenchSpec;

/// Per measured run, beyond its warm-up and measured seconds.
const PER_RUN_S: f64 = 0.6;
/// Per server start: the template copied and the server started (fitted)…
const START_S: f64 = 3.3;
/// …and its buffer pool prewarmed (measured on MySQL's default dataset, beside a build).
const PREWARM_S: f64 = 5.0;
const PER_START_S: f64 = START_S + PREWARM_S;

/// Steps the thread probe takes per workload on average (most settle at the first count; a
/// fast point select takes a second).
const PROBE_STEPS: f64 = 1.5;

/// The benchmark's expected wall time with `servers` contenders (the A/A control counted), for
/// its planned rounds, the thread probe included.
pub fn wall_time(spec: &BenchSpec, servers: usize) -> Duration {
    let cells = spec.cells().len() as f64;
    let rounds = f64::from(spec.rounds);
    let per_run = (spec.warmup_seconds + spec.seconds) as f64 + PER_RUN_S;
    Duration::from_secs_f64(
        rounds * servers as f64 * (cells * per_run + PER_START_S) + probe_s(spec, servers),
    )
}

/// The thread probe before round 1 ([`super::saturate`]): every server but the A/A control
/// started once, each workload measured for a short run per step.
fn probe_s(spec: &BenchSpec, servers: usize) -> f64 {
    use super::saturate::{PROBE_SECONDS, PROBE_WARMUP_SECONDS};
    if !spec.saturate || spec.threads_per_workload() {
        return 0.0;
    }
    let probed = servers.saturating_sub(1).max(1) as f64;
    let workloads = spec
        .workloads
        .iter()
        .filter(|w| **w != oltp::settings::TestName::Replay)
        .count() as f64;
    let run = (spec.warmup_seconds.min(PROBE_WARMUP_SECONDS) + spec.seconds.min(PROBE_SECONDS))
        as f64
        + PER_RUN_S;
    probed * (workloads * PROBE_STEPS * run + PER_START_S)
}

/// "48 runs (4 servers × 1 cell × 12 rounds) of 20 s after 5 s of warm-up: about 22 min".
pub fn sentence(spec: &BenchSpec, servers: usize) -> String {
    let cells = spec.cells().len();
    format!(
        "{} runs ({servers} servers × {cells} cell{} × {} rounds) of {} s after {} s of warm-up: \
         about {}",
        servers * cells * spec.rounds as usize,
        if cells == 1 { "" } else { "s" },
        spec.rounds,
        spec.seconds,
        spec.warmup_seconds,
        crate::infra::time::human(wall_time(spec, servers).as_secs_f64())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(workloads: usize, rounds: u32) -> BenchSpec {
        let mut s = BenchSpec::standard();
        s.workloads.truncate(workloads);
        s.rounds = rounds;
        // The fitted runs had their threads given.
        s.saturate = false;
        s
    }

    #[test]
    fn the_thread_probe_adds_a_short_run_per_workload_and_probed_server() {
        let given = spec(5, 8);
        let mut auto = given.clone();
        auto.saturate = true;
        // 4 servers, one the A/A control: 3 probed × (5 workloads × 1.5 steps × 4.6 s + 8.3 s).
        let extra = wall_time(&auto, 4).as_secs_f64() - wall_time(&given, 4).as_secs_f64();
        assert!(
            (extra - 3.0 * (5.0 * 1.5 * 4.6 + 8.3)).abs() < 1e-6,
            "{extra}"
        );
    }

    #[test]
    fn the_fitted_runs_come_out_near_their_measured_times() {
        // Without the prewarm those runs had; within 2 % of each.
        let no_prewarm = |s: &BenchSpec, n| {
            wall_time(s, n).as_secs_f64() - PREWARM_S * (n as f64) * f64::from(s.rounds)
        };
        let one_variant = no_prewarm(&spec(4, 8), 2);
        assert!((one_variant / 1692.0 - 1.0).abs() < 0.02, "{one_variant}");
        let bolt = no_prewarm(&spec(2, 12), 3);
        assert!((bolt / 1963.0 - 1.0).abs() < 0.02, "{bolt}");
    }

    #[test]
    fn the_default_mysql_run_and_its_sentence() {
        // Baseline, A/A control, pgo+lto and its BOLTed binary; five workloads; 12 rounds.
        let s = spec(5, 12);
        let t = wall_time(&s, 4).as_secs_f64();
        assert!((6000.0..7000.0).contains(&t), "{t}");
        assert_eq!(
            sentence(&s, 4),
            format!(
                "240 runs (4 servers × 5 cells × 12 rounds) of 20 s after 5 s of warm-up: about {}",
                crate::infra::time::human(t)
            )
        );
        assert!(sentence(&spec(1, 6), 2).contains("× 1 cell ×"));
    }
}
