//! sysbench's text output, line for line: the interval lines and the final report, plus the HDR
//! percentiles pgoforge adds after them.

use std::fmt::Write;

use crate::result::{per_sec, Interval, RunResult};
use crate::settings::Settings;

pub const SYSBENCH_COMPAT: &str = "1.0.20";

/// What sysbench prints before the workers start.
pub fn header(s: &Settings, seed_from_clock: bool) -> String {
    let mut o = format!(
        "pgoforge oltp {} (sysbench {SYSBENCH_COMPAT} compatible, native driver)\n\nRunning the test with following options:\nNumber of threads: {}\n",
        env!("CARGO_PKG_VERSION"),
        s.threads
    );
    if s.rate > 0 {
        let _ = writeln!(o, "Target transaction rate: {}/sec", s.rate);
    }
    if s.report_interval_s > 0 {
        let _ = writeln!(
            o,
            "Report intermediate results every {} second(s)",
            s.report_interval_s
        );
    }
    if seed_from_clock {
        o.push_str("Initializing random number generator from current time\n");
    } else {
        let _ = writeln!(
            o,
            "Initializing random number generator from seed ({}).",
            s.rand.seed
        );
    }
    if s.warmup_time_s > 0 {
        let _ = writeln!(o, "Warmup time: {}s", s.warmup_time_s);
    }
    o.push_str("\n\nInitializing worker threads...\n\n");
    o
}

pub fn interval_line(i: &Interval, percentile: u8) -> String {
    let mut line = format!(
        "[ {:.0}s ] thds: {} tps: {:4.2} qps: {:4.2} (r/w/o: {:4.2}/{:4.2}/{:4.2}) lat (ms,{}%): {:4.2} err/s: {:4.2} reconn/s: {:4.2}",
        i.at_s,
        i.threads,
        i.tps,
        i.qps,
        i.reads_per_s,
        i.writes_per_s,
        i.others_per_s,
        percentile,
        i.latency_ms,
        i.errors_per_s,
        i.reconnects_per_s
    );
    if let (Some(q), Some(c)) = (i.queue_length, i.concurrency) {
        let _ = write!(
            line,
            "\n[ {:.0}s ] queue length: {q}, concurrency: {c}",
            i.at_s
        );
    }
    line
}

/// The final report in sysbench 1.0.20's layout, followed by pgoforge's HDR percentiles.
pub fn final_report(r: &RunResult) -> String {
    let t = r.total_time_s;
    let q = &r.queries;
    let mut o = String::new();
    if r.settings.histogram {
        let mut h = crate::histogram::LogHistogram::default();
        for &(v, c) in &r.histogram {
            h.counts[crate::histogram::bucket_of(v)] += c;
        }
        o.push_str(&h.render());
        o.push('\n');
    }
    let count = |n: u64| format!("{:<6} ({:.2} per sec.)", n, per_sec(n, t));
    let _ = writeln!(o, "SQL statistics:");
    let _ = writeln!(o, "    queries performed:");
    let _ = writeln!(o, "        read:                            {}", q.read);
    let _ = writeln!(o, "        write:                           {}", q.write);
    let _ = writeln!(o, "        other:                           {}", q.other);
    let _ = writeln!(o, "        total:                           {}", q.total);
    let _ = writeln!(
        o,
        "    transactions:                        {}",
        count(r.transactions)
    );
    let _ = writeln!(
        o,
        "    queries:                             {}",
        count(q.total)
    );
    let _ = writeln!(
        o,
        "    ignored errors:                      {}",
        count(r.ignored_errors)
    );
    let _ = writeln!(
        o,
        "    reconnects:                          {}",
        count(r.reconnects)
    );
    o.push('\n');
    let _ = writeln!(o, "General statistics:");
    let _ = writeln!(o, "    total time:                          {t:.4}s");
    let _ = writeln!(
        o,
        "    total number of events:              {}",
        r.transactions
    );
    o.push('\n');
    let l = &r.latency;
    let _ = writeln!(o, "Latency (ms):");
    let _ = writeln!(o, "         min: {:39.2}", l.min);
    let _ = writeln!(o, "         avg: {:39.2}", l.avg);
    let _ = writeln!(o, "         max: {:39.2}", l.max);
    match l.percentile {
        Some(p) => {
            let _ = writeln!(
                o,
                "        {:3}th percentile: {:27.2}",
                r.settings.percentile, p
            );
        }
        None => {
            let _ = writeln!(o, "         percentile stats:               disabled");
        }
    }
    let _ = writeln!(o, "         sum: {:39.2}", l.sum);
    o.push('\n');
    let f = &r.fairness;
    let _ = writeln!(o, "Threads fairness:");
    let _ = writeln!(
        o,
        "    events (avg/stddev):           {:.4}/{:3.2}",
        f.events_avg, f.events_stddev
    );
    let _ = writeln!(
        o,
        "    execution time (avg/stddev):   {:.4}/{:3.2}",
        f.time_avg_s, f.time_stddev_s
    );
    o.push('\n');
    let h = &l.hdr;
    let _ = writeln!(o, "Latency percentiles (ms, HDR histogram):");
    let _ = writeln!(
        o,
        "    p50: {:.3}  p95: {:.3}  p99: {:.3}  p99.9: {:.3}  max: {:.3}",
        h.p50, h.p95, h.p99, h.p999, h.max
    );
    let _ = writeln!(
        o,
        "Server: {} over {}",
        r.server.version, r.server.transport
    );
    o
}

/// A replay's own counts, after the report: never a statement's text.
pub fn replay_lines(c: &crate::replay::ReplayCounts) -> String {
    let mut o = format!(
        "Replay:\n    file:                                {} connections, {} statements\n",
        c.sessions, c.statements_in_file
    );
    let errors: Vec<String> = c
        .errors_by_code
        .iter()
        .map(|(code, n)| format!("{code}: {n}"))
        .collect();
    let _ = writeln!(
        o,
        "    errors by code:                      {}",
        if errors.is_empty() {
            "none".to_string()
        } else {
            errors.join(", ")
        }
    );
    if c.rows_checked > 0 {
        let _ = writeln!(
            o,
            "    rows returned vs logged:             {} of {} statements differ",
            c.rows_mismatched, c.rows_checked
        );
    }
    o
}
