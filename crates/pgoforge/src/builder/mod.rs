//! Building server variants: configure with CMake, build the recipe's targets, keep the log, and cache.
//!
//! Every build is keyed by all its inputs — source hash, the recipe's build section, the variant, the
//! compiler and its version, the profile's hash — and lives in WORK/builds/<name>-<key>/. A finished
//! build writes build.json last; an unchanged request finds it and returns at once, a changed profile
//! gives a new key and a new build. A build that failed or was interrupted has no build.json and is
//! never taken for a finished one.

pub mod variant;

use std::fs::{self, File};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::recipe::Recipe;
use crate::source::{hex, Source};
use crate::toolchain::{Compiler, FlagFamily};
pub use variant::{FlagSet, ProfileInput, Stage, Variant};

/// Bumped when the way builds are made changes outside the flags (which are part of the key).
const FLAG_SCHEME: u32 = 1;

pub struct BuildRequest<'a> {
    pub recipe: &'a Recipe,
    pub source: &'a Source,
    pub variant: Variant,
    pub compiler: &'a Compiler,
    pub profile: Option<&'a ProfileInput>,
    pub work_dir: &'a Path,
    /// Parallel jobs (0: from cores and memory).
    pub jobs: usize,
    pub show_progress: bool,
}

/// A finished build (build.json).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BuildOutput {
    pub key: String,
    pub recipe: String,
    pub variant: String,
    pub compiler: Compiler,
    pub source_hash: String,
    pub profile_hash: Option<String>,
    pub dir: PathBuf,
    pub build_dir: PathBuf,
    pub binary: PathBuf,
    pub binary_size: u64,
    /// Where an instrumented binary writes its profiles.
    pub profile_gen_dir: Option<PathBuf>,
    pub flags: FlagSet,
    /// Warnings about functions or files without usable profile data (missing, or dropped because
    /// the control flow changed); reported, never hidden. GCC's "source locations ... have changed"
    /// is not one: it still uses those counts.
    pub missing_profile_warnings: u64,
    /// Wall time of the build, including earlier attempts that stopped unfinished in the same
    /// directory (their objects were reused).
    pub seconds: f64,
    /// 1, or more when an interrupted build was resumed.
    #[serde(default = "one")]
    pub attempts: u32,
    pub jobs: usize,
    /// The make targets this build has built.
    #[serde(default)]
    pub targets: Vec<String>,
    pub log: PathBuf,
    /// True when this result came from the cache.
    #[serde(skip)]
    pub cached: bool,
}

fn one() -> u32 {
    1
}

const ATTEMPT_START: &str = "=== pgoforge: build attempt started at unix time ";
const ATTEMPT_STOPPED: &str = "=== pgoforge: the attempt above stopped unfinished after ";

/// Earlier attempts of a build, read from the log they left.
#[derive(Debug, Default, PartialEq)]
struct Earlier {
    attempts: u32,
    /// Their known wall time.
    seconds: f64,
    /// The last attempt's time, not yet written in the log: from its start marker to the log's
    /// last write (`mtime`), which is when it stopped.
    unrecorded: Option<f64>,
}

fn earlier_attempts(log: &str, mtime: u64) -> Earlier {
    let mut e = Earlier::default();
    let mut open_since: Option<u64> = None;
    for line in log.lines() {
        if let Some(t) = line.strip_prefix(ATTEMPT_START) {
            e.attempts += 1;
            open_since = t.split_whitespace().next().and_then(|t| t.parse().ok());
        } else if let Some(d) = line.strip_prefix(ATTEMPT_STOPPED) {
            e.seconds += d
                .split_whitespace()
                .next()
                .and_then(|d| d.parse::<f64>().ok())
                .unwrap_or(0.0);
            open_since = None;
        }
    }
    // A log from before the markers existed: one attempt of unknown length.
    if e.attempts == 0 && !log.trim().is_empty() {
        e.attempts = 1;
    }
    if let Some(start) = open_since {
        let d = mtime.saturating_sub(start) as f64;
        e.seconds += d;
        e.unrecorded = Some(d);
    }
    e
}

/// Jobs for `make -j`: one per core, but no more than memory allows (about 1.5 GiB per job).
pub fn default_jobs() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mem_gb = fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemAvailable:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(4.0, |kb| kb as f64 / 1048576.0);
    cores.min(((mem_gb / 1.5) as usize).max(1))
}

/// Where a request's build lives, and its key, without building: (key, directory).
pub fn plan(req: &BuildRequest) -> Result<(String, PathBuf)> {
    let (key, dir, _) = locate(req)?;
    Ok((key, dir))
}

/// Checks the request and computes its key, directory and profile hash.
fn locate(req: &BuildRequest) -> Result<(String, PathBuf, Option<String>)> {
    let v = req.variant;
    if v.needs_profile() && req.profile.is_none() {
        bail!("variant {v} needs a profile: train the pgo-gen build first (or pass --profile)");
    }
    if !v.needs_profile() && req.profile.is_some() {
        bail!("variant {v} takes no profile");
    }
    if let Some(ProfileInput::Profdata(_)) = req.profile {
        if req.compiler.family != FlagFamily::Clang {
            bail!(
                "a .profdata profile is for clang builds; {} needs a gcda directory",
                req.compiler.label()
            );
        }
    }
    if let Some(ProfileInput::GccDir(_)) = req.profile {
        if req.compiler.family != FlagFamily::Gcc {
            bail!(
                "a gcda directory is for gcc builds; {} needs a merged .profdata",
                req.compiler.label()
            );
        }
    }
    let profile_hash = req.profile.map(crate::profile::content_hash).transpose()?;
    // The target list is left out of the key: it chooses what gets built, not how, and an
    // incremental make adds targets to a finished build (see below).
    let spec = crate::recipe::BuildSpec {
        targets: Vec::new(),
        ..req.recipe.build.clone()
    };
    #[derive(Serialize)]
    struct Key<'a> {
        scheme: u32,
        source: &'a str,
        build: &'a crate::recipe::BuildSpec,
        variant: String,
        cc: &'a Path,
        cc_version: &'a str,
        profile: Option<&'a str>,
        /// The variant's flags with placeholder paths: a change in how flags are made rebuilds.
        flags: variant::FlagSet,
    }
    // The profile's path stands in as a placeholder: its content hash is in the key already.
    let placeholder = ProfileInput::GccDir(PathBuf::new());
    let flags = variant::flags(&variant::FlagInputs {
        variant: v,
        compiler: req.compiler,
        pgo_style: req.recipe.build.pgo_style,
        gen_dir: Path::new("<gen>"),
        profile: req.profile.map(|_| &placeholder),
        build_dir: Path::new("<build>"),
        link_jobs: 0,
        version_suffix_arg: req.recipe.build.version_suffix_arg.as_deref(),
    });
    let key_json = serde_json::to_vec(&Key {
        scheme: FLAG_SCHEME,
        source: &req.source.hash,
        build: &spec,
        variant: v.to_string(),
        cc: &req.compiler.cc,
        cc_version: &req.compiler.version,
        profile: profile_hash.as_deref(),
        flags,
    })?;
    let key = hex(&Sha256::digest(&key_json))[..16].to_string();
    let name = format!(
        "{}-{}-{}-{key}",
        req.recipe.name,
        v.to_string().replace('+', "_"),
        req.compiler.label()
    );
    let dir = fs::canonicalize(req.work_dir)
        .unwrap_or_else(|_| req.work_dir.to_path_buf())
        .join("builds")
        .join(name);
    Ok((key, dir, profile_hash))
}

/// Builds a variant, or returns the cached build with the same inputs.
pub fn build(req: &BuildRequest) -> Result<BuildOutput> {
    let v = req.variant;
    let (key, dir, profile_hash) = locate(req)?;
    let done = dir.join("build.json");
    if let Ok(text) = fs::read_to_string(&done) {
        let mut out: BuildOutput =
            serde_json::from_str(&text).with_context(|| format!("reading {}", done.display()))?;
        let has_targets = req
            .recipe
            .build
            .targets
            .iter()
            .all(|t| out.targets.contains(t));
        if out.binary.is_file() && has_targets {
            out.cached = true;
            return Ok(out);
        }
    }
    fs::create_dir_all(dir.join("build")).with_context(|| format!("creating {}", dir.display()))?;
    // CMake and GCC's profile paths want one spelling of the directory: the real one.
    let dir = fs::canonicalize(&dir).with_context(|| format!("resolving {}", dir.display()))?;
    let build_dir = dir.join("build");
    let gen_dir = dir.join("profile-gen");
    let jobs = if req.jobs > 0 {
        req.jobs
    } else {
        default_jobs()
    };
    let flags = variant::flags(&variant::FlagInputs {
        variant: v,
        compiler: req.compiler,
        pgo_style: req.recipe.build.pgo_style,
        gen_dir: &gen_dir,
        profile: req.profile,
        build_dir: &build_dir,
        link_jobs: jobs,
        version_suffix_arg: req.recipe.build.version_suffix_arg.as_deref(),
    });
    let log_path = dir.join("build.log");
    // An interrupted attempt's log stays: its warnings belong to objects this attempt reuses.
    let earlier = match fs::metadata(&log_path) {
        Ok(m) => {
            let mtime = m.modified().map_or(0, crate::profile::unix_secs);
            let text = fs::read_to_string(&log_path)
                .with_context(|| format!("reading {}", log_path.display()))?;
            earlier_attempts(&text, mtime)
        }
        Err(_) => Earlier::default(),
    };
    let mut log = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&log_path)
        .with_context(|| format!("opening {}", log_path.display()))?;
    if let Some(d) = earlier.unrecorded {
        writeln!(log, "{ATTEMPT_STOPPED}{d:.0} s ===")?;
    }
    writeln!(log, "{ATTEMPT_START}{} ===", crate::profile::now_secs())?;
    let t0 = Instant::now();

    let cflags = flags.cflags.join(" ");
    let ldflags = flags.ldflags.join(" ");
    let mut configure = Command::new("cmake");
    configure
        .arg("-S")
        .arg(&req.source.dir)
        .arg("-B")
        .arg(&build_dir)
        .arg("-G")
        .arg(&req.recipe.build.generator)
        .arg(format!("-DCMAKE_C_COMPILER={}", req.compiler.cc.display()))
        .arg(format!(
            "-DCMAKE_CXX_COMPILER={}",
            req.compiler.cxx.display()
        ))
        .arg(format!("-DCMAKE_C_FLAGS={cflags}"))
        .arg(format!("-DCMAKE_CXX_FLAGS={cflags}"))
        .arg(format!("-DCMAKE_EXE_LINKER_FLAGS={ldflags}"))
        .arg(format!("-DCMAKE_SHARED_LINKER_FLAGS={ldflags}"))
        .arg(format!("-DCMAKE_MODULE_LINKER_FLAGS={ldflags}"))
        .args(&req.recipe.build.cmake_args)
        .args(&flags.cmake_defs);
    // ccache for builds without instrumentation (it hashes -fprofile-use data itself).
    if v.stage != Stage::PgoGen {
        if let Some(cc) = crate::toolchain::which("ccache") {
            configure.arg(format!("-DCMAKE_C_COMPILER_LAUNCHER={}", cc.display()));
            configure.arg(format!("-DCMAKE_CXX_COMPILER_LAUNCHER={}", cc.display()));
        }
    }
    writeln!(log, "$ {configure:?}")?;
    run_logged(&mut configure, &mut log, None).with_context(|| {
        format!(
            "configuring {} ({v}) failed; log {}:\n{}",
            req.recipe.name,
            log_path.display(),
            crate::server::tail(&log_path, 25)
        )
    })?;

    let bar = if req.show_progress {
        let b = ProgressBar::with_draw_target(Some(100), ProgressDrawTarget::stderr());
        b.set_style(
            ProgressStyle::with_template("{prefix} [{bar:40}] {pos:>3}% {elapsed_precise} {msg}")
                .expect("valid template")
                .progress_chars("=> "),
        );
        b.set_prefix(format!(
            "building {} {v} ({})",
            req.recipe.name,
            req.compiler.label()
        ));
        Some(b)
    } else {
        None
    };
    let mut make = Command::new("cmake");
    make.arg("--build")
        .arg(&build_dir)
        .arg("-j")
        .arg(jobs.to_string());
    for t in &req.recipe.build.targets {
        make.arg("--target").arg(t);
    }
    writeln!(log, "$ {make:?}")?;
    let built = run_logged(&mut make, &mut log, bar.as_ref());
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    built.with_context(|| {
        format!(
            "building {} ({v}) failed; log {}:\n{}",
            req.recipe.name,
            log_path.display(),
            crate::server::tail(&log_path, 30)
        )
    })?;

    let binary = build_dir.join(&req.recipe.build.binary);
    if !binary.is_file() {
        bail!(
            "the build finished but {} is missing; log {}",
            binary.display(),
            log_path.display()
        );
    }
    let text = fs::read_to_string(&log_path).unwrap_or_default();
    let missing = text
        .lines()
        .filter(|l| {
            l.contains("[-Wmissing-profile]")
                || (l.contains("[-Wcoverage-mismatch]")
                    && !l.contains("source locations for function"))
                || l.contains("[-Wprofile-instr-")
        })
        .count() as u64;
    let out = BuildOutput {
        key,
        recipe: req.recipe.name.clone(),
        variant: v.to_string(),
        compiler: req.compiler.clone(),
        source_hash: req.source.hash.clone(),
        profile_hash,
        binary_size: fs::metadata(&binary)?.len(),
        binary,
        profile_gen_dir: (v.stage == Stage::PgoGen).then_some(gen_dir),
        flags,
        missing_profile_warnings: missing,
        seconds: earlier.seconds + t0.elapsed().as_secs_f64(),
        attempts: earlier.attempts + 1,
        jobs,
        targets: req.recipe.build.targets.clone(),
        log: log_path,
        dir: dir.clone(),
        build_dir,
        cached: false,
    };
    let tmp = done.with_extension("json.tmp");
    fs::write(&tmp, serde_json::to_string_pretty(&out)?)?;
    fs::rename(&tmp, &done)?;
    Ok(out)
}

/// Runs a command with its output appended to the log; feeds `[ NN%]` lines to the bar.
fn run_logged(cmd: &mut Command, log: &mut File, bar: Option<&ProgressBar>) -> Result<()> {
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .with_context(|| format!("starting {:?}", cmd.get_program()))?;
    let stderr = child.stderr.take().expect("piped stderr");
    let mut err_log = log.try_clone()?;
    // stderr goes to the log from its own thread; warnings interleave with progress lines.
    let err_thread = std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = writeln!(err_log, "{line}");
        }
    });
    let stdout = child.stdout.take().expect("piped stdout");
    for line in BufReader::new(stdout).lines().map_while(Result::ok) {
        writeln!(log, "{line}")?;
        if let Some(b) = bar {
            if let Some(pct) = line
                .strip_prefix('[')
                .and_then(|r| r.split('%').next())
                .and_then(|n| n.trim().parse::<u64>().ok())
            {
                b.set_position(pct.min(100));
            }
        }
    }
    let _ = err_thread.join();
    let status = child.wait()?;
    if !status.success() {
        bail!("{:?} exited with {status}", cmd.get_program());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earlier_attempts_add_up_from_the_log() {
        assert_eq!(earlier_attempts("", 100), Earlier::default());
        // A log without markers (older pgoforge): one attempt, length unknown.
        let old = earlier_attempts("[ 10%] Building C object a.o\n", 100);
        assert_eq!((old.attempts, old.seconds, old.unrecorded), (1, 0.0, None));
        // Stopped once (recorded on resume), then stopped again: the open one ends at mtime.
        let log = format!(
            "{ATTEMPT_START}1000 ===\n[ 5%] x\n{ATTEMPT_STOPPED}300 s ===\n{ATTEMPT_START}2000 ===\n[ 50%] y\n"
        );
        let e = earlier_attempts(&log, 2450);
        assert_eq!(e.attempts, 2);
        assert_eq!(e.unrecorded, Some(450.0));
        assert_eq!(e.seconds, 750.0);
    }
}
