//! Claims of no change need a margin and a test of their own: non-significance says only that the
//! data could not tell. "Not slower" is a non-inferiority test — the one-sided lower bound of the
//! ratio at 5 % (the exact sign-flip test inverted) above 1 − margin — and "equivalent" is the two
//! one-sided tests (TOST): the 90 % interval inside ±margin. Without them a report says what the
//! data allow, never "no regression" or "tied".

use serde::{Deserialize, Serialize};

use super::{percent_number, Comparison, SignFlip, SIGNIFICANCE};

/// The margin a "not slower" or "equivalent" claim is tested against when none is given: 3 %.
pub const DEFAULT_MARGIN: f64 = 0.03;

/// [`DEFAULT_MARGIN`] for serde defaults of reports written before margins.
pub fn default_margin() -> f64 {
    DEFAULT_MARGIN
}

/// What a non-inferiority test of a comparison concludes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum NonInferiority {
    /// The one-sided lower bound of the ratio is above 1 − margin.
    NotSlower { bound: f64 },
    /// The bound is below 1 − margin (0 when too few rounds bound it at all).
    CannotExclude { bound: f64 },
    /// Significantly slower (the comparison's own verdict after Holm).
    Slower,
}

/// The test and its result, as a report states it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MarginTest {
    /// The margin, a fraction (0.03: "not slower than −3 %").
    pub margin: f64,
    pub result: NonInferiority,
}

impl MarginTest {
    pub fn sentence(&self, c: &Comparison) -> String {
        let m = percent_number(self.margin);
        match &self.result {
            NonInferiority::NotSlower { bound } => format!(
                "not slower than -{m}% (one-sided 95% bound {:+.1}%)",
                (bound - 1.0) * 100.0
            ),
            NonInferiority::CannotExclude { bound } if *bound > 0.0 => format!(
                "cannot exclude a loss of up to {:.1}% (one-sided 95% bound; the margin is -{m}%)",
                (1.0 - bound) * 100.0
            ),
            NonInferiority::CannotExclude { .. } => format!(
                "cannot exclude any loss: {} paired rounds are too few to bound it (the margin is -{m}%)",
                c.pairs
            ),
            NonInferiority::Slower => c.sentence(),
        }
    }

    pub fn not_slower(&self) -> bool {
        matches!(self.result, NonInferiority::NotSlower { .. })
    }
}

impl Comparison {
    /// The exact test's two-sided interval at `alpha` (ratio scale), from the log-ratios; `None`
    /// when they are not at hand (a comparison read back from JSON).
    fn exact_interval(&self, alpha: f64) -> Option<(f64, f64)> {
        if self.log_ratios.is_empty() {
            return None;
        }
        let (lo, hi) = SignFlip::new(&self.log_ratios).interval(alpha);
        Some((lo.exp(), hi.exp()))
    }

    /// Non-inferiority at the run's level: the lower bound of the one-sided 95 % interval (the
    /// equal-tailed 90 % one's lower end) against 1 − `margin`. Each held-out cell is tested at
    /// 5 %: a contender is "not slower" only when every cell is, an intersection-union test, so
    /// no multiplicity correction is owed. `None` without the log-ratios.
    pub fn non_inferiority(&self, margin: f64) -> Option<MarginTest> {
        let result = if self.verdict == super::Verdict::Slower {
            NonInferiority::Slower
        } else {
            let (lo, _) = self.exact_interval(2.0 * SIGNIFICANCE)?;
            let bound = if lo.is_finite() { lo } else { 0.0 };
            if bound > 1.0 - margin {
                NonInferiority::NotSlower { bound }
            } else {
                NonInferiority::CannotExclude { bound }
            }
        };
        Some(MarginTest { margin, result })
    }

    /// Equivalence within ±`margin` by the two one-sided tests at 5 % (TOST): the 90 % interval
    /// inside (1 − margin, 1 + margin). Returns the interval and whether it is inside.
    pub fn equivalence(&self, margin: f64) -> Option<((f64, f64), bool)> {
        let (lo, hi) = self.exact_interval(2.0 * SIGNIFICANCE)?;
        Some(((lo, hi), lo > 1.0 - margin && hi < 1.0 + margin))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{compare, Better};

    type Rounds = Vec<(u32, f64)>;

    fn rounds(gain: f64, wobble: &[f64]) -> (Rounds, Rounds) {
        let base: Vec<(u32, f64)> = (0..wobble.len()).map(|i| (i as u32, 1000.0)).collect();
        let v = wobble
            .iter()
            .enumerate()
            .map(|(i, w)| (i as u32, 1000.0 * gain * (1.0 + w)))
            .collect();
        (base, v)
    }

    #[test]
    fn not_slower_needs_the_bound_above_the_margin_not_a_missing_verdict() {
        let w = [
            0.004, -0.003, 0.002, -0.001, 0.003, -0.004, 0.001, -0.002, 0.0, 0.002,
        ];
        // Tight and unchanged: not slower than −3 %.
        let (b, v) = rounds(1.0, &w);
        let t = compare(&b, &v, Better::Higher)
            .non_inferiority(0.03)
            .unwrap();
        assert!(t.not_slower(), "{t:?}");
        // Unchanged but noisy: not significant, and no claim either.
        let wide: Vec<f64> = w.iter().map(|x| x * 30.0).collect();
        let (b, v) = rounds(1.0, &wide);
        let c = compare(&b, &v, Better::Higher);
        assert_eq!(c.verdict, crate::Verdict::NoSignificantDifference);
        let t = c.non_inferiority(0.03).unwrap();
        assert!(!t.not_slower(), "{t:?}");
        assert!(
            t.sentence(&c).starts_with("cannot exclude a loss of up to"),
            "{}",
            t.sentence(&c)
        );
        // Slower: the comparison's own verdict and interval.
        let (b, v) = rounds(0.9, &w);
        let c = compare(&b, &v, Better::Higher);
        let t = c.non_inferiority(0.03).unwrap();
        assert_eq!(t.result, NonInferiority::Slower);
        assert!(
            t.sentence(&c).starts_with("slower -10.0%"),
            "{}",
            t.sentence(&c)
        );
        // Four rounds bound nothing one-sided at 5 %.
        let (b, v) = rounds(1.0, &w[..4]);
        let c = compare(&b, &v, Better::Higher);
        assert!(c
            .non_inferiority(0.03)
            .unwrap()
            .sentence(&c)
            .starts_with("cannot exclude any loss"));
    }

    #[test]
    fn equivalence_is_the_90_percent_interval_inside_the_margin() {
        let w = [
            0.004, -0.003, 0.002, -0.001, 0.003, -0.004, 0.001, -0.002, 0.0, 0.002,
        ];
        let (b, v) = rounds(1.01, &w);
        let ((lo, hi), eq) = compare(&b, &v, Better::Higher).equivalence(0.03).unwrap();
        assert!(eq && lo > 1.0 && hi < 1.02, "{lo} {hi}");
        let (b, v) = rounds(1.035, &w);
        assert!(!compare(&b, &v, Better::Higher).equivalence(0.03).unwrap().1);
    }
}
