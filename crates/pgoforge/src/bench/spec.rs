//! What a benchmark measures — workloads, client threads, rounds, durations, dataset — defined
//! once and shared by `pgoforge bench`, `pgoforge run` and the cachegrind measurement.

use oltp::settings::{Settings, TestName};
use serde::{Deserialize, Serialize};

use super::order::OrderScheme;
use crate::server::config::Engine;
use crate::server::template;

/// The default design's slice: the client switches servers every 2 s. Measured on a noisy host
/// (docs/bench/trust.md): 4x less per-round scatter than the plain design in equal wall time; the
/// first second after a switch costs read-only workloads nothing measurable (±1–2 %), which a
/// longer slice would only dilute further at the price of slower alternation.
pub const DEFAULT_SLICE_SECONDS: u64 = 2;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchSpec {
    pub workloads: Vec<TestName>,
    /// Client connections, one cell per count.
    pub threads: Vec<u32>,
    /// Every contender runs once per round, in a new order each round.
    pub rounds: u32,
    /// Seconds per measured run.
    pub seconds: u64,
    /// Seconds of warm-up before each measured run.
    pub warmup_seconds: u64,
    pub tables: u32,
    pub table_size: u64,
    /// The tpcc dataset's warehouses and table copies (`--tpcc-scale`, `--tpcc-tables`). Absent
    /// at the default 1 x 1, so plans made before keep their hash.
    #[serde(default, skip_serializing_if = "template::TpccSize::is_default")]
    pub tpcc: template::TpccSize,
    /// Adaptive rounds: after `rounds`, keep adding rounds until every cell's 95 % interval is
    /// within ± this many percent ([`super::adaptive`]). Absent from plans without it, so their
    /// hash (and run directory) stays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_ci_pct: Option<f64>,
    /// The most rounds adaptive rounds may reach.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rounds: Option<u32>,
    /// Minutes of benchmarking (wall time of one invocation) after which no round is added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_minutes: Option<u64>,
    /// The workload file of the `replay` workload (`--replay-file`), with its digests. Absent
    /// from plans without it, so their hash stays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<template::Replay>,
    /// The sliced design (`--slice`, the default since 2026-12-02): every contender's server up
    /// at once each round, the client alternating between them every this many seconds
    /// ([`super::run`]). Absent: the plain design, one contender after the other (`--slice 0`),
    /// as plans made before had it — so their hash, and their run directory, stay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slice_seconds: Option<u64>,
    /// How the client connects (`--transport`); absent: the Unix socket, as plans always had it.
    #[serde(default, skip_serializing_if = "super::network::Transport::is_socket")]
    pub transport: super::network::Transport,
    /// The benchmark client on a host of its own (`--client-host`, over ssh; the transport is
    /// then TCP). Absent: this host, as plans always had it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_host: Option<super::remote::ClientHost>,
    /// Client threads chosen per workload before the first round (`--threads auto`, the
    /// default): a probe climbs from `threads` until the server is saturated and the cell runs
    /// below half of what its connections can send at the round trip ([`super::saturate`]).
    /// Absent (false) from plans with the counts given, and from every plan made before.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub saturate: bool,
    /// What the probe chose: each workload listed here runs at its count instead of `threads`.
    /// Written into the run directory's plan when the probe has run, so a resume and the
    /// report see the cells that ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chosen_threads: Vec<ChosenThreads>,
}

/// One workload's client threads, as the saturation probe chose them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChosenThreads {
    pub workload: TestName,
    pub threads: u32,
}

impl BenchSpec {
    /// The thread counts `w` runs at: the probe's choice, else `threads`.
    pub fn threads_of(&self, w: TestName) -> Vec<u32> {
        match self.chosen_threads.iter().find(|c| c.workload == w) {
            Some(c) => vec![c.threads],
            None => self.threads.clone(),
        }
    }

    /// Every cell (workload, client threads) in the plan's order: workload by workload, each at
    /// its thread counts.
    pub fn cells(&self) -> Vec<(TestName, u32)> {
        self.workloads
            .iter()
            .flat_map(|&w| self.threads_of(w).into_iter().map(move |t| (w, t)))
            .collect()
    }

    /// Every thread count some cell runs at, in the order first met (the plan's `threads` when
    /// nothing was chosen per workload).
    pub fn thread_counts(&self) -> Vec<u32> {
        let mut out: Vec<u32> = Vec::new();
        for (_, t) in self.cells() {
            if !out.contains(&t) {
                out.push(t);
            }
        }
        out
    }

    /// Whether the thread counts differ by workload (the probe chose them), so a summary over
    /// workloads cannot be told per thread count.
    pub fn threads_per_workload(&self) -> bool {
        !self.chosen_threads.is_empty()
    }

    /// What the benchmark's template holds ([`template::datasets`]), its tables in `engine`.
    pub fn datasets(&self, engine: Engine) -> Vec<Settings> {
        template::datasets(
            &self.workloads,
            self.tables,
            self.table_size,
            self.tpcc,
            engine,
            self.replay.as_ref(),
        )
    }

    /// The settings a run of `w` starts from ([`template::run_settings`]) on tables in `engine`.
    pub fn run_settings(&self, w: TestName, engine: Engine) -> Settings {
        template::run_settings(
            w,
            self.tables,
            self.table_size,
            self.tpcc,
            engine,
            self.replay.as_ref(),
        )
    }

    /// The full look: point_select, read_only, read_write, tpcc and select_random_ranges, 4
    /// threads, runs of 20 s; at least 6 rounds, more when the comparisons need them
    /// ([`BenchSpec::with_rounds_for`]).
    pub fn standard() -> BenchSpec {
        BenchSpec {
            // select_random_ranges is the held-out workload of every default run: the default
            // training (OLTP and tpcc) never sends its statement shape — a count over several
            // OR-ed BETWEEN ranges of the secondary index, which takes the range optimizer's
            // index-merge of ranges and an aggregate the trained statements do not — so the
            // report can say whether the profile slowed untrained SQL down. tpcc is held out
            // too when training is `--train-mix oltp`.
            workloads: vec![
                TestName::OltpPointSelect,
                TestName::OltpReadOnly,
                TestName::OltpReadWrite,
                TestName::Tpcc,
                TestName::SelectRandomRanges,
            ],
            threads: vec![4],
            rounds: crate::bench::stats::MIN_ROUNDS as u32,
            seconds: 20,
            warmup_seconds: 5,
            tables: 4,
            table_size: 100_000,
            tpcc: template::TpccSize::default(),
            target_ci_pct: None,
            max_rounds: None,
            budget_minutes: None,
            replay: None,
            slice_seconds: Some(DEFAULT_SLICE_SECONDS),
            transport: super::network::Transport::Socket,
            client_host: None,
            // The threads are chosen per workload and host (bench/saturate.rs), starting at 4:
            // on one Intel host 4 connections could not keep the server busy on point_select.
            saturate: true,
            chosen_threads: Vec::new(),
        }
    }

    /// The train × evaluate matrix (`run --matrix`): the three OLTP tests and tpcc at 1, 4, 16 and 64
    /// client threads (on 2 cores the high counts test contention, not scaling), in runs of 5 s
    /// after 2 s of warm-up — 16 cells per contender and round, and Holm over 48 comparisons
    /// needs 11 rounds, so each run is short and the rounds many.
    pub fn matrix() -> BenchSpec {
        BenchSpec {
            // The matrix's mixes make every workload held out for some contender, so it needs
            // no extra one (and keeps the 16 cells its committed run measured).
            workloads: vec![
                TestName::OltpPointSelect,
                TestName::OltpReadOnly,
                TestName::OltpReadWrite,
                TestName::Tpcc,
            ],
            threads: vec![1, 4, 16, 64],
            seconds: 5,
            warmup_seconds: 2,
            // The matrix's counts are its axis, not chosen.
            saturate: false,
            ..BenchSpec::standard()
        }
    }

    /// The default run's benchmark (issue 49 item 4; docs/bench/bench-shape.md): point_select,
    /// read_write and the held-out select_random_ranges, runs of 6 s after 3 s of warm-up. Cut
    /// from a committed run of the full evaluation, this shape kept every decision (the same
    /// winner, the held-out check, the A/A control not significant) with lower bounds 1 to 3
    /// points lower, in a third of the time: with the baseline, the winner, Debian's server and
    /// the A/A control its 6 comparisons need 8 rounds, about 20 minutes on 2 cores, so the
    /// whole default run fits 75 minutes. read_only and tpcc are the full evaluation's
    /// ([`BenchSpec::standard`], `run --full`).
    pub fn short() -> BenchSpec {
        BenchSpec {
            workloads: vec![
                TestName::OltpPointSelect,
                TestName::OltpReadWrite,
                TestName::SelectRandomRanges,
            ],
            seconds: 6,
            warmup_seconds: 3,
            ..BenchSpec::standard()
        }
    }

    /// A first look (`--quick`): two workloads (no tpcc, no held-out check), runs of 10 s on a
    /// smaller dataset.
    pub fn quick() -> BenchSpec {
        BenchSpec {
            workloads: vec![TestName::OltpPointSelect, TestName::OltpReadOnly],
            seconds: 10,
            warmup_seconds: 3,
            tables: 2,
            table_size: 20_000,
            ..BenchSpec::standard()
        }
    }

    /// The rounds raised, if need be, to what the exact paired test needs to show significance
    /// after Holm's correction over every comparison `contenders` make (all but the baseline and
    /// the `controls` — the A/A control, which the report tests outside Holm's family, and in a
    /// buffer-pool sweep the other sizes' baselines — on every workload and thread count): 6
    /// for one comparison, 8 for 6, 9 for 9 — then up to whole
    /// blocks of `scheme` over every served contender (12 for 3 in a Williams design, whose
    /// blocks are 6 rounds).
    pub fn with_rounds_for(
        mut self,
        contenders: usize,
        controls: usize,
        scheme: OrderScheme,
    ) -> BenchSpec {
        let comparisons = contenders.saturating_sub(1 + controls) * self.cells().len();
        let needed = self
            .rounds
            .max(crate::bench::stats::rounds_needed(comparisons) as u32);
        // Whole blocks only: the order scheme's balance holds over complete blocks. Plans of the
        // older schemes keep the rounds they were made with, so a resume rebuilds the same plan.
        let block = match scheme {
            OrderScheme::Williams => scheme.block(contenders) as u32,
            OrderScheme::Shuffle | OrderScheme::Balanced => 1,
        };
        self.rounds = needed.div_ceil(block) * block;
        self
    }

    /// Why the spec cannot run, if it cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.rounds == 0 || self.seconds == 0 || self.threads.contains(&0) {
            return Err("--rounds, --time and --threads must be at least 1".into());
        }
        if let Some(s) = self.slice_seconds {
            if s == 0 || s > self.seconds {
                return Err(format!(
                    "--slice {s}: a slice is 1 to --time ({}) seconds",
                    self.seconds
                ));
            }
        }
        if self.workloads.contains(&TestName::Replay) && self.replay.is_none() {
            return Err(
                "the replay workload needs --replay-file FILE (a general or slow query log, or \
                 SQL; --replay-dataset DUMP for the data it runs against)"
                    .into(),
            );
        }
        if self.workloads.is_empty() || self.threads.is_empty() {
            return Err("a benchmark needs at least one workload and one thread count".into());
        }
        if self.tables == 0 || self.table_size == 0 {
            return Err("--tables and --table-size must be at least 1".into());
        }
        if !self.tpcc.is_default() && !self.workloads.contains(&TestName::Tpcc) {
            return Err(format!(
                "--tpcc-scale {} / --tpcc-tables {}: no tpcc workload in this benchmark to use \
                 them; add tpcc to --workloads or leave them out",
                self.tpcc.scale, self.tpcc.tables
            ));
        }
        if let Some(t) = self.target_ci_pct {
            if !(t.is_finite() && t > 0.0) {
                return Err(format!(
                    "--target-ci {t}: give a half-width in percent above 0, e.g. 2"
                ));
            }
        }
        if let Some(m) = self.max_rounds {
            if m < self.rounds {
                return Err(format!(
                    "--max-rounds {m} is below the {} rounds the benchmark runs in any case; raise it or lower --rounds",
                    self.rounds
                ));
            }
        }
        if (self.max_rounds.is_some() || self.budget_minutes.is_some())
            && self.target_ci_pct.is_none()
        {
            return Err(
                "--max-rounds and --budget-minutes bound adaptive rounds: give --target-ci PCT too"
                    .into(),
            );
        }
        Ok(())
    }
}
