//! What long work tells its user, as typed events: library code emits them, a reporter at the edge
//! renders them — progress bars and log lines on a terminal, JSON lines for machines (`--json`),
//! a list for tests. Nothing below the CLI prints.

use std::cell::RefCell;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Serialize;

use crate::infra::time::human;

/// One thing that happened.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A stage starts its work.
    StageStarted { stage: String },
    /// A stage's recorded output is still valid and was taken as it is; `work_seconds` is what the
    /// work took when it was done.
    StageReused { stage: String, work_seconds: f64 },
    /// A stage finished its work now.
    StageFinished { stage: String, seconds: f64 },
    /// A stage failed; the run goes on without it or stops, as the error says.
    StageFailed { stage: String, error: String },
    /// Progress of a stage: `done` of `total` (a build's percent, benchmark runs); `total` 0 means
    /// unknown (a spinner).
    Progress {
        stage: String,
        done: u64,
        total: u64,
    },
    /// A step inside a stage ("loading 4 tables", "bolt: 25.9 % of functions profiled").
    Message { stage: String, text: String },
    /// Something the user must know about the result (a variant left out, missing profiles).
    Warning { text: String },
}

impl Event {
    /// The event as one line of text, as the terminal shows it.
    pub fn line(&self) -> Option<String> {
        Some(match self {
            Event::StageStarted { stage } => format!("{stage}: running"),
            Event::StageReused {
                stage,
                work_seconds,
            } => format!("{stage}: done before ({}), reused", human(*work_seconds)),
            Event::StageFinished { stage, seconds } => {
                format!("{stage}: done in {}", human(*seconds))
            }
            Event::StageFailed { stage, error } => format!("{stage}: failed: {error}"),
            Event::Message { stage, text } if stage.is_empty() => text.clone(),
            Event::Message { stage, text } => format!("{stage}: {text}"),
            Event::Warning { text } => format!("warning: {text}"),
            Event::Progress { .. } => return None,
        })
    }
}

/// Where events go.
pub trait Reporter {
    fn event(&self, e: Event);

    fn message(&self, stage: &str, text: &str) {
        self.event(Event::Message {
            stage: stage.into(),
            text: text.into(),
        })
    }

    fn warning(&self, text: &str) {
        self.event(Event::Warning { text: text.into() })
    }
}

/// Drops every event (library calls whose caller wants no output).
pub struct Silent;

impl Reporter for Silent {
    fn event(&self, _: Event) {}
}

/// Keeps every event, for tests and summaries.
#[derive(Default)]
pub struct Collect(pub RefCell<Vec<Event>>);

impl Reporter for Collect {
    fn event(&self, e: Event) {
        self.0.borrow_mut().push(e);
    }
}

impl Collect {
    pub fn lines(&self) -> Vec<String> {
        self.0.borrow().iter().filter_map(Event::line).collect()
    }
}

/// JSON lines on stderr, one event each (`--json`: stdout keeps the command's result).
pub struct JsonLines;

impl Reporter for JsonLines {
    fn event(&self, e: Event) {
        if let Ok(l) = serde_json::to_string(&e) {
            eprintln!("{l}");
        }
    }
}

/// A terminal: lines stamped with the elapsed time, and one progress bar (or spinner) for the
/// stage that reports progress, kept below the lines.
pub struct Terminal {
    t0: Instant,
    bar: RefCell<Option<(String, ProgressBar)>>,
    /// Draw bars (false when stderr is not for people, e.g. under a test).
    pub bars: bool,
    /// Without bars: when progress was last written as a line (a heartbeat for logs).
    last_beat: RefCell<Option<Instant>>,
}

/// Without bars, progress becomes a line at most this often (a log shows the work is alive).
const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(60);

impl Default for Terminal {
    fn default() -> Self {
        Terminal {
            t0: Instant::now(),
            bar: RefCell::new(None),
            // A log file or a pipe gets heartbeat lines instead of bars it cannot show.
            bars: std::io::IsTerminal::is_terminal(&std::io::stderr()),
            last_beat: RefCell::new(None),
        }
    }
}

impl Terminal {
    /// A progress line, when the last one is a minute old (the first progress of a stage waits a
    /// minute too: short work stays quiet).
    fn heartbeat(&self, stage: &str, done: u64, total: u64) {
        let mut last = self.last_beat.borrow_mut();
        let now = Instant::now();
        match *last {
            Some(t) if now.duration_since(t) < HEARTBEAT => return,
            None => {
                *last = Some(now);
                return;
            }
            _ => {}
        }
        *last = Some(now);
        let at = match total {
            0 => "still running".to_string(),
            100 => format!("{done} %"),
            t => format!("{done} of {t}"),
        };
        eprintln!(
            "[{:>9}] {stage}: {at}",
            human(self.t0.elapsed().as_secs_f64())
        );
    }

    fn finish_bar(&self) {
        if let Some((_, b)) = self.bar.borrow_mut().take() {
            b.finish_and_clear();
        }
    }

    fn bar_for(&self, stage: &str, total: u64) {
        let mut slot = self.bar.borrow_mut();
        if slot.as_ref().is_some_and(|(s, _)| s == stage) {
            return;
        }
        if let Some((_, b)) = slot.take() {
            b.finish_and_clear();
        }
        let b = if total > 0 {
            let b = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template(
                    "{prefix} [{bar:40}] {pos}/{len} {elapsed_precise} (about {eta} left)",
                )
                .expect("valid template")
                .progress_chars("=> "),
            );
            b
        } else {
            let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            b.set_style(
                ProgressStyle::with_template("{prefix} {spinner} {elapsed_precise} {msg}")
                    .expect("valid template"),
            );
            b.enable_steady_tick(std::time::Duration::from_millis(200));
            b
        };
        b.set_prefix(stage.to_string());
        *slot = Some((stage.to_string(), b));
    }
}

impl Reporter for Terminal {
    fn event(&self, e: Event) {
        match &e {
            Event::Progress { stage, done, total } => {
                if self.bars {
                    self.bar_for(stage, *total);
                    if let Some((_, b)) = self.bar.borrow().as_ref() {
                        if *total > 0 {
                            b.set_length(*total);
                            b.set_position(*done);
                        }
                    }
                } else {
                    self.heartbeat(stage, *done, *total);
                }
                return;
            }
            Event::StageReused { .. } | Event::StageFinished { .. } | Event::StageFailed { .. } => {
                self.finish_bar()
            }
            _ => {}
        }
        let Some(line) = e.line() else { return };
        let line = format!("[{:>9}] {line}", human(self.t0.elapsed().as_secs_f64()));
        match self.bar.borrow().as_ref() {
            Some((_, b)) => {
                if let Event::Message { text, .. } = &e {
                    b.set_message(text.clone());
                }
                b.suspend(|| eprintln!("{line}"))
            }
            None => eprintln!("{line}"),
        }
    }
}

/// A log function for code that reports plain lines: each becomes a message of `stage`.
pub fn log_to<'a>(r: &'a dyn Reporter, stage: &'a str) -> impl Fn(&str) + 'a {
    move |l: &str| r.message(stage, l)
}

/// A `(done, total)` ticker for code that counts its steps: each tick becomes progress of `stage`.
pub fn tick_to<'a>(r: &'a dyn Reporter, stage: &'a str) -> impl Fn(u64, u64) + 'a {
    move |done, total| {
        r.event(Event::Progress {
            stage: stage.into(),
            done,
            total,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_render_as_the_terminal_lines_and_as_json() {
        let c = Collect::default();
        c.event(Event::StageStarted {
            stage: "build baseline".into(),
        });
        c.event(Event::StageFinished {
            stage: "build baseline".into(),
            seconds: 843.0,
        });
        log_to(&c, "train")("loading 4 tables");
        tick_to(&c, "bench")(1, 9);
        c.warning("pgo: 3 missing-profile warnings");
        assert_eq!(
            c.lines(),
            [
                "build baseline: running",
                "build baseline: done in 14 min 03 s",
                "train: loading 4 tables",
                "warning: pgo: 3 missing-profile warnings"
            ]
        );
        let j = serde_json::to_string(&c.0.borrow()[3]).unwrap();
        assert_eq!(
            j,
            r#"{"event":"progress","stage":"bench","done":1,"total":9}"#
        );
    }
}
