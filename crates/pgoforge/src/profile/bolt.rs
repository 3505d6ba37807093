//! BOLT: profile a bolt-ready binary (by instrumentation, or by perf branch sampling where the CPU
//! has LBR), then let llvm-bolt reorder it, and check that the result is BOLTed and still serves.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::train::{run_mix_from, start_for_mix, Mix};
use super::{store, Kind, Meta, Stored, Summary};
use crate::builder::ProfileInput;
use crate::infra::exit::Refuse;
use crate::infra::time::now_secs;
use crate::server::{Server, ServerSpec};
use crate::toolchain::Bolt;

fn sections(bin: &Path) -> Result<String> {
    let out = Command::new("readelf")
        .arg("-S")
        .arg(bin)
        .output()
        .context("running readelf -S")?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Linked with --emit-relocs, which BOLT needs to move functions.
pub fn is_bolt_ready(bin: &Path) -> Result<bool> {
    Ok(sections(bin)?.contains(".rela.text"))
}

/// Carries BOLT's note: the binary was optimized by BOLT.
pub fn is_bolted(bin: &Path) -> Result<bool> {
    Ok(sections(bin)?.contains(".note.bolt_info"))
}

/// Whether perf can sample branches (LBR) here; VMs usually cannot.
pub fn lbr_available() -> bool {
    Command::new("perf")
        .args([
            "record",
            "-q",
            "-e",
            "cycles:u",
            "-j",
            "any,u",
            "-o",
            "/dev/null",
            "--",
            "true",
        ])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The optimization flags the installed BOLT accepts, probed from its help (LLVM 16 has no cdsort).
pub fn probe_flags(bolt: &Bolt) -> Result<Vec<String>> {
    let out = Command::new(&bolt.llvm_bolt)
        .arg("--help-hidden")
        .output()
        .with_context(|| format!("running {} --help-hidden", bolt.llvm_bolt.display()))?;
    let help = String::from_utf8_lossy(&out.stdout);
    let has = |s: &str| help.contains(s);
    let mut f = Vec::new();
    f.push(
        if has("=ext-tsp") {
            "-reorder-blocks=ext-tsp"
        } else {
            "-reorder-blocks=cache+"
        }
        .to_string(),
    );
    let funcs = if has("=cdsort") {
        "cdsort"
    } else if has("=hfsort+") {
        "hfsort+"
    } else {
        "hfsort"
    };
    f.push(format!("-reorder-functions={funcs}"));
    for opt in [
        "-split-functions",
        "-split-all-cold",
        "-split-eh",
        "-dyno-stats",
    ] {
        if has(&format!("{opt} ")) || has(&format!("{opt}\n")) || has(&format!("{opt}=")) {
            f.push(opt.to_string());
        }
    }
    if has("-icf") {
        // Newer BOLT spells it `all` and calls `1` deprecated; older ones know only `1`.
        let all = help
            .lines()
            .any(|l| l.trim_start().starts_with("=all") && l.contains("identical code folding"));
        f.push(if all { "-icf=all" } else { "-icf=1" }.into());
    }
    Ok(f)
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct BoltOutput {
    pub input: PathBuf,
    pub binary: PathBuf,
    pub profile: Stored,
    pub flags: Vec<String>,
    pub method: String,
    /// BOLT's "N out of M functions in the binary (X%) have non-empty execution profile".
    pub coverage: Option<String>,
    pub seconds: f64,
}

fn run_tool(cmd: &mut Command, what: &str, log: &Path) -> Result<String> {
    Ok(crate::infra::runner::run_tool(cmd, what, Some(log))?)
}

pub struct BoltRequest<'a> {
    pub binary: &'a Path,
    pub bolt: &'a Bolt,
    pub spec: ServerSpec,
    pub mix: &'a Mix,
    /// A template of the mix's dataset (see [`super::train::dataset_template`]).
    pub dataset: Option<&'a Path>,
    pub work_dir: &'a Path,
    /// Replaces the probed optimization flags.
    pub flags: Option<Vec<String>>,
    /// Source hash and build key recorded with the profile.
    pub source_hash: String,
    pub build_key: String,
    /// Another build's BOLT profile (`run --profile-from`): applied as it is, nothing run.
    pub given: Option<&'a Path>,
}

/// Profiles and optimizes `binary` with BOLT; the result sits beside it as `<name>.bolt`.
pub fn optimize(req: &BoltRequest, log: &dyn Fn(&str)) -> Result<BoltOutput> {
    let bin = req.binary;
    // Checked first: "not bolt-ready" would send the user to rebuild what is only a wrong path.
    crate::infra::fs::require_file(bin, "binary", "give --binary PATH to a bolt-ready server")
        .refused()?;
    if !is_bolt_ready(bin)? {
        crate::usage!("{} is not bolt-ready: it has no .rela.text; build a +bolt variant (links with -Wl,--emit-relocs)", bin.display());
    }
    let name = bin
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let dir = req
        .work_dir
        .join("bolt")
        .join(format!("{}-{}", name, now_secs()));
    let fdata_dir = dir.join("fdata");
    fs::create_dir_all(&fdata_dir)?;
    let t0 = Instant::now();
    let (merged, method) = if let Some(g) = req.given {
        let merged = dir.join("merged.fdata");
        fs::copy(g, &merged).with_context(|| format!("copying {}", g.display()))?;
        (
            merged,
            "an earlier build's profile (--profile-from), applied as it is".to_string(),
        )
    } else if lbr_available() {
        (
            sample_with_perf(req, &dir, log)?,
            "perf branch sampling (LBR)".to_string(),
        )
    } else {
        (
            instrument(req, &dir, &fdata_dir, log)?,
            "instrumentation (no LBR on this machine)".to_string(),
        )
    };
    // The optimized binary sits beside the input, so a build tree's share files are still found.
    let out_bin = bin.with_file_name(format!("{name}.bolt"));
    let mut flags = match &req.flags {
        Some(f) => f.clone(),
        None => probe_flags(req.bolt)?,
    };
    // An earlier build's YAML profile: BOLT infers the counts of functions whose code moved.
    if req.given.is_some_and(is_yaml) && !flags.iter().any(|f| f == INFER_STALE) {
        flags.push(INFER_STALE.into());
    }
    log(&format!("optimizing with {}", flags.join(" ")));
    let coverage = optimize_binary(
        req.bolt,
        bin,
        &merged,
        &flags,
        &out_bin,
        &dir.join("optimize.log"),
    )?;
    smoke(&req.spec, &out_bin, &dir.join("smoke"))?;
    let profile = store(
        req.work_dir,
        &ProfileInput::Profdata(merged.clone()),
        Kind::Fdata,
        Meta {
            hash: String::new(),
            kind: Kind::Fdata,
            source_hash: req.source_hash.clone(),
            build_key: req.build_key.clone(),
            recipe: String::new(),
            variant: format!("bolt of {name}"),
            compiler: format!("bolt-{}", req.bolt.major),
            compiler_version: req.bolt.llvm_bolt.display().to_string(),
            training: req.mix.describe(),
            source_paths: Default::default(),
            seconds: t0.elapsed().as_secs_f64(),
            created: now_secs(),
            summary: Summary {
                files: 1,
                bytes: fs::metadata(&merged)?.len(),
                note: coverage.clone(),
                ..Summary::default()
            },
        },
    )?;
    Ok(BoltOutput {
        input: bin.to_path_buf(),
        binary: out_bin,
        profile,
        flags,
        method,
        coverage,
        seconds: t0.elapsed().as_secs_f64(),
    })
}

/// Writes an instrumented copy of `bin` to `out`; each process it runs as writes
/// `<fdata_dir>/prof.fdata.<pid>` when it exits normally.
pub fn instrument_binary(
    bolt: &Bolt,
    bin: &Path,
    fdata_dir: &Path,
    out: &Path,
    log_file: &Path,
) -> Result<()> {
    run_tool(
        Command::new(&bolt.llvm_bolt)
            .arg(bin)
            .arg("-instrument")
            .arg(format!(
                "-instrumentation-file={}",
                fdata_dir.join("prof.fdata").display()
            ))
            .arg("-instrumentation-file-append-pid")
            .arg("-o")
            .arg(out),
        "llvm-bolt -instrument",
        log_file,
    )
    .map(|_| ())
}

/// Merges the non-empty .fdata files of `fdata_dir` into `merged`.
pub fn merge_fdata(bolt: &Bolt, fdata_dir: &Path, merged: &Path) -> Result<()> {
    let parts: Vec<PathBuf> = fs::read_dir(fdata_dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| fs::metadata(p).is_ok_and(|m| m.len() > 0))
        .collect();
    if parts.is_empty() {
        bail!(
            "no profile written: the instrumented binary left no .fdata in {}",
            fdata_dir.display()
        );
    }
    let merge = bolt
        .merge_fdata
        .as_ref()
        .context("merge-fdata is missing (part of the bolt package)")?;
    let out = Command::new(merge)
        .args(&parts)
        .output()
        .context("running merge-fdata")?;
    if !out.status.success() {
        bail!(
            "merge-fdata failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    fs::write(merged, &out.stdout)?;
    Ok(())
}

/// Optimizes `bin` with the profile into `out`; returns BOLT's profile coverage line. Fails unless the
/// result carries BOLT's note.
pub fn optimize_binary(
    bolt: &Bolt,
    bin: &Path,
    merged: &Path,
    flags: &[String],
    out: &Path,
    log_file: &Path,
) -> Result<Option<String>> {
    // BOLT writes its command line into the binary (.note.bolt_info): it runs in the output's
    // directory on names relative to it, so that the note names no directory of this machine
    // and a rebuild elsewhere gets the same bytes (package/rebuild.rs).
    let dir = out
        .parent()
        .with_context(|| format!("{} has no directory", out.display()))?;
    let output = out
        .file_name()
        .with_context(|| format!("{} has no file name", out.display()))?;
    let text = in_dir(dir, bin, merged, |input, data| {
        run_tool(
            Command::new(&bolt.llvm_bolt)
                .current_dir(dir)
                .arg(input)
                .arg("-o")
                .arg(output)
                .arg(data)
                .args(flags),
            "llvm-bolt (optimize)",
            log_file,
        )
    })?;
    if !is_bolted(out)? {
        bail!(
            "{} lacks BOLT's .note.bolt_info section: the optimization did not happen",
            out.display()
        );
    }
    Ok(text
        .lines()
        .find(|l| l.contains("have non-empty execution profile"))
        .map(|l| l.trim_start_matches("BOLT-INFO: ").trim().to_string()))
}

/// Runs `f(input, data_arg)` with `bin` and `profile` linked into `dir` under relative names
/// (`mariadbd`, `-data=mariadbd.fdata`), which BOLT then records instead of paths; the links are
/// removed afterwards.
fn in_dir<T>(
    dir: &Path,
    bin: &Path,
    profile: &Path,
    f: impl FnOnce(&std::ffi::OsStr, &std::ffi::OsStr) -> Result<T>,
) -> Result<T> {
    let input = bin
        .file_name()
        .with_context(|| format!("{} has no file name", bin.display()))?
        .to_os_string();
    let mut data = input.clone();
    data.push(".fdata");
    let mut links = vec![dir.join(&data)];
    if bin.parent() != Some(dir) {
        links.push(dir.join(&input));
    }
    for (link, target) in links.iter().zip([profile, bin]) {
        let _ = fs::remove_file(link);
        let target =
            fs::canonicalize(target).with_context(|| format!("resolving {}", target.display()))?;
        std::os::unix::fs::symlink(&target, link)
            .with_context(|| format!("linking {} to {}", link.display(), target.display()))?;
    }
    let mut data_arg = std::ffi::OsString::from("-data=");
    data_arg.push(&data);
    let r = f(&input, &data_arg);
    for l in &links {
        let _ = fs::remove_file(l);
    }
    r
}

/// BOLT's flag that matches a stale YAML profile's blocks to moved code.
pub const INFER_STALE: &str = "-infer-stale-profile";

/// Whether a BOLT profile is the YAML form (it begins with a YAML document marker).
pub fn is_yaml(profile: &Path) -> bool {
    let mut head = [0u8; 3];
    fs::File::open(profile)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok_and(|()| &head == b"---")
}

/// BOLT's YAML form of `fdata`, a profile of the bolt-ready `bin`, written to `out`: it carries
/// each block's hash, so a later build whose code moved can have its counts inferred
/// (`-infer-stale-profile`, which the .fdata form cannot feed). Written from `bin`'s directory
/// on relative names, so the YAML names no directory of this machine.
pub fn yaml_profile(bolt: &Bolt, bin: &Path, fdata: &Path, out: &Path) -> Result<()> {
    let dir = bin
        .parent()
        .with_context(|| format!("{} has no directory", bin.display()))?;
    let out = std::path::absolute(out)?;
    let log = out.with_extension("log");
    in_dir(dir, bin, fdata, |input, data| {
        run_tool(
            Command::new(&bolt.llvm_bolt)
                .current_dir(dir)
                .arg(input)
                .arg(data)
                .arg("-w")
                .arg(&out)
                .args(["-o", "/dev/null"]),
            "llvm-bolt (the profile as YAML)",
            &log,
        )
    })?;
    let _ = fs::remove_file(&log);
    if !out.is_file() {
        bail!("llvm-bolt wrote no YAML profile to {}", out.display());
    }
    Ok(())
}

fn instrument(
    req: &BoltRequest,
    dir: &Path,
    fdata_dir: &Path,
    log: &dyn Fn(&str),
) -> Result<PathBuf> {
    let bin = req.binary;
    let name = bin
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let inst = bin.with_file_name(format!("{name}.bolt-inst"));
    log("instrumenting with llvm-bolt");
    instrument_binary(req.bolt, bin, fdata_dir, &inst, &dir.join("instrument.log"))?;
    let mut spec = req.spec.clone();
    spec.binary = inst.clone();
    spec.start_timeout = spec.start_timeout.max(Duration::from_secs(300));
    spec.stop_timeout = spec.stop_timeout.max(Duration::from_secs(600));
    let result = super::train::train_on(&spec, &dir.join("train"), req.mix, req.dataset, log);
    let _ = fs::remove_dir_all(dir.join("train"));
    let _ = fs::remove_file(&inst);
    result?;
    let merged = dir.join("merged.fdata");
    merge_fdata(req.bolt, fdata_dir, &merged)?;
    Ok(merged)
}

fn sample_with_perf(req: &BoltRequest, dir: &Path, log: &dyn Fn(&str)) -> Result<PathBuf> {
    let perf2bolt = req
        .bolt
        .perf2bolt
        .as_ref()
        .context("perf2bolt is missing (part of the bolt package)")?;
    let mut srv = start_for_mix(&req.spec, &dir.join("train"), req.dataset, log)?;
    let data = dir.join("perf.data");
    log("sampling branches with perf");
    let mut perf = Command::new("perf")
        .args(["record", "-q", "-e", "cycles:u", "-j", "any,u", "-o"])
        .arg(&data)
        .arg("-p")
        .arg(srv.state.pid.to_string())
        .spawn()
        .context("starting perf record")?;
    let ran = run_mix_from(&srv.state, req.mix, req.dataset, log);
    // SAFETY: interrupting the perf process we started, so it writes its data.
    unsafe { libc::kill(perf.id() as i32, libc::SIGINT) };
    let _ = perf.wait();
    srv.stop()?;
    let _ = fs::remove_dir_all(dir.join("train"));
    ran?;
    let merged = dir.join("merged.fdata");
    run_tool(
        Command::new(perf2bolt)
            .arg("-p")
            .arg(&data)
            .arg("-o")
            .arg(&merged)
            .arg(req.binary),
        "perf2bolt",
        &dir.join("perf2bolt.log"),
    )?;
    Ok(merged)
}

/// Starts the binary and runs a small workload through it.
pub fn smoke(spec: &ServerSpec, binary: &Path, dir: &Path) -> Result<()> {
    let mut spec = spec.clone();
    spec.binary = binary.to_path_buf();
    let result = (|| -> Result<()> {
        let mut srv = Server::create(&spec, dir)?;
        let mut s = oltp::settings::Settings::new(oltp::TestName::OltpReadWrite);
        s.conn = srv.state.conn_settings();
        s.schema.table_size = 1000;
        s.time_s = 0;
        s.events = 200;
        oltp::schema::prepare(&s, &|_| {})?;
        let r = oltp::run(&s, &mut oltp::Quiet).map_err(|e| anyhow::anyhow!("{e}"))?;
        if r.transactions != 200 {
            bail!(
                "the smoke workload finished {} of 200 transactions",
                r.transactions
            );
        }
        srv.stop()
    })();
    let _ = fs::remove_dir_all(dir);
    result.with_context(|| format!("smoke test of {}", binary.display()))
}
