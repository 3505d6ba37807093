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

    /// Records `r` as `name`'s work. The record it replaces, if of other inputs, stays findable
    /// under `NAME [INPUTS]` ([`Tracker::recorded`]): a run that goes back to those inputs
    /// (`--train-mix oltp` after the default mix, a variant list changed back) reuses that work
    /// instead of training or building again.
    fn record(&mut self, name: &str, r: StageRecord) {
        let inputs = r.inputs.clone();
        if let Some(old) = self.state.stages.insert(name.to_string(), r) {
            if old.inputs != inputs {
                self.state
                    .stages
                    .insert(format!("{name} [{}]", old.inputs), old);
            }
        }
    }

    /// A usable record of `s`'s work: under its own name, or else under another name of the same
    /// kind with the same inputs — a stage renamed by a change of role, e.g. the matrix's
    /// `train @oltp+tpcc` that became a default run's `train` when the union became the default
    /// mix (the key is everything the output depends on, the name is not part of it).
    fn recorded<S: Stage>(
        &self,
        s: &S,
        name: &str,
        key: &str,
    ) -> Option<(String, StageRecord, S::Output)> {
        let kind = |n: &str| n.split(' ').next().unwrap_or_default().to_string();
        let own = self.state.stages.get(name).map(|r| (name.to_string(), r));
        let others = self
            .state
            .stages
            .iter()
            .filter(|(n, _)| n.as_str() != name && kind(n) == kind(name))
            .map(|(n, r)| (n.clone(), r));
        own.into_iter()
            .chain(others)
            .filter(|(_, r)| r.inputs == key)
            .find_map(|(n, r)| {
                let out = serde_json::from_value::<S::Output>(r.output.clone()).ok()?;
                s.still_valid(&out).then(|| (n, r.clone(), out))
            })
    }

    /// Runs `s` unless a record with the same key exists and the stage accepts its output; records
    /// what it made. A failed stage is not recorded.
    pub fn run<S: Stage>(&mut self, s: &S, cx: &Ctx) -> Result<S::Output> {
        let name = s.name().to_string();
        let key = s.key().with_context(|| format!("stage {name}"))?;
        let t0 = Instant::now();
        if let Some((found, r, out)) = self.recorded::<S>(s, &name, &key) {
            let work_seconds = r.seconds;
            if found != name {
                // Remembered under this name again, so the next run finds it directly.
                if found.starts_with(&format!("{name} [")) {
                    self.state.stages.remove(&found);
                }
                self.record(&name, r);
                self.save()?;
                cx.reporter.message(
                    &name,
                    &format!("the same work was done as stage '{found}': its output is reused"),
                );
            }
            cx.reporter.event(Event::StageReused {
                stage: name.clone(),
                work_seconds,
            });
            self.timing(&name, t0.elapsed().as_secs_f64(), work_seconds, true);
            return Ok(out);
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
        let record = StageRecord {
            inputs: key,
            seconds: work_seconds,
            finished: crate::infra::time::now_secs(),
            output: serde_json::to_value(&out)?,
        };
        self.record(&name, record);
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
        id: StageId,
    }

    impl Stage for Double<'_> {
        type Output = u32;
        fn name(&self) -> StageId {
            self.id.clone()
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
            id: StageId::Seed,
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
            id: StageId::Seed,
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

    /// A stage whose name changed (a matrix's `train @oltp+tpcc` becoming a default run's
    /// `train`) finds the work recorded under the old name when its inputs are the same; a stage
    /// of another kind with the same inputs, or the same kind with other inputs, does not.
    #[test]
    fn a_renamed_stage_finds_its_work_under_the_old_name() {
        let t = tempfile::tempdir().unwrap();
        let events = Collect::default();
        let cx = Ctx {
            work: t.path(),
            reporter: &events,
        };
        let runs = Cell::new(0);
        let stage = |input, id| Double {
            input,
            runs: &runs,
            valid: true,
            fail: false,
            id,
        };
        let mut tr = Tracker::open(t.path()).unwrap();
        tr.run(&stage(3, StageId::TrainOn("oltp+tpcc".into())), &cx)
            .unwrap();
        let mut tr = Tracker::open(t.path()).unwrap();
        assert_eq!(tr.run(&stage(3, StageId::Train(None)), &cx).unwrap(), 6);
        assert_eq!(runs.get(), 1, "the same inputs under the old name: reused");
        assert!(tr.state().stages.contains_key("train"), "recorded anew");
        assert!(events
            .lines()
            .iter()
            .any(|l| l.contains("the same work was done as stage 'train @oltp+tpcc'")));
        tr.run(&stage(4, StageId::Train(Some("x".into()))), &cx)
            .unwrap();
        assert_eq!(runs.get(), 2, "other inputs: runs");
        tr.run(&stage(3, StageId::Gate), &cx).unwrap();
        assert_eq!(runs.get(), 3, "another kind of stage: runs");
        // Going back and forth between inputs under one name does the work once per input.
        tr.run(&stage(5, StageId::Train(None)), &cx).unwrap();
        assert_eq!(runs.get(), 4);
        let mut tr = Tracker::open(t.path()).unwrap();
        assert_eq!(tr.run(&stage(3, StageId::Train(None)), &cx).unwrap(), 6);
        assert_eq!(tr.run(&stage(5, StageId::Train(None)), &cx).unwrap(), 10);
        assert_eq!(runs.get(), 4, "superseded work is kept and found");
    }
}
