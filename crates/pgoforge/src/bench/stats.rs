//! Statistics for A/B comparisons over benchmark rounds: descriptive figures per cell, and per
//! variant against the baseline a **paired** analysis — contenders of one round ran back to back
//! under the same machine state, so each round gives one ratio (variant / baseline). The estimate
//! is the geometric mean of those ratios; its 95 % interval is Student's t on the log-ratios (its
//! coverage holds at n = 4–10 where a percentile bootstrap's does not); the p-value is the exact
//! sign-flip permutation test on the log-ratios (all 2^n sign assignments), which assumes only
//! that, with no difference, a round's ratio is as likely above 1 as below. Holm's correction over
//! the cells of a run ([`holm`]) decides what is called significant. Everything is deterministic,
//! so a report regenerates identically from the same results.

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

/// ln Γ(x) for x > 0 (Lanczos, g = 7, 9 terms; about 15 significant digits).
fn ln_gamma(x: f64) -> f64 {
    const C: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + 7.5;
    let a = C[0] + (1..9).map(|i| C[i] / (x + i as f64)).sum::<f64>();
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularized incomplete beta function I_x(a, b), by its continued fraction (Lentz).
fn incomplete_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    // The fraction converges fast for x below the mean; use the symmetry above it.
    if x > (a + 1.0) / (a + b + 2.0) {
        return 1.0 - incomplete_beta(1.0 - x, b, a);
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp() / a;
    let tiny = 1e-300;
    let (mut c, mut d) = (1.0, 1.0 - (a + b) * x / (a + 1.0));
    d = 1.0 / if d.abs() < tiny { tiny } else { d };
    let mut f = d;
    for m in 1..300 {
        let m = m as f64;
        for num in [
            m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0)),
        ] {
            d = 1.0 + num * d;
            d = 1.0 / if d.abs() < tiny { tiny } else { d };
            c = 1.0 + num / c;
            if c.abs() < tiny {
                c = tiny;
            }
            f *= c * d;
        }
        if (c * d - 1.0).abs() < 1e-15 {
            break;
        }
    }
    front * f
}

/// P(T ≤ t) for Student's t with `df` degrees of freedom.
pub fn t_cdf(t: f64, df: f64) -> f64 {
    let tail = 0.5 * incomplete_beta(df / (df + t * t), df / 2.0, 0.5);
    if t >= 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// The `p` quantile of Student's t with `df` degrees of freedom (bisection on [`t_cdf`]), for
/// the arbitrary levels a Holm-corrected power calculation needs (the table in [`t975`] has one).
pub fn t_quantile(p: f64, df: usize) -> f64 {
    if df == 0 || !(0.0..1.0).contains(&p) || p == 0.0 {
        return f64::NAN;
    }
    let (mut lo, mut hi) = (-1e4, 1e4);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_cdf(mid, df as f64) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    0.5 * (lo + hi)
}

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

/// The fewest paired rounds with which the sign-flip test can pass Holm's first (strictest)
/// threshold, 0.05 / `comparisons`.
pub fn rounds_needed(comparisons: usize) -> usize {
    let alpha = 0.05 / comparisons.max(1) as f64;
    (1..64).find(|&n| min_sign_flip_p(n) <= alpha).unwrap_or(64)
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

/// A variant against the baseline on one cell (workload × threads).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// The geometric mean of the per-round ratios variant / baseline.
    pub ratio: f64,
    /// 95 % interval of the ratio (t on the paired log-ratios).
    pub ratio_ci95: (f64, f64),
    /// Exact sign-flip permutation p-value on the paired log-ratios, before correction.
    pub p_value: f64,
    /// After Holm's correction over the run's cells (set by the report; equals `p_value` alone).
    #[serde(default)]
    pub p_holm: f64,
    /// Rounds in which both ran (the pairs).
    #[serde(default)]
    pub pairs: usize,
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

/// Smallest number of paired rounds for which the sign-flip test can reach p < 0.05 at all.
pub const MIN_ROUNDS: usize = 6;

/// Changes smaller than this are called noise even when the test says significant (as criterion's
/// noise threshold): on shared VMs slow drift can make tiny differences "significant".
pub const NOISE: f64 = 0.02;

/// Compares `variant` with `baseline`, round by round, for a higher-is-better metric
/// (`higher_better`) or a latency. Significance here is for this comparison alone; a report
/// corrects it over all its cells with [`Comparison::apply_holm`].
pub fn compare(baseline: &[(u32, f64)], variant: &[(u32, f64)], higher_better: bool) -> Comparison {
    let d = paired_log_ratios(baseline, variant);
    let n = d.len();
    let m = mean(&d);
    let half = if n > 1 {
        t975(n - 1) * stddev(&d) / (n as f64).sqrt()
    } else {
        f64::INFINITY
    };
    let ratio = m.exp();
    let ci = ((m - half).exp(), (m + half).exp());
    let p = sign_flip_p(&d);
    let pct = |r: f64| (r - 1.0) * 100.0;
    let mut warnings = Vec::new();
    if n < MIN_ROUNDS {
        warnings.push(format!(
            "{n} paired rounds: the exact test needs at least {MIN_ROUNDS} to reach p < 0.05 (smallest possible p here {:.3})",
            min_sign_flip_p(n)
        ));
    }
    if higher_better && ratio > 2.0 {
        warnings.push(format!(
            "implausible gain ({:+.1}%): check that both ran the same workload and data",
            pct(ratio)
        ));
    }
    let mut c = Comparison {
        ratio,
        ratio_ci95: ci,
        p_value: p,
        p_holm: p,
        pairs: n,
        significant: false,
        verdict: Verdict::NoSignificantDifference,
        warnings,
    };
    c.decide(higher_better);
    c
}

impl Comparison {
    /// Half the 95 % interval's width on the log scale (t · sd / √n of the log-ratios).
    pub fn log_half_width(&self) -> f64 {
        (self.ratio_ci95.1.ln() - self.ratio_ci95.0.ln()) / 2.0
    }

    /// Significance and verdict from the (corrected) p-value, the interval and the noise floor.
    fn decide(&mut self, higher_better: bool) {
        let excludes_one = self.ratio_ci95.0 > 1.0 || self.ratio_ci95.1 < 1.0;
        self.significant = self.p_holm < 0.05 && excludes_one && (self.ratio - 1.0).abs() >= NOISE;
        let better = (self.ratio > 1.0) == higher_better;
        self.verdict = match (self.significant, higher_better, better) {
            (false, _, _) => Verdict::NoSignificantDifference,
            (true, true, true) => Verdict::Faster,
            (true, true, false) => Verdict::Slower,
            (true, false, true) => Verdict::LowerLatency,
            (true, false, false) => Verdict::HigherLatency,
        };
    }

    /// Applies Holm's correction over a family of comparisons (one metric, all cells of a run).
    pub fn apply_holm(family: &mut [&mut Comparison], higher_better: bool) {
        let p: Vec<f64> = family.iter().map(|c| c.p_value).collect();
        for (c, adj) in family.iter_mut().zip(holm(&p)) {
            c.p_holm = adj;
            c.decide(higher_better);
        }
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
    fn t_distribution_known_answers() {
        // The table's values, and textbook quantiles at other levels.
        for df in [1usize, 2, 4, 5, 9, 20, 30] {
            let q = t_quantile(0.975, df);
            assert!((q - t975(df)).abs() < 2e-3, "df {df}: {q} vs {}", t975(df));
        }
        assert!((t_quantile(0.8, 5) - 0.9195).abs() < 1e-3);
        assert!((t_quantile(0.995, 8) - 3.3554).abs() < 1e-3);
        assert!((t_cdf(0.0, 7.0) - 0.5).abs() < 1e-12);
        assert!((t_cdf(-2.015, 5.0) - 0.05).abs() < 1e-3);
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

    #[test]
    fn a_paired_comparison_uses_rounds_and_cancels_shared_drift() {
        // The machine gets 30% slower half-way: unpaired, the rounds overlap; paired, every
        // round shows the same +10%.
        let drift = [1.0, 1.0, 1.0, 0.7, 0.7, 0.7, 0.7, 0.7];
        let base: Vec<(u32, f64)> = drift
            .iter()
            .enumerate()
            .map(|(i, d)| (i as u32 + 1, 1000.0 * d * (1.0 + 0.003 * (i % 2) as f64)))
            .collect();
        let var: Vec<(u32, f64)> = drift
            .iter()
            .enumerate()
            .map(|(i, d)| (i as u32 + 1, 1100.0 * d * (1.0 + 0.002 * (i % 3) as f64)))
            .collect();
        let c = compare(&base, &var, true);
        assert_eq!(c.pairs, 8);
        assert!((c.ratio - 1.1).abs() < 0.01, "{c:?}");
        assert!(c.ratio_ci95.0 > 1.08 && c.ratio_ci95.1 < 1.12, "{c:?}");
        assert_eq!(c.p_value, 2.0 / 256.0);
        assert!(
            c.significant && c.sentence().starts_with("faster +"),
            "{c:?}"
        );
        // Latency: lower is better.
        let lat = compare(&var, &base, false);
        assert!(lat.sentence().starts_with("lower latency"), "{lat:?}");
        // Rounds missing on one side are not paired.
        let c = compare(&base[..5], &var[2..], true);
        assert_eq!(c.pairs, 3);
        assert!(!c.significant);
        assert!(c.warnings.iter().any(|w| w.contains("at least 6")));
        // Holm over a family can take significance away.
        let mut a = compare(&base, &var, true);
        let mut others: Vec<Comparison> = (0..7).map(|_| a.clone()).collect();
        let mut fam: Vec<&mut Comparison> = vec![&mut a];
        fam.extend(others.iter_mut());
        Comparison::apply_holm(&mut fam, true);
        assert!((a.p_holm - 8.0 * 2.0 / 256.0).abs() < 1e-12);
        assert!(!a.significant, "0.0625 after Holm over 8: {a:?}");
    }

    /// Simulated benchmarks with noise shaped like the committed MariaDB runs: a per-round machine
    /// state shared by the contenders of a round (sd 6 %, with a step change of -25 % from a random
    /// round on, as when a build starts), a per-run noise of 2.5 % with heavy tails (one run in 20
    /// off by 12 %), and a position effect (the first run of a round 1.5 % slower).
    struct Sim {
        rng: SbRng,
    }

    impl Sim {
        fn gauss(&mut self) -> f64 {
            // Box-Muller.
            let u1 = self.rng.unit().max(1e-12);
            let u2 = self.rng.unit();
            (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
        }

        /// `contenders` true ratios; returns per contender its (round, tps).
        fn run(&mut self, ratios: &[f64], rounds: u32) -> Vec<Vec<(u32, f64)>> {
            let n = ratios.len();
            let step_at = self.rng.uniform(1, rounds * 2);
            let mut out = vec![Vec::new(); n];
            for r in 1..=rounds {
                let mut state = (0.06 * self.gauss()).exp();
                if r >= step_at {
                    state *= 0.75;
                }
                let order = crate::bench::order::round_order(
                    n,
                    r,
                    7,
                    crate::bench::plan::OrderScheme::Balanced,
                );
                for (pos, &c) in order.iter().enumerate() {
                    let mut noise = (0.025 * self.gauss()).exp();
                    if self.rng.uniform(0, 19) == 0 {
                        noise *= if self.rng.uniform(0, 1) == 0 {
                            0.88
                        } else {
                            1.12
                        };
                    }
                    let position = if pos == 0 { 0.985 } else { 1.0 };
                    out[c].push((r, 1000.0 * ratios[c] * state * noise * position));
                }
            }
            out
        }
    }

    #[test]
    fn intervals_cover_the_true_ratio_at_five_rounds() {
        let mut sim = Sim {
            rng: SbRng::new(2026, 13),
        };
        let truth = 1.15;
        let trials = 2000;
        let mut covered = 0;
        for _ in 0..trials {
            let runs = sim.run(&[1.0, truth], 5);
            let c = compare(&runs[0], &runs[1], true);
            covered += (c.ratio_ci95.0 <= truth && truth <= c.ratio_ci95.1) as usize;
        }
        let coverage = covered as f64 / trials as f64;
        eprintln!("coverage of the 95% interval at n = 5: {coverage:.3} ({trials} simulated runs)");
        assert!(coverage >= 0.93, "coverage {coverage}");
    }

    #[test]
    fn an_a_a_run_calls_nothing_significant_at_most_five_percent_of_the_time() {
        // Run level: 3 contenders identical to the baseline x 3 workloads = 9 cells, 9 rounds
        // (what the exact test needs for 9 comparisons), Holm over the 9.
        let mut sim = Sim {
            rng: SbRng::new(99, 5),
        };
        let trials = 400;
        let mut false_alarms = 0;
        for _ in 0..trials {
            let mut cells = Vec::new();
            for _workload in 0..3 {
                let runs = sim.run(&[1.0; 4], 9);
                for v in &runs[1..] {
                    cells.push(compare(&runs[0], v, true));
                }
            }
            let mut fam: Vec<&mut Comparison> = cells.iter_mut().collect();
            Comparison::apply_holm(&mut fam, true);
            false_alarms += cells.iter().any(|c| c.significant) as usize;
        }
        let rate = false_alarms as f64 / trials as f64;
        eprintln!(
            "A/A run-level false-positive rate, 9 cells, 9 rounds, Holm: {rate:.3} ({trials} runs)"
        );
        assert!(rate <= 0.05, "run-level false-positive rate {rate}");
        // And the same design finds a real +8 % in most runs (the noise above is a busy VM's).
        let mut found = 0;
        for _ in 0..100 {
            let runs = sim.run(&[1.0, 1.08], 9);
            found += compare(&runs[0], &runs[1], true).significant as usize;
        }
        eprintln!("power for +8% at 9 rounds: {found}/100");
        assert!(found >= 80, "power {found}/100");
    }

    #[test]
    fn warnings_for_few_rounds_and_implausible_gains() {
        let c = compare(&[(1, 100.0), (2, 101.0)], &[(1, 300.0), (2, 301.0)], true);
        assert!(c.warnings.iter().any(|w| w.contains("paired rounds")));
        assert!(c.warnings.iter().any(|w| w.contains("implausible")));
        assert!((geomean(&[1.1, 1.21]) - 1.1537).abs() < 1e-3);
    }
}
