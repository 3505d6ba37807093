//! A sweep as a view (issue 51): each variant's throughput gain over the baseline of its own
//! buffer pool as a function of the client threads, one line per buffer-pool size, with its
//! interval and the change in mean and p95 latency — the lines and the table for the text and Markdown
//! reports (html.rs draws the lines). Shown when a benchmark measured more than one thread count or
//! buffer-pool size (a train × evaluate matrix has its own table).

use super::Table;
use crate::bench::report::Report;
use crate::bench::stats::Verdict;

/// A variant's gain at one thread count.
#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub threads: u32,
    pub gain_pct: f64,
    /// The 95 % interval (None where too few rounds bound it).
    pub interval_pct: Option<(f64, f64)>,
    pub verdict: Verdict,
    /// The change in p95 latency against the same baseline.
    pub p95_pct: Option<f64>,
    /// The change in mean latency (the medians over the rounds) against the same baseline.
    pub mean_pct: Option<f64>,
}

/// One variant on one workload at one buffer-pool size.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub variant: String,
    pub workload: String,
    pub pool_mb: u64,
    pub points: Vec<Point>,
}

/// The buffer-pool sizes the plan's contenders ran with, ascending.
pub fn pools(r: &Report) -> Vec<u64> {
    let mut p: Vec<u64> = r
        .plan
        .contenders
        .iter()
        .map(|c| r.plan.buffer_pool_mb_of(c))
        .collect();
    p.sort_unstable();
    p.dedup();
    p
}

fn is_sweep(r: &Report) -> bool {
    r.plan.training.is_empty()
        && ((r.plan.spec.threads.len() >= 2 && !r.plan.spec.threads_per_workload())
            || pools(r).len() >= 2)
}

/// The lines of a sweep (empty when the report is not one): every contender that is not a
/// baseline of its pool or the A/A control, in plan order, by workload.
pub fn lines(r: &Report) -> Vec<Line> {
    if !is_sweep(r) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for w in &r.plan.spec.workloads {
        for c in &r.plan.contenders {
            if r.plan.baseline_for(c).name == c.name || r.plan.is_control(&c.name) {
                continue;
            }
            let base = r.plan.baseline_for(c).name.clone();
            let pool_mb = r.plan.buffer_pool_mb_of(c);
            let variant = crate::bench::plan::split_pool(&c.name).0.to_string();
            let points = r
                .plan
                .spec
                .threads_of(*w)
                .into_iter()
                .filter_map(|t| {
                    let cell = r.cells.iter().find(|x| {
                        x.contender == c.name && x.workload == w.name() && x.threads == t
                    })?;
                    let k = cell.tps_vs_baseline.as_ref()?;
                    Some(Point {
                        threads: t,
                        gain_pct: (k.ratio - 1.0) * 100.0,
                        interval_pct: super::interval_pct(k),
                        verdict: k.verdict,
                        p95_pct: cell
                            .p95_vs_baseline
                            .as_ref()
                            .map(|p| (p.ratio - 1.0) * 100.0),
                        mean_pct: mean_change(r, &base, cell),
                    })
                })
                .collect();
            out.push(Line {
                variant,
                workload: w.name().to_string(),
                pool_mb,
                points,
            });
        }
    }
    out
}

/// The change in a cell's mean latency against its baseline's cell, in percent.
fn mean_change(r: &Report, base: &str, cell: &crate::bench::report::Cell) -> Option<f64> {
    let b = r.cells.iter().find(|x| {
        x.contender == base && x.workload == cell.workload && x.threads == cell.threads
    })?;
    let (m, bm) = (cell.mean_ms.as_ref()?.median, b.mean_ms.as_ref()?.median);
    (bm > 0.0).then(|| (m / bm - 1.0) * 100.0)
}

fn verdict_word(v: Verdict) -> &'static str {
    match v {
        Verdict::Faster => "faster",
        Verdict::Slower => "slower",
        _ => "n.s.",
    }
}

/// One row per line, one column per thread count: gain [interval] verdict; mean and p95 change.
pub fn table(r: &Report) -> Option<Table> {
    let lines = lines(r);
    if lines.is_empty() {
        return None;
    }
    let mut header = vec![
        "workload".to_string(),
        "variant".to_string(),
        "buffer pool".to_string(),
    ];
    let axis = r.plan.spec.thread_counts();
    header.extend(axis.iter().map(|t| format!("{t} thr")));
    let rows = lines
        .iter()
        .map(|l| {
            let mut row = vec![
                l.workload.clone(),
                l.variant.clone(),
                format!("{} MiB", l.pool_mb),
            ];
            row.extend(axis.iter().map(|t| {
                l.points
                    .iter()
                    .find(|p| p.threads == *t)
                    .map_or("-".into(), |p| {
                        let ci = super::interval_brackets(p.interval_pct);
                        let mean = p
                            .mean_pct
                            .map_or(String::new(), |x| format!("; mean {x:+.1}%"));
                        let p95 = p
                            .p95_pct
                            .map_or(String::new(), |x| format!("; p95 {x:+.1}%"));
                        format!(
                            "{:+.1}% {ci} {}{mean}{p95}",
                            p.gain_pct,
                            verdict_word(p.verdict)
                        )
                    })
            }));
            row
        })
        .collect();
    Some(Table { header, rows })
}

/// The sentence above the table: what is compared with what, and where the dataset fits.
pub fn lead(r: &Report) -> String {
    let data = crate::bench::budget::data_mb(&r.plan.spec);
    let pools = pools(r);
    let above: Vec<String> = pools
        .iter()
        .filter(|&&p| (p as f64) < data)
        .map(|p| format!("{p} MiB"))
        .collect();
    let fit = if above.is_empty() {
        format!("the dataset (~{data:.0} MiB) fits every buffer pool")
    } else {
        format!(
            "the dataset (~{data:.0} MiB) is larger than the {} buffer pool{}: there the \
             server reads pages from disk during the runs",
            above.join(", "),
            if above.len() == 1 { "" } else { "s" }
        )
    };
    let against = if pools.len() > 1 {
        "the baseline of its own buffer pool"
    } else {
        "the baseline"
    };
    format!(
        "Sweep: each variant's TPS against {against}, by client threads — gain [95% interval], \
         verdict after Holm over the run's comparisons, and the change in mean and p95 latency; {fit}."
    )
}
