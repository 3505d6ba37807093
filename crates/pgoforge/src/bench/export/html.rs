//! One self-contained HTML report (report.html) with SVG charts (no scripts, no network): it
//! opens with the gain chart (gain_chart.rs) and the headline's table, folds the set-up, method
//! and noise paragraphs, then the findings, every round per cell, thread scaling, a sweep's gain
//! by threads per buffer pool, and p95 latency.

use std::fmt::Write;

use anyhow::Result;

use super::document::{part, Block, Table, ANSWER, FINDINGS, METHOD};
use super::svg::{esc, groups, nice_step, tick, COLORS};
use super::Exporter;
use crate::bench::report::{Cell, Report};

/// One contender's points in a strip chart: its index, every round's ratio, and the estimate
/// with its interval.
struct Strip {
    index: usize,
    points: Vec<f64>,
    estimate: Option<(f64, f64, f64)>,
}

/// Grouped bars: one group per (workload, threads), one bar per contender, with 95% CI whiskers.
fn bars(r: &Report, title: &str, value: &dyn Fn(&Cell) -> (f64, f64, f64)) -> String {
    let groups = groups(r);
    let names: Vec<&str> = r.plan.contenders.iter().map(|c| c.name.as_str()).collect();
    let max = r
        .cells
        .iter()
        .map(|c| value(c).2)
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let (w, h, left, bottom, top) = (860.0, 320.0, 60.0, 70.0, 30.0);
    let plot_h = h - bottom - top;
    let gw = (w - left - 20.0) / groups.len().max(1) as f64;
    let bw = (gw * 0.8) / names.len().max(1) as f64;
    let step = nice_step(max * 1.1 / 4.0);
    let ticks = (max * 1.1 / step).ceil().max(1.0) as usize;
    let axis_top = step * ticks as f64;
    let y = |v: f64| top + plot_h * (1.0 - v / axis_top);
    let mut s = format!("<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h}' font-family='sans-serif' font-size='11'>");
    let _ = write!(
        s,
        "<text x='{left}' y='16' font-size='13' font-weight='bold'>{}</text>",
        esc(title)
    );
    for k in 0..=ticks {
        let v = step * k as f64;
        let yy = y(v);
        let _ = write!(s, "<line x1='{left}' x2='{}' y1='{yy:.1}' y2='{yy:.1}' stroke='#ddd'/><text x='{}' y='{:.1}' text-anchor='end'>{}</text>", w - 20.0, left - 4.0, yy + 4.0, tick(v, step));
    }
    for (gi, (wl, t)) in groups.iter().enumerate() {
        let gx = left + gi as f64 * gw + gw * 0.1;
        for (ni, n) in names.iter().enumerate() {
            let Some(c) = r
                .cells
                .iter()
                .find(|c| &c.workload == wl && c.threads == *t && c.contender == *n)
            else {
                continue;
            };
            let (v, lo, hi) = value(c);
            let x = gx + ni as f64 * bw;
            let _ = write!(
                s,
                "<rect x='{x:.1}' y='{:.1}' width='{:.1}' height='{:.1}' fill='{}'><title>{} {} {}: {v:.1}</title></rect>",
                y(v),
                bw * 0.9,
                (y(0.0) - y(v)).max(0.0),
                COLORS[ni % COLORS.len()],
                esc(n),
                esc(wl),
                t
            );
            if lo.is_finite() && hi.is_finite() {
                let cx = x + bw * 0.45;
                let _ = write!(
                    s,
                    "<line x1='{cx:.1}' x2='{cx:.1}' y1='{:.1}' y2='{:.1}' stroke='#222'/>",
                    y(lo.max(0.0)),
                    y(hi)
                );
            }
        }
        let _ = write!(
            s,
            "<text x='{:.1}' y='{:.1}' text-anchor='middle'>{} ({} thr)</text>",
            gx + gw * 0.4,
            h - bottom + 16.0,
            esc(wl),
            t
        );
    }
    for (ni, n) in names.iter().enumerate() {
        let lx = left + ni as f64 * 150.0;
        let _ = write!(
            s,
            "<rect x='{lx}' y='{}' width='10' height='10' fill='{}'/><text x='{}' y='{}'>{}</text>",
            h - 24.0,
            COLORS[ni % COLORS.len()],
            lx + 14.0,
            h - 15.0,
            esc(n)
        );
    }
    s.push_str("</svg>");
    s
}

/// Small charts, one per workload and variant: gain against threads, one line per buffer pool,
/// the interval as whiskers, zero dashed.
fn sweep_charts(r: &Report) -> Option<String> {
    let lines = super::sweep::lines(r);
    if lines.is_empty() || r.plan.spec.thread_counts().len() < 2 {
        return None;
    }
    let threads = &r.plan.spec.thread_counts();
    let pools = super::sweep::pools(r);
    let mut panels: Vec<(String, String)> = Vec::new();
    for l in &lines {
        let key = (l.workload.clone(), l.variant.clone());
        if !panels.contains(&key) {
            panels.push(key);
        }
    }
    let mut out = String::new();
    for (wl, variant) in panels {
        let mine: Vec<&super::sweep::Line> = lines
            .iter()
            .filter(|l| l.workload == wl && l.variant == variant)
            .collect();
        let (mut lo, mut hi) = (0.0f64, 0.0f64);
        for p in mine.iter().flat_map(|l| &l.points) {
            let (a, b) = p.interval_pct.unwrap_or((p.gain_pct, p.gain_pct));
            lo = lo.min(a);
            hi = hi.max(b);
        }
        let pad = ((hi - lo) * 0.1).max(1.0);
        let (lo, hi) = (lo - pad, hi + pad);
        let (w, h, left, bottom, top) = (420.0, 230.0, 50.0, 40.0, 24.0);
        let x = |i: usize| left + (w - left - 20.0) * i as f64 / (threads.len() - 1) as f64;
        let y = |v: f64| top + (h - bottom - top) * (hi - v) / (hi - lo);
        let _ = write!(
            out,
            "<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h}' \
             font-family='sans-serif' font-size='10'><text x='{left}' y='14' font-size='12' \
             font-weight='bold'>{} on {}: TPS gain (%) by threads</text>",
            esc(&variant),
            esc(&wl)
        );
        let _ = write!(
            out,
            "<line x1='{left}' x2='{:.1}' y1='{:.1}' y2='{:.1}' stroke='#888' \
             stroke-dasharray='3 3'/><text x='{:.1}' y='{:.1}' text-anchor='end'>0</text>\
             <text x='{:.1}' y='{:.1}' text-anchor='end'>{hi:+.0}</text>\
             <text x='{:.1}' y='{:.1}' text-anchor='end'>{lo:+.0}</text>",
            w - 20.0,
            y(0.0),
            y(0.0),
            left - 4.0,
            y(0.0) + 3.0,
            left - 4.0,
            y(hi) + 8.0,
            left - 4.0,
            y(lo)
        );
        for (i, t) in threads.iter().enumerate() {
            let _ = write!(
                out,
                "<text x='{:.1}' y='{}' text-anchor='middle'>{t}</text>",
                x(i),
                h - bottom + 14.0
            );
        }
        let _ = write!(
            out,
            "<text x='{:.1}' y='{}' text-anchor='end'>client threads</text>",
            w - 20.0,
            h - 6.0
        );
        for l in &mine {
            let k = pools.iter().position(|p| *p == l.pool_mb).unwrap_or(0);
            let color = COLORS[k % COLORS.len()];
            let at = |t: u32| threads.iter().position(|x| *x == t).unwrap_or(0);
            let pts: Vec<String> = l
                .points
                .iter()
                .map(|p| format!("{:.1},{:.1}", x(at(p.threads)), y(p.gain_pct)))
                .collect();
            let _ = write!(
                out,
                "<polyline points='{}' fill='none' stroke='{color}' stroke-width='2'>\
                 <title>buffer pool {} MiB</title></polyline>",
                pts.join(" "),
                l.pool_mb
            );
            for p in &l.points {
                if let Some((a, b)) = p.interval_pct {
                    let xi = x(at(p.threads));
                    let _ = write!(
                        out,
                        "<line x1='{xi:.1}' x2='{xi:.1}' y1='{:.1}' y2='{:.1}' \
                         stroke='{color}'/>",
                        y(a),
                        y(b)
                    );
                }
            }
            let _ = write!(
                out,
                "<text x='{:.1}' y='{}' fill='{color}'>{} MiB</text>",
                left + 70.0 * k as f64,
                h - 6.0,
                l.pool_mb
            );
        }
        out.push_str("</svg>");
    }
    Some(out)
}

/// Thread scaling: median TPS against thread count, one line per contender and workload.
fn scaling(r: &Report) -> Option<String> {
    let threads: Vec<u32> = r.plan.spec.threads.clone();
    // Counts chosen per workload are one point per workload, not a scaling curve.
    if threads.len() < 2 || r.plan.spec.threads_per_workload() {
        return None;
    }
    let max = r
        .cells
        .iter()
        .map(|c| c.tps.median)
        .fold(0.0f64, f64::max)
        .max(1e-9);
    let (w, h, left, bottom, top) = (860.0, 300.0, 60.0, 50.0, 30.0);
    let x = |i: usize| left + (w - left - 40.0) * i as f64 / (threads.len() - 1) as f64;
    let y = |v: f64| top + (h - bottom - top) * (1.0 - v / (max * 1.1));
    let mut s = format!("<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h}' font-family='sans-serif' font-size='11'><text x='{left}' y='16' font-size='13' font-weight='bold'>Thread scaling (median TPS)</text>");
    for (i, t) in threads.iter().enumerate() {
        let _ = write!(
            s,
            "<text x='{:.1}' y='{}' text-anchor='middle'>{t}</text>",
            x(i),
            h - bottom + 16.0
        );
    }
    let mut k = 0;
    for (ci, c) in r.plan.contenders.iter().enumerate() {
        for wl in &r.plan.spec.workloads {
            let pts: Vec<String> = threads
                .iter()
                .enumerate()
                .filter_map(|(i, t)| {
                    r.cells
                        .iter()
                        .find(|x| {
                            x.contender == c.name && x.workload == wl.name() && x.threads == *t
                        })
                        .map(|cell| format!("{:.1},{:.1}", x(i), y(cell.tps.median)))
                })
                .collect();
            let dash = if k % 2 == 1 {
                " stroke-dasharray='4 3'"
            } else {
                ""
            };
            let _ = write!(s, "<polyline points='{}' fill='none' stroke='{}' stroke-width='2'{dash}><title>{} {}</title></polyline>", pts.join(" "), COLORS[ci % COLORS.len()], esc(&c.name), wl.name());
            k += 1;
        }
    }
    s.push_str("</svg>");
    Some(s)
}

fn table(t: &Table) -> String {
    let row = |tag: &str, cells: &[String]| {
        let mut s = String::from("<tr>");
        for c in cells {
            let _ = write!(s, "<{tag}>{}</{tag}>", esc(c));
        }
        s + "</tr>"
    };
    let mut s = String::from("<table>");
    s.push_str(&row("th", &t.header));
    for r in &t.rows {
        s.push_str(&row("td", r));
    }
    s + "</table>"
}

/// Small multiples, one per workload and thread count: every round's ratio contender / baseline
/// (paired, same round) as a point, the estimate as a bar mark and its 95% interval as a line.
fn strips(r: &Report) -> String {
    let base = &r.plan.contenders[0].name;
    let names: Vec<&str> = r
        .plan
        .contenders
        .iter()
        .skip(1)
        .map(|c| c.name.as_str())
        .collect();
    let mut out = String::from("<h2>Every round</h2><p>Each point is one round's throughput ratio to the baseline in the same round; the black mark is the estimate (geometric mean), the line its 95% interval; the dashed line is the baseline (1).</p><div>");
    for (wl, t) in &groups(r) {
        let cell = |n: &str| {
            r.cells
                .iter()
                .find(|c| &c.workload == wl && c.threads == *t && c.contender == n)
        };
        let Some(bc) = cell(base) else { continue };
        let mut series: Vec<Strip> = Vec::new();
        for (i, n) in names.iter().enumerate() {
            let Some(c) = cell(n) else { continue };
            let pts: Vec<f64> = crate::bench::stats::pair_by_round(&bc.tps_rounds, &c.tps_rounds)
                .iter()
                .map(|(b, v)| v / b)
                .collect();
            let est = c
                .tps_vs_baseline
                .as_ref()
                .map(|k| (k.ratio, k.shown_interval().0, k.shown_interval().1));
            series.push(Strip {
                index: i,
                points: pts,
                estimate: est,
            });
        }
        let mut all: Vec<f64> = vec![1.0];
        for st in &series {
            all.extend(&st.points);
            if let Some((m, lo, hi)) = &st.estimate {
                all.extend([*m, *lo, *hi].iter().filter(|v| v.is_finite()));
            }
        }
        let lo = all.iter().copied().fold(f64::INFINITY, f64::min) * 0.97;
        let hi = all.iter().copied().fold(0.0f64, f64::max) * 1.03;
        let (w, h, left, bottom, top) = (300.0, 240.0, 46.0, 40.0, 26.0);
        let y = |v: f64| top + (h - bottom - top) * (1.0 - (v - lo) / (hi - lo).max(1e-9));
        let cw = (w - left - 10.0) / names.len().max(1) as f64;
        let _ = write!(out, "<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h}' font-family='sans-serif' font-size='10'><text x='{left}' y='14' font-size='12' font-weight='bold'>{} ({t} thr)</text>", esc(wl));
        let step = (hi - lo) / 4.0;
        for k in 0..=4 {
            let v = lo + step * k as f64;
            let _ = write!(out, "<line x1='{left}' x2='{}' y1='{:.1}' y2='{:.1}' stroke='#eee'/><text x='{}' y='{:.1}' text-anchor='end'>{}</text>", w - 10.0, y(v), y(v), left - 3.0, y(v) + 3.0, tick(v, step));
        }
        let _ = write!(out, "<line x1='{left}' x2='{}' y1='{:.1}' y2='{:.1}' stroke='#888' stroke-dasharray='4 3'/>", w - 10.0, y(1.0), y(1.0));
        for Strip {
            index: i,
            points: pts,
            estimate: est,
        } in &series
        {
            let cx = left + cw * (*i as f64 + 0.5);
            let color = COLORS[(i + 1) % COLORS.len()];
            for (k, p) in pts.iter().enumerate() {
                // Spread the points sideways so equal values stay visible.
                let jx = cx - cw * 0.25 + cw * 0.5 * (k as f64 + 0.5) / pts.len().max(1) as f64;
                let _ = write!(out, "<circle cx='{jx:.1}' cy='{:.1}' r='3' fill='{color}' fill-opacity='0.7'><title>{}: {p:.3}</title></circle>", y(*p), esc(names[*i]));
            }
            if let Some((m, l, u)) = est {
                if l.is_finite() && u.is_finite() {
                    let _ = write!(out, "<line x1='{:.1}' x2='{:.1}' y1='{:.1}' y2='{:.1}' stroke='#222' stroke-width='2'/>", cx + cw * 0.3, cx + cw * 0.3, y(*l), y(*u));
                }
                let _ = write!(out, "<line x1='{:.1}' x2='{:.1}' y1='{:.1}' y2='{:.1}' stroke='#222' stroke-width='3'/>", cx + cw * 0.22, cx + cw * 0.38, y(*m), y(*m));
            }
            let _ = write!(
                out,
                "<text x='{cx:.1}' y='{}' text-anchor='middle'>{}</text>",
                h - bottom + 14.0,
                esc(names[*i])
            );
        }
        out.push_str("</svg>");
    }
    out + "</div>"
}

/// The share of the CPU other processes used during each measured run, in the order they ran:
/// a benchmark beside a build shows as a plateau.
fn load_trace(r: &Report) -> Option<String> {
    if r.load_trace.is_empty() {
        return None;
    }
    let (w, h, left, bottom, top) = (860.0, 160.0, 46.0, 30.0, 26.0);
    let n = r.load_trace.len();
    let x = |i: usize| left + (w - left - 20.0) * i as f64 / (n.max(2) - 1) as f64;
    let y = |v: f64| top + (h - bottom - top) * (1.0 - v);
    let mut s = format!("<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h}' font-family='sans-serif' font-size='10'><text x='{left}' y='14' font-size='12' font-weight='bold'>Machine load during each measured run (share of all CPUs used by other processes; red line: {:.0}%, above it a run counts as disturbed)</text>", crate::bench::load::BUSY_SHARE * 100.0);
    for k in 0..=4 {
        let v = k as f64 / 4.0;
        let _ = write!(s, "<line x1='{left}' x2='{}' y1='{:.1}' y2='{:.1}' stroke='#eee'/><text x='{}' y='{:.1}' text-anchor='end'>{:.0}%</text>", w - 20.0, y(v), y(v), left - 3.0, y(v) + 3.0, v * 100.0);
    }
    let b = crate::bench::load::BUSY_SHARE;
    let _ = write!(
        s,
        "<line x1='{left}' x2='{}' y1='{:.1}' y2='{:.1}' stroke='#c44e52'/>",
        w - 20.0,
        y(b),
        y(b)
    );
    let pts: Vec<String> = r
        .load_trace
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{:.1},{:.1}", x(i), y(p.other_share.clamp(0.0, 1.0))))
        .collect();
    let steal: Vec<String> = r
        .load_trace
        .iter()
        .enumerate()
        .map(|(i, p)| format!("{:.1},{:.1}", x(i), y(p.steal_share.clamp(0.0, 1.0))))
        .collect();
    let _ = write!(s, "<polyline points='{}' fill='none' stroke='#4c72b0' stroke-width='1.5'><title>other processes</title></polyline><polyline points='{}' fill='none' stroke='#937860' stroke-dasharray='3 2'><title>steal</title></polyline>", pts.join(" "), steal.join(" "));
    let _ = write!(s, "<text x='{left}' y='{}'>runs in the order they ran (rounds 1..{}); solid: others, dashed: steal</text></svg>", h - 8.0, r.rounds_found);
    Some(s)
}

pub struct Html;

impl Exporter for Html {
    fn file_name(&self) -> &'static str {
        "report.html"
    }

    fn render(&self, r: &Report) -> Result<String> {
        Ok(html(r))
    }
}

/// The HTML report: the answer first (the title, the gain chart, the headline's table), how it
/// was measured folded under it, the findings, then the other charts.
pub fn html(r: &Report) -> String {
    let mut o = String::from("<!DOCTYPE html><html><head><meta charset='utf-8'><title>pgoforge benchmark</title><style>body{font-family:sans-serif;max-width:960px;margin:2em auto;color:#222}table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px}th{background:#f3f3f3}pre{background:#f7f7f7;padding:8px}details.method{margin:1em 0}details.method>summary{font-weight:bold;cursor:pointer}p.caption{font-size:13px;color:#444}</style></head><body>");
    let answer = part(r, ANSWER);
    let chart = super::gain_chart::gain_chart(r);
    for b in &answer {
        match b {
            Block::Title(_) => {
                block(&mut o, b);
                // The picture right under the title: what the run found, before how.
                if let Some(svg) = &chart {
                    o.push_str(svg);
                }
            }
            // The headline's table under the chart, its sentence as the table's caption.
            Block::Counts(lead, t) => {
                let _ = write!(o, "{}<p class='caption'>{}</p>", table(t), esc(lead));
            }
            _ => block(&mut o, b),
        }
    }
    o.push_str("<details class='method'><summary>How this was measured: set-up, method, the run's noise</summary>");
    for b in &part(r, METHOD) {
        block(&mut o, b);
    }
    o.push_str("</details>");
    for b in &part(r, FINDINGS) {
        block(&mut o, b);
    }
    // Workloads differ 50x in TPS: one small chart each, on the ratio scale, every round shown.
    o.push_str(&strips(r));
    if let Some(s) = load_trace(r) {
        o.push_str(&s);
    }
    if let Some(s) = scaling(r) {
        o.push_str(&s);
    }
    if let Some(s) = sweep_charts(r) {
        o.push_str(&s);
    }
    o.push_str(&bars(r, "p95 latency (ms, mean with 95% CI)", &|c| {
        (c.p95_ms.mean, c.p95_ms.ci95.0, c.p95_ms.ci95.1)
    }));
    o.push_str("</body></html>\n");
    o
}

/// One block of the document as HTML.
fn block(o: &mut String, b: &Block) {
    match b {
        Block::Title(t) => {
            let _ = write!(o, "<h1>{}</h1>", esc(t));
        }
        Block::Paragraph(p) => {
            let _ = write!(o, "<p>{}</p>", esc(p));
        }
        Block::Notes(lead, items) => {
            // The environment: long and rarely read, so folded.
            let _ = write!(o, "<details><summary>{}</summary><ul>", esc(lead));
            for i in items {
                let _ = write!(o, "<li>{}</li>", esc(i));
            }
            o.push_str("</ul></details>");
        }
        Block::List(lead, items) => {
            let _ = write!(o, "<p>{}</p><ul>", esc(lead));
            for i in items {
                let _ = write!(o, "<li>{}</li>", esc(i));
            }
            o.push_str("</ul>");
        }
        Block::Table(t) => o.push_str(&table(t)),
        Block::Counts(lead, t) => {
            let _ = write!(o, "<p>{}</p>{}", esc(lead), table(t));
        }
    }
}
