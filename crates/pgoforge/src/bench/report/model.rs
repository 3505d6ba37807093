//! One cell of a report — a contender on a workload at a thread count — built from its stored
//! runs: its rounds, its description, its comparison with the baseline, its load.

use serde::{Deserialize, Serialize};

use crate::bench::load::BUSY_SHARE;
use crate::bench::plan::BenchPlan;
use crate::bench::run_dir::{by_round, Record};
use crate::bench::stats::{compare, describe, Better, Comparison, Describe};
use oltp::settings::TestName;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    pub contender: String,
    pub workload: String,
    pub threads: u32,
    pub tps: Describe,
    pub p95_ms: Describe,
    /// The mean latency of a transaction, ms (median over the rounds; absent from reports
    /// written before it was shown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_ms: Option<Describe>,
    /// Against the baseline (absent for the baseline itself).
    pub tps_vs_baseline: Option<Comparison>,
    pub p95_vs_baseline: Option<Comparison>,
    /// Capacity — transactions per second of the server's CPU — against the baseline, paired by
    /// round like throughput (absent for the baseline, and where the server's CPU was not read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_vs_baseline: Option<Comparison>,
    pub warnings: Vec<String>,
    /// Throughput of every round, (round, TPS): the points behind the summary.
    #[serde(default)]
    pub tps_rounds: Vec<(u32, f64)>,
    /// Server CPU milliseconds per transaction (a second metric, less sensitive to a busy
    /// machine than TPS), when the load was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_cpu_ms_per_txn: Option<Describe>,
    /// What the server spent per transaction, split (runs recorded since 2026-12-04): CPU µs in
    /// user mode (what a compiler can shorten) and in the kernel, and context switches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_per_txn: Option<ServerPerTxn>,
    /// Runs during which other processes used more than [`BUSY_SHARE`] of the CPU: (round, share).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disturbed: Vec<(u32, f64)>,
    /// Why the cell measured the round trip rather than the server (this contender or its
    /// baseline sent half or more of what its connections can at the measured round trip while
    /// its server's vCPUs were not saturated), at threads the probe chose: the decision does not
    /// use it. (At threads the user gave, the cell's warning says so and its verdict stays.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_bound: Option<String>,
}

/// The server's CPU and context switches per transaction in a cell, and how busy each side was
/// (medians over the cell's runs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerPerTxn {
    pub user_us: Describe,
    pub sys_us: Describe,
    /// Voluntary plus involuntary switches of the server's threads per transaction.
    pub switches: Option<Describe>,
    /// Server CPU seconds per second of the run (1.0: one vCPU always busy).
    pub server_busy: Describe,
    /// The client's (pgoforge's driver threads') CPU seconds per second of the run.
    pub client_busy: Describe,
    /// What bounds the cell, from how busy each side's vCPUs were (absent when the runs did
    /// not record the vCPUs each side had).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound: Option<Bound>,
    /// The machine's iowait share over the runs (absent from runs recorded before 2026-12-06).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iowait: Option<Describe>,
    /// KiB the server read from storage per transaction (absent likewise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_kib: Option<Describe>,
}

/// What limits a cell's throughput, measured: the server's vCPUs saturated, the client's, or
/// neither (the work waits: round trips, locks, I/O).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Bound {
    pub by: BoundBy,
    /// Median busy share of the server's vCPUs (CPU seconds per second over its vCPUs).
    pub server_share: f64,
    /// The same for the client's; absent when the client ran on another host.
    pub client_share: Option<f64>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BoundBy {
    Server,
    Client,
    Wait,
    /// Not the server, and the client's CPU was not read (it ran on another host).
    NotServer,
}

pub use crate::bench::load::SATURATED;

/// Server-bound from [`SATURATED`] of its vCPUs (whatever the client did: the server is what is
/// measured), else client-bound from the same share of the client's, else waiting.
pub fn classify(server_share: f64, client_share: Option<f64>) -> BoundBy {
    match client_share {
        _ if server_share >= SATURATED => BoundBy::Server,
        Some(c) if c >= SATURATED => BoundBy::Client,
        Some(_) => BoundBy::Wait,
        None => BoundBy::NotServer,
    }
}

impl Bound {
    /// The warning a cell not bound by its server carries beside its verdict.
    pub fn warning(&self) -> Option<String> {
        let s = self.server_share * 100.0;
        match (self.by, self.client_share.map(|c| c * 100.0)) {
            (BoundBy::Server, _) => None,
            (BoundBy::Client, Some(c)) => Some(format!(
                "client-bound: the client's vCPUs were {c:.0}% busy and the server's {s:.0}%: the \
                 client limits this cell, so its throughput gain understates the server's (its \
                 capacity says more)"
            )),
            (BoundBy::Wait, Some(c)) => Some(format!(
                "wait-bound: neither side's vCPUs were saturated (server {s:.0}%, client {c:.0}%): \
                 the cell waits on round trips, locks or I/O, and a compiler's gain shows less in \
                 its throughput than in its capacity"
            )),
            _ => Some(format!(
                "not server-bound: the server's vCPUs were {s:.0}% busy (the client ran on another \
                 host, its CPU not read here)"
            )),
        }
    }
}

/// Capacity per round: the round's transactions over its server CPU seconds (a sliced round's
/// slices summed), for the rounds whose every run recorded the server's CPU.
pub(super) fn capacity_rounds(
    records: &[Record],
    name: &str,
    w: TestName,
    t: u32,
) -> Vec<(u32, f64)> {
    let mut sums: std::collections::BTreeMap<u32, Option<(f64, f64)>> =
        std::collections::BTreeMap::new();
    for r in records
        .iter()
        .filter(|r| r.contender == name && r.workload == w && r.threads == t)
    {
        let e = sums.entry(r.round).or_insert(Some((0.0, 0.0)));
        *e = match (*e, &r.load) {
            (Some((n, cpu)), Some(l)) if l.server_cpu_s > 0.0 => {
                Some((n + r.result.transactions as f64, cpu + l.server_cpu_s))
            }
            _ => None,
        };
    }
    sums.into_iter()
        .filter_map(|(round, v)| v.map(|(n, cpu)| (round, n / cpu)))
        .collect()
}

/// The per-transaction split of a contender's runs in a cell; `None` when no run recorded it.
fn per_txn(runs: &[&Record]) -> Option<ServerPerTxn> {
    let (mut user, mut sys, mut sw, mut sb, mut cb) = (vec![], vec![], vec![], vec![], vec![]);
    let (mut s_share, mut c_share) = (vec![], vec![]);
    let (mut iowait, mut read_kib) = (vec![], vec![]);
    for r in runs {
        let (Some(l), n) = (&r.load, r.result.transactions) else {
            continue;
        };
        let (Some(u), Some(s), Some(w)) = (l.server_user_s, l.server_sys_s, l.wall_s) else {
            continue;
        };
        if n == 0 || w <= 0.0 {
            continue;
        }
        let n = n as f64;
        user.push(u * 1e6 / n);
        sys.push(s * 1e6 / n);
        if let Some((v, i)) = l.server_switches {
            sw.push((v + i) as f64 / n);
        }
        sb.push((u + s) / w);
        cb.push(l.client_cpu_s / w);
        iowait.extend(l.iowait_share);
        read_kib.extend(l.server_read_bytes.map(|b| b as f64 / 1024.0 / n));
        if let Some(share) = l.server_share() {
            s_share.push(share);
            if let Some(c) = l.client_share() {
                c_share.push(c);
            }
        }
    }
    let median = crate::bench::stats::median;
    let bound = (!s_share.is_empty()).then(|| {
        let server_share = median(&s_share);
        // Every run with the server's vCPUs had the client's, or none did (a remote client).
        let client_share = (c_share.len() == s_share.len()).then(|| median(&c_share));
        Bound {
            by: classify(server_share, client_share),
            server_share,
            client_share,
        }
    });
    (!user.is_empty()).then(|| ServerPerTxn {
        user_us: describe(&user),
        sys_us: describe(&sys),
        switches: (!sw.is_empty()).then(|| describe(&sw)),
        server_busy: describe(&sb),
        client_busy: describe(&cb),
        bound,
        iowait: (!iowait.is_empty()).then(|| describe(&iowait)),
        read_kib: (!read_kib.is_empty()).then(|| describe(&read_kib)),
    })
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

/// One contender's figures on one workload and thread count, compared with the first contender
/// run with the same server settings; `None` when it has no results there.
pub(super) fn cell(
    plan: &BenchPlan,
    records: &[Record],
    name: &str,
    w: TestName,
    t: u32,
) -> Option<Cell> {
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
    // The A/A control against the binary it repeats, whichever contender the report's baseline is.
    let reference = match plan.aa_reference() {
        Some(r) if plan.is_control(name) => r,
        _ => plan.baseline_for(c),
    };
    let base = &reference.name;
    let base_tps = pick(base, &tps);
    let base_p95 = pick(base, &p95);
    let v_tps = pick(name, &tps);
    if v_tps.is_empty() {
        return None;
    }
    let v_p95 = pick(name, &p95);
    let mut warnings = Vec::new();
    // This contender's runs in the cell, filtered and sorted once for every figure below.
    let runs = mine(name);
    let (disturbed, cpu_ms) = load_figures(&runs);
    warnings.extend(disturbed_warning(&disturbed));
    let server_per_txn = per_txn(&runs);
    let bound = server_per_txn.as_ref().and_then(|p| p.bound.as_ref());
    if let Some(w) = bound.and_then(Bound::warning) {
        warnings.push(w);
    }
    if bound.is_none() {
        warnings.extend(round_trip_warning(&runs, t));
    }
    let (tc, pc) = if name == base || base_tps.is_empty() {
        (None, None)
    } else {
        (
            Some(compare(&base_tps, &v_tps, Better::Higher)),
            Some(compare(&base_p95, &v_p95, Better::Lower)),
        )
    };
    let capacity = {
        let b = capacity_rounds(records, base, w, t);
        let v = capacity_rounds(records, name, w, t);
        let paired = crate::bench::stats::pair_by_round(&b, &v).len();
        (name != base && paired >= 2).then(|| compare(&b, &v, Better::Higher))
    };
    // Threads pgoforge chose and could not get off the round trip: not used for the verdict.
    // Threads the user gave (`--threads 1` measures one connection on purpose): kept, said.
    let chosen = plan.spec.saturate;
    let link = link_bound(records, name, w, t, chosen).or_else(|| {
        (name != base)
            .then(|| link_bound(records, base, w, t, chosen))
            .flatten()
    });
    warnings.extend(link.clone());
    Some(Cell {
        contender: name.to_string(),
        workload: w.to_string(),
        threads: t,
        tps: describe(&values(&v_tps)),
        p95_ms: describe(&values(&v_p95)),
        mean_ms: Some(describe(&values(&pick(name, &|r| r.result.latency.avg)))),
        tps_vs_baseline: tc,
        p95_vs_baseline: pc,
        capacity_vs_baseline: capacity,
        warnings,
        tps_rounds: v_tps,
        server_cpu_ms_per_txn: (!cpu_ms.is_empty()).then(|| describe(&cpu_ms)),
        server_per_txn,
        disturbed,
        // Only a cell at chosen threads is kept out of the decision; the warning says either.
        link_bound: link.filter(|_| chosen),
    })
}

/// From a cell's runs' recorded load: the runs other processes disturbed (round, their CPU
/// share) and the server's CPU milliseconds per transaction of each run.
fn load_figures(runs: &[&Record]) -> (Vec<(u32, f64)>, Vec<f64>) {
    let mut disturbed = Vec::new();
    let mut cpu_ms = Vec::new();
    for &r in runs {
        let Some(l) = &r.load else { continue };
        if l.disturbed() {
            disturbed.push((r.round, l.other_share));
        }
        if r.result.transactions > 0 && l.server_cpu_s > 0.0 {
            cpu_ms.push(l.server_cpu_s * 1000.0 / r.result.transactions as f64);
        }
    }
    (disturbed, cpu_ms)
}

/// Without the vCPU figures (runs before 2026-12-04): the client's round-trip bound
/// (bench/network.rs), from the cell's runs.
fn round_trip_warning(runs: &[&Record], threads: u32) -> Option<String> {
    let rtts: Vec<f64> = runs.iter().filter_map(|r| r.rtt_us).collect();
    let qps = queries_per_second(runs);
    if rtts.is_empty() || qps.is_empty() {
        return None;
    }
    let rtt = crate::bench::stats::median(&rtts);
    crate::bench::network::bound_warning(crate::bench::stats::median(&qps), threads, rtt)
}

/// Each run's statements per second (runs with a measured duration).
fn queries_per_second(runs: &[&Record]) -> Vec<f64> {
    runs.iter()
        .filter(|r| r.result.total_time_s > 0.0)
        .map(|r| r.result.queries.total as f64 / r.result.total_time_s)
        .collect()
}

/// The warning of a cell some of whose runs other processes disturbed (round, their CPU share).
fn disturbed_warning(disturbed: &[(u32, f64)]) -> Option<String> {
    (!disturbed.is_empty()).then(|| {
        format!(
            "{} run(s) disturbed: other processes used more than {:.0}% of the CPU (rounds {})",
            disturbed.len(),
            BUSY_SHARE * 100.0,
            disturbed
                .iter()
                .map(|(r, s)| format!("{r}: {:.0}%", s * 100.0))
                .collect::<Vec<_>>()
                .join(", ")
        )
    })
}

/// Why `name`'s runs of the cell measured the round trip, if they did: its median rate at or
/// above [`crate::bench::network::BOUND_SHARE`] of `threads / RTT` while its server's vCPUs were
/// below [`SATURATED`] (runs that did not record both say nothing here; their warning stays).
fn link_bound(records: &[Record], name: &str, w: TestName, t: u32, chosen: bool) -> Option<String> {
    let runs: Vec<&Record> = records
        .iter()
        .filter(|r| r.contender == name && r.workload == w && r.threads == t)
        .collect();
    let median = crate::bench::stats::median;
    let busy: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.load.as_ref()?.server_share())
        .collect();
    let rtt: Vec<f64> = runs.iter().filter_map(|r| r.rtt_us).collect();
    let qps = queries_per_second(&runs);
    if busy.is_empty() || rtt.is_empty() || qps.is_empty() {
        return None;
    }
    let (busy, rtt, qps) = (median(&busy), median(&rtt), median(&qps));
    let share = crate::bench::network::share_of_bound(qps, t, rtt);
    (share >= crate::bench::network::BOUND_SHARE && busy < SATURATED).then(|| {
        format!(
            "{}: {name} sent {:.0}% of what {t} connections can at its {rtt:.0} µs round trip \
             while its server's vCPUs were {:.0}% busy — the cell measured the round trip, not \
             the server (more --threads, or --threads auto, moves it)",
            if chosen {
                "link-bound, not used for the verdict"
            } else {
                "link-bound at the threads given (its verdict kept, its gain understated)"
            },
            share * 100.0,
            busy * 100.0
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cell_is_bound_by_the_side_whose_vcpus_are_saturated() {
        assert_eq!(classify(0.99, Some(0.99)), BoundBy::Server);
        assert_eq!(classify(0.91, Some(0.97)), BoundBy::Client);
        assert_eq!(classify(0.60, Some(0.40)), BoundBy::Wait);
        assert_eq!(classify(0.60, None), BoundBy::NotServer);
        let b = |by, s, c| Bound {
            by,
            server_share: s,
            client_share: c,
        };
        assert_eq!(b(BoundBy::Server, 0.98, Some(0.5)).warning(), None);
        let w = b(BoundBy::Client, 0.91, Some(0.97)).warning().unwrap();
        assert!(
            w.starts_with("client-bound: the client's vCPUs were 97% busy and the server's 91%"),
            "{w}"
        );
        let w = b(BoundBy::Wait, 0.6, Some(0.4)).warning().unwrap();
        assert!(
            w.starts_with(
                "wait-bound: neither side's vCPUs were saturated (server 60%, client 40%)"
            ),
            "{w}"
        );
        assert!(b(BoundBy::NotServer, 0.6, None)
            .warning()
            .unwrap()
            .contains("another host"));
    }
}
