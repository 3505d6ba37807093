//! One self-contained HTML report (report.html) with SVG charts (no scripts, no network): the
//! document's tables and notes, throughput with CI bars per contender and workload, thread
//! scaling, and p95 latency.

use std::fmt::Write;

use anyhow::Result;

use super::document::{document, Block, Table};
use super::Exporter;
use crate::bench::report::{Cell, Report};

const COLORS: [&str; 6] = [
    "#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860",
];

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Grouped bars: one group per (workload, threads), one bar per contender, with 95% CI whiskers.
fn bars(r: &Report, title: &str, value: &dyn Fn(&Cell) -> (f64, f64, f64)) -> String {
    let groups: Vec<(String, u32)> = {
        let mut g: Vec<(String, u32)> = r
            .cells
            .iter()
            .map(|c| (c.workload.clone(), c.threads))
            .collect();
        g.dedup();
        g.sort();
        g.dedup();
        g
    };
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
    let y = |v: f64| top + plot_h * (1.0 - v / (max * 1.1));
    let mut s = format!("<svg xmlns='http://www.w3.org/2000/svg' width='{w}' height='{h}' font-family='sans-serif' font-size='11'>");
    let _ = write!(
        s,
        "<text x='{left}' y='16' font-size='13' font-weight='bold'>{}</text>",
        esc(title)
    );
    for k in 0..=4 {
        let v = max * 1.1 * k as f64 / 4.0;
        let yy = y(v);
        let _ = write!(s, "<line x1='{left}' x2='{}' y1='{yy:.1}' y2='{yy:.1}' stroke='#ddd'/><text x='{}' y='{:.1}' text-anchor='end'>{}</text>", w - 20.0, left - 4.0, yy + 4.0, tick(v, max * 1.1));
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

/// Thread scaling: median TPS against thread count, one line per contender and workload.
fn scaling(r: &Report) -> Option<String> {
    let threads: Vec<u32> = r.plan.spec.threads.clone();
    if threads.len() < 2 {
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

/// Axis labels with as many decimals as the scale needs (ratios near 1 need two).
fn tick(v: f64, top: f64) -> String {
    if top < 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.0}")
    }
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

/// The HTML report: the document's blocks as HTML, then the charts.
pub fn html(r: &Report) -> String {
    let mut o = String::from("<!DOCTYPE html><html><head><meta charset='utf-8'><title>pgoforge benchmark</title><style>body{font-family:sans-serif;max-width:960px;margin:2em auto;color:#222}table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 6px}th{background:#f3f3f3}pre{background:#f7f7f7;padding:8px}</style></head><body>");
    for b in document(r) {
        match &b {
            Block::Title(t) => {
                let _ = write!(o, "<h1>{}</h1>", esc(t));
            }
            Block::Paragraph(p) => {
                let _ = write!(o, "<p>{}</p>", esc(p));
            }
            Block::List(lead, items) | Block::Notes(lead, items) => {
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
    o.push_str(&bars(r, "Throughput (TPS, mean with 95% CI)", &|c| {
        (c.tps.mean, c.tps.ci95.0, c.tps.ci95.1)
    }));
    // Workloads differ by orders of magnitude in TPS; ratios put them on one scale.
    o.push_str(&bars(
        r,
        "Throughput relative to the baseline (ratio of means, 95% bootstrap CI; 1 = baseline)",
        &|c| match &c.tps_vs_baseline {
            Some(k) => (k.ratio, k.ratio_ci95.0, k.ratio_ci95.1),
            None => (1.0, 1.0, 1.0),
        },
    ));
    if let Some(s) = scaling(r) {
        o.push_str(&s);
    }
    o.push_str(&bars(r, "p95 latency (ms, mean with 95% CI)", &|c| {
        (c.p95_ms.mean, c.p95_ms.ci95.0, c.p95_ms.ci95.1)
    }));
    o.push_str("</body></html>\n");
    o
}
