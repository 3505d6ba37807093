//! sysbench's latency histogram: 1024 log-spaced buckets from 0.001 ms to 100 000 ms.
//!
//! Reported percentiles are bucket centres on this fixed grid, so they compare digit for digit with
//! sysbench's. Each worker thread owns a [`SharedHistogram`] it alone writes; the reporter reads
//! snapshots of all of them for interval and final figures.

use std::sync::atomic::{AtomicU64, Ordering};

pub const BUCKETS: usize = 1024;
const RANGE_MIN_MS: f64 = 0.001;
const RANGE_MAX_MS: f64 = 100_000.0;

fn range_deduct() -> f64 {
    RANGE_MIN_MS.ln()
}

fn range_mult() -> f64 {
    (BUCKETS as f64 - 1.0) / (RANGE_MAX_MS.ln() - RANGE_MIN_MS.ln())
}

/// The bucket a latency in milliseconds falls into.
pub fn bucket_of(ms: f64) -> usize {
    if ms <= 0.0 {
        return 0;
    }
    let b = ((ms.ln() - range_deduct()) * range_mult() + 0.5).floor();
    b.clamp(0.0, (BUCKETS - 1) as f64) as usize
}

/// The value (ms) a bucket reports: its centre on the log grid.
pub fn bucket_value(i: usize) -> f64 {
    (i as f64 / range_mult() + range_deduct()).exp()
}

/// Bucket counts, as read from one or more [`SharedHistogram`]s.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogHistogram {
    pub counts: Vec<u64>,
}

impl Default for LogHistogram {
    fn default() -> Self {
        LogHistogram {
            counts: vec![0; BUCKETS],
        }
    }
}

impl LogHistogram {
    pub fn record_ms(&mut self, ms: f64) {
        self.counts[bucket_of(ms)] += 1;
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    pub fn add(&mut self, other: &LogHistogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
    }

    /// Counts of `self` minus an earlier snapshot of the same histogram.
    pub fn since(&self, earlier: &LogHistogram) -> LogHistogram {
        LogHistogram {
            counts: self
                .counts
                .iter()
                .zip(&earlier.counts)
                .map(|(a, b)| a.saturating_sub(*b))
                .collect(),
        }
    }

    /// sysbench's percentile: the first bucket whose cumulative count reaches round(N * p / 100).
    pub fn percentile(&self, p: f64) -> f64 {
        let n = self.total();
        if n == 0 {
            return 0.0;
        }
        let nmax = (n as f64 * p / 100.0 + 0.5).floor() as u64;
        let mut cum = 0;
        for (i, c) in self.counts.iter().enumerate() {
            cum += c;
            if cum >= nmax {
                return bucket_value(i);
            }
        }
        bucket_value(BUCKETS - 1)
    }

    /// The `--histogram=on` block, exactly as sysbench prints it.
    pub fn render(&self) -> String {
        let max = self.counts.iter().copied().max().unwrap_or(0);
        let mut s = String::from(
            "Latency histogram (values are in milliseconds)\n       value  ------------- distribution ------------- count\n",
        );
        for (i, &c) in self.counts.iter().enumerate() {
            if c == 0 {
                continue;
            }
            let width = ((c as f64 * 40.0 / max as f64) + 0.5).floor() as usize;
            s.push_str(&format!(
                "{:12.3} |{:<40} {}\n",
                bucket_value(i),
                "*".repeat(width.min(40)),
                c
            ));
        }
        s
    }
}

/// A histogram one thread writes and others read.
pub struct SharedHistogram {
    counts: Box<[AtomicU64]>,
}

impl Default for SharedHistogram {
    fn default() -> Self {
        SharedHistogram {
            counts: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

impl SharedHistogram {
    /// Records one latency. Only the owning thread writes, so a plain load and store suffice.
    #[inline]
    pub fn record_ms(&self, ms: f64) {
        let c = &self.counts[bucket_of(ms)];
        c.store(c.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> LogHistogram {
        LogHistogram {
            counts: self
                .counts
                .iter()
                .map(|c| c.load(Ordering::Relaxed))
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grid_matches_values_seen_in_real_sysbench_reports() {
        for (bucket, printed) in [
            (758, 846.57),
            (768, 1013.60),
            (662, 150.29),
            (663, 153.02),
            (646, 112.67),
        ] {
            assert_eq!(
                format!("{:.2}", bucket_value(bucket)),
                format!("{printed:.2}")
            );
            assert_eq!(bucket_of(printed), bucket);
        }
    }

    #[test]
    fn bucket_ratio_is_about_1_8_percent() {
        let r = bucket_value(501) / bucket_value(500);
        assert!((r - 1.01817).abs() < 1e-4, "{r}");
    }

    #[test]
    fn extremes_clamp() {
        assert_eq!(bucket_of(0.0), 0);
        assert_eq!(bucket_of(0.0001), 0);
        assert_eq!(bucket_of(1e9), BUCKETS - 1);
    }

    #[test]
    fn percentile_walks_the_cumulative_count() {
        let mut h = LogHistogram::default();
        for _ in 0..95 {
            h.record_ms(1.0);
        }
        for _ in 0..5 {
            h.record_ms(50.0);
        }
        assert_eq!(h.percentile(95.0), bucket_value(bucket_of(1.0)));
        assert_eq!(h.percentile(96.0), bucket_value(bucket_of(50.0)));
        assert_eq!(LogHistogram::default().percentile(95.0), 0.0);
    }

    #[test]
    fn render_has_sysbench_layout() {
        let mut h = LogHistogram::default();
        h.record_ms(0.001);
        h.record_ms(0.001);
        h.record_ms(0.002);
        let text = h.render();
        let lines: Vec<_> = text.lines().collect();
        assert_eq!(lines[2], format!("       0.001 |{} 2", "*".repeat(40)));
        assert_eq!(lines[3], format!("       0.002 |{:<40} 1", "*".repeat(20)));
    }
}
