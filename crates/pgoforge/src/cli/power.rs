//! `pgoforge power`: what a benchmark of a given length can find under the rule reports apply —
//! before spending the hours. From a per-round scatter (a calibration's or a report's A/A line),
//! the rounds and the comparisons: the power for a true change, the smallest change found 80 %
//! of the time (with its range when the scatter is itself an estimate), and the rounds a change
//! needs.

use anyhow::Result;
use clap::Args;
use pgoforge::bench::stats::{detectable, power, rounds_to_detect, Rule};
use serde::Serialize;

#[derive(Args)]
pub struct PowerArgs {
    /// Per-round scatter in percent: the standard deviation of the paired rounds' log-ratios
    /// (a calibration's "floor", a report's A/A "scatter").
    #[arg(long, value_name = "PCT")]
    sd: f64,
    /// Paired rounds.
    #[arg(long, default_value_t = 8)]
    rounds: usize,
    /// Comparisons Holm corrects over (variants × workloads × thread counts).
    #[arg(long, default_value_t = 1)]
    comparisons: usize,
    /// The smallest change counted, in percent (the reports' --min-effect).
    #[arg(long, value_name = "PCT", default_value_t = 2.0)]
    min_effect: f64,
    /// A true change, in percent, to give the power and the rounds for.
    #[arg(long, value_name = "PCT")]
    change: Option<f64>,
    /// Degrees of freedom of the scatter's estimate (its rounds − 1): gives the range.
    #[arg(long)]
    df: Option<usize>,
    /// Print JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Answer {
    sd_pct: f64,
    rounds: usize,
    comparisons: usize,
    min_effect_pct: f64,
    /// The smallest true change (percent) reported with 80 % power; null when none is.
    detectable_pct: Option<f64>,
    /// Its range over the scatter's 95 % interval, when --df was given.
    detectable_range_pct: Option<(Option<f64>, Option<f64>)>,
    change_pct: Option<f64>,
    power_at_change: Option<f64>,
    /// Rounds that report --change with 80 % power (null: more than 2000, or never).
    rounds_for_change: Option<usize>,
}

pub fn main(a: PowerArgs) -> Result<i32> {
    if !(a.sd > 0.0 && a.sd < 100.0) || a.rounds < 2 || a.rounds > 2000 || a.comparisons == 0 {
        super::usage_error(
            "--sd must be a percent above 0 and below 100, --rounds 2 to 2000, --comparisons at least 1",
        );
    }
    if !(0.0..50.0).contains(&a.min_effect) || a.change.is_some_and(|c| !(c > 0.0 && c < 100.0)) {
        super::usage_error(
            "--min-effect must be 0 to 50 and --change above 0 and below 100 (percent)",
        );
    }
    let rule = Rule::new(a.comparisons, Some(a.min_effect / 100.0));
    let sd = a.sd / 100.0;
    let pct = |r: f64| r.is_finite().then_some((r - 1.0) * 100.0);
    let d = detectable(rule, sd, a.df.unwrap_or(1), a.rounds);
    let answer = Answer {
        sd_pct: a.sd,
        rounds: a.rounds,
        comparisons: a.comparisons,
        min_effect_pct: a.min_effect,
        detectable_pct: pct(d.ratio),
        detectable_range_pct: a.df.map(|_| (pct(d.low), pct(d.high))),
        change_pct: a.change,
        power_at_change: a.change.map(|c| power(rule, 1.0 + c / 100.0, sd, a.rounds)),
        rounds_for_change: a
            .change
            .and_then(|c| rounds_to_detect(rule, 1.0 + c / 100.0, sd, 2000)),
    };
    if a.json {
        println!("{}", serde_json::to_string_pretty(&answer)?);
        return Ok(0);
    }
    let show = |p: Option<f64>| {
        p.map_or("nothing (too few rounds for the level)".into(), |p| {
            format!("{p:.1}%")
        })
    };
    println!(
        "rule: the exact sign-flip test at 5% under Holm over {} comparison(s), and a change of at least {}%",
        a.comparisons, a.min_effect
    );
    println!(
        "detectable with 80% power at {} rounds and {}% scatter: {}",
        a.rounds,
        a.sd,
        show(answer.detectable_pct)
    );
    if let Some((lo, hi)) = answer.detectable_range_pct {
        println!(
            "  over the scatter's 95% interval ({} degrees of freedom): {} to {}",
            a.df.unwrap_or(1),
            show(lo),
            hi.map_or("not reachable".into(), |h| format!("{h:.1}%"))
        );
    }
    if let (Some(c), Some(p)) = (a.change, answer.power_at_change) {
        println!("power for a true {c}% change: {:.0}%", p * 100.0);
        match answer.rounds_for_change {
            Some(n) => println!("rounds for 80% power on a true {c}% change: {n}"),
            None if c <= a.min_effect => println!(
                "80% power on a true {c}% change: never — the estimate falls below the {}% minimum about half the time at any length; lower --min-effect to find it",
                a.min_effect
            ),
            None => println!("80% power on a true {c}% change: more than 2000 rounds"),
        }
    }
    Ok(0)
}
