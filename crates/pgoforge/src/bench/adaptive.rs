//! Adaptive rounds (`--target-ci PCT`): after the planned rounds, one more round at a time until
//! every cell's 95 % interval is within ± PCT, or `--max-rounds`, or the time budget.
//!
//! The rule looks only at the width of the intervals, never at where they lie, so stopping early
//! cannot favour a "significant" result (stopping when p < 0.05 would: optional stopping inflates
//! false positives). It is evaluated only between complete rounds, so every contender has the same
//! number of rounds.

use std::time::Duration;

use super::spec::BenchSpec;
use super::stats::{compare, Better};

/// Whether to run another round, and why not.
#[derive(Clone, Debug, PartialEq)]
pub enum Next {
    Another,
    Stop(String),
}

/// One comparison so far: the baseline's and the contender's (round, TPS) on one cell.
pub struct Series {
    /// Names the cell in messages: "pgo oltp_read_only 4 thr".
    pub label: String,
    pub baseline: Vec<(u32, f64)>,
    pub contender: Vec<(u32, f64)>,
}

/// The widest 95 % interval half-width of the comparisons so far, in percent of the estimate
/// (half the interval's width on the log scale, as a ratio), with the cell it belongs to.
/// `None` while some comparison has fewer than two paired rounds.
pub fn widest_half_width(series: &[Series]) -> Option<(f64, String)> {
    let mut widest: Option<(f64, String)> = None;
    for s in series {
        let k = compare(&s.baseline, &s.contender, Better::Higher);
        if k.pairs < 2 {
            return None;
        }
        let half = (k.log_half_width().exp() - 1.0) * 100.0;
        if widest.as_ref().is_none_or(|(h, _)| half > *h) {
            widest = Some((half, s.label.clone()));
        }
    }
    widest
}

/// After `done` complete rounds, of which this invocation ran `rounds_here` in `elapsed_here`:
/// another round, or why the benchmark stops.
pub fn next(
    spec: &BenchSpec,
    series: &[Series],
    done: u32,
    elapsed_here: Duration,
    rounds_here: u32,
) -> Next {
    let Some(target) = spec.target_ci_pct else {
        return Next::Stop(format!("{done} rounds, as planned"));
    };
    let Some((widest, cell)) = widest_half_width(series) else {
        return Next::Another;
    };
    if widest <= target {
        return Next::Stop(format!(
            "every interval within ±{target}% after {done} rounds (widest ±{widest:.1}%, {cell})"
        ));
    }
    if let Some(max) = spec.max_rounds {
        if done >= max {
            return Next::Stop(format!(
                "--max-rounds {max} reached: the widest interval is still ±{widest:.1}% ({cell}), \
                 target ±{target}%"
            ));
        }
    }
    if let (Some(budget), true) = (spec.budget_minutes, rounds_here > 0) {
        let per_round = elapsed_here / rounds_here;
        if elapsed_here + per_round > Duration::from_secs(budget * 60) {
            return Next::Stop(format!(
                "another round (~{} s) would pass the {budget}-minute budget: the widest interval \
                 is still ±{widest:.1}% ({cell}), target ±{target}%",
                per_round.as_secs()
            ));
        }
    }
    Next::Another
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(target: Option<f64>, max: Option<u32>, budget: Option<u64>) -> BenchSpec {
        BenchSpec {
            rounds: 6,
            target_ci_pct: target,
            max_rounds: max,
            budget_minutes: budget,
            ..BenchSpec::standard()
        }
    }

    /// One comparison whose contender / baseline ratio in round i is `ratios[i]`.
    fn series(ratios: &[f64]) -> Vec<Series> {
        let r = |f: &dyn Fn(f64) -> f64| -> Vec<(u32, f64)> {
            ratios
                .iter()
                .enumerate()
                .map(|(i, x)| (i as u32 + 1, f(*x)))
                .collect()
        };
        vec![Series {
            label: "b oltp_point_select 4 thr".into(),
            baseline: r(&|_| 1000.0),
            contender: r(&|x| 1000.0 * x),
        }]
    }

    #[test]
    fn stops_on_width_not_on_sign() {
        let s = spec(Some(2.0), Some(20), None);
        let tight = series(&[1.10, 1.11, 1.10, 1.09, 1.10, 1.10]);
        let n = next(&s, &tight, 6, Duration::ZERO, 0);
        assert!(
            matches!(&n, Next::Stop(m) if m.contains("every interval within")),
            "{n:?}"
        );
        // The same scatter around 1.0 stops the same way: the rule ignores where the interval is.
        let tight_aa = series(&[1.00, 1.01, 1.00, 0.99, 1.00, 1.00]);
        assert!(matches!(
            next(&s, &tight_aa, 6, Duration::ZERO, 0),
            Next::Stop(_)
        ));
        let wide = series(&[1.2, 0.9, 1.1, 0.95, 1.3, 1.0]);
        assert_eq!(next(&s, &wide, 6, Duration::ZERO, 0), Next::Another);
        let (h, cell) = widest_half_width(&wide).unwrap();
        assert!(
            h > 5.0 && cell.contains("b oltp_point_select"),
            "{h} {cell}"
        );
        // Too few pairs to judge: go on.
        assert_eq!(
            next(&s, &series(&[1.1]), 1, Duration::ZERO, 0),
            Next::Another
        );
    }

    #[test]
    fn bounded_by_rounds_and_time() {
        let wide = series(&[1.2, 0.9, 1.1, 0.95, 1.3, 1.0]);
        let capped = spec(Some(2.0), Some(6), None);
        assert!(
            matches!(next(&capped, &wide, 6, Duration::ZERO, 0), Next::Stop(m) if m.contains("--max-rounds 6"))
        );
        // 6 rounds took 10 min here: a seventh would pass an 11-minute budget, not a 12-minute one.
        let ten = Duration::from_secs(600);
        let b11 = spec(Some(2.0), None, Some(11));
        assert!(matches!(next(&b11, &wide, 6, ten, 6), Next::Stop(m) if m.contains("budget")));
        let b12 = spec(Some(2.0), None, Some(12));
        assert_eq!(next(&b12, &wide, 6, ten, 6), Next::Another);
        // Without a target the plan's rounds are all.
        assert!(matches!(
            next(&spec(None, None, None), &wide, 6, ten, 6),
            Next::Stop(_)
        ));
    }
}
