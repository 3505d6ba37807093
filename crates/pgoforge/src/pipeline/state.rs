//! The run's stage state file (`WORK/run-state.json`): one record per finished stage, keyed by a
//! hash of the stage's inputs. A rerun skips a stage whose inputs are unchanged and whose outputs
//! still exist; everything after a changed stage runs again. The file is replaced atomically after
//! each stage, so an interrupted run never records a stage it did not finish.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::stage::{Ctx, Made, Stage};
use crate::events::Event;
pub use crate::infra::fs::value_hash as inputs_hash;
pub use crate::infra::time::human;

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StageRecord {
    /// Hash of the stage's inputs when it ran.
    pub inputs: String,
    /// Wall time of the run that did the work.
    pub seconds: f64,
    /// Seconds since the epoch when it finished.
    pub finished: u64,
    pub output: serde_json::Value,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct State {
    pub stages: BTreeMap<String, StageRecord>,
}

/// How one stage went in this invocation.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StageTiming {
    pub stage: String,
    /// This invocation's wall time (near zero when reused).
    pub seconds: f64,
    /// The wall time of the run that did the work.
    pub work_seconds: f64,
    pub reused: bool,
}

/// The stages of one run: their recorded outputs, and this invocation's timings.
pub struct Tracker {
    /// `None`: nothing is persisted (the single-stage commands, which cache in the stages' own
    /// stores only).
    path: Option<PathBuf>,
    state: State,
    pub timings: Vec<StageTiming>,
}

impl Tracker {
    pub fn state_path(work: &Path) -> PathBuf {
        work.join("run-state.json")
    }

    /// Opens (or starts) the state of the run in `work`.
    pub fn open(work: &Path) -> Result<Tracker> {
        let path = Self::state_path(work);
        let state = match fs::read_to_string(&path) {
            Ok(t) => serde_json::from_str(&t).with_context(|| {
                format!(
                    "{} is not a pgoforge run state; move it away to start the run over",
                    path.display()
                )
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => State::default(),
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        Ok(Tracker {
            path: Some(path),
            state,
            timings: Vec::new(),
        })
    }

    /// A tracker that remembers nothing between invocations.
    pub fn ephemeral() -> Tracker {
        Tracker {
            path: None,
            state: State::default(),
            timings: Vec::new(),
        }
    }

    pub fn state(&self) -> &State {
        &self.state
    }

    fn save(&self) -> Result<()> {
        match &self.path {
            Some(p) => crate::infra::fs::write_json(p, &self.state),
            None => Ok(()),
        }
    }

    fn timing(&mut self, stage: &str, seconds: f64, work_seconds: f64, reused: bool) {
        self.timings.push(StageTiming {
            stage: stage.into(),
            seconds,
            work_seconds,
            reused,
        });
    }

    /// Runs `s` unless a record with the same key exists and the stage accepts its output; records
    /// what it made. A failed stage is not recorded.
    pub fn run<S: Stage>(&mut self, s: &S, cx: &Ctx) -> Result<S::Output> {
        let name = s.name().to_string();
        let key = s.key().with_context(|| format!("stage {name}"))?;
        let t0 = Instant::now();
        if let Some(r) = self.state.stages.get(&name).filter(|r| r.inputs == key) {
            if let Ok(out) = serde_json::from_value::<S::Output>(r.output.clone()) {
                if s.still_valid(&out) {
                    let work_seconds = r.seconds;
                    cx.reporter.event(Event::StageReused {
                        stage: name.clone(),
                        work_seconds,
                    });
                    self.timing(&name, t0.elapsed().as_secs_f64(), work_seconds, true);
                    return Ok(out);
                }
            }
        }
        cx.reporter.event(Event::StageStarted {
            stage: name.clone(),
        });
        let made = match s.run(cx) {
            Ok(m) => m,
            Err(e) => {
                cx.reporter.event(Event::StageFailed {
                    stage: name.clone(),
                    error: format!("{e:#}"),
                });
                return Err(e.context(format!("stage {name} failed")));
            }
        };
        let seconds = t0.elapsed().as_secs_f64();
        let (out, work_seconds, reused) = match made {
            Made::New(out) => (out, seconds, false),
            Made::Found { out, work_seconds } => (out, work_seconds, true),
        };
        self.state.stages.insert(
            name.clone(),
            StageRecord {
                inputs: key,
                seconds: work_seconds,
                finished: crate::infra::time::now_secs(),
                output: serde_json::to_value(&out)?,
            },
        );
        self.save()?;
        cx.reporter.event(if reused {
            Event::StageReused {
                stage: name.clone(),
                work_seconds,
            }
        } else {
            Event::StageFinished {
                stage: name.clone(),
                seconds,
            }
        });
        self.timing(&name, seconds, work_seconds, reused);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::Collect;
    use crate::pipeline::stage::StageId;
    use std::cell::Cell;

    /// Doubles its input; counts its runs; accepts recorded outputs while `valid` is set.
    struct Double<'a> {
        input: u32,
        runs: &'a Cell<u32>,
        valid: bool,
        fail: bool,
    }

    impl Stage for Double<'_> {
        type Output = u32;
        fn name(&self) -> StageId {
            StageId::Seed
        }
        fn key(&self) -> Result<String> {
            inputs_hash(&self.input)
        }
        fn still_valid(&self, _: &u32) -> bool {
            self.valid
        }
        fn run(&self, _: &Ctx) -> Result<Made<u32>> {
            if self.fail {
                anyhow::bail!("disk full");
            }
            self.runs.set(self.runs.get() + 1);
            Ok(Made::New(self.input * 2))
        }
    }

    #[test]
    fn finished_stages_are_reused_and_changed_inputs_rerun() {
        let t = tempfile::tempdir().unwrap();
        let events = Collect::default();
        let cx = Ctx {
            work: t.path(),
            reporter: &events,
        };
        let runs = Cell::new(0);
        let stage = |input| Double {
            input,
            runs: &runs,
            valid: true,
            fail: false,
        };
        let mut tr = Tracker::open(t.path()).unwrap();
        assert_eq!(tr.run(&stage(3), &cx).unwrap(), 6);
        // A new process reads the same state: nothing reruns.
        let mut tr = Tracker::open(t.path()).unwrap();
        assert_eq!(tr.run(&stage(3), &cx).unwrap(), 6);
        assert_eq!(runs.get(), 1);
        assert!(tr.timings[0].reused);
        assert_eq!(tr.run(&stage(4), &cx).unwrap(), 8);
        assert_eq!(runs.get(), 2);
        assert_eq!(
            events.lines()[..3],
            [
                "seed: running",
                "seed: done in 0.0 s",
                "seed: done before (0.0 s), reused"
            ]
        );
    }

    #[test]
    fn a_failed_stage_is_not_recorded_and_invalid_outputs_rerun() {
        let t = tempfile::tempdir().unwrap();
        let events = Collect::default();
        let cx = Ctx {
            work: t.path(),
            reporter: &events,
        };
        let runs = Cell::new(0);
        let mut tr = Tracker::open(t.path()).unwrap();
        let failing = Double {
            input: 1,
            runs: &runs,
            valid: true,
            fail: true,
        };
        let e = tr.run(&failing, &cx).unwrap_err();
        assert!(format!("{e:#}").contains("stage seed failed: disk full"));
        assert!(tr.state().stages.is_empty());
        let ok = Double {
            fail: false,
            ..failing
        };
        tr.run(&ok, &cx).unwrap();
        let mut tr = Tracker::open(t.path()).unwrap();
        let rejecting = Double { valid: false, ..ok };
        tr.run(&rejecting, &cx).unwrap();
        assert_eq!(runs.get(), 2, "an output the check rejects is made again");
        fs::write(Tracker::state_path(t.path()), "{torn").unwrap();
        let e = Tracker::open(t.path()).err().unwrap();
        assert!(format!("{e:#}").contains("move it away"), "{e:#}");
    }
}
