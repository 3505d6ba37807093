//! Client threads per workload, chosen before the first round so that every cell measures the
//! server and not the round trip (`--threads auto`, the default).
//!
//! A client with `t` connections, each waiting a round trip per statement, cannot send more than
//! `t / RTT` statements per second whatever the server does ([`super::network`]). On one Intel
//! host the default 4 connections sent 102 % of that bound on point_select: the baseline and the
//! PGO build measured alike because both waited on the socket. So before round 1 every probed
//! server runs each workload for a few seconds at 4 connections, then 8, 16 … until the cell is
//! settled:
//!
//! - **saturated**: every probed server's vCPU at least [`SATURATED`] busy, and every rate below
//!   [`BOUND_SHARE`] of its round-trip bound — the cell measures the server;
//! - **no gain**: doubling the connections raised no server's throughput by [`MIN_GAIN`], at a
//!   count already below half the bound — locks, I/O or the client bound the cell, and more
//!   connections would only add contention (the smaller count is kept);
//! - **ceiling**: [`MAX_THREADS`] reached; if the cell is still near its bound the report says so
//!   and does not use it for a verdict.
//!
//! The probed servers are the contenders with distinct binaries (the A/A control is the
//! baseline's binary again): the fastest one is the one nearest its bound, and it is not known
//! before it is measured. What was measured and why each count was chosen is saturation.json in
//! the run directory; the report shows it.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use oltp::settings::TestName;
use serde::{Deserialize, Serialize};

use super::load::SATURATED;
use super::network::{share_of_bound, BOUND_SHARE};
use super::plan::{BenchPlan, Contender};
use super::spec::ChosenThreads;

/// The most connections the probe tries (on 2 vCPUs, far past what saturates a server).
pub const MAX_THREADS: u32 = 64;
/// Seconds measured per server and step, after [`PROBE_WARMUP_SECONDS`] of warm-up (both
/// shortened to the benchmark's own `--time` and `--warmup` when those are shorter).
pub const PROBE_SECONDS: u64 = 3;
pub const PROBE_WARMUP_SECONDS: u64 = 1;
/// Doubling the connections must raise some server's throughput by this much to be worth it.
pub const MIN_GAIN: f64 = 0.03;

/// One server at one step of the probe.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Probe {
    pub contender: String,
    pub tps: f64,
    /// Statements per second (what the round-trip bound counts).
    pub qps: f64,
    /// The median `SELECT 1` round trip to this server, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rtt_us: Option<f64>,
    /// How busy the server's vCPUs were (0..1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_share: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_share: Option<f64>,
}

impl Probe {
    /// The share of `threads / RTT` this server's rate reached.
    pub fn link_share(&self, threads: u32) -> Option<f64> {
        self.rtt_us.map(|r| share_of_bound(self.qps, threads, r))
    }
}

/// Every probed server at one connection count.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Step {
    pub threads: u32,
    pub probes: Vec<Probe>,
}

impl Step {
    /// The highest share of its round-trip bound any server reached (None: no round trip known).
    pub fn worst_link(&self) -> Option<f64> {
        self.probes
            .iter()
            .filter_map(|p| p.link_share(self.threads))
            .reduce(f64::max)
    }

    /// The least busy server's vCPU share (None: not read).
    pub fn least_busy(&self) -> Option<f64> {
        self.probes
            .iter()
            .filter_map(|p| p.server_share)
            .reduce(f64::min)
    }

    fn below_bound(&self) -> bool {
        self.worst_link().is_none_or(|l| l < BOUND_SHARE)
    }

    fn saturated(&self) -> bool {
        self.least_busy().is_none_or(|b| b >= SATURATED)
    }

    /// The largest relative throughput gain of any server from `prev` to this step.
    fn gain_over(&self, prev: &Step) -> f64 {
        self.probes
            .iter()
            .filter_map(|p| {
                let q = prev.probes.iter().find(|q| q.contender == p.contender)?;
                (q.tps > 0.0).then(|| p.tps / q.tps - 1.0)
            })
            .fold(f64::NEG_INFINITY, f64::max)
    }
}

/// Why a count was chosen.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "why", rename_all = "snake_case")]
pub enum Why {
    Saturated,
    /// Doubling the connections gained this much (below [`MIN_GAIN`]).
    NoGain {
        gain: f64,
    },
    Ceiling,
}

/// One workload's probe and its outcome.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Choice {
    pub workload: TestName,
    pub threads: u32,
    #[serde(flatten)]
    pub why: Why,
    pub steps: Vec<Step>,
}

impl Choice {
    fn step(&self, t: u32) -> Option<&Step> {
        self.steps.iter().find(|s| s.threads == t)
    }

    /// Whether the chosen cell still runs at or above half its round-trip bound.
    pub fn near_bound(&self) -> bool {
        self.step(self.threads).is_some_and(|s| !s.below_bound())
    }

    /// "oltp_point_select: 8 threads — at 4 the fastest server sent 69 % of what 4 connections
    /// can send …; at 8 every server 98 %+ busy, at most 35 % of the bound".
    pub fn sentence(&self) -> String {
        let figures = |s: &Step| {
            let busy = s
                .least_busy()
                // Rounded down: "≥ 95 %" must not show a 94.9 % that failed the rule.
                .map(|b| {
                    format!(
                        "every server's vCPU ≥ {:.0}% busy",
                        (b * 100.0 + 1e-9).floor()
                    )
                })
                .unwrap_or_else(|| "servers' CPU not read".into());
            let link = s
                .worst_link()
                .map(|l| format!("at most {:.0}% of the round-trip bound", l * 100.0))
                .unwrap_or_else(|| "round trip not measured".into());
            format!("{busy}, {link}")
        };
        let path: Vec<String> = self
            .steps
            .iter()
            .map(|s| format!("{} thr: {}", s.threads, figures(s)))
            .collect();
        let why = match &self.why {
            Why::Saturated => "the server saturated below half the bound".to_string(),
            Why::NoGain { gain } => format!(
                "twice the connections gained {:+.1}% (under {:.0}%): the cell waits on locks, I/O \
                 or the client, not on connections",
                gain * 100.0,
                MIN_GAIN * 100.0
            ),
            Why::Ceiling if self.near_bound() => format!(
                "{MAX_THREADS} connections, the probe's ceiling, and still at or above half the \
                 bound: the cell's verdict is not used"
            ),
            Why::Ceiling => format!("{MAX_THREADS} connections, the probe's ceiling"),
        };
        format!(
            "{}: {} threads ({why}) — {}",
            self.workload,
            self.threads,
            path.join("; ")
        )
    }
}

/// The probe of one benchmark: each workload's choice, what was probed, how long it took.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Saturation {
    pub choices: Vec<Choice>,
    /// The contenders probed.
    pub probed: Vec<String>,
    pub seconds: f64,
}

impl Saturation {
    pub fn chosen(&self) -> Vec<ChosenThreads> {
        self.choices
            .iter()
            .map(|c| ChosenThreads {
                workload: c.workload,
                threads: c.threads,
            })
            .collect()
    }

    /// The run directory's record of the probe.
    pub fn path(dir: &Path) -> PathBuf {
        dir.join("saturation.json")
    }

    /// The probe a run directory holds (None: its threads were given, or it predates the probe).
    pub fn read(dir: &Path) -> Result<Option<Saturation>> {
        let p = Saturation::path(dir);
        match std::fs::read_to_string(&p) {
            Ok(t) => Ok(Some(
                serde_json::from_str(&t).with_context(|| format!("reading {}", p.display()))?,
            )),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("reading {}", p.display())),
        }
    }
}

/// The count to take after `steps` (each twice the one before), or None to measure the next.
pub fn settle(steps: &[Step], max: u32) -> Option<(u32, Why)> {
    let last = steps.last()?;
    if last.below_bound() && last.saturated() {
        return Some((last.threads, Why::Saturated));
    }
    if let [.., prev, _] = steps {
        let gain = last.gain_over(prev);
        if prev.below_bound() && gain < MIN_GAIN {
            return Some((prev.threads, Why::NoGain { gain }));
        }
    }
    if last.threads.saturating_mul(2) > max {
        return Some((last.threads, Why::Ceiling));
    }
    None
}

/// The plan a resumed benchmark continues: the counts its first invocation chose, when this
/// plan asks for a choice and has none yet.
pub fn adopt(plan: &BenchPlan, earlier: Option<&BenchPlan>) -> BenchPlan {
    let mut p = plan.clone();
    if let Some(e) = earlier {
        if p.spec.saturate && p.spec.chosen_threads.is_empty() {
            p.spec.chosen_threads = e.spec.chosen_threads.clone();
        }
    }
    p
}

/// The servers the probe measures: one per distinct binary and buffer pool, the A/A control
/// left out; with the plain design (the servers do not all fit in memory) the baseline and the
/// last contender only.
fn probed(plan: &BenchPlan) -> Vec<&Contender> {
    let mut out: Vec<&Contender> = Vec::new();
    for c in plan.contenders.iter().filter(|c| !plan.is_control(&c.name)) {
        if !out
            .iter()
            .any(|o| o.binary == c.binary && o.buffer_pool_mb == c.buffer_pool_mb)
        {
            out.push(c);
        }
    }
    if plan.spec.slice_seconds.is_none() && out.len() > 2 {
        let last = out.pop();
        out.truncate(1);
        out.extend(last);
    }
    out
}

/// Starts the probed servers on copies of the template, probes every workload (a replay keeps
/// its own connections), stops them.
pub(super) fn run(env: &super::measure::Bench) -> Result<Saturation> {
    super::load::wait_until_quiet(env.guard.patience, env.guard.allow_busy, env.log)?;
    let t0 = Instant::now();
    let plan = env.plan;
    let mut servers = Vec::new();
    for c in probed(plan) {
        let srv = super::measure::start_contender(
            c,
            env.base_spec.clone(),
            env.tpl,
            env.dir,
            0,
            env.log,
        )?;
        env.client.admit(&srv)?;
        let rtt = env.client.round_trip_us(&env.client.conn(&srv))?;
        servers.push((c, srv, rtt));
    }
    let start = plan.spec.threads.iter().copied().max().unwrap_or(4);
    let warmup = plan.spec.warmup_seconds.min(PROBE_WARMUP_SECONDS);
    let seconds = plan.spec.seconds.min(PROBE_SECONDS);
    let mut choices = Vec::new();
    for &w in plan
        .spec
        .workloads
        .iter()
        .filter(|w| **w != TestName::Replay)
    {
        let mut steps: Vec<Step> = Vec::new();
        let mut t = start;
        let (threads, why) = loop {
            let mut probes = Vec::new();
            for (c, srv, rtt) in &servers {
                let (r, load) = super::measure::measure_for(
                    plan,
                    c,
                    srv,
                    w,
                    t,
                    env.client_cpus,
                    env.client,
                    warmup,
                    seconds,
                )?;
                let secs = r.total_time_s.max(1e-9);
                probes.push(Probe {
                    contender: c.name.clone(),
                    tps: r.tps(),
                    qps: r.queries.total as f64 / secs,
                    rtt_us: *rtt,
                    server_share: load.as_ref().and_then(|l| l.server_share()),
                    client_share: load.as_ref().and_then(|l| l.client_share()),
                });
            }
            steps.push(Step { threads: t, probes });
            if let Some(s) = settle(&steps, MAX_THREADS) {
                break s;
            }
            t *= 2;
        };
        let choice = Choice {
            workload: w,
            threads,
            why,
            steps,
        };
        (env.log)(&format!("client threads: {}", choice.sentence()));
        choices.push(choice);
    }
    let probed: Vec<String> = servers.iter().map(|(c, ..)| c.name.clone()).collect();
    // Their datadirs stay for round 1, which restores only what the probe wrote.
    for (c, mut srv, _) in servers {
        srv.stop()
            .with_context(|| format!("stopping {} after the probe", c.name))?;
    }
    Ok(Saturation {
        choices,
        probed,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(name: &str, tps: f64, rtt: f64, busy: f64) -> Probe {
        Probe {
            contender: name.into(),
            tps,
            qps: tps,
            rtt_us: Some(rtt),
            server_share: Some(busy),
            client_share: Some(0.5),
        }
    }

    fn step(t: u32, probes: Vec<Probe>) -> Step {
        Step { threads: t, probes }
    }

    #[test]
    fn a_saturated_server_far_from_its_bound_settles_at_once() {
        // 4 connections at 40 µs: 100 000/s at most; 30 000/s is 30 %.
        let s = [step(4, vec![probe("a", 30_000.0, 40.0, 0.99)])];
        assert_eq!(settle(&s, 64), Some((4, Why::Saturated)));
    }

    #[test]
    fn a_busy_server_near_its_bound_climbs_until_below_half() {
        // The host of 2026-12-05: 99 % busy, but the PGO build at 69 % of its bound.
        let four = step(
            4,
            vec![
                probe("base", 50_000.0, 40.0, 0.99),
                probe("pgo", 69_000.0, 40.0, 0.99),
            ],
        );
        assert_eq!(settle(std::slice::from_ref(&four), 64), None);
        let eight = step(
            8,
            vec![
                probe("base", 51_000.0, 40.0, 0.99),
                probe("pgo", 72_000.0, 40.0, 0.99),
            ],
        );
        assert_eq!(
            settle(&[four, eight], 64),
            Some((8, Why::Saturated)),
            "36 % of 8 connections' bound"
        );
    }

    #[test]
    fn no_gain_from_more_connections_keeps_the_smaller_count() {
        // A lock-bound cell: 60 % busy, 20 % of its bound, and doubling gains 1 %.
        let s = [
            step(4, vec![probe("a", 10_000.0, 80.0, 0.6)]),
            step(8, vec![probe("a", 10_100.0, 80.0, 0.6)]),
        ];
        match settle(&s, 64) {
            Some((4, Why::NoGain { gain })) => assert!((gain - 0.01).abs() < 1e-9),
            other => panic!("{other:?}"),
        }
        // But a count still at its bound is never kept for lack of gain.
        let s = [
            step(4, vec![probe("a", 40_000.0, 80.0, 0.6)]),
            step(8, vec![probe("a", 40_100.0, 80.0, 0.6)]),
        ];
        assert_eq!(settle(&s, 64), None);
    }

    #[test]
    fn the_ceiling_ends_the_climb_and_says_whether_the_cell_is_still_near_its_bound() {
        let s = [
            step(32, vec![probe("a", 300_000.0, 90.0, 0.5)]),
            step(64, vec![probe("a", 400_000.0, 90.0, 0.5)]),
        ];
        assert_eq!(settle(&s, 64), Some((64, Why::Ceiling)));
        let c = Choice {
            workload: TestName::OltpPointSelect,
            threads: 64,
            why: Why::Ceiling,
            steps: s.to_vec(),
        };
        assert!(c.near_bound(), "400 000/s is 56 % of 64 / 90 µs");
        assert!(
            c.sentence().contains("verdict is not used"),
            "{}",
            c.sentence()
        );
    }

    #[test]
    fn unread_figures_do_not_hold_the_probe_back() {
        // A client on another host reads no client CPU; an old kernel no server split.
        let mut p = probe("a", 1000.0, 40.0, 0.0);
        p.server_share = None;
        p.rtt_us = None;
        assert_eq!(settle(&[step(4, vec![p])], 64), Some((4, Why::Saturated)));
    }
}
