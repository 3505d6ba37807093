//! What every SVG chart of the HTML report shares: the palette, text escaping, the report's
//! (workload, threads) cells and round axis ticks.

use crate::bench::report::Report;

pub(super) const COLORS: [&str; 6] = [
    "#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860",
];

pub(super) fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The (workload, threads) cells of the report, sorted, each once.
pub(super) fn groups(r: &Report) -> Vec<(String, u32)> {
    let mut g: Vec<(String, u32)> = r
        .cells
        .iter()
        .map(|c| (c.workload.clone(), c.threads))
        .collect();
    g.sort();
    g.dedup();
    g
}

/// Axis labels with as many decimals as the step between ticks needs (a 0.25 step needs two,
/// so 0.5-steps never read "2, 2, 1, 1, 0").
pub(super) fn tick(v: f64, step: f64) -> String {
    let decimals = if step.fract().abs() < 1e-9 {
        0
    } else {
        (-step.log10()).ceil().max(0.0) as usize + 1
    };
    format!("{v:.decimals$}")
}

/// A round step (1, 2, 2.5 or 5 times a power of ten) at least `raw`.
pub(super) fn nice_step(raw: f64) -> f64 {
    if raw <= 0.0 || !raw.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|s| *s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_ticks_are_round_and_labelled_with_enough_decimals() {
        assert_eq!(nice_step(2.2), 2.5);
        assert_eq!(nice_step(0.31), 0.5);
        assert_eq!(nice_step(7.0), 10.0);
        assert_eq!(nice_step(1.0), 1.0);
        // 0.5-steps: 0.0, 0.5, 1.0, 1.5, 2.0 — never "2, 2, 1, 1, 0".
        let labels: Vec<String> = (0..=4).map(|k| tick(0.5 * k as f64, 0.5)).collect();
        assert_eq!(labels, ["0.00", "0.50", "1.00", "1.50", "2.00"]);
        let labels: Vec<String> = (0..=4).map(|k| tick(2.5 * k as f64, 2.5)).collect();
        assert_eq!(labels, ["0.0", "2.5", "5.0", "7.5", "10.0"]);
        assert_eq!(tick(2000.0, 500.0), "2000");
    }
}
