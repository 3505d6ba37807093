//! The interval reporter: wakes on an absolute grid and turns counter deltas into sysbench's
//! interval lines.

use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::counters::{sum, Counters, Snapshot};
use super::schedule::{Arrivals, Shared, RATE_QUEUE_LIMIT};
use super::Observer;
use crate::histogram::LogHistogram;
use crate::result::Interval;
use crate::settings::Settings;

/// The reporter: wakes on an absolute grid, turns counter deltas into interval lines.
pub(super) fn report_intervals(
    sh: &Shared,
    s: &Settings,
    counters: &[Counters],
    done: &mpsc::Receiver<()>,
    nworkers: usize,
    out: &mut Vec<Interval>,
    observer: &mut dyn Observer,
) {
    let timing = sh.timing();
    let every = Duration::from_secs(s.report_interval_s);
    let mut finished = 0;
    let mut prev = Snapshot::default();
    let mut prev_hist = LogHistogram::default();
    let mut prev_t = timing.measure_from;
    let mut k = 1u32;
    // Builds the interval from the previous report to `now` and hands it on.
    let mut emit = |now: Instant| {
        let snap = sum(counters.iter().map(Counters::snapshot));
        let mut hist = LogHistogram::default();
        for c in counters {
            hist.add(&c.hist.snapshot());
        }
        let dt = now.saturating_duration_since(prev_t).as_secs_f64();
        let (queue_length, concurrency) = match &sh.arrivals {
            Some(arr) => {
                let a = arr.lock().expect("arrivals lock");
                let mut probe = Arrivals {
                    next: a.next,
                    rng: a.rng.clone(),
                    rate: a.rate,
                };
                drop(a);
                let mut q = 0;
                while probe.next <= now && q < RATE_QUEUE_LIMIT {
                    probe.advance();
                    q += 1;
                }
                (
                    Some(q),
                    Some(sh.in_flight.load(Ordering::Relaxed).max(0) as u64),
                )
            }
            None => (None, None),
        };
        let latency_ms = if s.percentile > 0 {
            hist.since(&prev_hist).percentile(s.percentile as f64)
        } else {
            0.0
        };
        let at_s = now
            .saturating_duration_since(timing.measure_from)
            .as_secs_f64()
            .round();
        let mut iv = interval(at_s, s.threads, &prev, &snap, dt, latency_ms);
        iv.queue_length = queue_length;
        iv.concurrency = concurrency;
        if now >= timing.measure_from {
            observer.interval(&iv);
            out.push(iv);
        }
        prev = snap;
        prev_hist = hist;
        prev_t = now;
    };
    while finished < nworkers {
        let wait = if s.report_interval_s == 0 {
            Duration::from_secs(3600)
        } else {
            (timing.measure_from + every * k).saturating_duration_since(Instant::now())
        };
        match done.recv_timeout(wait) {
            Ok(()) => finished += 1,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                if s.report_interval_s == 0 {
                    continue;
                }
                k += 1;
                emit(Instant::now());
            }
        }
    }
    // The workers stop at the deadline, the reporter wakes at the same instant: when the workers
    // win, the last interval (up to the deadline) was never reported. Report it, ending at the
    // deadline, so a run of N seconds has N intervals.
    if let (Some(deadline), false) = (timing.deadline, s.report_interval_s == 0) {
        if last_interval_due(timing.measure_from + every * (k - 1), deadline, every) {
            emit(deadline.min(Instant::now()));
        }
    }
}

/// One interval line from the counters at its start (`prev`) and end (`now`), `dt` seconds apart.
pub(super) fn interval(
    at_s: f64,
    threads: u32,
    prev: &Snapshot,
    now: &Snapshot,
    dt: f64,
    latency_ms: f64,
) -> Interval {
    let rate = |a: u64, b: u64| if dt > 0.0 { (a - b) as f64 / dt } else { 0.0 };
    Interval {
        at_s,
        threads,
        tps: rate(now.events, prev.events),
        qps: rate(
            now.reads + now.writes + now.others,
            prev.reads + prev.writes + prev.others,
        ),
        reads_per_s: rate(now.reads, prev.reads),
        writes_per_s: rate(now.writes, prev.writes),
        others_per_s: rate(now.others, prev.others),
        latency_ms,
        errors_per_s: rate(now.errors, prev.errors),
        reconnects_per_s: rate(now.reconnects, prev.reconnects),
        queue_length: None,
        concurrency: None,
    }
}

/// Whether the interval ending at the deadline still has to be reported after the workers
/// stopped: the last one reported ended at `last_reported`, and at least half an interval has
/// passed since (a run of N seconds then has N intervals, not N-1, whoever wakes first).
pub(super) fn last_interval_due(
    last_reported: Instant,
    deadline: Instant,
    every: Duration,
) -> bool {
    last_reported < deadline && deadline.saturating_duration_since(last_reported) >= every / 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interval_is_the_counters_difference_over_its_length() {
        let prev = Snapshot {
            events: 100,
            reads: 1000,
            writes: 200,
            others: 100,
            errors: 1,
            reconnects: 0,
        };
        let now = Snapshot {
            events: 300,
            reads: 3000,
            writes: 600,
            others: 300,
            errors: 5,
            reconnects: 2,
        };
        let iv = interval(10.0, 4, &prev, &now, 2.0, 3.5);
        assert_eq!((iv.at_s, iv.threads, iv.latency_ms), (10.0, 4, 3.5));
        assert_eq!((iv.tps, iv.qps), (100.0, 1300.0));
        assert_eq!(
            (iv.reads_per_s, iv.writes_per_s, iv.others_per_s),
            (1000.0, 200.0, 100.0)
        );
        assert_eq!((iv.errors_per_s, iv.reconnects_per_s), (2.0, 1.0));
        // A zero-length interval reports rates of 0, not infinities.
        let z = interval(0.0, 1, &prev, &now, 0.0, 0.0);
        assert_eq!((z.tps, z.qps), (0.0, 0.0));
    }

    #[test]
    fn the_last_interval_is_reported_when_at_least_half_of_it_is_left() {
        let t0 = Instant::now();
        let every = Duration::from_secs(1);
        let s = Duration::from_millis;
        // The reporter woke at 9 s; the deadline at 10 s: the tenth interval is still due.
        assert!(last_interval_due(t0 + s(9000), t0 + s(10000), every));
        // Half an interval left: due; less than half: not (it would be a sliver of a line).
        assert!(last_interval_due(t0 + s(9500), t0 + s(10000), every));
        assert!(!last_interval_due(t0 + s(9600), t0 + s(10000), every));
        // The reporter already reported up to the deadline.
        assert!(!last_interval_due(t0 + s(10000), t0 + s(10000), every));
    }
}
