//! `pgoforge follow`: one cycle of keeping a signed apt repository at Debian's newest release of
//! the server it publishes, unattended (a systemd timer runs it; contrib/systemd/). The cycle:
//!
//! 1. the newest published build and its profiles, from the repository itself
//!    (`repository::published`: the sidecar `publish` kept beside the pool);
//! 2. the newest release of its recipe's source the mirror actually serves (`source::release`:
//!    every file checked) — not newer than the published one: nothing to do;
//! 3. `pgoforge run` on that release with the published profiles (`--profile-from`: one
//!    optimized build, BOLT from the old BOLT profile; a profile the compiler finds too stale is
//!    retrained, `--retrain-if-stale`), the gate, and the benchmark against Debian's own server
//!    of the same release, which is the run's baseline (`--baseline debian`: no baseline build —
//!    the gate's and MTR's reference and the A/A control are Debian's binary, the question the
//!    cycle asks anyway); a child process, so its work dir, resume and lock are run's own;
//! 4. publish when the gate passed and the server is not slower than Debian's beyond the margin
//!    (verdict.rs); else the repository stays as it was and the hosts keep running Debian's
//!    server of the new release (the .deb's selector runs the optimized binary only beside the
//!    release it was built from).
//!
//! One cycle at a time (a lock on the follow work dir); a cycle cut short resumes where the run
//! stopped; a release already published is a no-op. Every cycle ends with one status line (the
//! journal's) and `follow-status.json`.

pub mod status;
pub mod verdict;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};

use crate::infra::exit::{ExitStatus, Stop};
use crate::package::sidecar;
use crate::repository::{self, published, KeyChoice};
use crate::source::release::{self, Want};
use status::{Outcome, Status};

pub struct FollowRequest<'a> {
    pub repo: &'a Path,
    /// Follow's own directory: its lock, status, and the runs (`WORK/run`).
    pub work: &'a Path,
    pub suite: &'a str,
    pub key: KeyChoice<'a>,
    pub url: Option<&'a str>,
    /// The non-inferiority margin against Debian's server, a fraction.
    pub margin: f64,
    /// More `pgoforge run` options (after `--`), e.g. the benchmark's.
    pub run_args: &'a [String],
    /// The pgoforge executable the run and package steps call.
    pub exe: PathBuf,
}

/// What the cycle builds from: the newest published build and its opened sidecar.
struct Last {
    build: published::Build,
    sidecar: PathBuf,
    record: sidecar::RebuildRecord,
    recipe: crate::recipe::Recipe,
    recipe_file: PathBuf,
}

/// One cycle. Errors before any work (bad input) are returned; everything after the lock ends
/// in a [`Status`], saved and returned.
pub fn cycle(req: &FollowRequest) -> Result<Status> {
    std::fs::create_dir_all(req.work)
        .with_context(|| format!("creating {}", req.work.display()))?;
    let _lock = crate::infra::lock::WorkLock::acquire(req.work).map_err(|e| Stop::Busy {
        share: 0.0,
        message: format!("another follow cycle is running: {e:#}"),
    })?;
    let last = last_published(req)?;
    let started = Instant::now();
    let mut st = Status {
        outcome: Outcome::Failed,
        message: String::new(),
        published_before: Some(last.build.fits.clone()),
        newest: None,
        published: None,
        verdict: None,
        run_dir: None,
        run_exit: None,
        started: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        seconds: 0,
        stages: Vec::new(),
    };
    if let Err(e) = steps(req, &last, &mut st) {
        st.outcome = match e.downcast_ref::<Stop>() {
            Some(Stop::Busy { .. }) => Outcome::Busy,
            _ => Outcome::Failed,
        };
        st.message = format!("{e:#}");
    }
    st.seconds = started.elapsed().as_secs();
    st.save(req.work)?;
    Ok(st)
}

/// The newest published build; refused (exit 2) when the repository has none with profiles.
fn last_published(req: &FollowRequest) -> Result<Last> {
    if !req.repo.join(repository::KEY_FILE).is_file() {
        crate::usage!(
            "{} is not a repository `pgoforge publish` made (no {}): publish the first build \
             with `pgoforge publish PACKAGE.tar.zst --repo {}`, then follow it",
            req.repo.display(),
            repository::KEY_FILE,
            req.repo.display()
        );
    }
    let Some(build) = published::newest(req.repo)? else {
        crate::usage!(
            "{} has no published profile to build the next release from: publish a package \
             tarball (its NAME.rebuild.tar.zst beside it) with `pgoforge publish NAME.tar.zst \
             --repo {}` — .debs alone carry no profiles",
            req.repo.display(),
            req.repo.display()
        );
    };
    let Some(side) = build.sidecar_path(req.repo).filter(|p| p.is_file()) else {
        crate::usage!(
            "the newest published build ({} {}) was published as a .deb without its tarball, \
             so its profiles are not in {}: publish its NAME.tar.zst (the sidecar beside it) \
             again",
            build.package,
            build.version,
            req.repo.display()
        );
    };
    let into = req.work.join("published-profile");
    let _ = std::fs::remove_dir_all(&into);
    let opened = sidecar::open(&side, &into)?;
    let (recipe, recipe_file) =
        offered_headers(opened.recipe()?, opened.root.join("recipe.toml"), req.work)?;
    Ok(Last {
        recipe_file,
        record: opened.record,
        recipe,
        sidecar: side,
        build,
    })
}

/// The published recipe, with the precompiled headers this pgoforge's recipe of the same name
/// offers on request when the published one offers none (its sidecar was written before recipes
/// offered them): they are a way of building, not part of what was built and measured — every
/// cycle builds a new release, a new build key either way — and they take a third off the
/// cycle's one build (docs/bench/mariadb-pch.md). The recipe so completed is written to the
/// follow work dir, for the run to read.
fn offered_headers(
    mut recipe: crate::recipe::Recipe,
    file: PathBuf,
    work: &Path,
) -> Result<(crate::recipe::Recipe, PathBuf)> {
    if recipe.offers_precompiled_headers() {
        return Ok((recipe, file));
    }
    let ours = match crate::recipe::Recipe::embedded(&recipe.name) {
        Ok(r) if r.family == recipe.family && !r.optional_precompile_headers.is_empty() => r,
        _ => return Ok((recipe, file)),
    };
    recipe.optional_precompile_headers = ours.optional_precompile_headers;
    let path = work.join("recipe.toml");
    let text = toml::to_string(&recipe).context("writing the recipe as TOML")?;
    crate::infra::fs::write_atomic(&path, text)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok((recipe, path))
}

fn steps(req: &FollowRequest, last: &Last, st: &mut Status) -> Result<()> {
    let check = release::resolve(&last.recipe.source, &Want::Newest)?.context(
        "the published build's recipe is not a Debian source: follow has no releases to follow",
    )?;
    let newest = check.building.clone();
    st.newest = Some(newest.clone());
    if release::compare(&newest, &last.build.fits) != std::cmp::Ordering::Greater {
        st.outcome = Outcome::UpToDate;
        st.message = format!(
            "{} {} is published ({}); the mirror serves nothing newer",
            check.package, last.build.fits, last.build.version
        );
        return Ok(());
    }
    let run_work = req.work.join("run");
    let (code, out) = run(req, last, &newest, &run_work)?;
    st.run_exit = Some(code);
    if let Some(o) = &out {
        st.run_dir = Some(o.run_dir.clone());
        st.stages = o
            .timings
            .iter()
            .map(|t| (t.stage.clone(), t.work_seconds))
            .collect();
    }
    if code == ExitStatus::Busy.code() {
        return Err(Stop::Busy {
            share: 0.0,
            message: format!(
                "the machine stayed busy: {newest} not benchmarked; the next cycle resumes"
            ),
        }
        .into());
    }
    let gate_stopped = code == ExitStatus::GateStopped.code();
    let Some(out) = out.filter(|_| !gate_stopped) else {
        let (outcome, what) = if gate_stopped {
            (
                Outcome::Held,
                "stopped at the gate: the new build computes differently from the baseline",
            )
        } else {
            (Outcome::Failed, "failed")
        };
        st.outcome = outcome;
        st.message = format!(
            "{newest}: the run {what} (exit {code}; its log is above, its work dir {}); nothing \
             published",
            run_work.display()
        );
        return Ok(());
    };
    let candidate = candidate(last, &out)?;
    let v = verdict::judge(&out.run_dir, &candidate, req.margin)?;
    let ok = v.not_slower();
    let gains = v.gains();
    st.verdict = Some(v);
    if !ok {
        st.outcome = Outcome::Held;
        st.message = format!(
            "{newest}: {candidate} not shown within -{}% of Debian's server ({gains}); nothing \
             published — hosts run Debian's {newest} until a cycle shows it",
            req.margin * 100.0
        );
        return Ok(());
    }
    let tarball = package(req, &run_work, &candidate)?;
    let p = repository::publish(&repository::PublishRequest {
        repo: req.repo,
        inputs: std::slice::from_ref(&tarball),
        suite: req.suite,
        key: req.key,
        url: req.url,
    })?;
    let e = p.entries.first().context("publish reported no entry")?;
    st.published = Some(e.version.clone());
    st.outcome = Outcome::Published;
    st.message = format!(
        "{newest}: published {} {} ({candidate}; against Debian's server: {gains}; not slower \
         than -{}%)",
        e.package,
        e.version,
        req.margin * 100.0
    );
    Ok(())
}

/// The contender that stands for the published build in the new run: the same variant (a
/// bolt-ready build is recorded with its `+bolt`, the name of its BOLTed contender; packaged
/// unBOLTed, it is the contender without), or its unBOLTed build when BOLT failed this time.
fn candidate(last: &Last, out: &crate::pipeline::Outcome) -> Result<String> {
    let recorded = last.record.variant.clone();
    let unbolted = recorded.replace("+bolt", "");
    // A bolt-ready build packaged as linked is the unBOLTed contender.
    let order = if last.record.bolted {
        [recorded, unbolted]
    } else {
        [unbolted, recorded]
    };
    order
        .into_iter()
        .find(|n| {
            out.contenders
                .iter()
                .any(|c| &c.name == n && c.build.is_some())
        })
        .with_context(|| {
            format!(
                "the run built no {} contender (its contenders: {})",
                last.record.variant,
                out.contenders
                    .iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
}

/// `pgoforge run` on `version` with the published profiles; its exit status and outcome (None
/// when it printed none).
fn run(
    req: &FollowRequest,
    last: &Last,
    version: &str,
    work: &Path,
) -> Result<(i32, Option<crate::pipeline::Outcome>)> {
    let mut c = Command::new(&req.exe);
    c.arg("run")
        .arg("--recipe")
        .arg(&last.recipe_file)
        .args(["--source-version", version])
        .args(["--compiler", &last.record.toolchain.compiler])
        .args(["--variants", &last.record.variant])
        .arg("--profile-from")
        .arg(&last.sidecar)
        .args(["--retrain-if-stale", "--no-package", "--allow-noisy"])
        .arg("--work-dir")
        .arg(work);
    // A cycle's defaults, each unless `-- RUN_OPTIONS` gives that option itself (run refuses an
    // option given twice).
    let given = |flags: &[&str]| {
        req.run_args.iter().any(|a| {
            flags
                .iter()
                .any(|f| a == f || a.strip_prefix(f).is_some_and(|v| v.starts_with('=')))
        })
    };
    if !given(&["--baseline"]) {
        // Debian's server is the question anyway: no baseline build.
        c.args(["--baseline", "debian"]);
    }
    if !given(&["--workloads"]) {
        // The workloads the profile was trained on: the question is "not slower", and a
        // third workload is a third of the benchmark's time.
        c.args(["--workloads", "oltp_point_select,oltp_read_write"]);
    }
    if last.recipe.offers_precompiled_headers() && !given(&["--precompiled-headers"]) {
        // A third off the build, the cycle's longest step (docs/bench/mariadb-pch.md).
        c.arg("--precompiled-headers");
    }
    if !given(&["--aa", "--no-aa"]) {
        // The verdict is Debian's server against the candidate; the A/A control would be a
        // third of the benchmark (12 rounds of three servers instead of 8 of two: 15 min against
        // 7 on 2 cores). Without it the report pools the comparison's own scatter for its noise.
        c.arg("--no-aa");
    }
    c.args(req.run_args);
    // The run's progress and summary are the cycle's log (the journal's, under the timer); its
    // outcome is read from the record it writes last, removed first so that a run which stops
    // early is never read as an earlier run's.
    let record = crate::pipeline::outcome::outcome_path(work);
    match std::fs::remove_file(&record) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(e).with_context(|| format!("removing {}", record.display()))
        }
        _ => {}
    }
    let status = c
        .stdin(Stdio::null())
        .status()
        .with_context(|| format!("running {} run", req.exe.display()))?;
    let code = status.code().unwrap_or(ExitStatus::Failure.code());
    let outcome = record
        .is_file()
        .then(|| crate::pipeline::Outcome::load(work))
        .transpose()?;
    Ok((code, outcome))
}

/// `pgoforge package CANDIDATE` in the run's work dir: the tarball (and its sidecar beside it).
fn package(req: &FollowRequest, work: &Path, candidate: &str) -> Result<PathBuf> {
    let out = Command::new(&req.exe)
        .args(["package", candidate, "--json", "--work-dir"])
        .arg(work)
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("running {} package", req.exe.display()))?;
    if !out.status.success() {
        anyhow::bail!(
            "pgoforge package {candidate} failed (exit {:?}); nothing published",
            out.status.code()
        );
    }
    let p: crate::package::Package =
        serde_json::from_slice(&out.stdout).context("reading pgoforge package's JSON")?;
    Ok(p.path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recipe::Recipe;

    #[test]
    fn a_recipe_published_before_recipes_offered_precompiled_headers_gets_them_from_ours() {
        let work = tempfile::tempdir().unwrap();
        let published = work.path().join("published.toml");
        let mut old = Recipe::embedded(crate::recipe::DEFAULT).unwrap();
        let offered = std::mem::take(&mut old.optional_precompile_headers);
        assert!(!offered.is_empty());
        let (r, file) = offered_headers(old.clone(), published.clone(), work.path()).unwrap();
        assert_eq!(r.optional_precompile_headers, offered);
        assert_eq!(
            r.build, old.build,
            "what is built is the published recipe's"
        );
        assert_eq!(file, work.path().join("recipe.toml"));
        let back = Recipe::load(file.to_str().unwrap()).unwrap();
        assert_eq!(back, r, "the run reads the completed recipe");
        // A recipe that has its own (offered or used), or no namesake here, is left as it is.
        for kept in [r.clone(), {
            let mut o = old.clone();
            o.name = "my-mariadb".into();
            o
        }] {
            let (same, f) = offered_headers(kept.clone(), published.clone(), work.path()).unwrap();
            assert_eq!((same, f), (kept, published.clone()));
        }
    }
}
