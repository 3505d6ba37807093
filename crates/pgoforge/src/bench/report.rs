//! The report's model, from stored results only: the statistics per cell and per contender against
//! the baseline. The same results file always gives the same report; `export/` renders it.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::load::BUSY_SHARE;
use super::plan::BenchPlan;
use super::run_dir::{by_round, plan_path, read_records, Record};
use super::stats::{compare, describe, geomean, Better, Comparison, Describe, Verdict};
use crate::infra::exit::Refuse;
use oltp::settings::TestName;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    pub contender: String,
    pub workload: String,
    pub threads: u32,
    pub tps: Describe,
    pub p95_ms: Describe,
    /// Against the baseline (absent for the baseline itself).
    pub tps_vs_baseline: Option<Comparison>,
    pub p95_vs_baseline: Option<Comparison>,
    pub warnings: Vec<String>,
    /// Throughput of every round, (round, TPS): the points behind the summary.
    #[serde(default)]
    pub tps_rounds: Vec<(u32, f64)>,
    /// Server CPU milliseconds per transaction (a second metric, less sensitive to a busy
    /// machine than TPS), when the load was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_ms_per_txn: Option<Describe>,
    /// Runs during which other processes used more than [`BUSY_SHARE`] of the CPU: (round, share).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disturbed: Vec<(u32, f64)>,
}

/// One measured run's machine load, for the report's trace.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoadPoint {
    pub round: u32,
    pub contender: String,
    pub workload: String,
    /// Share of the machine's CPU used by other processes (0..1).
    pub other_share: f64,
    pub steal_share: f64,
}

/// Which contender to package, and whether it really beats the next best.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    /// Faster than the baseline with significance in at least one cell (after Holm), slower in
    /// none; the best geometric mean among those. `None`: nothing measurably won.
    pub winner: Option<String>,
    /// The qualifying contender with the next best geometric mean.
    pub runner_up: Option<String>,
    /// The winner against the runner-up, cell by cell (paired, Holm over these cells).
    pub versus: Vec<CellComparison>,
    /// The winner is not significantly faster than the runner-up in any cell.
    pub tied: bool,
}

impl Decision {
    pub fn sentence(&self) -> String {
        match (&self.winner, &self.runner_up) {
            (None, _) => "no contender measurably beat the baseline".into(),
            (Some(w), None) => format!("{w} is the only contender that measurably beat the baseline"),
            (Some(w), Some(r)) if self.tied => format!(
                "{w} and {r} are tied (no cell where {w} is significantly faster than {r}); \
                 {w} is chosen for its higher geometric mean of TPS ratios, not because it is proven faster"
            ),
            (Some(w), Some(r)) => {
                let won = self
                    .versus
                    .iter()
                    .filter(|v| v.comparison.verdict == Verdict::Faster)
                    .count();
                format!(
                    "{w} beats the runner-up {r}: significantly faster in {won} of {} cells",
                    self.versus.len()
                )
            }
        }
    }
}

pub use super::environment::Environment;
pub use super::report_rows::{CellComparison, Geomean, RoundOrder};

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
}

/// What the A/A control (the baseline served again, interleaved like every contender) says
/// about this run: how much the per-round ratios scatter with nothing changed, and the smallest
/// change the run's rounds could detect over its comparisons.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OwnNoise {
    pub control: String,
    /// The comparisons Holm corrects over (the control's are not among them).
    pub comparisons: usize,
    pub cells: Vec<NoiseCell>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NoiseCell {
    pub workload: String,
    pub threads: u32,
    pub rounds: usize,
    /// Standard deviation of the control's per-round log-ratios against the baseline.
    pub sd_log_ratio: f64,
    /// The smallest true change detected with 80 % power at these rounds over `comparisons`
    /// (a ratio; infinite when the rounds cannot reach the level at all).
    pub detectable_ratio: f64,
    /// The control against the baseline: significant here means the run is not A/A-clean.
    pub aa: Comparison,
}

impl OwnNoise {
    /// One sentence for the report.
    pub fn sentence(&self) -> String {
        let cells: Vec<String> = self
            .cells
            .iter()
            .map(|c| {
                format!(
                    "{} {} thr: scatter {:.1}% per round, detectable {}",
                    c.workload,
                    c.threads,
                    c.sd_log_ratio * 100.0,
                    if c.detectable_ratio.is_finite() {
                        format!("{:.1}%", (c.detectable_ratio - 1.0) * 100.0)
                    } else {
                        "nothing (too few rounds)".into()
                    }
                )
            })
            .collect();
        format!(
            "This run's own noise (A/A control: the baseline served again as {}, interleaved like \
             every contender; detectable = the smallest change found with 80% power at these \
             rounds over the run's {} comparisons): {}.",
            self.control,
            self.comparisons,
            cells.join("; ")
        )
    }
}

fn own_noise(plan: &BenchPlan, cells: &[Cell]) -> Option<OwnNoise> {
    let control = plan.aa_control.as_ref()?;
    let comparisons = cells
        .iter()
        .filter(|c| !plan.is_control(&c.contender) && c.tps_vs_baseline.is_some())
        .count();
    let base = &plan.contenders[0].name;
    let noise_cells: Vec<NoiseCell> = cells
        .iter()
        .filter(|c| &c.contender == control)
        .filter_map(|c| {
            let aa = c.tps_vs_baseline.clone()?;
            let b = cells.iter().find(|x| {
                &x.contender == base && x.workload == c.workload && x.threads == c.threads
            })?;
            let d = super::stats::paired_log_ratios(&b.tps_rounds, &c.tps_rounds);
            let sd = if d.len() > 1 {
                super::stats::stddev(&d)
            } else {
                f64::INFINITY
            };
            Some(NoiseCell {
                workload: c.workload.clone(),
                threads: c.threads,
                rounds: d.len(),
                sd_log_ratio: sd,
                detectable_ratio: super::stats::min_detectable_ratio(sd, d.len(), comparisons),
                aa,
            })
        })
        .collect();
    Some(OwnNoise {
        control: control.clone(),
        comparisons,
        cells: noise_cells,
    })
}

/// The held-out check: workloads the profiles never saw, and the cells significantly slower than
/// the baseline on them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HeldOut {
    pub workloads: Vec<String>,
    /// "contender workload at N threads: −x % [lo, hi]" for each significantly slower cell.
    pub regressions: Vec<String>,
    /// `--allow-regression`: such a contender may still be chosen and packaged.
    pub allowed: bool,
}

impl HeldOut {
    pub fn sentence(&self) -> String {
        let w = self.workloads.join(", ");
        if self.regressions.is_empty() {
            return format!("held-out workloads ({w}): no regression");
        }
        format!(
            "held-out workloads ({w}): REGRESSION {}{}",
            self.regressions.join("; "),
            if self.allowed {
                " (allowed by --allow-regression)"
            } else {
                "; a variant that regressed is not packaged (pass --allow-regression to allow it)"
            }
        )
    }
}

/// How the report decides, beyond the numbers. Kept in the run directory (`policy.json`, absent
/// for the default) so that every later `pgoforge report` decides as the run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Policy {
    /// A contender significantly slower on a held-out workload (only there) may still win.
    pub allow_held_out_regression: bool,
    /// The smallest change counted as one (`--min-effect`, a fraction; absent: 2 %). A
    /// significant change below it is reported as below the minimum, never as a finding.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_effect: Option<f64>,
}

impl Policy {
    pub fn path(dir: &Path) -> std::path::PathBuf {
        dir.join("policy.json")
    }

    /// The run directory's policy (the default when it has none).
    pub fn stored(dir: &Path) -> Result<Policy> {
        let p = Policy::path(dir);
        match std::fs::read_to_string(&p) {
            Ok(t) => {
                serde_json::from_str(&t).with_context(|| format!("{} is corrupted", p.display()))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Policy::default()),
            Err(e) => Err(e).with_context(|| format!("reading {}", p.display())),
        }
    }

    /// Makes this the run directory's policy.
    pub fn store(&self, dir: &Path) -> Result<()> {
        let p = Policy::path(dir);
        if *self == Policy::default() {
            match std::fs::remove_file(&p) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(e).with_context(|| format!("removing {}", p.display()))
                }
                _ => Ok(()),
            }
        } else {
            crate::infra::fs::write_json(&p, self)
        }
    }
}

fn held_out(plan: &BenchPlan, cells: &[Cell], policy: Policy) -> Option<HeldOut> {
    let held = plan.held_out();
    if held.is_empty() {
        return None;
    }
    let names: Vec<String> = held.iter().map(|w| w.to_string()).collect();
    let regressions = cells
        .iter()
        .filter(|c| is_held_out(plan, c))
        .filter_map(|c| {
            let k = c.tps_vs_baseline.as_ref()?;
            (k.verdict == Verdict::Slower).then(|| {
                format!(
                    "{} {} at {} threads: {}",
                    c.contender,
                    c.workload,
                    c.threads,
                    k.sentence()
                )
            })
        })
        .collect();
    Some(HeldOut {
        workloads: names,
        regressions,
        allowed: policy.allow_held_out_regression,
    })
}

/// Whether the cell's workload is one its contender's profile was not trained on.
pub fn is_held_out(plan: &BenchPlan, c: &Cell) -> bool {
    plan.held_out_for(&c.contender)
        .iter()
        .any(|w| w.to_string() == c.workload)
}

/// The run's position effect ([`super::stats::position`]) from every cell's complete rounds, and
/// what adjusting the cells' comparisons for it would do to their scatter.
fn position_effect(
    plan: &BenchPlan,
    records: &[Record],
    cells: &[Cell],
) -> Option<super::stats::position::PositionEffect> {
    use super::stats::position::{estimate, CellObs};
    let mut pos: BTreeMap<(&str, String, u32, u32), usize> = BTreeMap::new();
    for r in records {
        pos.entry((
            r.contender.as_str(),
            r.workload.to_string(),
            r.threads,
            r.round,
        ))
        .or_insert(r.position);
    }
    let position_of = |name: &str, w: &str, t: u32, round: u32| {
        pos.get(&(name, w.to_string(), t, round)).map(|p| *p as f64)
    };
    // Per cell, the contenders' per-round throughput the cells already hold, in the rounds every
    // contender of the cell ran.
    let mut groups: Vec<Vec<&Cell>> = Vec::new();
    for c in cells {
        match groups
            .iter_mut()
            .find(|g| g[0].workload == c.workload && g[0].threads == c.threads)
        {
            Some(g) => g.push(c),
            None => groups.push(vec![c]),
        }
    }
    let obs: Vec<CellObs> = groups
        .iter()
        .map(|g| CellObs {
            rounds: g[0]
                .tps_rounds
                .iter()
                .filter_map(|(round, _)| {
                    g.iter()
                        .map(|c| {
                            let (_, y) = c.tps_rounds.iter().find(|(r, _)| r == round)?;
                            let p = position_of(&c.contender, &c.workload, c.threads, *round)?;
                            (*y > 0.0).then(|| (p, y.ln()))
                        })
                        .collect::<Option<Vec<_>>>()
                })
                .collect(),
        })
        .collect();
    let pairs: Vec<Vec<(f64, f64)>> = cells
        .iter()
        .filter(|c| c.tps_vs_baseline.is_some())
        .filter_map(|c| {
            let me = plan.contenders.iter().find(|x| x.name == c.contender)?;
            let base = &plan.baseline_for(me).name;
            let base_cell = cells.iter().find(|b| {
                &b.contender == base && b.workload == c.workload && b.threads == c.threads
            })?;
            Some(
                c.tps_rounds
                    .iter()
                    .filter_map(|(round, v)| {
                        let (_, b) = base_cell.tps_rounds.iter().find(|(r, _)| r == round)?;
                        let dp = position_of(&c.contender, &c.workload, c.threads, *round)?
                            - position_of(base, &c.workload, c.threads, *round)?;
                        (*v > 0.0 && *b > 0.0).then(|| ((v / b).ln(), dp))
                    })
                    .collect(),
            )
        })
        .collect();
    estimate(&obs, &pairs)
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

/// One contender's figures on one workload and thread count, compared with the first contender
/// run with the same server settings; `None` when it has no results there.
fn cell(plan: &BenchPlan, records: &[Record], name: &str, w: TestName, t: u32) -> Option<Cell> {
    let mine = |name: &str| -> Vec<&Record> {
        let mut v: Vec<&Record> = records
            .iter()
            .filter(|r| r.contender == name && r.workload == w && r.threads == t)
            .collect();
        v.sort_by_key(|r| r.round);
        v
    };
    let pick = |name: &str, f: &dyn Fn(&Record) -> f64| by_round(records, name, w, t, f);
    let values = |v: &[(u32, f64)]| -> Vec<f64> { v.iter().map(|x| x.1).collect() };
    let tps = |r: &Record| r.result.tps();
    let p95 = |r: &Record| {
        r.result
            .latency
            .percentile
            .unwrap_or(r.result.latency.hdr.p95)
    };
    let c = plan.contenders.iter().find(|c| c.name == name)?;
    let base = &plan.baseline_for(c).name;
    let base_tps = pick(base, &tps);
    let base_p95 = pick(base, &p95);
    let v_tps = pick(name, &tps);
    if v_tps.is_empty() {
        return None;
    }
    let v_p95 = pick(name, &p95);
    let mut warnings = Vec::new();
    let mut disturbed = Vec::new();
    let mut cpu_ms = Vec::new();
    for r in mine(name) {
        let Some(l) = &r.load else { continue };
        if l.disturbed() {
            disturbed.push((r.round, l.other_share));
        }
        if r.result.transactions > 0 && l.server_cpu_s > 0.0 {
            cpu_ms.push(l.server_cpu_s * 1000.0 / r.result.transactions as f64);
        }
    }
    if !disturbed.is_empty() {
        warnings.push(format!(
            "{} run(s) disturbed: other processes used more than {:.0}% of the CPU (rounds {})",
            disturbed.len(),
            BUSY_SHARE * 100.0,
            disturbed
                .iter()
                .map(|(r, s)| format!("{r}: {:.0}%", s * 100.0))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    // The client's round-trip bound (bench/network.rs), from this contender's runs here.
    let rtts: Vec<f64> = mine(name).iter().filter_map(|r| r.rtt_us).collect();
    let qps: Vec<f64> = mine(name)
        .iter()
        .filter(|r| r.result.total_time_s > 0.0)
        .map(|r| r.result.queries.total as f64 / r.result.total_time_s)
        .collect();
    if !rtts.is_empty() && !qps.is_empty() {
        let rtt = super::stats::median(&rtts);
        if let Some(w) = super::network::bound_warning(super::stats::median(&qps), t, rtt) {
            warnings.push(w);
        }
    }
    let (tc, pc) = if name == base || base_tps.is_empty() {
        (None, None)
    } else {
        (
            Some(compare(&base_tps, &v_tps, Better::Higher)),
            Some(compare(&base_p95, &v_p95, Better::Lower)),
        )
    };
    Some(Cell {
        contender: name.to_string(),
        workload: w.to_string(),
        threads: t,
        tps: describe(&values(&v_tps)),
        p95_ms: describe(&values(&v_p95)),
        tps_vs_baseline: tc,
        p95_vs_baseline: pc,
        warnings,
        tps_rounds: v_tps,
        server_cpu_ms_per_txn: (!cpu_ms.is_empty()).then(|| describe(&cpu_ms)),
        disturbed,
    })
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
    let records = read_records(dir)?;
    if records.is_empty() {
        bail!("{} holds no results yet", dir.display());
    }
    for r in &records {
        if !plan.contenders.iter().any(|c| c.name == r.contender) {
            bail!("results name contender '{}', which the plan in {} does not have: the file belongs to another run", r.contender, dir.display());
        }
    }
    let mut cells = Vec::new();
    let mut ratios: BTreeMap<(String, u32), Vec<f64>> = BTreeMap::new();
    for w in &plan.spec.workloads {
        for &t in &plan.spec.threads {
            for c in &plan.contenders {
                let Some(cell) = cell(&plan, &records, &c.name, *w, t) else {
                    continue;
                };
                if let Some(k) = &cell.tps_vs_baseline {
                    ratios.entry((c.name.clone(), t)).or_default().push(k.ratio);
                }
                cells.push(cell);
            }
        }
    }
    // A dataset larger than the buffer pool makes the benchmark I/O-bound.
    let mut data_mb = plan.spec.tables as f64 * plan.spec.table_size as f64 * 250.0 / 1_048_576.0;
    if plan.spec.workloads.contains(&TestName::Tpcc) {
        // One sysbench-tpcc warehouse with its indexes, measured after prepare: about 120 MiB.
        data_mb += 120.0 * crate::server::template::TPCC_SCALE as f64;
    }
    if data_mb > plan.config.buffer_pool_mb as f64 * 0.8 {
        for c in &mut cells {
            c.warnings.push(format!(
                "dataset (~{data_mb:.0} MiB) near or above the buffer pool ({} MiB): I/O-bound",
                plan.config.buffer_pool_mb
            ));
        }
    }
    correct_over_the_run(&mut cells, &plan, policy.min_effect);
    unstable_runs(&mut cells, &records);
    let noise_floor = super::calibrate::read(&super::calibrate::copy_in_run_dir(dir))?;
    if let Some(cal) = &noise_floor {
        noisier_than_the_floor(&mut cells, cal);
    }
    let geomeans: Vec<Geomean> = ratios
        .into_iter()
        .map(|((contender, threads), r)| Geomean {
            contender,
            threads,
            ratio: geomean(&r),
        })
        .collect();
    let decision = decide(&plan, &cells, &geomeans, policy);
    let held_out = held_out(&plan, &cells, policy);
    let own_noise = own_noise(&plan, &cells);
    if let Some(n) = &own_noise {
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
    let rounds_found = records.iter().map(|r| r.round).max().unwrap_or(0);
    Ok(Report {
        gate: crate::gate::mtr::read_copy(dir)?,
        source_release: crate::source::release::read_copy(dir)?,
        position_effect: position_effect(&plan, &records, &cells),
        network: network(&records),
        environment: environment(dir, &records),
        cachegrind: super::cachegrind::read_records(dir)?,
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
        held_out,
        own_noise,
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

/// Holm over every throughput comparison of the run, and separately over every latency one:
/// a run of 3 variants × 3 workloads makes 9 claims, and each is called significant only if it
/// survives the correction.
fn correct_over_the_run(cells: &mut [Cell], plan: &BenchPlan, min_effect: Option<f64>) {
    // The A/A control is not a claim: corrected over its own cells, it leaves the run's
    // intervals as they would be without it.
    let mut control: Vec<&mut Comparison> = Vec::new();
    for c in cells.iter_mut().filter(|c| plan.is_control(&c.contender)) {
        if let Some(k) = c.tps_vs_baseline.as_mut() {
            control.push(k);
        }
    }
    Comparison::apply_holm_with(&mut control, Better::Higher, min_effect);
    let mut tps: Vec<&mut Comparison> = Vec::new();
    let mut p95: Vec<&mut Comparison> = Vec::new();
    for c in cells.iter_mut().filter(|c| !plan.is_control(&c.contender)) {
        if let Some(k) = c.tps_vs_baseline.as_mut() {
            tps.push(k);
        }
        if let Some(k) = c.p95_vs_baseline.as_mut() {
            p95.push(k);
        }
    }
    let m = tps.len();
    Comparison::apply_holm_with(&mut tps, Better::Higher, min_effect);
    Comparison::apply_holm_with(&mut p95, Better::Lower, min_effect);
    let needed = super::stats::rounds_needed(m);
    for c in cells.iter_mut() {
        if let Some(k) = c.tps_vs_baseline.as_mut() {
            if k.pairs < needed {
                // This says more than the per-comparison minimum; one warning is enough.
                k.warnings
                    .retain(|w| !w.contains("the exact test needs at least"));
                k.warnings.push(format!(
                    "{} paired rounds cannot show significance over this run's {m} comparisons \
                     (the exact test needs {needed}; use --rounds {needed} or more)",
                    k.pairs
                ));
            }
        }
    }
}

/// sysbench's OLTP tests: steady single-kind transactions whose per-second throughput should be
/// flat on a quiet host (tpcc's mix and a replay's file vary by themselves), so their per-second
/// variation measures the host.
pub fn is_steady(w: TestName) -> bool {
    !matches!(w, TestName::Tpcc | TestName::Replay)
}

/// The coefficient of variation of a run's per-second throughput (its first second left out),
/// when it has at least three seconds.
pub fn per_second_cv(r: &oltp::RunResult) -> Option<f64> {
    let iv: Vec<f64> = r.intervals.iter().skip(1).map(|i| i.tps).collect();
    seconds_cv(&iv)
}

/// The coefficient of variation of per-second throughputs, when there are at least three.
fn seconds_cv(tps: &[f64]) -> Option<f64> {
    if tps.len() < 3 {
        return None;
    }
    let m = super::stats::mean(tps);
    (m > 0.0).then(|| super::stats::stddev(tps) / m)
}

/// The per-second variation of every steady run: a plain run's own ([`per_second_cv`]); in
/// the sliced design, a round's slices of one contender and cell taken together (each slice's
/// first second, the switch, left out when it has more) — a 2-s slice alone has too few seconds.
pub(crate) fn run_cvs(records: &[Record]) -> Vec<f64> {
    let mut sliced: BTreeMap<(u32, &str, String, u32), Vec<f64>> = BTreeMap::new();
    let mut out = Vec::new();
    for r in records.iter().filter(|r| is_steady(r.workload)) {
        if r.slice.is_none() {
            out.extend(per_second_cv(&r.result));
            continue;
        }
        let skip = usize::from(r.result.intervals.len() > 1);
        sliced
            .entry((r.round, &r.contender, r.workload.to_string(), r.threads))
            .or_default()
            .extend(r.result.intervals.iter().skip(skip).map(|i| i.tps));
    }
    out.extend(sliced.values().filter_map(|v| seconds_cv(v)));
    out
}

/// A run is unstable when its per-second throughput varies far more than the benchmark's other
/// runs do (coefficient of variation over 3 times the median of all runs): a fixed threshold
/// fired on every cell and said nothing.
fn unstable_runs(cells: &mut [Cell], records: &[Record]) {
    let cv = |r: &Record| per_second_cv(&r.result);
    let all: Vec<f64> = records.iter().filter_map(cv).collect();
    if all.len() < 4 {
        return;
    }
    let floor = super::stats::median(&all);
    for c in cells.iter_mut() {
        let odd: Vec<u32> = records
            .iter()
            .filter(|r| {
                r.contender == c.contender
                    && r.workload.to_string() == c.workload
                    && r.threads == c.threads
            })
            .filter(|r| cv(r).is_some_and(|x| x > 3.0 * floor && x > 0.02))
            .map(|r| r.round)
            .collect();
        if !odd.is_empty() {
            c.warnings.push(format!(
                "unstable run(s) in round(s) {odd:?}: per-second throughput varied more than 3x \
                 the benchmark's typical {:.1}%",
                floor * 100.0
            ));
        }
    }
}

/// A comparison whose rounds scatter far more than the machine's A/A floor did: the run was
/// disturbed (or the server itself is erratic), whatever its interval says.
fn noisier_than_the_floor(cells: &mut [Cell], cal: &super::calibrate::Calibration) {
    use super::calibrate::{scatter_over_floor, UNSTABLE_OVER_FLOOR};
    for c in cells.iter_mut() {
        let (Some(k), Some(f)) = (&c.tps_vs_baseline, cal.floor(&c.workload, c.threads)) else {
            continue;
        };
        if let Some(x) = scatter_over_floor(k, f).filter(|x| *x > UNSTABLE_OVER_FLOOR) {
            c.warnings.push(format!(
                "rounds scattered {x:.1}x more than this machine's A/A floor ({:.1}% per round, \
                 calibrated with {}): something disturbed the run, or the server is erratic",
                f.sd_log_ratio * 100.0,
                cal.binary.display()
            ));
        }
    }
}

/// The winner to package: it must beat the baseline (after Holm), lose nowhere, have the best
/// geometric mean — and beat the runner-up, or the decision says the two are tied.
fn decide(plan: &BenchPlan, cells: &[Cell], geomeans: &[Geomean], policy: Policy) -> Decision {
    let mut qualified: Vec<(f64, String)> = Vec::new();
    for c in plan.contenders.iter().skip(1) {
        if plan.reference_only.contains(&c.name) || plan.is_control(&c.name) {
            continue;
        }
        let mine: Vec<&Cell> = cells.iter().filter(|x| x.contender == c.name).collect();
        let faster = mine
            .iter()
            .filter_map(|x| x.tps_vs_baseline.as_ref())
            .any(|k| k.verdict == Verdict::Faster);
        // Slower anywhere disqualifies, except on a held-out workload when the user allows it.
        let slower = mine.iter().any(|x| {
            let excused = policy.allow_held_out_regression && is_held_out(plan, x);
            !excused
                && x.tps_vs_baseline
                    .as_ref()
                    .is_some_and(|k| k.verdict == Verdict::Slower)
        });
        if !faster || slower {
            continue;
        }
        let g: Vec<f64> = geomeans
            .iter()
            .filter(|g| g.contender == c.name)
            .map(|g| g.ratio)
            .collect();
        qualified.push((geomean(&g), c.name.clone()));
    }
    qualified.sort_by(|a, b| b.0.total_cmp(&a.0));
    let winner = qualified.first().map(|x| x.1.clone());
    let runner_up = qualified.get(1).map(|x| x.1.clone());
    let mut versus = Vec::new();
    if let (Some(w), Some(r)) = (&winner, &runner_up) {
        for c in cells.iter().filter(|c| &c.contender == w) {
            let Some(rc) = cells
                .iter()
                .find(|x| &x.contender == r && x.workload == c.workload && x.threads == c.threads)
            else {
                continue;
            };
            versus.push(CellComparison {
                workload: c.workload.clone(),
                threads: c.threads,
                comparison: compare(&rc.tps_rounds, &c.tps_rounds, Better::Higher),
            });
        }
        let mut fam: Vec<&mut Comparison> = versus.iter_mut().map(|v| &mut v.comparison).collect();
        Comparison::apply_holm_with(&mut fam, Better::Higher, policy.min_effect);
    }
    let tied = runner_up.is_some()
        && !versus
            .iter()
            .any(|v| v.comparison.verdict == Verdict::Faster);
    Decision {
        winner,
        runner_up,
        versus,
        tied,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::order::OrderScheme;
    use crate::bench::plan::Contender;
    use crate::bench::spec::BenchSpec;
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
            tps_vs_baseline: Some(compare(&rounds(&base), &rounds(&v), Better::Higher)),
            p95_vs_baseline: None,
            warnings: Vec::new(),
            tps_rounds: rounds(&v),
            server_cpu_ms_per_txn: None,
            disturbed: Vec::new(),
        }
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
        (
            decide(p, &cells, &geomeans, policy),
            held_out(p, &cells, policy),
        )
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
        assert_eq!(
            h.unwrap().sentence(),
            "held-out workloads (tpcc): no regression"
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
        let n = own_noise(&p, &cells).unwrap();
        assert_eq!(n.comparisons, 1);
        assert_eq!(n.cells.len(), 1);
        let c = &n.cells[0];
        assert_eq!(c.rounds, 9);
        // W's per-mille wobble: sd of ln(1 + w/1000) ≈ 3.2 ‰.
        assert!((c.sd_log_ratio - 0.0032).abs() < 0.0003, "{c:?}");
        assert!(
            c.detectable_ratio > 1.0 && c.detectable_ratio < 1.02,
            "{c:?}"
        );
        assert!(!c.aa.significant);
        assert!(
            n.sentence()
                .contains("a 4 thr: scatter 0.3% per round, detectable"),
            "{}",
            n.sentence()
        );
        assert!(own_noise(&plan(&["baseline", "pgo"], &[]), &cells).is_none());
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
            held_out: Some(h),
            own_noise: None,
            per_second_cv: None,
            source_release: None,
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
        assert!(read_only[3].ends_with("n.s. (h)"), "{}", read_only[3]);
        assert!(read_only[4].ends_with("REGRESSION"), "{}", read_only[4]);
        assert!(t.rows[1][2].ends_with("REGRESSION (h)"), "{}", t.rows[1][2]);
        let lead = crate::bench::export::matrix::lead(&r);
        assert!(lead.contains("all 6 comparisons"), "{lead}");
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
        assert!(d.tied, "{d:?}");
        assert!(d.sentence().contains("tied"), "{}", d.sentence());
        // A reference binary (--binary) is compared but never chosen.
        let p2 = plan(&["baseline", "pgo", "debian"], &["debian"]);
        let d = decided(
            &p2,
            vec![cell("pgo", "a", 1.2, &W), cell("debian", "a", 1.5, &W)],
        );
        assert_eq!(d.winner.as_deref(), Some("pgo"));
        assert_eq!(d.runner_up, None);
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
