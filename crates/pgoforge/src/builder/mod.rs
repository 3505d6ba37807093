//! Building server variants: configure with CMake, build the recipe's targets, keep the log, and cache.
//!
//! Every build is keyed by all its inputs — source hash, the recipe's build section, the variant, the
//! compiler and its version, the profile's hash — and lives in WORK/builds/<name>-<key>/. A finished
//! build writes build.json last; an unchanged request finds it and returns at once, a changed profile
//! gives a new key and a new build. A build that failed or was interrupted has no build.json and is
//! never taken for a finished one.

pub mod cluster;
pub mod codegen;
pub mod host;
pub mod opt_level;
pub mod paths;
pub mod pch;
pub mod relative;
pub mod staleness;
pub mod variant;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::infra::fs::hex;
use crate::infra::runner::{Tool, ToolError};
use crate::recipe::Recipe;
use crate::source::Source;
pub use crate::toolchain::ProfileInput;
use crate::toolchain::{Compiler, FlagFamily};
pub use variant::{FlagSet, PgoPhase, Variant};

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
    /// Told the build's percent as make reports it.
    pub progress: Option<&'a dyn Fn(u64)>,
    /// A build cluster (sccache-dist) the compiles may go to, where [`cluster::placement`]
    /// allows; not part of the key (the objects are the same).
    pub cluster: Option<&'a cluster::Cluster>,
    /// How the compiles name their sources: as the profile was trained
    /// ([`relative::SourcePaths::of_profile`]); not part of the key.
    pub source_paths: relative::SourcePaths,
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
    /// What a build cluster compiled of it (absent: built here only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distributed: Option<cluster::Distributed>,
    /// The build host (`--build-host`) it was built on (absent: built here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub built_on: Option<String>,
    /// Built with the source and build directories mapped to fixed names and the source's date
    /// (builder/paths.rs): the same inputs give the same binary in any work dir. False for
    /// builds made before 2026-12-05, whose binaries name the paths they were built at.
    #[serde(default)]
    pub path_neutral: bool,
    /// How the compiles named their sources (builder/relative.rs); absent in builds made
    /// before 2026-12-05: absolute.
    #[serde(default)]
    pub source_paths: relative::SourcePaths,
    /// The profile was trained in another source directory and its static-function records
    /// were moved to this one (absent: used as stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_relocated: Option<paths::Relocation>,
    /// The profile as given (the store's, or `--profile`'s path): what a package's rebuild
    /// sidecar copies (absent in builds made before 2026-12-05).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_path: Option<PathBuf>,
    /// The functions whose profile the compiler dropped because their code no longer matched
    /// it (builds with a profile, since 2026-12-05).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale: Option<staleness::Staleness>,
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
    let mem_gb =
        crate::infra::fs::meminfo_kb("MemAvailable").map_or(4.0, |kb| kb as f64 / 1048576.0);
    cores.min(((mem_gb / 1.5) as usize).max(1))
}

/// Where a request's build lives, and its key, without building: (key, directory).
pub fn plan(req: &BuildRequest) -> Result<(String, PathBuf)> {
    let (key, dir, _) = locate(req)?;
    Ok((key, dir))
}

/// Whether `variant`, `profile` and `compiler` go together: needs no source, so `pgoforge build`
/// checks it before fetching anything.
pub fn check_inputs(v: Variant, profile: Option<&ProfileInput>, compiler: &Compiler) -> Result<()> {
    if matches!(v.phase, PgoPhase::CsGen | PgoPhase::CsUse) && compiler.family != FlagFamily::Clang
    {
        bail!(
            "variant {v} is context-sensitive PGO, which only clang has; build it with \
             --compiler clang, or choose pgo or pgo+lto for {}",
            compiler.label()
        );
    }
    match profile {
        None if v.needs_profile() => bail!(
            "variant {v} needs a profile: give --profile (the gcda directory or .profdata file \
             `pgoforge train` stored), or use `pgoforge run`, which trains one"
        ),
        Some(_) if !v.needs_profile() => bail!("variant {v} takes no profile"),
        Some(p) if !p.path().exists() => bail!(
            "--profile {} does not exist (give the gcda directory or .profdata file that \
             `pgoforge train` stored)",
            p.path().display()
        ),
        Some(ProfileInput::Profdata(_)) if compiler.family != FlagFamily::Clang => bail!(
            "a .profdata profile is for clang builds; {} needs a gcda directory",
            compiler.label()
        ),
        Some(ProfileInput::GccDir(_)) if compiler.family != FlagFamily::Gcc => bail!(
            "a gcda directory is for gcc builds; {} needs a merged .profdata",
            compiler.label()
        ),
        _ => Ok(()),
    }
}

/// Checks the request and computes its key, directory and profile hash.
fn locate(req: &BuildRequest) -> Result<(String, PathBuf, Option<String>)> {
    let v = req.variant;
    check_inputs(v, req.profile, req.compiler)?;
    let profile_hash = req.profile.map(ProfileInput::content_hash).transpose()?;
    // The target list is left out of the key: it chooses what gets built, not how, and an
    // incremental make adds targets to a finished build (see below). So is the recipe's default
    // compiler: the compiler actually used is in the key below.
    let spec = crate::recipe::BuildSpec {
        targets: Vec::new(),
        default_compiler: None,
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
        partial_training: req.recipe.build.profile_partial_training,
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
    if let Some(out) = cached(req, &dir) {
        return Ok(out);
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
    let remote = match cluster::placement(v, req.compiler, req.cluster) {
        cluster::Placement::Cluster { .. } => req.cluster,
        cluster::Placement::Local { .. } => None,
    };
    // The cluster's cores set -j for the compiles; links (LTO's partitions) stay at the local
    // cores.
    let compile_jobs = remote.map_or(jobs, |c| jobs.max(c.cpus as usize));
    let relocated = relocate_profile(req, &dir)?;
    let launcher = source_launcher(req, &dir)?;
    let flags = variant::flags(&variant::FlagInputs {
        variant: v,
        compiler: req.compiler,
        pgo_style: req.recipe.build.pgo_style,
        gen_dir: &gen_dir,
        profile: relocated.as_ref().map(|(p, _)| p).or(req.profile),
        build_dir: &build_dir,
        link_jobs: jobs,
        version_suffix_arg: req.recipe.build.version_suffix_arg.as_deref(),
        partial_training: req.recipe.build.profile_partial_training,
    });
    let log_path = dir.join("build.log");
    let earlier = start_attempt(&log_path)?;
    let t0 = Instant::now();

    let before = remote.and_then(|c| cluster::stats(&c.sccache));
    configure(
        req,
        &build_dir,
        &flags,
        remote,
        launcher.as_deref(),
        &log_path,
    )?;
    compile(req, &build_dir, compile_jobs, &log_path)?;

    let binary = build_dir.join(&req.recipe.build.binary);
    if !binary.is_file() {
        bail!(
            "the build finished but {} is missing; log {}",
            binary.display(),
            log_path.display()
        );
    }
    let distributed = remote.and_then(|c| {
        let after = cluster::stats(&c.sccache)?;
        Some(cluster::Distributed::between(
            &c.scheduler,
            before.unwrap_or_default(),
            after,
        ))
    });
    let out = BuildOutput {
        key,
        recipe: req.recipe.name.clone(),
        variant: v.to_string(),
        compiler: req.compiler.clone(),
        source_hash: req.source.hash.clone(),
        profile_hash,
        binary_size: fs::metadata(&binary)?.len(),
        binary,
        profile_gen_dir: v.instrumented().then_some(gen_dir),
        flags,
        missing_profile_warnings: missing_profile_warnings(&log_path),
        seconds: earlier.seconds + t0.elapsed().as_secs_f64(),
        attempts: earlier.attempts + 1,
        jobs: compile_jobs,
        targets: req.recipe.build.targets.clone(),
        distributed,
        built_on: None,
        path_neutral: !paths::prefix_maps(req.compiler.family, &req.source.dir, &build_dir)
            .is_empty(),
        source_paths: match launcher {
            Some(_) => relative::SourcePaths::Relative,
            None => relative::SourcePaths::Absolute,
        },
        profile_relocated: relocated.map(|(_, r)| r),
        profile_path: req.profile.map(|p| p.path().to_path_buf()),
        stale: req
            .profile
            .map(|_| staleness::of_log(&fs::read_to_string(&log_path).unwrap_or_default())),
        log: log_path,
        dir: dir.clone(),
        build_dir,
        cached: false,
    };
    crate::infra::fs::write_json(&dir.join("build.json"), &out)?;
    Ok(out)
}

/// The launcher that names the sources relative (builder/relative.rs), when the request asks
/// for it; an earlier attempt's objects compiled the other way are removed.
fn source_launcher(req: &BuildRequest, dir: &Path) -> Result<Option<PathBuf>> {
    let build_dir = dir.join("build");
    let before = dir.join(relative::LAUNCHER).is_file();
    let launcher = match req.source_paths {
        relative::SourcePaths::Relative => relative::prepare(dir, &req.source.dir)?,
        relative::SourcePaths::Absolute => {
            relative::remove(dir)?;
            None
        }
    };
    if build_dir.join("CMakeCache.txt").is_file() && before != launcher.is_some() {
        fs::remove_dir_all(&build_dir)
            .with_context(|| format!("removing {}", build_dir.display()))?;
        fs::create_dir_all(&build_dir)?;
    }
    Ok(launcher)
}

/// The request's clang profile moved to this build's source tree, when it was trained in
/// another (builder/paths.rs); None: the stored profile is used as it is.
fn relocate_profile(
    req: &BuildRequest,
    dir: &Path,
) -> Result<Option<(ProfileInput, paths::Relocation)>> {
    let Some(ProfileInput::Profdata(p)) = req.profile else {
        return Ok(None);
    };
    // Only a profile trained with absolute names names a tree; one trained relative fits any
    // tree as it is, so its text form is not worth making.
    if req.compiler.family != FlagFamily::Clang
        || req.source_paths == relative::SourcePaths::Relative
    {
        return Ok(None);
    }
    let out = paths::relocated_profile_path(dir);
    let r = paths::relocate_profdata(req.compiler.profdata()?, p, &req.source.dir, &out)
        .with_context(|| format!("relocating the profile {} to this source", p.display()))?;
    Ok(r.map(|r| (ProfileInput::Profdata(out), r)))
}

/// CMake's configure step for the request (the precompiled headers written, or removed when
/// the compiles go to a cluster), and the configured optimization level read back.
fn configure(
    req: &BuildRequest,
    build_dir: &Path,
    flags: &FlagSet,
    remote: Option<&cluster::Cluster>,
    launcher: Option<&Path>,
    log_path: &Path,
) -> Result<()> {
    let v = req.variant;
    // Precompiled headers only where the compiles run here: sccache cannot distribute a compile
    // that reads one. The code is the same either way (builder/pch.rs).
    let pch = if remote.is_none() {
        pch::write(
            &req.recipe.build.precompile_headers,
            &req.source.dir,
            build_dir,
        )?
    } else {
        pch::remove_stale(build_dir);
        None
    };
    first_pass(build_dir)?;
    let mut configure = configure_command(req, build_dir, flags, remote, launcher);
    configure.args(pch::cmake_args(pch.as_deref()));
    append_line(log_path, &format!("$ {configure:?}"))?;
    Tool::new(
        &mut configure,
        format!("configuring {} ({v})", req.recipe.name),
    )
    .append_to(log_path)
    .own_process_group()
    .run()
    .map_err(|e| with_log_tail(e, log_path, 25))?;
    opt_level::confirm(build_dir, &flags.opt, &|m| {
        let _ = append_line(log_path, &format!("pgoforge: {m}"));
    })?;
    Ok(())
}

/// Makes the coming configure a first one: an earlier attempt's CMake cache is removed (its
/// objects stay, and only what the configure changes is compiled again). MariaDB 10.11's CMake
/// decides differently on a second pass over its own cache — the archive, blackhole and
/// federatedx engines, modules on the first pass, become static (cmake/plugin.cmake keeps
/// `WITH_<ENGINE>_STORAGE_ENGINE` in the cache) — so a build resumed in its directory would
/// otherwise not be the server a fresh build makes (docs/bench/mariadb-pch.md).
fn first_pass(build_dir: &Path) -> Result<()> {
    let cache = build_dir.join("CMakeCache.txt");
    match fs::remove_file(&cache) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(e).with_context(|| format!("removing {}", cache.display()))
        }
        _ => Ok(()),
    }
}

/// `cmake --build` of the recipe's targets at `jobs`, its percentage reported as it goes.
fn compile(req: &BuildRequest, build_dir: &Path, jobs: usize, log_path: &Path) -> Result<()> {
    let v = req.variant;
    let mut make = Command::new("cmake");
    make.env("SOURCE_DATE_EPOCH", source_date(req));
    make.arg("--build")
        .arg(build_dir)
        .arg("-j")
        .arg(jobs.to_string());
    for t in &req.recipe.build.targets {
        make.arg("--target").arg(t);
    }
    append_line(log_path, &format!("$ {make:?}"))?;
    Tool::new(&mut make, format!("building {} ({v})", req.recipe.name))
        .append_to(log_path)
        .own_process_group()
        .run_with(|line| {
            if let (Some(p), Some(pct)) = (req.progress, make_percent(line)) {
                p(pct);
            }
        })
        .map_err(|e| with_log_tail(e, log_path, 30))?;
    Ok(())
}

/// The finished build in `dir`, if it has everything the request asks for. A build.json that
/// does not parse (torn by a crash, written by an incompatible pgoforge) is not a finished build:
/// the build runs again in the same directory, reusing its objects.
fn cached(req: &BuildRequest, dir: &Path) -> Option<BuildOutput> {
    let text = fs::read_to_string(dir.join("build.json")).ok()?;
    let mut out: BuildOutput = serde_json::from_str(&text).ok()?;
    let has_targets = req
        .recipe
        .build
        .targets
        .iter()
        .all(|t| out.targets.contains(t));
    (out.binary.is_file() && has_targets).then(|| {
        out.cached = true;
        out
    })
}

/// Marks a new attempt in the build log and returns what earlier attempts left there. An
/// interrupted attempt's log stays: its warnings belong to objects this attempt reuses.
fn start_attempt(log_path: &Path) -> Result<Earlier> {
    let earlier = match fs::metadata(log_path) {
        Ok(m) => {
            let mtime = m.modified().map_or(0, crate::infra::time::unix_secs);
            let text = fs::read_to_string(log_path)
                .with_context(|| format!("reading {}", log_path.display()))?;
            earlier_attempts(&text, mtime)
        }
        Err(_) => Earlier::default(),
    };
    let mut log = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_path)
        .with_context(|| format!("opening {}", log_path.display()))?;
    if let Some(d) = earlier.unrecorded {
        writeln!(log, "{ATTEMPT_STOPPED}{d:.0} s ===")?;
    }
    writeln!(log, "{ATTEMPT_START}{} ===", crate::infra::time::now_secs())?;
    Ok(earlier)
}

/// CMake's configure step for a variant: the recipe's arguments, the variant's flags, and as the
/// compiler launcher sccache when the compiles go to a cluster, else ccache for builds without
/// instrumentation (it hashes -fprofile-use data itself).
fn configure_command(
    req: &BuildRequest,
    build_dir: &Path,
    flags: &FlagSet,
    remote: Option<&cluster::Cluster>,
    relative: Option<&Path>,
) -> Command {
    let (opt_cflags, opt_defs) = opt_level::place(&req.recipe.build.cmake_args, &flags.opt);
    // Not in the key (FlagSet): they change names in the binary, not its code (paths.rs).
    let maps = paths::prefix_maps(req.compiler.family, &req.source.dir, build_dir);
    let cflags = flags
        .cflags
        .iter()
        .chain(&opt_cflags)
        .chain(&maps)
        .cloned()
        .collect::<Vec<_>>()
        .join(" ");
    let ldflags = flags.ldflags.join(" ");
    let mut c = Command::new("cmake");
    c.env("SOURCE_DATE_EPOCH", source_date(req));
    c.arg("-S")
        .arg(&req.source.dir)
        .arg("-B")
        .arg(build_dir)
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
        .args(&flags.cmake_defs)
        .args(&opt_defs);
    let cache = match remote {
        Some(cl) => Some(cl.sccache.clone()),
        None if !req.variant.instrumented() => crate::infra::tools::which("ccache"),
        None => None,
    };
    // The relative-path launcher first: the cache sees the rewritten command.
    let launchers: Vec<String> = relative
        .into_iter()
        .chain(cache.as_deref())
        .map(|l| l.display().to_string())
        .collect();
    if launchers.is_empty() {
        // A directory configured with a launcher before keeps it in CMake's cache otherwise.
        c.arg("-UCMAKE_C_COMPILER_LAUNCHER");
        c.arg("-UCMAKE_CXX_COMPILER_LAUNCHER");
    } else {
        let list = launchers.join(";");
        c.arg(format!("-DCMAKE_C_COMPILER_LAUNCHER={list}"));
        c.arg(format!("-DCMAKE_CXX_COMPILER_LAUNCHER={list}"));
    }
    c
}

/// The date the compilers give `__DATE__` and `__TIME__`: the source's (source/date.rs).
fn source_date(req: &BuildRequest) -> String {
    crate::source::date::source_date_epoch(Some(&req.source.dir)).to_string()
}

/// Warnings about functions or files without usable profile data, counted in the build log.
/// GCC's "source locations for function ... have changed" is not one: it still uses those counts.
fn missing_profile_warnings(log: &Path) -> u64 {
    let text = fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter(|l| {
            l.contains("[-Wmissing-profile]")
                || (l.contains("[-Wcoverage-mismatch]")
                    && !l.contains("source locations for function"))
                || l.contains("[-Wprofile-instr-")
        })
        .count() as u64
}

/// The build's progress from one output line: make's `[ NN%]` prefix, or Ninja's `[done/total]`.
fn make_percent(line: &str) -> Option<u64> {
    let inner = line.strip_prefix('[')?.split(']').next()?;
    if let Some((done, total)) = inner.split_once('/') {
        let (done, total) = (
            done.trim().parse::<u64>().ok()?,
            total.trim().parse::<u64>().ok()?,
        );
        return (total > 0).then(|| (done * 100 / total).min(100));
    }
    inner
        .strip_suffix('%')
        .and_then(|n| n.trim().parse::<u64>().ok())
        .map(|p| p.min(100))
}

fn append_line(log: &Path, line: &str) -> Result<()> {
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(log)
        .with_context(|| format!("opening {}", log.display()))?;
    writeln!(f, "{line}")?;
    Ok(())
}

/// A failed configure or make shows the log's tail: the compiler's errors come on stderr, which
/// the tool's own tail interleaves with make's progress lines.
fn with_log_tail(e: ToolError, log: &Path, n: usize) -> anyhow::Error {
    match e {
        ToolError::Failed { what, .. } => anyhow::anyhow!(
            "{what} failed; log {}:\n{}{}",
            log.display(),
            crate::infra::fs::tail(log, n),
            crate::infra::fs::low_space_note(log.parent().unwrap_or(log))
        ),
        other => other.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_is_read_from_make_and_ninja_lines() {
        assert_eq!(make_percent("[ 42%] Building CXX object sql/x.o"), Some(42));
        assert_eq!(
            make_percent("[100%] Linking CXX executable mysqld"),
            Some(100)
        );
        assert_eq!(
            make_percent("[250/1000] Building CXX object sql/x.o"),
            Some(25)
        );
        assert_eq!(
            make_percent("[1000/1000] Linking CXX executable mysqld"),
            Some(100)
        );
        assert_eq!(make_percent("[0/0] nothing"), None);
        assert_eq!(make_percent("[abc] Building"), None);
        assert_eq!(make_percent("warning: [-Wmissing-profile]"), None);
    }

    #[test]
    fn a_recipes_default_compiler_leaves_the_build_key_alone() {
        // The MySQL recipe's builds made before it named clang its default keep their keys.
        let recipe = Recipe::embedded("mysql-9.7").unwrap();
        let source = Source {
            dir: PathBuf::from("/src"),
            hash: "0".repeat(64),
            origin: "test".into(),
            debian: None,
        };
        let compiler = Compiler {
            family: FlagFamily::Clang,
            cc: PathBuf::from("/usr/bin/clang-22"),
            cxx: PathBuf::from("/usr/bin/clang++-22"),
            version: "clang version 22".into(),
            major: 22,
            profdata: None,
        };
        let key = |default_compiler: Option<&str>| {
            let mut r = recipe.clone();
            r.build.default_compiler = default_compiler.map(str::to_string);
            plan(&BuildRequest {
                recipe: &r,
                source: &source,
                variant: "baseline".parse().unwrap(),
                compiler: &compiler,
                profile: None,
                work_dir: Path::new("/w"),
                jobs: 0,
                progress: None,
                cluster: None,
                source_paths: Default::default(),
            })
            .unwrap()
        };
        assert_eq!(key(None), key(Some("clang")));
        assert_eq!(key(None), key(Some("gcc")));
    }

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
