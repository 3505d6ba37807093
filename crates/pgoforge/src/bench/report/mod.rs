//! The report's model, from stored results only: the statistics per cell and per contender against
//! the baseline. The same results file always gives the same report; `export/` renders it. In
//! parts: `model` (a cell from its runs), `noise` (the run's own noise, the position effect,
//! steadiness), `pooled_noise` (the noise line of a run without an A/A control), `held_out` (the workloads the training never ran), `decision` (Holm's correction,
//! the minimum change, the winner), `policy` (how the run decides, stored beside it), `rows` (the
//! rows stored as arrays).

mod decision;
mod headline;
mod held_out;
mod model;
mod noise;
mod policy;
mod pooled_noise;
pub mod reuse;
pub mod rows;

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::plan::BenchPlan;
use super::run_dir::{plan_path, read_records, Record};
use super::stats::geomean;
use crate::infra::exit::Refuse;

pub use super::environment::Environment;
pub use decision::Decision;
use decision::{correct_over_the_run, decide};
pub use headline::{Ceiling, Headline, HeadlineCell};
use held_out::held_out;
pub use held_out::{is_held_out, HeldOut};
use model::cell;
pub use model::{Bound, BoundBy, Cell, LoadPoint, ServerPerTxn, SATURATED};
pub(crate) use noise::run_cvs;
pub use noise::{is_steady, per_second_cv, NoiseCell, OwnNoise};
use noise::{noisier_than_the_floor, own_noise, position_effect, unstable_runs};
pub use policy::Policy;
pub use pooled_noise::{PooledCell, PooledNoise};
pub use rows::{CellComparison, Geomean, RoundOrder};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub plan: BenchPlan,
    pub environment: Environment,
    pub cells: Vec<Cell>,
    /// Per contender and thread count: geometric mean of TPS ratios over workloads.
    pub geomeans: Vec<Geomean>,
    pub rounds_found: u32,
    /// Deterministic per-transaction counts, when the run directory also holds a cachegrind
    /// measurement (`pgoforge run --cachegrind`).
    #[serde(default)]
    pub cachegrind: Vec<super::cachegrind::CgRecord>,
    /// Contenders valgrind could not run (absent: none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cachegrind_skipped: Vec<super::cachegrind::CgSkip>,
    /// The contender order each round actually ran in (from the results, not the plan).
    #[serde(default)]
    pub orders: Vec<RoundOrder>,
    /// The machine's load run by run, in the order they ran (absent before it was recorded).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub load_trace: Vec<LoadPoint>,
    /// The machine's A/A noise floor in force when the benchmark ran (`pgoforge calibrate`),
    /// which the warnings measure the run's scatter against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise_floor: Option<super::calibrate::Calibration>,
    /// The gate's MTR step, when the run had one: what each binary passed, what failed on the
    /// baseline already, and the regressions that stopped variants.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate: Option<crate::gate::mtr::MtrGate>,
    /// What to package (absent in reports made before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decision: Option<Decision>,
    /// The first table: the winner against the distribution's own server (`debian`) of the same
    /// release, when the run had it and something won.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headline: Option<Headline>,
    /// The workloads no profile was trained on and whether any contender regressed on them
    /// (absent when the benchmark had no training or no such workload).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_out: Option<HeldOut>,
    /// The host's noise as the runs themselves show it: the median coefficient of variation of
    /// per-second throughput within the OLTP runs (absent without any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_second_cv: Option<f64>,
    /// This run's own noise, from its A/A control (absent without one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_noise: Option<OwnNoise>,
    /// Without an A/A control, the comparisons' own scatter pooled per cell (absent with one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pooled_noise: Option<PooledNoise>,
    /// How the client reached the servers and the median round trip over that path (absent in
    /// runs recorded before it was measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkSummary>,
    /// Whether a run's position within its round shifts what it measures, pooled over the run
    /// (absent with fewer than two contenders or rounds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position_effect: Option<super::stats::position::PositionEffect>,
    /// The source's Debian release against what the distribution served when the run started
    /// (`pgoforge run` on a Debian recipe; absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_release: Option<crate::source::release::ReleaseCheck>,
    /// The earlier release's profiles this run reused and how stale they were (`run
    /// --profile-from`; absent when the run trained its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_reuse: Option<reuse::ProfileReuse>,
    /// How the client threads were chosen per workload before round 1 (`--threads auto`;
    /// absent when they were given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saturation: Option<crate::bench::saturate::Saturation>,
}

/// The client's path to the servers, as the runs recorded it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NetworkSummary {
    /// The driver's transport (`unix-socket`, `tcp`).
    pub transport: String,
    /// Median over the servers' starts of the median `SELECT 1` round trip, µs.
    pub rtt_us: f64,
    /// The client host the runs came from (`--client-host`); absent: the servers' own host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_host: Option<String>,
}

impl NetworkSummary {
    pub fn sentence(&self) -> String {
        let from = match &self.client_host {
            Some(h) => format!(" from the client host {h}"),
            None => String::new(),
        };
        format!(
            "Client: {}{from} to every server; median round trip {:.0} µs (SELECT 1, measured \
             as each server started).",
            self.transport, self.rtt_us
        )
    }
}

fn network(records: &[Record]) -> Option<NetworkSummary> {
    let rtts: Vec<f64> = records.iter().filter_map(|r| r.rtt_us).collect();
    let first = records.iter().find(|r| r.rtt_us.is_some())?;
    Some(NetworkSummary {
        transport: first.result.server.transport.clone(),
        rtt_us: super::stats::median(&rtts),
        client_host: first.client.clone(),
    })
}

/// Round by round, the contenders in the order they ran.
fn orders(records: &[Record]) -> Vec<RoundOrder> {
    let mut by_round: BTreeMap<u32, BTreeMap<usize, String>> = BTreeMap::new();
    for r in records {
        by_round
            .entry(r.round)
            .or_default()
            .entry(r.position)
            .or_insert_with(|| r.contender.clone());
    }
    by_round
        .into_iter()
        .map(|(round, p)| RoundOrder {
            round,
            contenders: p.into_values().collect(),
        })
        .collect()
}

fn environment(dir: &Path, records: &[Record]) -> Environment {
    // Recorded when the benchmark ran, so a report made elsewhere still describes the machine it ran on.
    let mut env: Environment = std::fs::read_to_string(dir.join("environment.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    for r in records {
        env.server_versions
            .entry(r.contender.clone())
            .or_insert_with(|| r.result.server.version.clone());
    }
    env
}

/// Builds the report of the run in `dir`.
pub fn build(dir: &Path) -> Result<Report> {
    build_against(dir, None)
}

/// Builds the report with `baseline` (a contender's name) as the reference instead of the plan's
/// first contender, e.g. the PGO build to show what BOLT adds on top of it.
pub fn build_against(dir: &Path, baseline: Option<&str>) -> Result<Report> {
    build_with(dir, baseline, Policy::stored(dir)?)
}

/// [`build_against`] under a decision [`Policy`].
pub fn build_with(dir: &Path, baseline: Option<&str>, policy: Policy) -> Result<Report> {
    let plan = stored_plan(dir, baseline)?;
    let records = stored_results(dir, &plan)?;
    let (mut cells, geomeans) = cells_and_geomeans(&plan, &records);
    io_bound(&plan, &mut cells);
    correct_over_the_run(&mut cells, &plan, policy.min_effect);
    unstable_runs(&mut cells, &records);
    let noise_floor = super::calibrate::read(&super::calibrate::copy_in_run_dir(dir))?;
    if let Some(cal) = &noise_floor {
        noisier_than_the_floor(&mut cells, cal);
    }
    let held_out = held_out(&plan, &cells, policy);
    let decision = decide(&plan, &cells, &geomeans, policy, held_out.as_ref());
    let environment = environment(dir, &records);
    let cachegrind = super::cachegrind::read_records(dir)?;
    let mut headline = headline::headline(
        &plan,
        &cells,
        &records,
        &decision,
        policy.min_effect,
        &environment.server_versions,
    );
    if let Some(h) = headline.as_mut() {
        h.add_counts(&cachegrind);
    }
    let own_noise = own_noise(&plan, &cells, policy.min_effect);
    let pooled_noise = pooled_noise::pooled_noise(&plan, &cells, policy.min_effect);
    if let Some(n) = &own_noise {
        aa_differs(n, &mut cells);
    }
    let rounds_found = records.iter().map(|r| r.round).max().unwrap_or(0);
    Ok(Report {
        gate: crate::gate::mtr::read_copy(dir)?,
        source_release: crate::source::release::read_copy(dir)?,
        profile_reuse: reuse::read_copy(dir)?,
        saturation: crate::bench::saturate::Saturation::read(dir)?,
        position_effect: position_effect(&plan, &records, &cells),
        network: network(&records),
        environment,
        cachegrind,
        cachegrind_skipped: super::cachegrind::read_skipped(dir)?,
        orders: orders(&records),
        load_trace: records
            .iter()
            .filter_map(|r| {
                r.load.as_ref().map(|l| LoadPoint {
                    round: r.round,
                    contender: r.contender.clone(),
                    workload: r.workload.to_string(),
                    other_share: l.other_share,
                    steal_share: l.steal_share,
                })
            })
            .collect(),
        decision: Some(decision),
        headline,
        held_out,
        own_noise,
        pooled_noise,
        per_second_cv: {
            let v = run_cvs(&records);
            (!v.is_empty()).then(|| super::stats::median(&v))
        },
        noise_floor,
        plan,
        cells,
        geomeans,
        rounds_found,
    })
}

/// The run's plan, with `baseline` (when given) moved first: the contender the others are
/// compared with.
fn stored_plan(dir: &Path, baseline: Option<&str>) -> Result<BenchPlan> {
    let pp = plan_path(dir);
    let mut plan: BenchPlan = serde_json::from_str(
        &std::fs::read_to_string(&pp)
            .with_context(|| format!("{} has no benchmark (no plan.json)", dir.display()))
            .refused()?,
    )
    .with_context(|| format!("{} is corrupted", pp.display()))?;
    if let Some(b) = baseline {
        let Some(i) = plan.contenders.iter().position(|c| c.name == b) else {
            let names: Vec<&str> = plan.contenders.iter().map(|c| c.name.as_str()).collect();
            crate::usage!(
                "--baseline {b}: no such contender in {}; it has: {}",
                dir.display(),
                names.join(", ")
            );
        };
        let c = plan.contenders.remove(i);
        plan.contenders.insert(0, c);
    }
    Ok(plan)
}

/// The run's results, each of a contender its plan has.
fn stored_results(dir: &Path, plan: &BenchPlan) -> Result<Vec<Record>> {
    let records = read_records(dir)?;
    if records.is_empty() {
        bail!("{} holds no results yet", dir.display());
    }
    for r in &records {
        if !plan.contenders.iter().any(|c| c.name == r.contender) {
            bail!("results name contender '{}', which the plan in {} does not have: the file belongs to another run", r.contender, dir.display());
        }
    }
    Ok(records)
}

/// Every cell with results, in the plan's order (workload, threads, contender), and each
/// contender's geometric mean of its throughput ratios per thread count.
fn cells_and_geomeans(plan: &BenchPlan, records: &[Record]) -> (Vec<Cell>, Vec<Geomean>) {
    let mut cells = Vec::new();
    let mut ratios: BTreeMap<(String, u32), Vec<f64>> = BTreeMap::new();
    // Threads chosen per workload: one mean over all of a contender's cells (threads 0 there).
    let per_workload = plan.spec.threads_per_workload();
    for (w, t) in plan.spec.cells() {
        for c in &plan.contenders {
            let Some(cell) = cell(plan, records, &c.name, w, t) else {
                continue;
            };
            if let Some(k) = &cell.tps_vs_baseline {
                let key = if per_workload { 0 } else { t };
                ratios
                    .entry((c.name.clone(), key))
                    .or_default()
                    .push(k.ratio);
            }
            cells.push(cell);
        }
    }
    let geomeans: Vec<Geomean> = ratios
        .into_iter()
        .map(|((contender, threads), r)| Geomean {
            contender,
            threads,
            ratio: geomean(&r),
        })
        .collect();
    (cells, geomeans)
}

/// A dataset larger than [`MAX_POOL_SHARE_PCT`] of a server's buffer pool may make its cells
/// I/O-bound: each such cell says so, with what its server's vCPU measured. A server still
/// ≥ 95 % busy was not waiting for the disk (its pool's misses were read fast enough: seed
/// 004's configuration, docs/results/mariadb-10.11-seed004-7.7g/), and the cell says that instead.
///
/// [`MAX_POOL_SHARE_PCT`]: crate::server::prewarm::MAX_POOL_SHARE_PCT
fn io_bound(plan: &BenchPlan, cells: &mut [Cell]) {
    let data_mb = crate::bench::budget::data_mb(&plan.spec);
    for c in cells.iter_mut() {
        let pool = plan
            .contenders
            .iter()
            .find(|k| k.name == c.contender)
            .map_or(plan.config.buffer_pool_mb, |k| plan.buffer_pool_mb_of(k));
        if crate::server::prewarm::fits_in_pool((data_mb * 1_048_576.0) as u64, pool << 20) {
            continue;
        }
        let above = format!(
            "dataset (~{data_mb:.0} MiB) above {}% of the buffer pool ({pool} MiB)",
            crate::server::prewarm::MAX_POOL_SHARE_PCT
        );
        let per = c.server_per_txn.as_ref();
        let share = per.and_then(|s| s.bound.as_ref()).map(|b| b.server_share);
        // What the disk did, where the runs recorded it: the machine's iowait and the server's
        // storage reads per transaction (medians over the runs).
        let io = per
            .map(|s| {
                let mut v = Vec::new();
                if let Some(w) = &s.iowait {
                    v.push(format!("iowait {:.0}%", w.median * 100.0));
                }
                if let Some(r) = &s.read_kib {
                    v.push(format!("{:.1} KiB read per transaction", r.median));
                }
                v
            })
            .unwrap_or_default();
        let io = if io.is_empty() {
            String::new()
        } else {
            format!(" ({})", io.join(", "))
        };
        c.warnings.push(match share {
            Some(x) if x >= crate::bench::load::SATURATED => format!(
                "{above}, yet the server's vCPU was {:.0}% busy{io}: CPU-bound, its pool's \
                 misses read fast enough not to stall it",
                (x * 100.0).floor()
            ),
            Some(x) => format!(
                "{above} and the server's vCPU {:.0}% busy{io}: likely I/O-bound",
                (x * 100.0).floor()
            ),
            None => format!("{above}{io}: likely I/O-bound"),
        });
    }
}

/// The A/A control's cells that differ significantly from the baseline carry a warning.
fn aa_differs(n: &OwnNoise, cells: &mut [Cell]) {
    for nc in n.cells.iter().filter(|x| x.aa.significant) {
        if let Some(c) = cells.iter_mut().find(|c| {
            c.contender == n.control && c.workload == nc.workload && c.threads == nc.threads
        }) {
            c.warnings.push(
                "the A/A control (the baseline's own binary) differs significantly from the \
                     baseline: something besides the binaries changes between runs (position, \
                     drift, a server start); read this run's differences of that size with care"
                    .into(),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::order::OrderScheme;
    use crate::bench::plan::Contender;
    use crate::bench::spec::BenchSpec;
    use crate::bench::stats::{compare, describe, Better};
    use crate::server::ServerConfig;

    fn rounds(v: &[f64]) -> Vec<(u32, f64)> {
        v.iter()
            .enumerate()
            .map(|(i, x)| (i as u32 + 1, *x))
            .collect()
    }

    /// A cell of `name` on `workload` whose rounds are the baseline's times `gain`, each round
    /// off by the given per-mille wobble.
    fn cell(name: &str, workload: &str, gain: f64, wobble: &[f64]) -> Cell {
        let base: Vec<f64> = (0..wobble.len())
            .map(|i| 1000.0 + 37.0 * i as f64)
            .collect();
        let v: Vec<f64> = base
            .iter()
            .zip(wobble)
            .map(|(b, w)| b * gain * (1.0 + w / 1000.0))
            .collect();
        Cell {
            contender: name.into(),
            workload: workload.into(),
            threads: 4,
            tps: describe(&v),
            p95_ms: describe(&v),
            mean_ms: None,
            tps_vs_baseline: Some(compare(&rounds(&base), &rounds(&v), Better::Higher)),
            p95_vs_baseline: None,
            capacity_vs_baseline: None,
            warnings: Vec::new(),
            tps_rounds: rounds(&v),
            server_cpu_ms_per_txn: None,
            server_per_txn: None,
            disturbed: Vec::new(),
            link_bound: None,
        }
    }

    #[test]
    fn a_dataset_above_the_pool_is_called_io_bound_only_where_the_server_waited() {
        let mut p = plan(&["base", "pgo"], &[]);
        p.spec.tables = 16;
        p.spec.table_size = 2_000_000;
        p.config.buffer_pool_mb = 4915;
        let busy = |share: f64| {
            let mut c = cell("pgo", "oltp_read_write", 1.5, &[1.0, -1.0, 2.0]);
            c.server_per_txn = Some(ServerPerTxn {
                user_us: describe(&[1.0]),
                sys_us: describe(&[1.0]),
                switches: None,
                server_busy: describe(&[share]),
                client_busy: describe(&[0.5]),
                bound: Some(Bound {
                    by: BoundBy::Server,
                    server_share: share,
                    client_share: Some(0.5),
                }),
                iowait: (share < 0.5).then(|| describe(&[0.31])),
                read_kib: (share < 0.5).then(|| describe(&[48.0])),
            });
            c
        };
        let mut cells = vec![
            busy(0.97),
            busy(0.40),
            cell("base", "oltp_read_write", 1.0, &[0.0, 0.0, 0.0]),
        ];
        io_bound(&p, &mut cells);
        assert!(
            cells[0].warnings[0].contains("97% busy: CPU-bound"),
            "{:?}",
            cells[0].warnings
        );
        assert!(
            cells[1].warnings[0]
                .contains("40% busy (iowait 31%, 48.0 KiB read per transaction): likely I/O-bound"),
            "{:?}",
            cells[1].warnings
        );
        assert!(cells[2].warnings[0].ends_with("(4915 MiB): likely I/O-bound"));
        // A dataset that fits leaves the cells alone.
        p.spec.table_size = 1000;
        let mut small = vec![busy(0.40)];
        io_bound(&p, &mut small);
        assert!(small[0].warnings.is_empty());
    }

    fn plan(names: &[&str], reference_only: &[&str]) -> BenchPlan {
        BenchPlan {
            contenders: names
                .iter()
                .map(|n| Contender {
                    name: n.to_string(),
                    binary: "/x".into(),
                    buffer_pool_mb: None,
                })
                .collect(),
            spec: BenchSpec::quick(),
            config: ServerConfig::default(),
            pin: false,
            seed: 1,
            label: String::new(),
            order_scheme: OrderScheme::Balanced,
            reference_only: reference_only.iter().map(|s| s.to_string()).collect(),
            trained_on: Vec::new(),
            training: Vec::new(),
            aa_control: None,
        }
    }

    fn decided(p: &BenchPlan, cells: Vec<Cell>) -> Decision {
        decided_with(p, cells, Policy::default()).0
    }

    fn decided_with(
        p: &BenchPlan,
        mut cells: Vec<Cell>,
        policy: Policy,
    ) -> (Decision, Option<HeldOut>) {
        correct_over_the_run(&mut cells, p, None);
        let mut g: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for c in &cells {
            g.entry(c.contender.clone())
                .or_default()
                .push(c.tps_vs_baseline.as_ref().unwrap().ratio);
        }
        let geomeans: Vec<Geomean> = g
            .into_iter()
            .map(|(contender, r)| Geomean {
                contender,
                threads: 4,
                ratio: geomean(&r),
            })
            .collect();
        let held = held_out(p, &cells, policy);
        (decide(p, &cells, &geomeans, policy, held.as_ref()), held)
    }

    #[test]
    fn the_policy_is_kept_in_the_run_directory_and_absent_by_default() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(Policy::stored(d.path()).unwrap(), Policy::default());
        let allow = Policy {
            allow_held_out_regression: true,
            ..Policy::default()
        };
        allow.store(d.path()).unwrap();
        assert_eq!(Policy::stored(d.path()).unwrap(), allow);
        Policy::default().store(d.path()).unwrap();
        assert!(!Policy::path(d.path()).exists());
        std::fs::write(Policy::path(d.path()), "{").unwrap();
        assert!(Policy::stored(d.path())
            .unwrap_err()
            .to_string()
            .contains("corrupted"));
    }

    #[test]
    fn a_held_out_regression_keeps_a_variant_from_winning_unless_allowed() {
        use oltp::settings::TestName;
        let mut p = plan(&["baseline", "pgo"], &[]);
        p.spec.workloads = vec![TestName::OltpReadOnly, TestName::Tpcc];
        p.trained_on = vec![TestName::OltpReadOnly];
        assert_eq!(p.held_out(), vec![TestName::Tpcc]);
        let cells = || {
            vec![
                cell("pgo", "oltp_read_only", 1.30, &W),
                cell("pgo", "tpcc", 0.90, &W),
            ]
        };
        let (d, h) = decided_with(&p, cells(), Policy::default());
        assert_eq!(d.winner, None);
        let h = h.unwrap();
        assert_eq!(h.regressions.len(), 1, "{h:?}");
        assert!(
            h.sentence().contains("REGRESSION pgo tpcc at 4 threads"),
            "{}",
            h.sentence()
        );
        assert!(h.sentence().contains("pass --allow-regression"));
        let allow = Policy {
            allow_held_out_regression: true,
            ..Policy::default()
        };
        let (d, h) = decided_with(&p, cells(), allow);
        assert_eq!(d.winner.as_deref(), Some("pgo"));
        assert!(h
            .unwrap()
            .sentence()
            .contains("allowed by --allow-regression"));
        // A regression on a trained workload is never excused.
        let (d, _) = decided_with(
            &p,
            vec![
                cell("pgo", "oltp_read_only", 0.90, &W),
                cell("pgo", "tpcc", 1.30, &W),
            ],
            allow,
        );
        assert_eq!(d.winner, None);
        // No regression: the report says so; without training there is no held-out check.
        let (_, h) = decided_with(
            &p,
            vec![
                cell("pgo", "oltp_read_only", 1.30, &W),
                cell("pgo", "tpcc", 1.01, &W),
            ],
            Policy::default(),
        );
        // Not slower, shown by the non-inferiority test: its bound, never "no regression".
        assert_eq!(
            h.unwrap().sentence(),
            "held-out workloads (tpcc), non-inferiority at a -3% margin (one-sided, 5% per cell): \
             pgo tpcc at 4 threads: not slower than -3% (one-sided 95% bound +0.8%)"
        );
        // Not significantly slower, but too noisy to show it is within the margin: held back,
        // and both lines say why; --allow-regression lets it win.
        let noisy: Vec<f64> = W.iter().map(|w| w * 20.0).collect();
        let cells = || {
            vec![
                cell("pgo", "oltp_read_only", 1.30, &W),
                cell("pgo", "tpcc", 1.0, &noisy),
            ]
        };
        let (d, h) = decided_with(&p, cells(), Policy::default());
        let h = h.unwrap();
        assert!(h.regressions.is_empty(), "{h:?}");
        assert!(
            h.sentence()
                .contains("pgo tpcc at 4 threads: cannot exclude a loss of up to")
                && h.sentence().contains("is not packaged"),
            "{}",
            h.sentence()
        );
        assert_eq!(d.winner, None);
        assert_eq!(d.held_back, vec!["pgo".to_string()]);
        assert!(
            d.sentence()
                .starts_with("no contender can be packaged: pgo beat the baseline"),
            "{}",
            d.sentence()
        );
        assert_eq!(
            decided_with(&p, cells(), allow).0.winner.as_deref(),
            Some("pgo")
        );
        // A wider margin, stated: then it is shown.
        let wide = Policy {
            margin: Some(0.4),
            ..Policy::default()
        };
        assert_eq!(
            decided_with(&p, cells(), wide).0.winner.as_deref(),
            Some("pgo")
        );
        p.trained_on.clear();
        assert!(decided_with(&p, cells(), Policy::default()).1.is_none());
    }

    const W: [f64; 9] = [3.0, -2.0, 5.0, -4.0, 1.0, -1.0, 4.0, -3.0, 2.0];

    /// The A/A control is measured like a contender but claims nothing: outside Holm's family
    /// (the run's intervals stay as without it), never chosen, never a held-out regression; its
    /// scatter is the run's own noise.
    #[test]
    fn the_a_a_control_states_the_runs_noise_and_claims_nothing() {
        use crate::bench::plan::AA_CONTROL;
        let mut p = plan(&["baseline", "pgo", AA_CONTROL], &[]);
        p.aa_control = Some(AA_CONTROL.into());
        p.trained_on = vec![oltp::settings::TestName::OltpReadOnly];
        let pgo = cell("pgo", "a", 1.30, &W);
        let control = cell(AA_CONTROL, "a", 1.0, &W);
        let mut alone = vec![pgo.clone()];
        correct_over_the_run(&mut alone, &plan(&["baseline", "pgo"], &[]), None);
        let mut cells = vec![pgo, control];
        correct_over_the_run(&mut cells, &p, None);
        assert_eq!(
            cells[0].tps_vs_baseline, alone[0].tps_vs_baseline,
            "same family"
        );
        let d = decided(&p, cells.clone());
        assert_eq!(d.winner.as_deref(), Some("pgo"));
        assert!(p.held_out_for(AA_CONTROL).is_empty());
        // The noise: the cells' baseline rounds are needed to pair with.
        let base = Cell {
            contender: "baseline".into(),
            tps_vs_baseline: None,
            tps_rounds: rounds(&(0..9).map(|i| 1000.0 + 37.0 * i as f64).collect::<Vec<_>>()),
            ..cells[0].clone()
        };
        cells.push(base);
        let n = own_noise(&p, &cells, None).unwrap();
        assert_eq!(n.comparisons, 1);
        assert_eq!(n.cells.len(), 1);
        let c = &n.cells[0];
        assert_eq!(c.rounds, 9);
        // W's per-mille wobble: sd of ln(1 + w/1000) ≈ 3.2 ‰.
        assert!((c.sd_log_ratio - 0.0032).abs() < 0.0003, "{c:?}");
        // Under the rule nothing below the 2 % minimum is ever reported: just above it here.
        assert!(
            c.detectable_ratio > 1.02 && c.detectable_ratio < 1.025,
            "{c:?}"
        );
        assert!(!c.aa.significant);
        assert!(
            n.sentence()
                .contains("a 4 thr: scatter 0.3% per round, detectable"),
            "{}",
            n.sentence()
        );
        assert!(own_noise(&plan(&["baseline", "pgo"], &[]), &cells, None).is_none());
        // With a control there is no pooled line; without one, the comparisons' own scatter:
        // pgo's W wobble again, 3.2 ‰, from 8 degrees of freedom.
        assert!(pooled_noise::pooled_noise(&p, &cells, None).is_none());
        let no_aa = plan(&["baseline", "pgo"], &[]);
        let mine: Vec<Cell> = cells
            .iter()
            .filter(|c| c.contender != AA_CONTROL)
            .cloned()
            .collect();
        let pooled = pooled_noise::pooled_noise(&no_aa, &mine, None).unwrap();
        assert_eq!(pooled.comparisons, 1);
        let c = &pooled.cells[0];
        assert_eq!((c.contenders, c.rounds, c.df), (1, 9, 8));
        assert!((c.sd_log_ratio - 0.0032).abs() < 0.0003, "{c:?}");
        assert!(c.detectable_interval.0 <= c.detectable_ratio);
        assert!(pooled.sentence().contains("no A/A control"));
    }

    /// In a matrix each contender's held-out workloads are its own mix's complement, and the
    /// matrix table flags every significantly slower cell, held out or not.
    #[test]
    fn a_matrix_holds_out_per_contender_and_flags_every_slower_cell() {
        use crate::bench::plan::Training;
        use oltp::settings::TestName;
        let mut p = plan(&["baseline", "pgo@oltp", "pgo@tpcc", "lto"], &[]);
        p.spec.workloads = vec![TestName::OltpReadOnly, TestName::Tpcc];
        p.spec.threads = vec![4];
        p.training = vec![
            Training {
                contender: "pgo@oltp".into(),
                mix: "oltp".into(),
                workloads: vec![TestName::OltpReadOnly],
            },
            Training {
                contender: "pgo@tpcc".into(),
                mix: "tpcc".into(),
                workloads: vec![TestName::Tpcc],
            },
        ];
        assert_eq!(p.held_out_for("pgo@oltp"), [TestName::Tpcc]);
        assert_eq!(p.held_out_for("pgo@tpcc"), [TestName::OltpReadOnly]);
        assert!(
            p.held_out_for("lto").is_empty(),
            "no profile, nothing held out"
        );
        assert!(p.held_out_for("baseline").is_empty());
        assert_eq!(p.held_out(), [TestName::OltpReadOnly, TestName::Tpcc]);
        let cells = vec![
            cell("pgo@oltp", "oltp_read_only", 1.30, &W),
            cell("pgo@oltp", "tpcc", 0.90, &W),
            cell("pgo@tpcc", "oltp_read_only", 1.01, &W),
            cell("pgo@tpcc", "tpcc", 1.25, &W),
            cell("lto", "oltp_read_only", 0.85, &W),
            cell("lto", "tpcc", 1.10, &W),
        ];
        let (d, h) = decided_with(&p, cells.clone(), Policy::default());
        let h = h.unwrap();
        assert_eq!(
            h.regressions.len(),
            1,
            "lto's slower read_only is not held out: {h:?}"
        );
        assert!(h.regressions[0].starts_with("pgo@oltp tpcc"), "{h:?}");
        assert_eq!(d.winner.as_deref(), Some("pgo@tpcc"));
        let mut cells = cells;
        correct_over_the_run(&mut cells, &p, None);
        let r = Report {
            plan: p,
            environment: Environment::default(),
            cells,
            geomeans: Vec::new(),
            rounds_found: 9,
            cachegrind: Vec::new(),
            cachegrind_skipped: Vec::new(),
            orders: Vec::new(),
            load_trace: Vec::new(),
            noise_floor: None,
            gate: None,
            decision: Some(d),
            headline: None,
            held_out: Some(h),
            own_noise: None,
            pooled_noise: None,
            per_second_cv: None,
            source_release: None,
            profile_reuse: None,
            saturation: None,
            position_effect: None,
            network: None,
        };
        let t = crate::bench::export::matrix::table(&r).unwrap();
        assert_eq!(
            t.header,
            [
                "workload",
                "threads",
                "pgo@oltp (trained on oltp)",
                "pgo@tpcc (trained on tpcc)",
                "lto"
            ]
        );
        assert_eq!(t.rows.len(), 2);
        let read_only = &t.rows[0];
        assert!(
            read_only[2].starts_with("+3") && read_only[2].ends_with("] faster"),
            "{}",
            read_only[2]
        );
        // +1.1 % [+0.7, +1.4]: significant after Holm, below the 2 % minimum — not "n.s.".
        assert!(read_only[3].ends_with("below min. (h)"), "{}", read_only[3]);
        assert!(read_only[4].ends_with("REGRESSION"), "{}", read_only[4]);
        assert!(t.rows[1][2].ends_with("REGRESSION (h)"), "{}", t.rows[1][2]);
        let lead = crate::bench::export::matrix::lead(&r);
        assert!(lead.contains("all 6 comparisons"), "{lead}");
        assert!(
            lead.contains("below min.: significant but below the minimum change"),
            "{lead}"
        );
        assert!(
            lead.contains(
                "Regressions: pgo@oltp tpcc at 4 threads; lto oltp_read_only at 4 threads."
            ),
            "{lead}"
        );
        // Text and Markdown show it; a report without a matrix has none.
        assert!(crate::bench::export::text::text(&r).contains("Train × evaluate matrix"));
        let mut plain = r.clone();
        plain.plan.training.clear();
        assert!(crate::bench::export::matrix::table(&plain).is_none());
        assert!(!crate::bench::export::text::text(&plain).contains("Train × evaluate matrix"));

        // A run of a source Debian has a newer release of says so first, in every format.
        let rel = |v: &str, s: &str| crate::source::release::Release {
            version: v.into(),
            suite: s.into(),
            unfetchable: None,
        };
        plain.source_release = Some(crate::source::release::ReleaseCheck {
            package: "mariadb".into(),
            building: "1:10.11.18-0+deb12u1".into(),
            server_package: "mariadb-server-core".into(),
            available: vec![rel("1:10.11.19-0+deb12u1", "bookworm-security")],
            installed: None,
            align: None,
            unchecked: None,
            stale: None,
        });
        let says = "this run builds mariadb 1:10.11.18-0+deb12u1, but Debian serves a newer release, 1:10.11.19-0+deb12u1 (bookworm-security)";
        assert!(crate::bench::export::text::text(&plain).contains(&format!("warning: {says}")));
        let md = crate::bench::export::markdown::render(&crate::bench::export::document::document(
            &plain,
        ));
        assert!(md.contains(says), "{md}");
    }

    #[test]
    fn the_winner_beats_the_baseline_loses_nowhere_and_is_tested_against_the_runner_up() {
        let p = plan(&["baseline", "pgo", "pgo+bolt", "lto"], &[]);
        // lto has the best mean but is significantly slower on b; pgo+bolt is ~4% over pgo.
        let d = decided(
            &p,
            vec![
                cell("pgo", "a", 1.20, &W),
                cell("pgo", "b", 1.10, &W),
                cell("pgo+bolt", "a", 1.25, &W.map(|w| -w)),
                cell("pgo+bolt", "b", 1.15, &W.map(|w| -w)),
                cell("lto", "a", 1.90, &W),
                cell("lto", "b", 0.80, &W),
            ],
        );
        assert_eq!(d.winner.as_deref(), Some("pgo+bolt"));
        assert_eq!(d.runner_up.as_deref(), Some("pgo"));
        assert!(!d.tied, "{d:?}");
        assert!(
            d.sentence().contains("beats the runner-up pgo"),
            "{}",
            d.sentence()
        );
        // Two variants within the noise of each other: tied, and the report says so.
        let d = decided(
            &p,
            vec![
                cell("pgo", "a", 1.200, &W),
                cell("pgo+bolt", "a", 1.201, &W.map(|w| -w)),
            ],
        );
        // Not "tied": what the data allow, and equivalence only from its test (TOST).
        assert!(d.tied, "{d:?}");
        assert_eq!(d.equivalent_cells, 1);
        assert!(
            d.sentence().starts_with(
                "pgo is not significantly faster than the runner-up pgo+bolt in any of the 1 cells \
                 (the data allow"
            ) && d.sentence().contains("equivalent within ±3% in every cell (TOST, 5%)"),
            "{}",
            d.sentence()
        );
        // A sweep: the same variant at another pool is no runner-up (its cells pair with
        // another baseline's).
        let mut sw = plan(&["baseline", "pgo"], &[]);
        sw.sweep_buffer_pool(&[1024, 4096]);
        let d = decided(
            &sw,
            vec![
                cell("pgo@bp1024", "a", 1.6, &W),
                cell("pgo@bp4096", "a", 1.5, &W),
            ],
        );
        assert_eq!(d.winner.as_deref(), Some("pgo@bp1024"));
        assert_eq!(d.runner_up, None, "{d:?}");
        assert_eq!(d.other_pools, vec!["pgo@bp4096".to_string()]);
        assert!(
            d.sentence().starts_with(
                "pgo@bp1024 measurably beat its buffer pool's baseline, and so did pgo@bp4096 at \
                 its pool"
            ),
            "{}",
            d.sentence()
        );
        // A reference binary (--binary) is compared but never chosen.
        let p2 = plan(&["baseline", "pgo", "debian"], &["debian"]);
        let d = decided(
            &p2,
            vec![cell("pgo", "a", 1.2, &W), cell("debian", "a", 1.5, &W)],
        );
        assert_eq!(d.winner.as_deref(), Some("pgo"));
        assert_eq!(d.runner_up, None);
        // The headline: the winner against Debian's server, paired by round (1.2 / 1.5), with
        // the gain over the baseline beside it; the versions say whether it is the same release.
        let mut cells = vec![
            cell("pgo", "a", 1.2, &W),
            cell("debian", "a", 1.5, &W),
            cell("pgo", "b", 1.4, &W),
            cell("debian", "b", 1.0, &W),
        ];
        correct_over_the_run(&mut cells, &p2, None);
        let versions: BTreeMap<String, String> = [
            ("pgo".to_string(), "10.11.18-MariaDB-pgo".to_string()),
            (
                "debian".to_string(),
                "10.11.19-MariaDB-0+deb12u1".to_string(),
            ),
        ]
        .into();
        let h = headline::headline(&p2, &cells, &[], &d, None, &versions).unwrap();
        assert_eq!((h.winner.as_str(), h.reference.as_str()), ("pgo", "debian"));
        assert_eq!(h.cells.len(), 2);
        assert!((h.cells[0].vs_reference.ratio - 0.8).abs() < 1e-9);
        assert!((h.cells[1].vs_reference.ratio - 1.4).abs() < 1e-9);
        assert!(h.cells[1].vs_reference.significant);
        // Holm over the headline's two cells: the second tested at α/2 or α.
        assert!(h
            .cells
            .iter()
            .all(|c| c.vs_reference.adjusted_alpha.is_some()));
        assert!((h.cells[0].vs_baseline.as_ref().unwrap().ratio - 1.2).abs() < 0.01);
        assert!(h
            .sentence()
            .contains("another release — 10.11.19 against the built 10.11.18"));
        // No reference in the run, or nothing won: no headline.
        assert!(headline::headline(&p, &cells, &[], &d, None, &versions).is_none());
        let none = Decision {
            winner: None,
            ..d.clone()
        };
        assert!(headline::headline(&p2, &cells, &[], &none, None, &versions).is_none());
        // Too few rounds for the exact test: nothing wins, and the cell says why.
        let mut cells = vec![cell("pgo", "a", 1.3, &W[..4])];
        correct_over_the_run(&mut cells, &p, None);
        let k = cells[0].tps_vs_baseline.as_ref().unwrap();
        assert!(!k.significant);
        assert!(k.warnings.iter().any(|w| w.contains("--rounds 6")), "{k:?}");
        assert_eq!(
            decided(&p, vec![cell("pgo", "a", 1.3, &W[..4])]).winner,
            None
        );
    }
}
