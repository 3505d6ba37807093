//! One comparison (a contender against a reference, say the package's server against Debian's)
//! read from benchmark runs made on several hosts, and pooled: each host's gain with its own
//! interval, what the host itself looks like on that cell (the reference's user and kernel µs
//! per transaction: where unoptimized code suffers more, the gain is larger), the spread between
//! hosts, and a pooled gain whose interval counts that spread (stats/pool.rs).

use std::path::PathBuf;

use anyhow::{Context, Result};
use serde::Serialize;

use super::report::{self, Cell};
use super::stats::pool::{random_effects, HostEstimate, Pooled};
use super::stats::{paired_log_ratios, t_quantile};

/// One run's host.
#[derive(Debug, Serialize)]
pub struct HostRun {
    pub dir: PathBuf,
    /// The host's fingerprint (its first 16 hex digits), or `unrecorded` for runs made before
    /// hosts were fingerprinted.
    pub host: String,
    pub cpu: String,
    /// The run's mean CPU steal over its runs (a share), when its load was recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steal: Option<f64>,
    /// What the host's caches did to far data and code when the run started (runs since
    /// 2026-12-07).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cache_probe: Option<super::cache_probe::CacheProbe>,
}

/// One host's figures on one workload.
#[derive(Debug, Serialize)]
pub struct HostCell {
    pub threads: u32,
    pub rounds: usize,
    /// contender / reference, the geometric mean of the rounds' ratios, and its t interval.
    pub ratio: f64,
    pub ci95: (f64, f64),
    /// The reference server's CPU per transaction on this host: user and kernel µs (medians).
    pub reference_user_us: Option<f64>,
    pub reference_sys_us: Option<f64>,
    #[serde(skip)]
    estimate: HostEstimate,
}

#[derive(Debug, Serialize)]
pub struct PoolRow {
    pub workload: String,
    /// One per run, in the order given (None: that run has no such cell).
    pub hosts: Vec<Option<HostCell>>,
    /// Ratios (exp of the pooled log scale): the pooled gain, its interval, the between-host
    /// spread as a factor (exp τ), and one more host's prediction interval.
    pub pooled: Option<PooledRatio>,
}

#[derive(Debug, Serialize)]
pub struct PooledRatio {
    pub hosts: usize,
    pub ratio: f64,
    pub ci95: (f64, f64),
    pub spread: f64,
    pub i2: f64,
    pub prediction95: Option<(f64, f64)>,
}

impl From<Pooled> for PooledRatio {
    fn from(p: Pooled) -> PooledRatio {
        PooledRatio {
            hosts: p.hosts,
            ratio: p.mu.exp(),
            ci95: (p.ci95.0.exp(), p.ci95.1.exp()),
            spread: p.tau2.sqrt().exp(),
            i2: p.i2,
            prediction95: p.prediction95.map(|(a, b)| (a.exp(), b.exp())),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct PoolTable {
    pub contender: String,
    pub reference: String,
    pub runs: Vec<HostRun>,
    pub rows: Vec<PoolRow>,
    pub warnings: Vec<String>,
}

fn host_cell(c: &Cell, r: &Cell) -> Option<HostCell> {
    let d = paired_log_ratios(&r.tps_rounds, &c.tps_rounds);
    let e = HostEstimate::of_rounds(&d)?;
    let half = t_quantile(0.975, d.len() - 1) * e.v.sqrt();
    let per = r.server_per_txn.as_ref();
    Some(HostCell {
        threads: c.threads,
        rounds: d.len(),
        ratio: e.y.exp(),
        ci95: ((e.y - half).exp(), (e.y + half).exp()),
        reference_user_us: per.map(|p| p.user_us.median),
        reference_sys_us: per.map(|p| p.sys_us.median),
        estimate: e,
    })
}

/// The contender's and the reference's cells of one workload in one run (at `threads`, or the
/// run's only thread count for it).
fn pair<'a>(
    cells: &'a [Cell],
    workload: &str,
    contender: &str,
    reference: &str,
    threads: Option<u32>,
) -> Option<(&'a Cell, &'a Cell)> {
    let of = |name: &str| {
        cells
            .iter()
            .filter(|c| c.contender == name && c.workload == workload)
            .filter(|c| threads.is_none_or(|t| c.threads == t))
            .collect::<Vec<_>>()
    };
    let (cs, rs) = (of(contender), of(reference));
    let c = *cs.first()?;
    let r = rs.iter().find(|r| r.threads == c.threads)?;
    Some((c, r))
}

/// Pools `contender` against `reference` over the runs in `dirs` (each a benchmark's or a
/// `run`'s result directory).
pub fn pool(
    dirs: &[PathBuf],
    contender: &str,
    reference: &str,
    threads: Option<u32>,
) -> Result<PoolTable> {
    let mut reports = Vec::new();
    for d in dirs {
        let r = report::build(d).with_context(|| format!("reading the run in {}", d.display()))?;
        reports.push((d.clone(), r));
    }
    let mut warnings = Vec::new();
    let mut runs = Vec::new();
    let mut workloads: Vec<String> = Vec::new();
    for (d, r) in &reports {
        let host = r
            .environment
            .host
            .as_ref()
            .map(|h| h.fingerprint.chars().take(16).collect())
            .unwrap_or_else(|| "unrecorded".to_string());
        if host != "unrecorded" && runs.iter().any(|h: &HostRun| h.host == host) {
            warnings.push(format!(
                "{} ran on host {host} like an earlier run: the spread between them is within \
                 one host, not between hosts",
                d.display()
            ));
        }
        for c in r.cells.iter().filter(|c| c.contender == contender) {
            if !workloads.contains(&c.workload) {
                workloads.push(c.workload.clone());
            }
        }
        runs.push(HostRun {
            dir: d.clone(),
            host,
            cpu: r.environment.cpu.clone(),
            steal: super::steal::Steal::of(&r.load_trace).map(|s| s.mean),
            cache_probe: r.environment.cache_probe.clone(),
        });
    }
    if workloads.is_empty() {
        crate::usage!(
            "no run has a contender named {contender} (give the name its report uses, e.g. \
             pgo+lto+bolt or package)"
        );
    }
    let rows = workloads
        .into_iter()
        .map(|w| {
            let hosts: Vec<Option<HostCell>> = reports
                .iter()
                .map(|(_, r)| {
                    pair(&r.cells, &w, contender, reference, threads)
                        .and_then(|(c, rf)| host_cell(c, rf))
                })
                .collect();
            let estimates: Vec<HostEstimate> = hosts.iter().flatten().map(|h| h.estimate).collect();
            PoolRow {
                workload: w,
                pooled: random_effects(&estimates).map(PooledRatio::from),
                hosts,
            }
        })
        .collect();
    Ok(PoolTable {
        contender: contender.into(),
        reference: reference.into(),
        runs,
        rows,
        warnings,
    })
}

/// The table as Markdown: a gain column per host, the pooled columns, then the hosts' facts.
pub fn markdown(t: &PoolTable) -> String {
    let pct = |r: f64| format!("{:+.1}", (r - 1.0) * 100.0);
    let mut s = format!(
        "{} against {} on {} runs, pooled with a random-effects model (DerSimonian–Laird \
         between-host variance, Hartung–Knapp 95 % interval on k − 1 degrees of freedom; one \
         more host's 95 % prediction interval):\n\n| workload |",
        t.contender,
        t.reference,
        t.runs.len()
    );
    for (i, r) in t.runs.iter().enumerate() {
        s += &format!(" host {} ({}) |", i + 1, r.host);
    }
    s += " between hosts | pooled % [95 %] | one more host % |\n|---|";
    s += &"---|".repeat(t.runs.len() + 3);
    s += "\n";
    for row in &t.rows {
        s += &format!("| {} |", row.workload);
        for h in &row.hosts {
            s += &match h {
                Some(h) => format!(
                    " {} [{}, {}] ({} thr, {} rounds) |",
                    pct(h.ratio),
                    pct(h.ci95.0),
                    pct(h.ci95.1),
                    h.threads,
                    h.rounds
                ),
                None => " — |".into(),
            };
        }
        s += &match &row.pooled {
            Some(p) => format!(
                " ×{:.3} (I² {:.0} %) | {} [{}, {}] | {} |\n",
                p.spread,
                p.i2 * 100.0,
                pct(p.ratio),
                pct(p.ci95.0),
                pct(p.ci95.1),
                p.prediction95
                    .map(|(a, b)| format!("[{}, {}]", pct(a), pct(b)))
                    .unwrap_or_else(|| "needs 3 hosts".into())
            ),
            None => " — | fewer than 2 hosts | — |\n".into(),
        };
    }
    s += &format!(
        "\n{}'s CPU per transaction on each host (user + kernel µs, medians): what the host does \
         to unoptimized code\n\n| workload |",
        t.reference
    );
    for (i, _) in t.runs.iter().enumerate() {
        s += &format!(" host {} |", i + 1);
    }
    s += "\n|---|";
    s += &"---|".repeat(t.runs.len());
    s += "\n";
    for row in &t.rows {
        s += &format!("| {} |", row.workload);
        for h in &row.hosts {
            s += &match h
                .as_ref()
                .and_then(|h| h.reference_user_us.zip(h.reference_sys_us))
            {
                Some((u, k)) => format!(" {u:.0} + {k:.0} |"),
                None => " — |".into(),
            };
        }
        s += "\n";
    }
    s += "\n";
    for (i, r) in t.runs.iter().enumerate() {
        s += &format!(
            "host {}: {} ({}), {}{}{}\n",
            i + 1,
            r.host,
            r.cpu,
            r.dir.display(),
            r.steal
                .map(|x| format!("; steal {:.1} % of the runs' CPU time", x * 100.0))
                .unwrap_or_default(),
            r.cache_probe
                .as_ref()
                .map(|p| format!("; cache probe: {}", p.sentence()))
                .unwrap_or_default()
        );
    }
    for w in &t.warnings {
        s += &format!("warning: {w}\n");
    }
    s
}
