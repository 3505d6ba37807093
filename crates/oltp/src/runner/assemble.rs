//! The run's result put together from every worker's counters, histograms and per-thread
//! statistics (sysbench's fairness figures included).

use super::counters::{sum, Counters};
use super::slot::{new_hdr, WorkerOut};
use crate::histogram::{bucket_value, LogHistogram};
use crate::result::{
    Fairness, HdrPercentiles, Interval, Latency, Queries, RunResult, ServerSide, ThreadStats,
};
use crate::settings::Settings;

pub(super) fn assemble(
    s: &Settings,
    seed: u64,
    server: ServerSide,
    counters: &[Counters],
    outs: Vec<WorkerOut>,
    intervals: Vec<Interval>,
    total_time_s: f64,
) -> RunResult {
    let snap = sum(counters.iter().map(Counters::snapshot));
    let mut hist = LogHistogram::default();
    for c in counters {
        hist.add(&c.hist.snapshot());
    }
    let mut hdr = new_hdr();
    let (mut min_ns, mut max_ns, mut sum_ns) = (u64::MAX, 0, 0);
    let mut threads = Vec::new();
    let mut replay = crate::replay::ReplayCounts::default();
    for o in outs {
        replay.merge(&o.replay);
        let _ = hdr.add(&o.hdr);
        min_ns = min_ns.min(o.min_ns);
        max_ns = max_ns.max(o.max_ns);
        sum_ns += o.sum_ns;
        threads.extend(o.threads);
    }
    threads.sort_by_key(|(tid, _)| *tid);
    let threads: Vec<ThreadStats> = threads.into_iter().map(|(_, t)| t).collect();
    let events = snap.events;
    let ms = |ns: u64| ns as f64 / 1e6;
    let hq = |q: f64| {
        if events == 0 {
            0.0
        } else {
            ms(hdr.value_at_quantile(q))
        }
    };
    RunResult {
        tool: format!("pgoforge-oltp {}", env!("CARGO_PKG_VERSION")),
        test: s.test.to_string(),
        settings: s.clone(),
        seed,
        server,
        queries: Queries {
            read: snap.reads,
            write: snap.writes,
            other: snap.others,
            total: snap.reads + snap.writes + snap.others,
        },
        transactions: events,
        ignored_errors: snap.errors,
        reconnects: snap.reconnects,
        total_time_s,
        latency: Latency {
            min: if events == 0 { 0.0 } else { ms(min_ns) },
            avg: if events == 0 {
                0.0
            } else {
                ms(sum_ns) / events as f64
            },
            max: ms(max_ns),
            sum: ms(sum_ns),
            percentile: (s.percentile > 0).then(|| hist.percentile(s.percentile as f64)),
            hdr: HdrPercentiles {
                p50: hq(0.50),
                p95: hq(0.95),
                p99: hq(0.99),
                p999: hq(0.999),
                max: if events == 0 { 0.0 } else { ms(hdr.max()) },
            },
        },
        fairness: fairness(&threads),
        threads,
        intervals,
        histogram: hist
            .counts
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, c)| (bucket_value(i), *c))
            .collect(),
        complete: true,
        replay: (s.test == crate::settings::TestName::Replay).then_some(replay),
    }
}

/// sysbench's "Threads fairness": the mean and population standard deviation of the events and of
/// the busy time per connection.
pub(super) fn fairness(threads: &[ThreadStats]) -> Fairness {
    let n = threads.len().max(1) as f64;
    let mean_sd = |xs: &mut dyn Iterator<Item = f64>| {
        let xs: Vec<f64> = xs.collect();
        let avg = xs.iter().sum::<f64>() / n;
        let sd = (xs.iter().map(|x| (x - avg).powi(2)).sum::<f64>() / n).sqrt();
        (avg, sd)
    };
    let (events_avg, events_stddev) = mean_sd(&mut threads.iter().map(|t| t.events as f64));
    let (time_avg_s, time_stddev_s) = mean_sd(&mut threads.iter().map(|t| t.time_s));
    Fairness {
        events_avg,
        events_stddev,
        time_avg_s,
        time_stddev_s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fairness_is_the_population_mean_and_deviation_per_connection() {
        let t = |events, time_s| ThreadStats { events, time_s };
        let f = fairness(&[t(10, 1.0), t(20, 3.0)]);
        assert_eq!((f.events_avg, f.events_stddev), (15.0, 5.0));
        assert_eq!((f.time_avg_s, f.time_stddev_s), (2.0, 1.0));
        let one = fairness(&[t(7, 2.5)]);
        assert_eq!((one.events_avg, one.events_stddev), (7.0, 0.0));
        // No connection finished setting up: zeros, not NaN.
        let none = fairness(&[]);
        assert_eq!((none.events_avg, none.time_stddev_s), (0.0, 0.0));
    }
}
