//! Power: the smallest change a number of paired rounds can detect, and the rounds a change
//! needs, given the per-round scatter and the number of comparisons Holm corrects over.

use super::dist::t_quantile;
use super::paired::min_sign_flip_p;

/// The smallest true change (as a ratio above 1) that `n` paired rounds detect with 80 % power,
/// two-sided at 5 % over `comparisons` claims (Holm's strictest step, 0.05 / comparisons), when
/// the per-round log-ratios scatter with standard deviation `sd`: (t₁₋α/2 + t₀.₈) · sd / √n on the
/// log scale. Infinite when the exact test cannot reach that level at all with `n` rounds.
pub fn min_detectable_ratio(sd: f64, n: usize, comparisons: usize) -> f64 {
    let alpha = 0.05 / comparisons.max(1) as f64;
    if n < 2 || min_sign_flip_p(n) > alpha {
        return f64::INFINITY;
    }
    let df = n - 1;
    let k = t_quantile(1.0 - alpha / 2.0, df) + t_quantile(0.8, df);
    (k * sd / (n as f64).sqrt()).exp()
}

/// The fewest paired rounds that detect `ratio` (e.g. 1.02) per [`min_detectable_ratio`], up to
/// `max`; `None` beyond it.
pub fn rounds_to_detect(ratio: f64, sd: f64, comparisons: usize, max: usize) -> Option<usize> {
    // The detectable ratio falls as rounds grow: bisect instead of trying thousands.
    let ok = |n: usize| min_detectable_ratio(sd, n, comparisons) <= ratio;
    if max < 2 || !ok(max) {
        return None;
    }
    let (mut lo, mut hi) = (1, max);
    while hi - lo > 1 {
        let mid = (lo + hi) / 2;
        if ok(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    Some(hi)
}

/// The fewest paired rounds with which the sign-flip test can pass Holm's first (strictest)
/// threshold, 0.05 / `comparisons`.
pub fn rounds_needed(comparisons: usize) -> usize {
    let alpha = 0.05 / comparisons.max(1) as f64;
    (1..64).find(|&n| min_sign_flip_p(n) <= alpha).unwrap_or(64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn power_known_answers() {
        // Power: sd 2 % at 10 rounds, one comparison: (2.262 + 0.883) * 0.02 / sqrt(10) = 1.99 %.
        let m = min_detectable_ratio(0.02, 10, 1);
        assert!((m - 1.0201).abs() < 5e-4, "{m}");
        // More claims need more: 5 rounds cannot pass 0.05 / 9 at all.
        assert!(min_detectable_ratio(0.02, 5, 9).is_infinite());
        assert!(min_detectable_ratio(0.02, 12, 9) > min_detectable_ratio(0.02, 12, 1));
        // exp(0.0199) = 1.0201 is just above 1.02 at 10 rounds: 11 are needed.
        assert_eq!(rounds_to_detect(1.02, 0.02, 1, 100), Some(11));
        assert_eq!(rounds_to_detect(1.02, 0.5, 1, 50), None);
        // A noisy VM's floor: sd 11 % needs about ((1.96 + 0.84) · 0.11 / ln 1.02)² ≈ 242 rounds.
        let n = rounds_to_detect(1.02, 0.11, 1, 5000).unwrap();
        assert!((240..=250).contains(&n), "{n}");
    }
}
