//! The HTML report's first picture: each cell's gain with the interval its verdict rests on, the
//! A/A control's interval behind it as the run's noise band, and zero marked — the answer before
//! any method. Against the distribution's server when the run has a headline (throughput and
//! capacity side by side), else every built contender against the baseline.

use std::fmt::Write;

use super::svg::{esc, groups, nice_step, tick, COLORS};
use crate::bench::report::Report;
use crate::bench::stats::Comparison;

/// One row of the chart: a (workload, threads) cell, its marks and the control's band.
struct Row<'a> {
    label: String,
    /// (series index, the comparison drawn).
    marks: Vec<(usize, &'a Comparison)>,
    /// The A/A control's interval in this cell (a ratio pair), when the run served one.
    band: Option<(f64, f64)>,
}

/// What the chart draws: its title, the series' names and the rows.
struct Chart<'a> {
    title: String,
    series: Vec<String>,
    rows: Vec<Row<'a>>,
    /// The series after the first are another measure of the same contender (capacity beside
    /// throughput), drawn as hollow diamonds; else every series is a contender, drawn as dots.
    measures: bool,
}

/// The chart as an SVG, or None when the report compares nothing.
pub fn gain_chart(r: &Report) -> Option<String> {
    let chart = against_reference(r).unwrap_or_else(|| against_baseline(r));
    if chart.rows.iter().all(|row| row.marks.is_empty()) {
        return None;
    }
    Some(draw(&chart))
}

/// The A/A control's shown interval in a cell.
fn band(r: &Report, workload: &str, threads: u32) -> Option<(f64, f64)> {
    r.own_noise
        .as_ref()?
        .cells
        .iter()
        .find(|c| c.workload == workload && c.threads == threads)
        .map(|c| c.aa.shown_interval())
        .filter(|(lo, hi)| lo.is_finite() && hi.is_finite())
}

fn against_reference(r: &Report) -> Option<Chart<'_>> {
    let h = r.headline.as_ref()?;
    let rows = h
        .cells
        .iter()
        .map(|c| {
            let mut marks = vec![(0, &c.vs_reference)];
            marks.extend(c.capacity_vs_reference.iter().map(|k| (1, k)));
            Row {
                label: format!("{} {} thr", c.workload, c.threads),
                marks,
                band: band(r, &c.workload, c.threads),
            }
        })
        .collect();
    Some(Chart {
        title: format!(
            "{} against {}: gain per cell with its 95% interval",
            h.winner, h.reference
        ),
        series: vec![
            "throughput (TPS)".into(),
            "capacity (transactions per server-CPU second)".into(),
        ],
        rows,
        measures: true,
    })
}

fn against_baseline(r: &Report) -> Chart<'_> {
    // Every contender compared with a baseline, but the A/A control (the band): a sweep's other
    // baselines, compared with nothing, have no marks and stay out of the legend too.
    let control = r.own_noise.as_ref().map(|n| n.control.as_str());
    let compared = |name: &str| {
        r.cells
            .iter()
            .any(|c| c.contender == name && c.tps_vs_baseline.is_some())
    };
    let series: Vec<String> = r
        .plan
        .contenders
        .iter()
        .map(|c| c.name.clone())
        .filter(|n| Some(n.as_str()) != control && compared(n))
        .collect();
    let rows = groups(r)
        .into_iter()
        .map(|(workload, threads)| {
            let marks = series
                .iter()
                .enumerate()
                .filter_map(|(i, name)| {
                    r.cells
                        .iter()
                        .find(|c| {
                            &c.contender == name && c.workload == workload && c.threads == threads
                        })
                        .and_then(|c| c.tps_vs_baseline.as_ref())
                        .map(|k| (i, k))
                })
                .collect();
            Row {
                band: band(r, &workload, threads),
                label: format!("{workload} {threads} thr"),
                marks,
            }
        })
        .collect();
    let baseline = r.plan.contenders.first().map_or("", |c| c.name.as_str());
    Chart {
        title: format!("Throughput gain over {baseline} per cell with its 95% interval"),
        series,
        rows,
        measures: false,
    }
}

impl Chart<'_> {
    /// Whether series `i` is drawn as a diamond (a second measure) rather than a dot.
    fn diamond(&self, i: usize) -> bool {
        self.measures && i > 0
    }
}

impl Row<'_> {
    /// Its height: one line per mark and the gap below.
    fn height(&self) -> f64 {
        self.marks.len().max(1) as f64 * MARK_H + ROW_GAP
    }
}

const MARK_H: f64 = 18.0;
const ROW_GAP: f64 = 14.0;

/// A ratio as a gain in percent.
fn pct(ratio: f64) -> f64 {
    (ratio - 1.0) * 100.0
}

/// A series' symbol at (`cx`, `cy`): a filled dot, or a hollow diamond for a second measure.
fn symbol(diamond: bool, cx: f64, cy: f64, r: f64, color: &str) -> String {
    if diamond {
        format!(
            "<path d='M{cx:.1} {:.1} l{r} {r} l-{r} {r} l-{r} -{r} z' fill='white' stroke='{color}' stroke-width='2'/>",
            cy - r
        )
    } else {
        format!("<circle cx='{cx:.1}' cy='{cy:.1}' r='{r}' fill='{color}'/>")
    }
}

/// The axis' range in percent: every finite estimate, interval end and band end, and zero.
fn range(chart: &Chart) -> (f64, f64) {
    let mut values = vec![0.0];
    for row in &chart.rows {
        for (_, k) in &row.marks {
            let (lo, hi) = k.shown_interval();
            values.extend([k.ratio, lo, hi].map(pct));
        }
        values.extend(row.band.iter().flat_map(|(lo, hi)| [pct(*lo), pct(*hi)]));
    }
    let finite = values.into_iter().filter(|v| v.is_finite());
    let (lo, hi) = finite.fold((0.0f64, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
    let pad = (hi - lo).max(1.0) * 0.05;
    (lo - pad, hi + pad)
}

fn draw(chart: &Chart) -> String {
    let (w, left, right, top) = (860.0, 180.0, 30.0, 46.0);
    let rows_h: f64 = chart.rows.iter().map(Row::height).sum();
    // The legend: a line per series and one for the band, under the axis' labels.
    let legend_h = 22.0 * (chart.series.len() as f64 + 1.0);
    let axis_y = top + rows_h;
    let h = axis_y + 40.0 + legend_h;
    let (lo, hi) = range(chart);
    let step = nice_step((hi - lo) / 6.0);
    let x = |pct: f64| left + (w - left - right) * (pct.clamp(lo, hi) - lo) / (hi - lo);
    let mut s = format!("<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h:.0}' font-family='sans-serif' font-size='12'>");
    let _ = write!(
        s,
        "<text x='0' y='16' font-size='14' font-weight='bold'>{}</text>",
        esc(&chart.title)
    );
    // The grid and the axis in percent, zero darker: left of it is slower.
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    for k in first..=last {
        let v = step * k as f64;
        let stroke = if k == 0 { "#555" } else { "#e4e4e4" };
        let _ = write!(
            s,
            // The labels above the rows and below them: a tall chart (a matrix) is read from
            // either end.
            "<line x1='{0:.1}' x2='{0:.1}' y1='{top}' y2='{axis_y:.1}' stroke='{stroke}'/><text x='{0:.1}' y='{1:.1}' text-anchor='middle'>{3}%</text><text x='{0:.1}' y='{2:.1}' text-anchor='middle'>{3}%</text>",
            x(v),
            top - 5.0,
            axis_y + 15.0,
            if v > 0.0 { format!("+{}", tick(v, step)) } else { tick(v, step) }
        );
    }
    let mut y = top;
    for row in &chart.rows {
        let row_h = row.height();
        if let Some((blo, bhi)) = row.band {
            let _ = write!(
                s,
                "<rect x='{:.1}' y='{:.1}' width='{:.1}' height='{:.1}' fill='#bbb' fill-opacity='0.45'><title>A/A control: {:+.1}% to {:+.1}%</title></rect>",
                x(pct(blo)),
                y + 2.0,
                (x(pct(bhi)) - x(pct(blo))).max(1.0),
                row_h - ROW_GAP / 2.0 - 4.0,
                pct(blo),
                pct(bhi)
            );
        }
        let _ = write!(
            s,
            "<text x='{:.1}' y='{:.1}' text-anchor='end'>{}</text>",
            left - 8.0,
            y + (row_h - ROW_GAP) / 2.0 + 4.0,
            esc(&row.label)
        );
        for (i, (series, k)) in row.marks.iter().enumerate() {
            let cy = y + MARK_H * (i as f64 + 0.5);
            s.push_str(&mark(*series, chart.diamond(*series), k, cy, &x));
        }
        y += row_h;
    }
    legend(&mut s, chart, axis_y + 40.0);
    s.push_str("</svg>");
    s
}

/// One estimate: its interval as a line (cut at the axis' ends where it is unbounded), a dot or
/// a diamond at the estimate, its percentage beside it, the verdict's sentence as its tooltip.
fn mark(series: usize, diamond: bool, k: &Comparison, cy: f64, x: &dyn Fn(f64) -> f64) -> String {
    let color = COLORS[series % COLORS.len()];
    let (lo, hi) = k.shown_interval();
    let (xl, xh, xm) = (x(pct(lo)), x(pct(hi)), x(pct(k.ratio)));
    let mut s = format!(
        "<g><title>{}</title><line x1='{xl:.1}' x2='{xh:.1}' y1='{cy:.1}' y2='{cy:.1}' stroke='{color}' stroke-width='2'/>",
        esc(&k.sentence())
    );
    for end in [xl, xh] {
        let _ = write!(
            s,
            "<line x1='{end:.1}' x2='{end:.1}' y1='{:.1}' y2='{:.1}' stroke='{color}' stroke-width='2'/>",
            cy - 4.0,
            cy + 4.0
        );
    }
    s.push_str(&symbol(diamond, xm, cy, 5.0, color));
    let _ = write!(
        s,
        "<text x='{:.1}' y='{:.1}' font-size='11'>{:+.1}%</text></g>",
        xh + 6.0,
        cy + 4.0,
        pct(k.ratio)
    );
    s
}

fn legend(s: &mut String, chart: &Chart, y0: f64) {
    let mut y = y0;
    for (i, name) in chart.series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        // The same symbols as the marks.
        let symbol = symbol(chart.diamond(i), 16.0, y, 4.0, color);
        let _ = write!(
            s,
            "<line x1='4' x2='28' y1='{y:.1}' y2='{y:.1}' stroke='{color}' stroke-width='2'/>{symbol}<text x='36' y='{:.1}'>{}</text>",
            y + 4.0,
            esc(name)
        );
        y += 22.0;
    }
    if chart.rows.iter().any(|r| r.band.is_some()) {
        let _ = write!(
            s,
            "<rect x='4' y='{:.1}' width='24' height='12' fill='#bbb' fill-opacity='0.45'/><text x='36' y='{:.1}'>the A/A control's interval: the same binary against itself, the run's noise</text>",
            y - 6.0,
            y + 4.0
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_axis_takes_in_zero_every_interval_and_the_noise_band() {
        let base: Vec<(u32, f64)> = (0..8).map(|i| (i, 1000.0)).collect();
        let gains = [1.10, 1.12, 1.15, 1.11, 1.13, 1.14, 1.12, 1.16];
        let contender: Vec<(u32, f64)> = (0..8).map(|i| (i, 1000.0 * gains[i as usize])).collect();
        let k =
            crate::bench::stats::compare(&base, &contender, crate::bench::stats::Better::Higher);
        let chart = Chart {
            title: String::new(),
            series: vec!["throughput".into()],
            rows: vec![Row {
                label: "oltp_point_select 4 thr".into(),
                marks: vec![(0, &k)],
                band: Some((0.97, 1.03)),
            }],
            measures: false,
        };
        let (lo, hi) = range(&chart);
        let top = pct(k.shown_interval().1);
        assert!(top > 13.0 && top.is_finite(), "{top}");
        assert!(lo < -3.0 && hi > top, "{lo} {hi}");
        let svg = draw(&chart);
        assert!(svg.contains(">0%</text>") && svg.contains("A/A control: -3.0% to +3.0%"));
        assert!(
            svg.contains(&format!("{:+.1}%</text>", pct(k.ratio))),
            "{svg}"
        );
    }
}
