//! Pooling one comparison measured on several hosts (issue 71, item 4): each host's estimate
//! of the log-ratio with its own precision, and a pooled estimate whose interval counts the
//! spread between hosts, not only each host's rounds — a random-effects model. τ² (the variance
//! of the true gain between hosts) by DerSimonian and Laird's moment estimator; the pooled
//! interval by Hartung and Knapp's method with t on k − 1 degrees of freedom (the plain normal
//! interval is far too narrow with three to ten hosts), never narrower than the usual one
//! (the "modified" rule: its scale factor at least 1); and the prediction interval for one more
//! host, μ ± t(k − 2) √(τ² + SE²), which is what a user asking "what will my host get?" needs.

use super::dist::t_quantile;
use super::{mean, stddev};

/// One host's estimate: the mean per-round log-ratio and its variance (s² / n).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HostEstimate {
    pub y: f64,
    pub v: f64,
}

impl HostEstimate {
    /// From one host's paired per-round log-ratios (at least 2 rounds).
    pub fn of_rounds(log_ratios: &[f64]) -> Option<HostEstimate> {
        let n = log_ratios.len();
        if n < 2 {
            return None;
        }
        let s = stddev(log_ratios);
        Some(HostEstimate {
            y: mean(log_ratios),
            // A host whose rounds agree exactly still has some error: the floor keeps its
            // weight finite.
            v: (s * s / n as f64).max(1e-12),
        })
    }
}

/// The pooled result, on the log scale (exp() gives ratios).
#[derive(Clone, Debug, PartialEq)]
pub struct Pooled {
    pub hosts: usize,
    /// The pooled mean log-ratio and its 95 % interval (Hartung–Knapp, modified).
    pub mu: f64,
    pub ci95: (f64, f64),
    /// Between-host variance of the true log-ratio (DerSimonian–Laird) and Cochran's Q.
    pub tau2: f64,
    pub q: f64,
    /// The share of the spread between hosts' estimates that is real (Higgins' I², 0..1).
    pub i2: f64,
    /// Where one more host's true gain lies with 95 % probability (needs 3 hosts).
    pub prediction95: Option<(f64, f64)>,
}

/// Random-effects pooling of `hosts` (at least 2).
pub fn random_effects(hosts: &[HostEstimate]) -> Option<Pooled> {
    let k = hosts.len();
    if k < 2 {
        return None;
    }
    let w: Vec<f64> = hosts.iter().map(|h| 1.0 / h.v).collect();
    let sw: f64 = w.iter().sum();
    let sw2: f64 = w.iter().map(|x| x * x).sum();
    let fixed = hosts.iter().zip(&w).map(|(h, w)| w * h.y).sum::<f64>() / sw;
    let q: f64 = hosts
        .iter()
        .zip(&w)
        .map(|(h, w)| w * (h.y - fixed).powi(2))
        .sum();
    let df = (k - 1) as f64;
    let tau2 = ((q - df) / (sw - sw2 / sw)).max(0.0);
    let ws: Vec<f64> = hosts.iter().map(|h| 1.0 / (h.v + tau2)).collect();
    let sws: f64 = ws.iter().sum();
    let mu = hosts.iter().zip(&ws).map(|(h, w)| w * h.y).sum::<f64>() / sws;
    let hk: f64 = hosts
        .iter()
        .zip(&ws)
        .map(|(h, w)| w * (h.y - mu).powi(2))
        .sum::<f64>()
        / df;
    let se = (hk.max(1.0) / sws).sqrt();
    let t = t_quantile(0.975, k - 1);
    let prediction95 = (k >= 3).then(|| {
        let half = t_quantile(0.975, k - 2) * (tau2 + se * se).sqrt();
        (mu - half, mu + half)
    });
    Some(Pooled {
        hosts: k,
        mu,
        ci95: (mu - t * se, mu + t * se),
        tau2,
        q,
        i2: if q > 0.0 {
            ((q - df) / q).max(0.0)
        } else {
            0.0
        },
        prediction95,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(y: f64, v: f64) -> HostEstimate {
        HostEstimate { y, v }
    }

    /// Worked by hand: three hosts that agree within their errors give τ² = 0 and the
    /// fixed-effect mean, with Hartung–Knapp's t(2) interval.
    #[test]
    fn hosts_that_agree_pool_to_their_mean_with_no_spread() {
        let p = random_effects(&[h(0.1, 0.01), h(0.2, 0.01), h(0.3, 0.01)]).unwrap();
        assert!((p.mu - 0.2).abs() < 1e-12);
        assert_eq!(p.tau2, 0.0);
        assert!((p.q - 2.0).abs() < 1e-12);
        assert_eq!(p.i2, 0.0);
        // SE = sqrt(1 / 300); t(0.975, 2) = 4.302653.
        let half = 4.302653 * (1.0f64 / 300.0).sqrt();
        assert!((p.ci95.1 - 0.2 - half).abs() < 1e-4, "{p:?}");
    }

    /// Worked by hand: hosts far apart: Q = 50, τ² = (50 − 2) / (300 − 100) = 0.24, every host
    /// weighted 1 / 0.25; the interval and the prediction widen with the spread.
    #[test]
    fn hosts_far_apart_widen_the_pooled_interval_and_the_prediction() {
        let p = random_effects(&[h(0.0, 0.01), h(0.5, 0.01), h(1.0, 0.01)]).unwrap();
        assert!((p.q - 50.0).abs() < 1e-9);
        assert!((p.tau2 - 0.24).abs() < 1e-12);
        assert!((p.mu - 0.5).abs() < 1e-12);
        assert!((p.i2 - 0.96).abs() < 1e-12);
        let se = (1.0f64 / 12.0).sqrt();
        assert!((p.ci95.1 - 0.5 - 4.302653 * se).abs() < 1e-4, "{p:?}");
        let pred = p.prediction95.unwrap();
        let half = 12.7062 * (0.24f64 + se * se).sqrt();
        assert!((pred.1 - 0.5 - half).abs() < 1e-3, "{pred:?}");
        // The pooled interval is wider than any one host's own.
        assert!(p.ci95.1 - p.ci95.0 > 2.0 * 1.96 * 0.1);
    }

    #[test]
    fn one_host_or_one_round_pools_nothing() {
        assert!(random_effects(&[h(0.1, 0.01)]).is_none());
        assert!(HostEstimate::of_rounds(&[0.1]).is_none());
        let e = HostEstimate::of_rounds(&[0.1, 0.3]).unwrap();
        assert!((e.y - 0.2).abs() < 1e-12);
        // s² = 0.02, n = 2.
        assert!((e.v - 0.01).abs() < 1e-12);
    }
}
