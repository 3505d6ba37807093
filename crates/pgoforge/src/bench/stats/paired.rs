//! The paired test: per-round log-ratios, the exact sign-flip permutation p-value, and Holm's
//! step-down correction over a family of comparisons.

use oltp::rng::SbRng;

/// The two-sided exact sign-flip permutation p-value of mean(d) = 0: the share of the 2^n sign
/// assignments whose |sum| is at least the observed one (beyond 20 pairs, 2^20 seeded draws).
pub fn sign_flip_p(d: &[f64]) -> f64 {
    let n = d.len();
    if n == 0 {
        return 1.0;
    }
    let observed = d.iter().sum::<f64>().abs();
    // Tolerance: sums equal up to rounding count as "at least as extreme".
    let tol = 1e-12 * d.iter().map(|x| x.abs()).sum::<f64>().max(1e-300);
    let extreme = |signs: u64| {
        let s: f64 = d
            .iter()
            .enumerate()
            .map(|(i, x)| if signs >> i & 1 == 1 { -x } else { *x })
            .sum();
        s.abs() >= observed - tol
    };
    if n <= 20 {
        let total = 1u64 << n;
        let hits = (0..total).filter(|&m| extreme(m)).count();
        return hits as f64 / total as f64;
    }
    let mut rng = SbRng::new(0x5161, n as u64);
    let draws = 1u64 << 20;
    let mut hits = 0u64;
    for _ in 0..draws {
        let mut signs = 0u64;
        for i in 0..n.min(64) {
            if rng.uniform(0, 1) == 1 {
                signs |= 1 << i;
            }
        }
        hits += extreme(signs) as u64;
    }
    (hits + 1) as f64 / (draws + 1) as f64
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
    use crate::bench::stats::power::rounds_needed;

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
