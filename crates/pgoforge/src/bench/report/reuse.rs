//! "Keeping up with releases": what a run that reused an earlier release's profiles
//! (`run --profile-from`) records beside its benchmark — where the profiles came from, how much
//! of them each optimized build found stale (the compiler's own count), and how much of the
//! binary BOLT's reused profile still covered. Written into the run directory by the run
//! (pipeline/stages/bench.rs) so that `pgoforge report` shows it again; plain fields, so the
//! report depends on no pipeline type (the builds' staleness is
//! builder/staleness.rs's [`StaleShare`], the one type the run's warning also reads).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::builder::staleness::StaleShare;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ProfileReuse {
    /// The package (or sidecar) the profiles were taken from.
    pub from: String,
    /// The release they were trained on (the source's origin) and by which compiler.
    pub trained_on: String,
    pub compiler_version: String,
    /// The training's phases.
    pub training: Vec<String>,
    /// Each optimized build's staleness against the reused profile.
    pub builds: Vec<StaleShare>,
    /// BOLT's coverage of each binary it optimized with the reused BOLT profile.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub bolt: Vec<BoltCoverage>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BoltCoverage {
    pub contender: String,
    /// BOLT's own sentence ("N out of M functions in the binary (X%) have non-empty execution
    /// profile").
    pub coverage: String,
}

impl ProfileReuse {
    pub fn lead(&self) -> String {
        format!(
            "Keeping up with releases: this run did not train. Its optimized builds reuse the \
             profiles of {} (trained on {}, {}), so it made one optimized build instead of an \
             instrumented build, a training and an optimized build.",
            self.from, self.trained_on, self.compiler_version
        )
    }

    /// One line per build and per BOLTed binary, then what to do when it is too stale.
    pub fn lines(&self) -> Vec<String> {
        let mut v: Vec<String> = self.builds.iter().map(StaleShare::sentence).collect();
        v.extend(
            self.bolt
                .iter()
                .map(|b| format!("{}: BOLT's reused profile: {}", b.contender, b.coverage)),
        );
        if !self.training.is_empty() {
            v.push(format!(
                "training of the reused profile: {}",
                self.training.join("; ")
            ));
        }
        let over = self.builds.iter().any(|b| b.share_pct >= b.threshold_pct);
        v.push(if over {
            "the profile is stale at the threshold: `pgoforge run --retrain-if-stale` with the \
             same --profile-from trains this release's own (the source and baseline built are \
             reused)"
                .into()
        } else {
            "below the threshold: reuse is the cheap path; `--retrain-if-stale` retrains only when \
             a release changes more (--stale-threshold sets where)"
                .into()
        });
        v
    }
}

/// Where a run directory keeps it.
pub fn copy_in_run_dir(run_dir: &Path) -> PathBuf {
    run_dir.join("profile-reuse.json")
}

pub fn read_copy(run_dir: &Path) -> anyhow::Result<Option<ProfileReuse>> {
    crate::infra::fs::read_json_if_present(
        &copy_in_run_dir(run_dir),
        "delete it to report without it",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reuse(share: f64) -> ProfileReuse {
        ProfileReuse {
            from: "mariadb-10.11.18-pgo+lto+bolt-clang-22.tar.zst".into(),
            trained_on: "Debian source package mariadb 1:10.11.18-0+deb12u1".into(),
            compiler_version: "Debian clang version 22.1.8".into(),
            training: vec!["oltp_point_select 60s 4 threads prepared".into()],
            builds: vec![StaleShare {
                variant: "pgo+lto".into(),
                mismatched: 42,
                with_counts: Some(5000),
                share_pct: share,
                threshold_pct: 10.0,
                hot: Some((3, 100)),
                hottest: vec![("open_table".into(), Some(123456))],
            }],
            bolt: vec![BoltCoverage {
                contender: "pgo+lto+bolt".into(),
                coverage: "2874 out of 41000 functions in the binary (7.0%) have non-empty \
                           execution profile"
                    .into(),
            }],
        }
    }

    #[test]
    fn says_what_was_reused_how_stale_and_what_to_do() {
        let r = reuse(0.8);
        assert!(r
            .lead()
            .contains("mariadb-10.11.18-pgo+lto+bolt-clang-22.tar.zst"));
        let lines = r.lines().join("\n");
        assert!(lines.contains("pgo+lto: 42 function(s) of the 5000 functions with counts"));
        assert!(lines
            .contains("(0.8 %; threshold 10 %), 3 of the profile's 100 hottest by block count"));
        assert!(lines.contains("open_table (up to 123456)"));
        assert!(lines.contains("pgo+lto+bolt: BOLT's reused profile: 2874 out of 41000"));
        assert!(lines.contains("below the threshold"));
        let stale = reuse(12.5).lines().join("\n");
        assert!(stale.contains("--retrain-if-stale` with the same --profile-from"));
    }

    #[test]
    fn a_run_directory_keeps_it_and_an_old_one_has_none() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(read_copy(d.path()).unwrap(), None);
        crate::infra::fs::write_json(&copy_in_run_dir(d.path()), &reuse(1.0)).unwrap();
        assert_eq!(read_copy(d.path()).unwrap(), Some(reuse(1.0)));
        std::fs::write(copy_in_run_dir(d.path()), "{ truncated").unwrap();
        let e = read_copy(d.path()).unwrap_err().to_string();
        assert!(e.contains("profile-reuse.json"), "{e}");
    }
}
