//! Statistics for A/B comparisons over benchmark rounds: descriptive figures per cell, and per variant
//! against the baseline the throughput ratio with a bootstrap confidence interval, a Mann-Whitney U
//! test, and a verdict (an enum; reports put it in words). Everything is deterministic (fixed resampling seed), so a report
//! regenerates identically from the same results.

use serde::{Deserialize, Serialize};

use oltp::rng::SbRng;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Describe {
    pub n: usize,
    pub mean: f64,
    pub median: f64,
    pub stddev: f64,
    /// 95% confidence interval of the mean (Student t).
    pub ci95: (f64, f64),
}

pub fn mean(x: &[f64]) -> f64 {
    if x.is_empty() {
        return f64::NAN;
    }
    x.iter().sum::<f64>() / x.len() as f64
}

pub fn median(x: &[f64]) -> f64 {
    if x.is_empty() {
        return f64::NAN;
    }
    let mut v = x.to_vec();
    v.sort_by(|a, b| a.total_cmp(b));
    let m = v.len() / 2;
    if v.len() % 2 == 0 {
        (v[m - 1] + v[m]) / 2.0
    } else {
        v[m]
    }
}

/// Sample standard deviation (n - 1).
pub fn stddev(x: &[f64]) -> f64 {
    if x.len() < 2 {
        return 0.0;
    }
    let m = mean(x);
    (x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (x.len() - 1) as f64).sqrt()
}

/// The two-sided 97.5% quantile of Student's t with `df` degrees of freedom.
pub fn t975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042,
    ];
    match df {
        0 => f64::INFINITY,
        1..=30 => TABLE[df - 1],
        // Beyond the table the normal approximation with a first-order correction is close enough.
        _ => 1.959964 + 2.37 / df as f64,
    }
}

pub fn describe(x: &[f64]) -> Describe {
    let m = mean(x);
    let sd = stddev(x);
    let half = if x.len() > 1 {
        t975(x.len() - 1) * sd / (x.len() as f64).sqrt()
    } else {
        f64::NAN
    };
    Describe {
        n: x.len(),
        mean: m,
        median: median(x),
        stddev: sd,
        ci95: (m - half, m + half),
    }
}

/// Standard normal CDF (Abramowitz-Stegun 7.1.26 via erf; error < 1.5e-7).
pub fn normal_cdf(z: f64) -> f64 {
    let x = z.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.3275911 * x);
    let y = 1.0
        - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
            + 0.254829592)
            * t
            * (-x * x).exp();
    let erf = if z >= 0.0 { y } else { -y };
    0.5 * (1.0 + erf)
}

/// Two-sided Mann-Whitney U test (normal approximation with tie and continuity corrections).
/// Returns (U of `a`, p-value).
pub fn mann_whitney(a: &[f64], b: &[f64]) -> (f64, f64) {
    let (n1, n2) = (a.len() as f64, b.len() as f64);
    if a.is_empty() || b.is_empty() {
        return (f64::NAN, 1.0);
    }
    let mut all: Vec<(f64, usize)> = a
        .iter()
        .map(|&v| (v, 0))
        .chain(b.iter().map(|&v| (v, 1)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut ranks = vec![0.0; all.len()];
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < all.len() {
        let mut j = i;
        while j + 1 < all.len() && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let r = (i + j) as f64 / 2.0 + 1.0;
        for k in &mut ranks[i..=j] {
            *k = r;
        }
        let t = (j - i + 1) as f64;
        tie_term += t * t * t - t;
        i = j + 1;
    }
    let r1: f64 = all
        .iter()
        .zip(&ranks)
        .filter(|(x, _)| x.1 == 0)
        .map(|(_, r)| r)
        .sum();
    let u1 = r1 - n1 * (n1 + 1.0) / 2.0;
    let mu = n1 * n2 / 2.0;
    let n = n1 + n2;
    let var = n1 * n2 / 12.0 * ((n + 1.0) - tie_term / (n * (n - 1.0)));
    if var <= 0.0 {
        return (u1, 1.0);
    }
    let z = ((u1 - mu).abs() - 0.5).max(0.0) / var.sqrt();
    (u1, (2.0 * (1.0 - normal_cdf(z))).min(1.0))
}

/// Percentile bootstrap 95% CI of mean(b) / mean(a), resampling rounds with replacement.
pub fn bootstrap_ratio_ci(a: &[f64], b: &[f64], resamples: usize, seed: u64) -> (f64, f64) {
    if a.is_empty() || b.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let mut rng = SbRng::new(seed, 0xB007);
    let mut ratios = Vec::with_capacity(resamples);
    let pick = |v: &[f64], rng: &mut SbRng| {
        let mut s = 0.0;
        for _ in 0..v.len() {
            s += v[rng.uniform(0, v.len() as u32 - 1) as usize];
        }
        s / v.len() as f64
    };
    for _ in 0..resamples {
        let ma = pick(a, &mut rng);
        let mb = pick(b, &mut rng);
        ratios.push(mb / ma);
    }
    ratios.sort_by(|x, y| x.total_cmp(y));
    let q = |p: f64| ratios[((p * (resamples - 1) as f64).round() as usize).min(resamples - 1)];
    (q(0.025), q(0.975))
}

/// A variant against the baseline on one cell (workload × threads).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// mean(variant) / mean(baseline).
    pub ratio: f64,
    pub ratio_ci95: (f64, f64),
    pub p_value: f64,
    pub significant: bool,
    pub verdict: Verdict,
    /// Problems that make the figure doubtful.
    pub warnings: Vec<String>,
}

/// What a comparison concludes; reports render it ([`Comparison::sentence`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    NoSignificantDifference,
    Faster,
    Slower,
    LowerLatency,
    HigherLatency,
}

impl Verdict {
    pub fn words(self) -> &'static str {
        match self {
            Verdict::NoSignificantDifference => "no significant difference",
            Verdict::Faster => "faster",
            Verdict::Slower => "slower",
            Verdict::LowerLatency => "lower latency",
            Verdict::HigherLatency => "higher latency",
        }
    }
}

impl Comparison {
    /// The verdict with its numbers: `faster +44.6% [+33.6, +58.3]`.
    pub fn sentence(&self) -> String {
        let pct = |r: f64| (r - 1.0) * 100.0;
        match self.verdict {
            Verdict::NoSignificantDifference => self.verdict.words().into(),
            v => format!(
                "{} {:+.1}% [{:+.1}, {:+.1}]",
                v.words(),
                pct(self.ratio),
                pct(self.ratio_ci95.0),
                pct(self.ratio_ci95.1)
            ),
        }
    }
}

/// Smallest rounds per side for which the U test can reach p < 0.05 at all.
pub const MIN_ROUNDS: usize = 4;

/// Changes smaller than this are called noise even when the test says significant (as criterion's
/// noise threshold): on shared VMs slow drift can make tiny differences "significant".
pub const NOISE: f64 = 0.02;

/// Compares `variant` with `baseline` for a higher-is-better metric (`higher_better`) or a latency.
pub fn compare(baseline: &[f64], variant: &[f64], higher_better: bool, seed: u64) -> Comparison {
    let ratio = mean(variant) / mean(baseline);
    let ci = bootstrap_ratio_ci(baseline, variant, 10_000, seed);
    let (_, p) = mann_whitney(baseline, variant);
    let excludes_one = ci.0 > 1.0 || ci.1 < 1.0;
    let significant = p < 0.05 && excludes_one && (ratio - 1.0).abs() >= NOISE;
    let pct = |r: f64| (r - 1.0) * 100.0;
    let mut warnings = Vec::new();
    if baseline.len() < MIN_ROUNDS || variant.len() < MIN_ROUNDS {
        warnings.push(format!(
            "too few rounds for the test ({} and {}; at least {MIN_ROUNDS} each)",
            baseline.len(),
            variant.len()
        ));
    }
    if higher_better && ratio > 2.0 {
        warnings.push(format!(
            "implausible gain ({:+.1}%): check that both ran the same workload and data",
            pct(ratio)
        ));
    }
    let better = (ratio > 1.0) == higher_better;
    let verdict = match (significant, higher_better, better) {
        (false, _, _) => Verdict::NoSignificantDifference,
        (true, true, true) => Verdict::Faster,
        (true, true, false) => Verdict::Slower,
        (true, false, true) => Verdict::LowerLatency,
        (true, false, false) => Verdict::HigherLatency,
    };
    Comparison {
        ratio,
        ratio_ci95: ci,
        p_value: p,
        significant,
        verdict,
        warnings,
    }
}

/// Geometric mean of ratios (over workloads).
pub fn geomean(r: &[f64]) -> f64 {
    if r.is_empty() {
        return f64::NAN;
    }
    (r.iter().map(|x| x.ln()).sum::<f64>() / r.len() as f64).exp()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptive_figures() {
        let d = describe(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(d.mean, 2.5);
        assert_eq!(d.median, 2.5);
        assert!((d.stddev - 1.2909944).abs() < 1e-6);
        // t(3) = 3.182: half width 3.182 * 1.291 / 2 = 2.054
        assert!((d.ci95.1 - 4.554).abs() < 1e-2, "{:?}", d.ci95);
        assert_eq!(median(&[5.0, 1.0, 3.0]), 3.0);
    }

    #[test]
    fn normal_cdf_known_values() {
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-7);
        assert!((normal_cdf(1.959964) - 0.975).abs() < 1e-6);
        assert!((normal_cdf(-1.0) - 0.158655).abs() < 1e-5);
    }

    #[test]
    fn mann_whitney_known_answer() {
        // Completely separated samples of 5: U = 0, exact two-sided p = 0.0079; the normal
        // approximation with continuity correction gives 0.0122.
        let (u, p) = mann_whitney(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]);
        assert_eq!(u, 0.0);
        assert!((p - 0.0122).abs() < 0.001, "{p}");
        // Identical samples: no evidence at all.
        let (_, p) = mann_whitney(&[3.0; 6], &[3.0; 6]);
        assert_eq!(p, 1.0);
    }

    #[test]
    fn a_true_ten_percent_gain_is_detected_and_a_null_is_not() {
        let mut rng = SbRng::new(3, 3);
        let noise = |rng: &mut SbRng, base: f64| base * (1.0 + (rng.unit() - 0.5) * 0.04);
        let a: Vec<f64> = (0..8).map(|_| noise(&mut rng, 1000.0)).collect();
        let b: Vec<f64> = (0..8).map(|_| noise(&mut rng, 1100.0)).collect();
        let c = compare(&a, &b, true, 1);
        assert!(
            c.significant && c.sentence().starts_with("faster +"),
            "{c:?}"
        );
        assert!(c.ratio_ci95.0 < 1.1 && c.ratio_ci95.1 > 1.1 - 0.03, "{c:?}");
        let a2: Vec<f64> = (0..8).map(|_| noise(&mut rng, 1000.0)).collect();
        let null = compare(&a, &a2, true, 1);
        assert!(!null.significant, "{null:?}");
        assert_eq!(null.sentence(), "no significant difference");
        // Latency: lower is better.
        let lat = compare(&b, &a, false, 1);
        assert!(lat.sentence().starts_with("lower latency"), "{lat:?}");
        // Deterministic: same inputs, same interval.
        assert_eq!(compare(&a, &b, true, 1), c);
    }

    #[test]
    fn warnings_for_few_rounds_and_implausible_gains() {
        let c = compare(&[100.0, 101.0], &[300.0, 301.0], true, 1);
        assert!(c.warnings.iter().any(|w| w.contains("too few rounds")));
        assert!(c.warnings.iter().any(|w| w.contains("implausible")));
        assert!((geomean(&[1.1, 1.21]) - 1.1537).abs() < 1e-3);
    }
}
