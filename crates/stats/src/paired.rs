//! The paired test: per-round log-ratios, the exact sign-flip permutation p-value, and Holm's
//! step-down correction over a family of comparisons.

use oltp::rng::SbRng;

/// The sign-flip distribution of the paired log-ratios `d`, in the form that makes the test and
/// its interval one inference: flipping the signs of a subset S moves the sum by 2·Σ_S d, so at a
/// shift δ that assignment is at least as extreme upwards as the observed one exactly when
/// mean(d_S) ≤ δ. The sorted means of the non-empty subsets therefore give both the one-sided
/// p-values at any δ and, as order statistics, the confidence bounds (as Walsh averages do for
/// the signed-rank test). All 2^n − 1 subsets up to 20 pairs; beyond, 2^20 seeded draws.
#[derive(Clone, Debug)]
pub struct SignFlip {
    /// The subset means (unsorted: counts and two order statistics are linear-time).
    means: Vec<f64>,
    /// Assignments counted, the observed one included (2^n, or draws + 1).
    total: f64,
    tol: f64,
}

impl SignFlip {
    pub fn new(d: &[f64]) -> SignFlip {
        let n = d.len();
        // Means equal up to rounding count as equal ("at least as extreme").
        let tol = 1e-12 * d.iter().map(|x| x.abs()).fold(0.0, f64::max).max(1e-300);
        let mut means = Vec::new();
        if n == 0 {
        } else if n <= 20 {
            // Gray code: each next subset differs by one element.
            let total = 1u64 << n;
            means.reserve(total as usize - 1);
            let (mut sum, mut count) = (0.0f64, 0u32);
            let mut prev = 0u64;
            for i in 1..total {
                let g = i ^ (i >> 1);
                let bit = (g ^ prev).trailing_zeros() as usize;
                if g >> bit & 1 == 1 {
                    sum += d[bit];
                    count += 1;
                } else {
                    sum -= d[bit];
                    count -= 1;
                }
                prev = g;
                means.push(sum / count as f64);
            }
        } else {
            let mut rng = SbRng::new(0x5161, n as u64);
            for _ in 0..1u64 << 20 {
                let (mut sum, mut count) = (0.0, 0u32);
                for x in d {
                    if rng.uniform(0, 1) == 1 {
                        sum += x;
                        count += 1;
                    }
                }
                if count > 0 {
                    means.push(sum / count as f64);
                }
            }
        }
        let total = if n <= 20 {
            (1u64 << n) as f64
        } else {
            means.len() as f64 + 1.0
        };
        SignFlip { means, total, tol }
    }

    /// The one-sided p-values of mean = δ against a larger and a smaller mean.
    pub fn one_sided(&self, delta: f64) -> (f64, f64) {
        let below = self
            .means
            .iter()
            .filter(|m| **m <= delta + self.tol)
            .count();
        let above = self
            .means
            .iter()
            .filter(|m| **m >= delta - self.tol)
            .count();
        (
            (1 + below) as f64 / self.total,
            (1 + above) as f64 / self.total,
        )
    }

    /// The equal-tailed two-sided p-value of mean = δ: twice the smaller one-sided one.
    pub fn p(&self, delta: f64) -> f64 {
        let (up, down) = self.one_sided(delta);
        (2.0 * up.min(down)).min(1.0)
    }

    /// The shifts δ the test at two-sided level `alpha` does not reject: [lower, upper], infinite
    /// where too few pairs can reject nothing. 0 lies outside it exactly when p(0) ≤ alpha.
    pub fn interval(&self, alpha: f64) -> (f64, f64) {
        // The fewest subset means at or below δ for which p_up(δ) = (1 + c) / total exceeds α/2.
        let c = (alpha / 2.0 * self.total - 1.0).floor().max(-1.0) as i64 + 1;
        let c = c.max(0) as usize;
        if c == 0 || c > self.means.len() {
            return (f64::NEG_INFINITY, f64::INFINITY);
        }
        let mut v = self.means.clone();
        let len = v.len();
        let lo = *v.select_nth_unstable_by(c - 1, f64::total_cmp).1;
        let hi = *v.select_nth_unstable_by(len - c, f64::total_cmp).1;
        (lo, hi)
    }
}

/// The two-sided exact sign-flip permutation p-value of mean(d) = 0, equal-tailed (twice the
/// smaller one-sided p), so that it and [`SignFlip::interval`] always agree.
pub fn sign_flip_p(d: &[f64]) -> f64 {
    if d.is_empty() {
        return 1.0;
    }
    SignFlip::new(d).p(0.0)
}

/// The smallest p-value the sign-flip test can give with `n` pairs: 2 / 2^n.
pub fn min_sign_flip_p(n: usize) -> f64 {
    2.0 / 2f64.powi(n.min(1000) as i32)
}

/// Holm's step-down adjustment: adjusted p-values in the input order (family-wise error ≤ α
/// when each adjusted p is compared with α).
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut idx: Vec<usize> = (0..m).collect();
    idx.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut adj = vec![1.0; m];
    let mut running: f64 = 0.0;
    for (rank, &i) in idx.iter().enumerate() {
        running = running.max(((m - rank) as f64 * p[i]).min(1.0));
        adj[i] = running;
    }
    adj
}

/// Per-round pairs: the values of `a` and `b` from the same round, by round number.
pub fn pair_by_round(a: &[(u32, f64)], b: &[(u32, f64)]) -> Vec<(f64, f64)> {
    a.iter()
        .filter_map(|(r, x)| b.iter().find(|(r2, _)| r2 == r).map(|(_, y)| (*x, *y)))
        .collect()
}

/// ln(variant / baseline) of every round both ran with positive values.
pub fn paired_log_ratios(baseline: &[(u32, f64)], variant: &[(u32, f64)]) -> Vec<f64> {
    pair_by_round(baseline, variant)
        .iter()
        .filter(|(b, v)| *b > 0.0 && *v > 0.0)
        .map(|(b, v)| (v / b).ln())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::power::rounds_needed;

    #[test]
    fn sign_flip_and_holm_known_answers() {
        // All 5 ratios above 1: only "all +" and "all -" are as extreme, 2/32.
        assert_eq!(sign_flip_p(&[0.1, 0.2, 0.15, 0.12, 0.3]), 2.0 / 32.0);
        assert_eq!(sign_flip_p(&[0.1; 6]), 2.0 / 64.0);
        // One of 6 against: sums with |s| >= 0.4 of (0.1 x5, -0.1): 2 * (1 + 6) / 64.
        let p = sign_flip_p(&[0.1, 0.1, 0.1, 0.1, 0.1, -0.1]);
        assert!((p - 14.0 / 64.0).abs() < 1e-12, "{p}");
        assert_eq!(sign_flip_p(&[]), 1.0);
        assert_eq!(min_sign_flip_p(5), 0.0625);
        // 6 comparisons: Holm's first threshold 0.0083 needs 2/2^n <= 0.0083, n = 8.
        assert_eq!(rounds_needed(1), 6);
        assert_eq!(rounds_needed(6), 8);
        assert_eq!(rounds_needed(9), 9);
        // Holm: sorted p 0.01, 0.02, 0.04 -> 0.03, 0.04, 0.04 (monotone).
        let adj = holm(&[0.04, 0.01, 0.02]);
        assert_eq!(adj, vec![0.04, 0.03, 0.04]);
        assert_eq!(holm(&[0.5, 0.9]), vec![1.0, 1.0]);
    }
}
