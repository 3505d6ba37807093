//! Descriptive statistics of one series: mean, median, standard deviation, the mean's t interval,
//! and the geometric mean of ratios.

use serde::{Deserialize, Serialize};

use super::dist::t975;

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
}
