//! Position within a round as a covariate: does a run measure differently for running first,
//! second, …? On the quiet instance a first-position advantage of about 1.35 % per position showed
//! up (docs/bench/trust.md) — the size of BOLT's effect. A Williams design balances positions over
//! its complete blocks, so position biases no comparison, but it still adds to each comparison's
//! per-round scatter; estimating it tells how much.
//!
//! The model, per cell (workload × threads), on log throughput:
//! `y[c,r] = μ[c] + ρ[r] + β·pos[c,r] + ε` — a contender effect, a round effect and one position
//! slope shared by the whole run
//! (position is a property of the machine and the harness, not of a binary). β is estimated by
//! least squares after removing contender and round means within each cell (a complete layout:
//! rounds where every contender of the cell ran), pooled over cells; its interval is Student's t
//! on the pooled residuals.

use serde::{Deserialize, Serialize};

use super::{describe, t975, t_cdf};

/// One cell's observations: per round, per contender (the same contenders in every round).
pub struct CellObs {
    /// `rounds[r][c] = (position, log throughput)`.
    pub rounds: Vec<Vec<(f64, f64)>>,
}

/// The run's position effect.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PositionEffect {
    /// exp(β) − 1: how much a run one place later in its round measures, as a fraction.
    pub per_position: f64,
    /// Its 95 % interval (same units).
    pub ci95: (f64, f64),
    /// Two-sided p of β = 0.
    pub p: f64,
    /// Cells pooled, and the residual degrees of freedom.
    pub cells: usize,
    pub df: usize,
    /// The median, over the run's comparisons, of the per-round scatter of the log-ratios after
    /// adjusting each for its contenders' position difference, over the scatter without (0.9:
    /// the adjustment would narrow that comparison's interval by about 10 %). Absent without
    /// comparisons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adjusted_scatter: Option<f64>,
}

impl PositionEffect {
    pub fn significant(&self) -> bool {
        self.p < 0.05
    }

    /// The report's sentence.
    pub fn sentence(&self) -> String {
        let pct = |f: f64| format!("{:+.2} %", f * 100.0);
        let mut s = format!(
            "Position within a round (pooled over {} cells): a run one place later measured {} [{}, {}], p = {:.3}",
            self.cells,
            pct(self.per_position),
            pct(self.ci95.0),
            pct(self.ci95.1),
            self.p
        );
        if self.significant() {
            s += "; significant. The round orders balance positions over complete blocks, so it \
                  biases no comparison, but it adds to their scatter";
            if let Some(a) = self.adjusted_scatter {
                s += &format!(
                    ": adjusting each comparison for its contenders' positions would change its \
                     per-round scatter by a median {:+.0} %",
                    (a - 1.0) * 100.0
                );
            }
            s += ". The verdicts stay on the unadjusted exact test.";
        } else {
            s += "; no significant position effect.";
        }
        s
    }
}

/// Centers `x[r][c]` by its row and column means (the two-way within transformation).
fn double_center(x: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let (nr, nc) = (x.len(), x[0].len());
    let grand = x.iter().flatten().sum::<f64>() / (nr * nc) as f64;
    let row: Vec<f64> = x
        .iter()
        .map(|r| r.iter().sum::<f64>() / nc as f64)
        .collect();
    let col: Vec<f64> = (0..nc)
        .map(|c| x.iter().map(|r| r[c]).sum::<f64>() / nr as f64)
        .collect();
    x.iter()
        .enumerate()
        .map(|(i, r)| {
            r.iter()
                .enumerate()
                .map(|(j, v)| v - row[i] - col[j] + grand)
                .collect()
        })
        .collect()
}

/// β̂ (log units per position) pooled over `cells`, with its standard error and residual df;
/// `None` when the layout cannot estimate it (fewer than 2 rounds or contenders anywhere, or
/// positions that never vary within a cell).
pub fn slope(cells: &[CellObs]) -> Option<(f64, f64, usize, usize)> {
    let (mut sxy, mut sxx, mut used, mut df) = (0.0, 0.0, 0, 0usize);
    let mut centered = Vec::new();
    for c in cells {
        let (nr, nc) = (c.rounds.len(), c.rounds.first().map_or(0, Vec::len));
        if nr < 2 || nc < 2 || c.rounds.iter().any(|r| r.len() != nc) {
            continue;
        }
        let p = double_center(
            &c.rounds
                .iter()
                .map(|r| r.iter().map(|v| v.0).collect())
                .collect::<Vec<_>>(),
        );
        let y = double_center(
            &c.rounds
                .iter()
                .map(|r| r.iter().map(|v| v.1).collect())
                .collect::<Vec<_>>(),
        );
        for (pr, yr) in p.iter().zip(&y) {
            for (a, b) in pr.iter().zip(yr) {
                sxy += a * b;
                sxx += a * a;
            }
        }
        df += (nr - 1) * (nc - 1);
        used += 1;
        centered.push((p, y));
    }
    if used == 0 || sxx <= 1e-12 || df < 2 {
        return None;
    }
    let beta = sxy / sxx;
    let rss: f64 = centered
        .iter()
        .flat_map(|(p, y)| {
            p.iter()
                .flatten()
                .zip(y.iter().flatten())
                .map(move |(a, b)| (b - beta * a).powi(2))
        })
        .sum();
    let df = df - 1;
    let se = (rss / df as f64 / sxx).sqrt();
    Some((beta, se, used, df))
}

/// The run's position effect; `pairs` are the comparisons' per-round (log-ratio, position
/// difference variant − baseline), for the adjusted-scatter figure.
pub fn estimate(cells: &[CellObs], pairs: &[Vec<(f64, f64)>]) -> Option<PositionEffect> {
    let (beta, se, used, df) = slope(cells)?;
    let t = t975(df);
    let p = if se > 0.0 {
        2.0 * (1.0 - t_cdf((beta / se).abs(), df as f64))
    } else {
        0.0
    };
    let ratios: Vec<f64> = pairs
        .iter()
        .filter(|d| d.len() >= 3)
        .filter_map(|d| {
            let raw: Vec<f64> = d.iter().map(|x| x.0).collect();
            let adj: Vec<f64> = d.iter().map(|x| x.0 - beta * x.1).collect();
            let (s0, s1) = (describe(&raw).stddev, describe(&adj).stddev);
            (s0 > 0.0).then_some(s1 / s0)
        })
        .collect();
    Some(PositionEffect {
        per_position: beta.exp() - 1.0,
        ci95: ((beta - t * se).exp() - 1.0, (beta + t * se).exp() - 1.0),
        p,
        cells: used,
        df,
        adjusted_scatter: (!ratios.is_empty()).then(|| super::median(&ratios)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A simulated run: 3 contenders, 12 rounds in cyclic orders, 4 cells, a contender effect, a
    /// round effect, noise, and a known position slope — recovered within its interval; with no
    /// slope, no significant effect.
    fn run(beta: f64, seed: u64) -> (Vec<CellObs>, Vec<Vec<(f64, f64)>>) {
        let mut s = seed;
        let mut noise = move || {
            // xorshift, then a sum of uniforms: roughly normal, sd ~ 1.
            let mut u = 0.0;
            for _ in 0..12 {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                u += (s >> 11) as f64 / (1u64 << 53) as f64;
            }
            u - 6.0
        };
        let mut cells = Vec::new();
        let mut pairs = Vec::new();
        for cell in 0..4 {
            let mut rounds = Vec::new();
            for r in 0..12 {
                let round_effect = 0.05 * noise();
                rounds.push(
                    (0..3)
                        .map(|c| {
                            let pos = ((c + r) % 3) as f64;
                            let y = 7.0
                                + 0.1 * c as f64
                                + cell as f64
                                + round_effect
                                + beta * pos
                                + 0.01 * noise();
                            (pos, y)
                        })
                        .collect::<Vec<_>>(),
                );
            }
            for v in 1..3 {
                pairs.push(
                    rounds
                        .iter()
                        .map(|r: &Vec<(f64, f64)>| (r[v].1 - r[0].1, r[v].0 - r[0].0))
                        .collect(),
                );
            }
            cells.push(CellObs { rounds });
        }
        (cells, pairs)
    }

    #[test]
    fn a_known_position_slope_is_recovered_and_none_is_not_invented() {
        let (cells, pairs) = run(-0.0135, 7);
        let e = estimate(&cells, &pairs).unwrap();
        let truth = (-0.0135f64).exp() - 1.0;
        assert!(e.ci95.0 < truth && truth < e.ci95.1, "{e:?}");
        assert!(e.significant(), "{e:?}");
        assert_eq!((e.cells, e.df), (4, 4 * 11 * 2 - 1));
        assert!(
            e.adjusted_scatter.unwrap() < 0.8,
            "adjusting removes scatter: {e:?}"
        );
        assert!(e
            .sentence()
            .contains("significant. The round orders balance"));
        let mut false_alarms = 0;
        for seed in 1..=40 {
            let (cells, pairs) = run(0.0, seed * 7919);
            let e = estimate(&cells, &pairs).unwrap();
            false_alarms += usize::from(e.significant());
        }
        assert!(
            false_alarms <= 6,
            "{false_alarms} of 40 runs without an effect flagged one"
        );
    }

    #[test]
    fn layouts_that_cannot_tell_give_nothing() {
        // One round, or positions that never vary.
        assert!(slope(&[CellObs {
            rounds: vec![vec![(0.0, 1.0), (1.0, 2.0)]]
        }])
        .is_none());
        assert!(slope(&[CellObs {
            rounds: vec![vec![(0.0, 1.0), (1.0, 2.0)], vec![(0.0, 1.5), (1.0, 2.5)]]
        }])
        .is_none());
    }
}
