//! The report as a document: what Markdown and HTML both render, block by block.

use super::pct;
use crate::bench::cachegrind::CgRecord;
use crate::bench::order::OrderScheme;
use crate::bench::report::Report;

pub use super::Table;

#[derive(Clone, Debug, PartialEq)]
pub enum Block {
    Title(String),
    Paragraph(String),
    /// A lead-in sentence and its items.
    List(String, Vec<String>),
    /// A sentence with its items right under it (the environment).
    Notes(String, Vec<String>),
    Table(Table),
    /// A lead-in sentence and a table (the cachegrind counts).
    Counts(String, Table),
}

/// A calibration's floor per cell, for the terminal and for docs.
pub fn calibration_table(cal: &crate::bench::calibrate::Calibration) -> Table {
    let effect = |r: Option<f64>| {
        r.map_or("not reachable".into(), |r| {
            format!("{:.1}%", (r - 1.0) * 100.0)
        })
    };
    Table {
        header: [
            "workload",
            "thr",
            "rounds",
            "A/A ratio [95% CI]",
            "floor (sd of round ratios)",
            "detectable here (80% power under the rule) [floor's 95% range]",
            "detectable in a default run",
            "rounds for 3%",
            "minutes per pair for 3%",
        ]
        .map(String::from)
        .to_vec(),
        rows: cal
            .floors
            .iter()
            .map(|f| {
                vec![
                    f.workload.clone(),
                    f.threads.to_string(),
                    f.rounds.to_string(),
                    format!(
                        "{} [{:+.1}, {:+.1}]",
                        pct(f.aa.ratio),
                        (f.aa.ratio_ci95.0 - 1.0) * 100.0,
                        (f.aa.ratio_ci95.1 - 1.0) * 100.0
                    ),
                    format!("{:.2}%", f.sd_log_ratio * 100.0),
                    match f.detectable_here_interval {
                        Some((lo, hi)) => format!(
                            "{} [{}, {}]",
                            effect(f.detectable_here),
                            effect(Some(lo).filter(|x| x.is_finite())),
                            effect(Some(hi).filter(|x| x.is_finite()))
                        ),
                        None => effect(f.detectable_here),
                    },
                    effect(f.detectable_default_run),
                    f.rounds_for_target
                        .map_or(format!("> {}", crate::bench::calibrate::MAX_ROUNDS), |n| {
                            n.to_string()
                        }),
                    f.minutes_for_target
                        .map_or("-".into(), |m| format!("{m:.0}")),
                ]
            })
            .collect(),
    }
}

/// The results table as published PGO benchmarks lay it out: TPS per workload per contender, gain
/// and its interval.
fn results(r: &Report) -> Table {
    let base = &r.plan.contenders[0].name;
    let header = [
        "workload",
        "threads",
        "contender",
        "TPS (median)",
        "95% CI of mean",
        "latency ms: mean / p95",
        &format!("vs {base}"),
        "95% CI (adjusted)",
        "p (Holm)",
        "server CPU ms/txn",
        &format!("capacity vs {base}"),
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let rows = r
        .cells
        .iter()
        .map(|c| {
            let (g, ci, p) = match &c.tps_vs_baseline {
                Some(v) => (
                    // The verdict's own numbers are the next columns; say only which way it went.
                    format!(
                        "{} {}",
                        pct(v.ratio),
                        match (v.significant, v.ratio > 1.0) {
                            (false, _) if v.below_minimum() => "(below the minimum change)",
                            (false, _) => "(not significant)",
                            (true, true) => "faster",
                            (true, false) => "slower",
                        }
                    ),
                    {
                        let (lo, hi) = v.shown_interval();
                        if hi.is_finite() {
                            format!("[{}, {}]", pct(lo), pct(hi))
                        } else {
                            "unbounded: too few rounds".into()
                        }
                    },
                    format!("{:.3} ({:.3})", v.p_value, v.p_holm),
                ),
                None => ("baseline".into(), String::new(), String::new()),
            };
            vec![
                c.workload.clone(),
                c.threads.to_string(),
                c.contender.clone(),
                format!("{:.0}", c.tps.median),
                format!("[{:.0}, {:.0}]", c.tps.ci95.0, c.tps.ci95.1),
                match &c.mean_ms {
                    Some(m) => format!("{:.2} / {:.2}", m.median, c.p95_ms.median),
                    None => format!("{:.2}", c.p95_ms.median),
                },
                g,
                ci,
                p,
                c.server_cpu_ms_per_txn
                    .as_ref()
                    .map(|d| format!("{:.3}", d.median))
                    .unwrap_or_default(),
                c.capacity_vs_baseline
                    .as_ref()
                    .map(capacity_cell)
                    .unwrap_or_default(),
            ]
        })
        .collect();
    Table { header, rows }
}

/// Capacity against the baseline (transactions per server-CPU second), with the interval that
/// agrees with its verdict: "+22.1% [+15.0, +29.9]", "(n.s.)" when not significant, "(below
/// min.)" when significant but below the minimum change.
pub fn capacity_cell(v: &crate::bench::stats::Comparison) -> String {
    let (lo, hi) = v.shown_interval();
    let interval = if hi.is_finite() {
        format!(" [{}, {}]", pct(lo), pct(hi))
    } else {
        String::new()
    };
    format!(
        "{}{interval}{}",
        pct(v.ratio),
        if v.significant {
            ""
        } else if v.below_minimum() {
            " (below min.)"
        } else {
            " (n.s.)"
        }
    )
}

/// Every warning of the report, one line each: the source's release first (what was built
/// at all), then the cells'.
pub fn warnings(r: &Report) -> Vec<String> {
    let source = r.source_release.iter().flat_map(|c| c.warnings());
    source
        .chain(r.cells.iter().flat_map(|c| {
            c.warnings
                .iter()
                .chain(c.tps_vs_baseline.iter().flat_map(|v| v.warnings.iter()))
                .map(move |w| format!("{} {} {}: {w}", c.contender, c.workload, c.threads))
        }))
        .collect()
}

/// The document's sections in the order they appear, in three parts: the answer (title and
/// headline), how it was measured (set-up, method, noise), and the findings; each section gives
/// the blocks it has for a report (none when the report has nothing of its kind). A new section is
/// one function and one entry. The HTML report folds the second part under the first.
pub const ANSWER: &[fn(&Report) -> Vec<Block>] = &[title, headline];
pub const METHOD: &[fn(&Report) -> Vec<Block>] = &[
    setup,
    method,
    adaptive_rounds,
    host,
    own_noise,
    position_effect,
    network,
    client_threads,
    noise_floor,
];
pub const FINDINGS: &[fn(&Report) -> Vec<Block>] = &[
    decision,
    profile_reuse,
    gate,
    round_orders,
    matrix,
    sweep,
    results_table,
    latency,
    geomeans,
    cachegrind,
    hot_functions,
    cachegrind_skipped,
    warnings_list,
    environment,
    label,
];

/// The blocks of one part of the document.
pub fn part(r: &Report, sections: &[fn(&Report) -> Vec<Block>]) -> Vec<Block> {
    sections.iter().flat_map(|section| section(r)).collect()
}

pub fn document(r: &Report) -> Vec<Block> {
    [ANSWER, METHOD, FINDINGS]
        .iter()
        .flat_map(|sections| part(r, sections))
        .collect()
}

fn title(r: &Report) -> Vec<Block> {
    vec![Block::Title(format!(
        "Benchmark: {}",
        r.plan
            .contenders
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>()
            .join(" vs ")
    ))]
}

/// The winner against Debian's own server, first: what a user replacing it gains.
fn headline(r: &Report) -> Vec<Block> {
    match &r.headline {
        Some(h) => {
            let mut v = vec![Block::Counts(h.sentence(), headline_table(h))];
            let notes: Vec<String> = h.cells.iter().filter_map(|c| c.counts_note()).collect();
            if !notes.is_empty() {
                v.push(Block::List(
                    "Where the timed user-time cut and cachegrind's instruction cut disagree:"
                        .into(),
                    notes,
                ));
            }
            v
        }
        None => Vec::new(),
    }
}

/// The headline's cells: the gain over the distribution's server with its verdict, the gain
/// over the baseline, and both servers' CPU per transaction.
pub fn headline_table(h: &crate::bench::report::Headline) -> Table {
    let us = |x: Option<(f64, f64)>| x.map_or("-".into(), |(u, s)| format!("{u:.1} + {s:.1}"));
    // With Debian's server as the baseline, "vs baseline" would repeat the first column.
    let beside = !h.reference_is_baseline;
    let mut header = vec![
        "workload".into(),
        "threads".into(),
        format!("{} vs {}", h.winner, h.reference),
        format!("capacity vs {}", h.reference),
    ];
    if beside {
        header.push(format!("{} vs baseline", h.winner));
    }
    header.extend([
        format!("{} server µs/txn (user + kernel)", h.winner),
        format!("{} server µs/txn", h.reference),
        "user-space ceiling (Amdahl)".into(),
    ]);
    let rows = h
        .cells
        .iter()
        .map(|c| {
            let mut row = vec![
                c.workload.clone(),
                c.threads.to_string(),
                c.vs_reference.sentence(),
                c.capacity_vs_reference
                    .as_ref()
                    .map_or("-".into(), capacity_cell),
            ];
            if beside {
                row.push(c.vs_baseline.as_ref().map_or("-".into(), |k| k.sentence()));
            }
            row.extend([us(c.winner_us), us(c.reference_us), c.ceiling_cell()]);
            row
        })
        .collect();
    Table { header, rows }
}

fn setup(r: &Report) -> Vec<Block> {
    let spec = &r.plan.spec;
    // tpcc's size only where it is not the default one warehouse, which reports always left
    // unsaid.
    let tpcc =
        if spec.workloads.contains(&oltp::settings::TestName::Tpcc) && !spec.tpcc.is_default() {
            format!(
                ", tpcc {} warehouses x {} table copies",
                spec.tpcc.scale, spec.tpcc.tables
            )
        } else {
            String::new()
        };
    let pools = super::sweep::pools(r);
    // MyRocks' block cache takes the memory the buffer pool has with InnoDB.
    let engine = r.plan.config.engine;
    let cache = if engine.is_innodb() {
        engine.cache().to_string()
    } else {
        format!("tables in MyRocks, {}", engine.cache())
    };
    let pool = match pools.as_slice() {
        [one] => format!("{cache} {one} MiB"),
        many => format!(
            "{cache}s {} MiB",
            many.iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    vec![Block::Paragraph(format!(
        "{} rounds (interleaved: every contender once per round, back to back), {} s per run after {} s warm-up, {} tables x {} rows{tpcc}, {pool}. {}",
        r.rounds_found, spec.seconds, spec.warmup_seconds, spec.tables, spec.table_size,
        pool_state(r)
    ))]
}

/// Whether the cells measure a warm buffer pool or a cold one, pool size by pool size: a server
/// whose dataset does not fit in [`MAX_POOL_SHARE_PCT`] of its pool cannot read it all before
/// its first cell (crate::server::prewarm) and starts each round with an empty pool.
///
/// [`MAX_POOL_SHARE_PCT`]: crate::server::prewarm::MAX_POOL_SHARE_PCT
pub fn pool_state(r: &Report) -> String {
    let data = crate::bench::budget::data_mb(&r.plan.spec);
    let pools: std::collections::BTreeSet<u64> = r
        .plan
        .contenders
        .iter()
        .map(|c| r.plan.buffer_pool_mb_of(c))
        .collect();
    let fits =
        |pool: u64| crate::server::prewarm::fits_in_pool((data * 1_048_576.0) as u64, pool << 20);
    let list = |warm: bool| {
        pools
            .iter()
            .filter(|p| fits(**p) == warm)
            .map(|p| format!("{p} MiB"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (warm, cold) = (list(true), list(false));
    let cold_sentence = format!(
        "cold at {cold}: the dataset (~{data:.0} MiB) is larger than {}% of the pool, so every \
         server starts each round with an empty pool and reads as it goes (past the \
         operating system's page cache where InnoDB reads with O_DIRECT, as MariaDB 10.11 does \
         by default; each such cell says how busy its server stayed)",
        crate::server::prewarm::MAX_POOL_SHARE_PCT
    );
    match (warm.is_empty(), cold.is_empty()) {
        (_, true) => {
            format!("Buffer pool warm: the dataset (~{data:.0} MiB) fits in the pool ({warm}).")
        }
        (true, false) => format!("Buffer pool {cold_sentence}."),
        (false, false) => format!(
            "Buffer pool warm at {warm}, where the dataset (~{data:.0} MiB) fits; {cold_sentence}."
        ),
    }
}

fn method(r: &Report) -> Vec<Block> {
    let min_effect = r
        .cells
        .iter()
        .find_map(|c| c.tps_vs_baseline.as_ref().map(|k| k.min_change()))
        .unwrap_or(crate::bench::stats::NOISE);
    vec![Block::Paragraph(format!(
        "Method: paired by round — the ratio is the geometric mean of the per-round ratios \
         contender / baseline; p is the exact sign-flip permutation test on the log-ratios \
         (equal-tailed), and in parentheses after Holm's correction over all the run's \
         comparisons. The interval is that test inverted at the level Holm's procedure \
         tested the comparison at (α/(m−k+1)), so it excludes no change exactly when the \
         comparison is significant; with few rounds it is as wide as the rounds' own spread. \
         Significant: Holm p < 0.05 and a change of at least {}% (smaller significant \
         changes are reported as below the minimum, not as noise).",
        crate::bench::stats::percent_number(min_effect)
    ))]
}

fn adaptive_rounds(r: &Report) -> Vec<Block> {
    let Some(t) = r.plan.spec.target_ci_pct else {
        return Vec::new();
    };
    vec![Block::Paragraph(format!(
        "Adaptive rounds: after {} planned rounds, one more at a time until every interval was \
         within ±{t}% (widths only, never the sign of an effect){}.",
        r.plan.spec.rounds,
        [
            r.plan
                .spec
                .max_rounds
                .map(|m| format!(", at most {m} rounds")),
            r.plan
                .spec
                .budget_minutes
                .map(|m| format!(", within {m} minutes")),
        ]
        .into_iter()
        .flatten()
        .collect::<String>()
    ))]
}

fn host(r: &Report) -> Vec<Block> {
    super::host_sentences(r)
        .into_iter()
        .map(Block::Paragraph)
        .collect()
}

fn own_noise(r: &Report) -> Vec<Block> {
    let pooled = r.pooled_noise.iter().map(|n| n.sentence());
    r.own_noise
        .iter()
        .map(|n| n.sentence())
        .chain(pooled)
        .map(Block::Paragraph)
        .collect()
}

fn position_effect(r: &Report) -> Vec<Block> {
    r.position_effect
        .iter()
        .map(|p| Block::Paragraph(p.sentence()))
        .collect()
}

fn network(r: &Report) -> Vec<Block> {
    r.network
        .iter()
        .map(|n| Block::Paragraph(n.sentence()))
        .collect()
}

fn client_threads(r: &Report) -> Vec<Block> {
    let Some(s) = &r.saturation else {
        return Vec::new();
    };
    vec![Block::List(
        format!(
            "Client threads, chosen per workload before round 1 ({} probed, {:.0} s): from 4 \
             connections, doubled until every probed server's vCPU was at least {:.0}% busy and \
             each sent less than {:.0}% of what its connections can at its round trip (or more \
             connections gained nothing):",
            s.probed.join(", "),
            s.seconds,
            crate::bench::report::SATURATED * 100.0,
            crate::bench::network::BOUND_SHARE * 100.0
        ),
        s.choices.iter().map(|c| c.sentence()).collect(),
    )]
}

fn noise_floor(r: &Report) -> Vec<Block> {
    let Some(cal) = &r.noise_floor else {
        return Vec::new();
    };
    vec![Block::Paragraph(format!(
        "Noise floor of this machine (A/A: {} against itself, {} s runs): per-round ratios \
         scatter {}; cells that scatter more than {}x their floor are flagged below.",
        cal.binary.display(),
        cal.seconds,
        cal.floors
            .iter()
            .map(|f| format!(
                "{:.1}% on {} ({} rounds)",
                f.sd_log_ratio * 100.0,
                f.workload,
                f.rounds
            ))
            .collect::<Vec<_>>()
            .join(", "),
        crate::bench::calibrate::UNSTABLE_OVER_FLOOR
    ))]
}

fn decision(r: &Report) -> Vec<Block> {
    let Some(dec) = &r.decision else {
        return Vec::new();
    };
    let mut items: Vec<String> = dec
        .versus
        .iter()
        .map(|v| {
            let (w, t, c) = (&v.workload, v.threads, &v.comparison);
            format!(
                "{w} {t} threads: {} {} against {}: {} (p {:.3}, Holm {:.3})",
                dec.winner.as_deref().unwrap_or_default(),
                pct(c.ratio),
                dec.runner_up.as_deref().unwrap_or_default(),
                c.sentence(),
                c.p_value,
                c.p_holm
            )
        })
        .collect();
    if !r.plan.reference_only.is_empty() {
        items.push(format!(
            "compared for reference only, never chosen: {}",
            r.plan.reference_only.join(", ")
        ));
    }
    if let Some(h) = &r.held_out {
        items.push(h.sentence());
    }
    let lead = format!("Decision: {}.", dec.sentence());
    vec![if items.is_empty() {
        Block::Paragraph(lead)
    } else {
        Block::List(lead, items)
    }]
}

/// A run that reused an earlier release's profiles: from where, and how stale they were.
fn profile_reuse(r: &Report) -> Vec<Block> {
    match &r.profile_reuse {
        Some(p) => vec![Block::List(p.lead(), p.lines())],
        None => Vec::new(),
    }
}

fn gate(r: &Report) -> Vec<Block> {
    let Some(g) = &r.gate else {
        return Vec::new();
    };
    vec![Block::List(
        format!(
            "Correctness gate: CHECKSUM TABLE after a seeded write workload, then the server's own regression tests (mysql-test-run, {} gate: {}).",
            g.mode,
            if g.tests.is_empty() {
                "whole suites".to_string()
            } else {
                format!("{} tests", g.tests.len())
            }
        ),
        g.report_lines(),
    )]
}

fn round_orders(r: &Report) -> Vec<Block> {
    if r.orders.is_empty() {
        return Vec::new();
    }
    let scheme = match r.plan.order_scheme {
        OrderScheme::Shuffle => "a fresh shuffle each round",
        OrderScheme::Balanced => {
            "balanced: each contender in each position equally often per block of rounds"
        }
        OrderScheme::Williams => {
            "a Williams design: per block of rounds each contender in each position, after \
             each other and before each other equally often"
        }
    };
    let rounds: Vec<String> = r
        .orders
        .iter()
        .map(|o| format!("{}: {}", o.round, o.contenders.join(", ")))
        .collect();
    vec![Block::Paragraph(format!(
        "Order of the contenders in each round (seed {}, {scheme}) — {}.",
        r.plan.seed,
        rounds.join("; ")
    ))]
}

fn sweep(r: &Report) -> Vec<Block> {
    super::sweep::table(r)
        .map(|t| Block::Counts(super::sweep::lead(r), t))
        .into_iter()
        .collect()
}

fn matrix(r: &Report) -> Vec<Block> {
    super::matrix::table(r)
        .map(|t| Block::Counts(super::matrix::lead(r), t))
        .into_iter()
        .collect()
}

fn results_table(r: &Report) -> Vec<Block> {
    vec![Block::Table(results(r))]
}

fn latency(r: &Report) -> Vec<Block> {
    let lat: Vec<String> = r
        .cells
        .iter()
        .filter_map(|c| {
            c.p95_vs_baseline.as_ref().map(|v| {
                format!(
                    "{} {} {} threads: {} (p = {:.3}, Holm {:.3})",
                    c.contender,
                    c.workload,
                    c.threads,
                    v.sentence(),
                    v.p_value,
                    v.p_holm
                )
            })
        })
        .collect();
    if lat.is_empty() {
        return Vec::new();
    }
    vec![Block::List("p95 latency against the baseline:".into(), lat)]
}

fn geomeans(r: &Report) -> Vec<Block> {
    if r.geomeans.is_empty() {
        return Vec::new();
    }
    vec![Block::List(
        "Geometric mean of TPS ratios over workloads:".into(),
        r.geomeans
            .iter()
            .map(|g| match g.threads {
                0 => format!("{}, {}: {}", g.contender, g.at(), pct(g.ratio)),
                t => format!("{}, {t} threads: {}", g.contender, pct(g.ratio)),
            })
            .collect(),
    )]
}

fn cachegrind(r: &Report) -> Vec<Block> {
    if r.cachegrind.is_empty() {
        return Vec::new();
    }
    vec![Block::Counts(
        "Deterministic counts per transaction (cachegrind, one connection; differences under ~0.5% for read-only and ~3% for write workloads are the method's noise):".into(),
        cachegrind_table(&r.cachegrind, &r.plan.contenders[0].name),
    )]
}

/// Functions shown per workload in the winner-against-baseline breakdown.
const HOT_FUNCTIONS: usize = 20;

/// The winner's costliest functions beside the baseline's, per workload, where the cachegrind
/// measurement kept them: where the instructions a transaction still costs are.
fn hot_functions(r: &Report) -> Vec<Block> {
    use crate::bench::hot_functions::{side_by_side, KEPT};
    // cachegrind counts each binary once, under its name before a sweep named it by a pool.
    use crate::bench::plan::split_pool;
    let base = split_pool(&r.plan.contenders[0].name).0;
    let Some(winner) = r.decision.as_ref().and_then(|d| d.winner.as_deref()) else {
        return Vec::new();
    };
    let winner = split_pool(winner).0;
    let fmt = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.0}"));
    let mut out = Vec::new();
    for b in r
        .cachegrind
        .iter()
        .filter(|x| x.contender == base && !x.functions.is_empty())
    {
        let Some(w) = r
            .cachegrind
            .iter()
            .find(|x| x.contender == winner && x.workload == b.workload && !x.functions.is_empty())
        else {
            continue;
        };
        let rows = side_by_side(&b.functions, &w.functions, HOT_FUNCTIONS);
        let table = Table {
            header: vec![
                "function".into(),
                format!("{base} instructions / txn"),
                format!("{winner} instructions / txn"),
                "change".into(),
            ],
            rows: rows
                .iter()
                .map(|row| {
                    vec![
                        // A C++ operator| would split a Markdown cell.
                        row.name.replace('|', "\\|"),
                        fmt(row.baseline),
                        fmt(row.winner),
                        match (row.baseline, row.winner) {
                            (Some(a), Some(b)) if a > 0.0 => {
                                format!("{:+.1}%", (b / a - 1.0) * 100.0)
                            }
                            _ => "-".into(),
                        },
                    ]
                })
                .collect(),
        };
        out.push(Block::Counts(
            format!(
                "Where {}'s instructions go: the {} functions costing most per transaction in \
                 {winner} or {base} (cachegrind, one connection; \"-\": not among that side's {KEPT} \
                 costliest). A function's count includes the code inlined into it, and PGO with \
                 LTO inlines far more than the baseline: a callee missing on one side lives in its \
                 callers there, so compare a caller with what it absorbed, not one row alone:",
                b.workload,
                rows.len()
            ),
            table,
        ));
    }
    out
}

fn cachegrind_skipped(r: &Report) -> Vec<Block> {
    if r.cachegrind_skipped.is_empty() {
        return Vec::new();
    }
    vec![Block::List(
        "Not measured under cachegrind:".into(),
        cachegrind_skips(&r.cachegrind_skipped),
    )]
}

fn warnings_list(r: &Report) -> Vec<Block> {
    let w = warnings(r);
    if w.is_empty() {
        return Vec::new();
    }
    vec![Block::List("Warnings:".into(), w)]
}

fn environment(r: &Report) -> Vec<Block> {
    let e = &r.environment;
    let mut env: Vec<String> = e
        .builds
        .iter()
        .map(|(n, b)| format!("{n}: built by pgoforge: {b}"))
        .collect();
    for (n, v) in &e.server_versions {
        let bin = r
            .plan
            .contenders
            .iter()
            .find(|c| &c.name == n)
            .map(|c| c.binary.display().to_string())
            .unwrap_or_default();
        env.push(format!("{n}: {v} ({bin})"));
    }
    vec![Block::Notes(
        format!(
            "Environment: {} ({} CPUs), kernel {}{}{}.",
            e.cpu,
            e.cpus,
            e.kernel,
            e.host
                .as_ref()
                .map(|h| format!(", host fingerprint {}", h.fingerprint))
                .unwrap_or_default(),
            e.cache_probe
                .as_ref()
                .map(|p| format!("; cache probe: {}", p.sentence()))
                .unwrap_or_default()
        ),
        env,
    )]
}

fn label(r: &Report) -> Vec<Block> {
    if r.plan.label.is_empty() {
        return Vec::new();
    }
    vec![Block::Paragraph(r.plan.label.clone())]
}

/// The contenders valgrind could not run, each with its reason.
pub fn cachegrind_skips(skips: &[crate::bench::cachegrind::CgSkip]) -> Vec<String> {
    skips
        .iter()
        .map(|s| format!("{}: {}", s.contender, s.reason))
        .collect()
}

/// Per-transaction counts under cachegrind, each against the baseline's.
pub fn cachegrind_table(records: &[CgRecord], baseline: &str) -> Table {
    let rel = |v: f64, b: Option<f64>| match b {
        Some(b) if b > 0.0 && v != b => format!("{v:.0} ({:+.1}%)", (v / b - 1.0) * 100.0),
        _ => format!("{v:.0}"),
    };
    let header = [
        "workload",
        "variant",
        "instructions / txn",
        "I1 misses / txn",
        "mispredicted branches / txn",
        "D1 misses / txn",
        "LL misses / txn",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let rows = records
        .iter()
        .map(|r| {
            let b = records
                .iter()
                .find(|x| x.contender == baseline && x.workload == r.workload)
                .filter(|_| r.contender != baseline)
                .map(|x| &x.per_txn);
            let p = &r.per_txn;
            vec![
                r.workload.to_string(),
                r.contender.clone(),
                rel(p.instructions, b.map(|x| x.instructions)),
                rel(p.i1_misses, b.map(|x| x.i1_misses)),
                rel(p.mispredicts, b.map(|x| x.mispredicts)),
                rel(p.d1_misses, b.map(|x| x.d1_misses)),
                rel(p.ll_misses, b.map(|x| x.ll_misses)),
            ]
        })
        .collect();
    Table { header, rows }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::report::{Headline, HeadlineCell};
    use crate::bench::stats::{compare, Better};

    #[test]
    fn with_debians_server_as_the_baseline_the_headline_has_no_column_repeating_it() {
        let rounds = [(1, 100.0), (2, 101.0), (3, 99.0)];
        let faster = [(1, 190.0), (2, 201.0), (3, 199.0)];
        let k = compare(&rounds, &faster, Better::Higher);
        let mut h = Headline {
            winner: "pgo+lto+bolt".into(),
            reference: "debian".into(),
            winner_version: None,
            reference_version: None,
            cells: vec![HeadlineCell {
                workload: "oltp_point_select".into(),
                threads: 4,
                vs_reference: k.clone(),
                vs_baseline: Some(k),
                capacity_vs_reference: None,
                winner_us: Some((13.4, 15.3)),
                reference_us: Some((39.4, 19.1)),
                counted: None,
            }],
            reference_is_baseline: false,
        };
        let t = headline_table(&h);
        assert!(t.header.contains(&"pgo+lto+bolt vs baseline".to_string()));
        assert!(h.sentence().contains("own baseline build beside it"));
        assert!(t.rows.iter().all(|r| r.len() == t.header.len()));
        h.reference_is_baseline = true;
        h.cells[0].vs_baseline = None;
        let t = headline_table(&h);
        assert!(
            !t.header.iter().any(|c| c.ends_with("vs baseline")),
            "{:?}",
            t.header
        );
        assert!(t.rows.iter().all(|r| r.len() == t.header.len()));
        assert!(
            h.sentence().contains("it is the run's baseline"),
            "{}",
            h.sentence()
        );
    }
}
