//! The run's stage state file (`WORK/run-state.json`): one record per finished stage, keyed by a
//! hash of the stage's inputs. A rerun skips a stage whose inputs are unchanged and whose outputs
//! still exist; everything after a changed stage runs again. The file is replaced atomically after
//! each stage, so an interrupted run never records a stage it did not finish.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::source::hex;

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

pub struct Tracker<'a> {
    path: PathBuf,
    state: State,
    pub timings: Vec<StageTiming>,
    announce: &'a dyn Fn(&str),
}

/// A short hash of any serializable value.
pub fn inputs_hash(inputs: &impl Serialize) -> Result<String> {
    Ok(hex(&Sha256::digest(serde_json::to_vec(inputs)?))[..16].to_string())
}

impl<'a> Tracker<'a> {
    pub fn state_path(work: &Path) -> PathBuf {
        work.join("run-state.json")
    }

    /// Opens (or starts) the state of the run in `work`.
    pub fn open(work: &Path, announce: &'a dyn Fn(&str)) -> Result<Tracker<'a>> {
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
            path,
            state,
            timings: Vec::new(),
            announce,
        })
    }

    pub fn state(&self) -> &State {
        &self.state
    }

    /// The recorded output of a finished stage.
    pub fn output<T: DeserializeOwned>(&self, name: &str) -> Option<T> {
        let r = self.state.stages.get(name)?;
        serde_json::from_value(r.output.clone()).ok()
    }

    fn save(&self) -> Result<()> {
        let tmp = self.path.with_extension("json.tmp");
        fs::write(&tmp, serde_json::to_string_pretty(&self.state)?)
            .with_context(|| format!("writing {}", tmp.display()))?;
        fs::rename(&tmp, &self.path).with_context(|| format!("writing {}", self.path.display()))
    }

    /// Runs stage `name` unless a record with the same inputs exists and `still_valid` accepts its
    /// output (files may have been deleted since).
    pub fn stage<T: Serialize + DeserializeOwned>(
        &mut self,
        name: &str,
        inputs: &impl Serialize,
        still_valid: impl Fn(&T) -> bool,
        work: impl FnOnce() -> Result<T>,
    ) -> Result<T> {
        let key = inputs_hash(inputs)?;
        let t0 = Instant::now();
        if let Some(r) = self.state.stages.get(name) {
            if r.inputs == key {
                if let Ok(out) = serde_json::from_value::<T>(r.output.clone()) {
                    if still_valid(&out) {
                        (self.announce)(&format!(
                            "{name}: done before ({}), reused",
                            human(r.seconds)
                        ));
                        self.timings.push(StageTiming {
                            stage: name.into(),
                            seconds: t0.elapsed().as_secs_f64(),
                            work_seconds: r.seconds,
                            reused: true,
                        });
                        return Ok(out);
                    }
                }
            }
        }
        (self.announce)(&format!("{name}: running"));
        let out = work().with_context(|| format!("stage {name} failed"))?;
        let seconds = t0.elapsed().as_secs_f64();
        self.state.stages.insert(
            name.into(),
            StageRecord {
                inputs: key,
                seconds,
                finished: crate::profile::now_secs(),
                output: serde_json::to_value(&out)?,
            },
        );
        self.save()?;
        (self.announce)(&format!("{name}: done in {}", human(seconds)));
        self.timings.push(StageTiming {
            stage: name.into(),
            seconds,
            work_seconds: seconds,
            reused: false,
        });
        Ok(out)
    }
}

/// `1 h 02 min`, `14 min 03 s`, `12.3 s`.
pub fn human(s: f64) -> String {
    let t = s.round() as u64;
    if t >= 3600 {
        format!("{} h {:02} min", t / 3600, (t % 3600) / 60)
    } else if t >= 60 {
        format!("{} min {:02} s", t / 60, t % 60)
    } else {
        format!("{s:.1} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn finished_stages_are_reused_and_changed_inputs_rerun() {
        let t = tempfile::tempdir().unwrap();
        let runs = Cell::new(0);
        let step = |tr: &mut Tracker, input: u32| -> u32 {
            tr.stage(
                "s",
                &input,
                |_: &u32| true,
                || {
                    runs.set(runs.get() + 1);
                    Ok(input * 2)
                },
            )
            .unwrap()
        };
        let mut tr = Tracker::open(t.path(), &|_| {}).unwrap();
        assert_eq!(step(&mut tr, 3), 6);
        // A new process reads the same state: nothing reruns.
        let mut tr = Tracker::open(t.path(), &|_| {}).unwrap();
        assert_eq!(step(&mut tr, 3), 6);
        assert_eq!(runs.get(), 1);
        assert!(tr.timings[0].reused);
        assert_eq!(step(&mut tr, 4), 8);
        assert_eq!(runs.get(), 2);
    }

    #[test]
    fn a_failed_stage_is_not_recorded_and_invalid_outputs_rerun() {
        let t = tempfile::tempdir().unwrap();
        let mut tr = Tracker::open(t.path(), &|_| {}).unwrap();
        let e = tr
            .stage("s", &1, |_: &u32| true, || anyhow::bail!("disk full"))
            .unwrap_err();
        assert!(format!("{e:#}").contains("stage s failed: disk full"));
        assert!(tr.output::<u32>("s").is_none());
        tr.stage("s", &1, |_: &u32| true, || Ok(5)).unwrap();
        let mut tr = Tracker::open(t.path(), &|_| {}).unwrap();
        let v = tr.stage("s", &1, |_: &u32| false, || Ok(7)).unwrap();
        assert_eq!(v, 7, "an output the check rejects is made again");
        fs::write(Tracker::state_path(t.path()), "{torn").unwrap();
        let e = Tracker::open(t.path(), &|_| {}).err().unwrap();
        assert!(format!("{e:#}").contains("move it away"), "{e:#}");
    }
}
