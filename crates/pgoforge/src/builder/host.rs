//! Whole variants built on other hosts (`--build-host`, over ssh): where no compile engine can go —
//! GCC's profile-use compiles and its LTO link, which sccache-dist keeps local — a variant still
//! can, built there from start to end.
//!
//! A build host is reached with the system's `ssh`. Before anything is sent, its toolchain is
//! compared with this one's, fact by fact (machine, the compilers' version lines, and the Debian
//! package and version of every file the build runs: the compiler drivers, `cc1`/`cc1plus`/`lto1`,
//! the linker, libgcc, cmake, the generator, plus libc6-dev, binutils and the recipe's packages);
//! any difference refuses the host, because another GCC makes another binary. Then the source
//! and the profile go there **at the same absolute paths** as here (the work dir's), this
//! pgoforge binary is copied to a private temporary directory and runs the very same build
//! there (`pgoforge build-serve`, the request as one JSON line); the build directory comes back,
//! without its objects, to where a local build of the same key would be. Same paths and same
//! toolchain give the same binary byte for byte, so the build is keyed, cached and resumed exactly
//! as a local one (the build directory on the host keeps its objects for a resumed build).
//! The baseline and instrumented builds stay here: the regression tests rebuild tools in the
//! baseline's tree, and training needs the instrumented build's objects.

use std::collections::BTreeMap;
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::{BuildOutput, BuildRequest, ProfileInput, Variant};
use crate::infra::ssh::{plain_path, SshTarget};
use crate::recipe::Recipe;
use crate::source::Source;
use crate::toolchain::Compiler;

const ROLE: &str = "the build host";

/// Whether a variant may be built on a build host (see the module's comment for why the others
/// may not).
pub fn may_go(v: Variant) -> bool {
    // The run's baseline, at whatever CPU level the run builds for.
    let plain_baseline = v.phase == super::PgoPhase::Baseline && !v.lto && !v.bolt_ready;
    // -march=native compiles for the CPU it runs on: another host's would be another binary.
    let host_cpu = v.codegen.cpu == Some(super::codegen::CpuLevel::Native);
    !v.instrumented() && !plain_baseline && !host_cpu
}

/// The request, as the build host's pgoforge receives it.
#[derive(Debug, Serialize, Deserialize)]
pub struct Job {
    pub recipe: Recipe,
    pub source: Source,
    pub variant: Variant,
    pub compiler: Compiler,
    pub profile: Option<ProfileInput>,
    pub work_dir: PathBuf,
    pub jobs: usize,
    pub source_paths: super::relative::SourcePaths,
}

/// What the build host's pgoforge answers, one JSON line each.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Answer {
    Progress(u64),
    Built(Box<BuildOutput>),
    Failed(String),
}

/// `pgoforge build-serve`: reads one [`Job`] from stdin, builds it, answers on stdout. When
/// stdin closes before the build is done (pgoforge stopped, the connection lost), the build is
/// stopped at once: SIGTERM to itself, which the interrupt handler passes on to the build's
/// process groups.
pub fn serve() -> Result<i32> {
    // An answer written after the session died must fail, not kill this process of SIGPIPE
    // before it has stopped the build (children get the default back: std resets it at exec).
    // SAFETY: setting a signal's disposition to SIG_IGN has no preconditions.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    let mut line = String::new();
    std::io::stdin()
        .read_line(&mut line)
        .context("reading the build request")?;
    let job: Job = match serde_json::from_str(&line) {
        Ok(j) => j,
        Err(e) => {
            println!(
                "{}",
                serde_json::to_string(&Answer::Failed(format!(
                    "a build request that does not parse (another pgoforge version?): {e}"
                )))?
            );
            return Ok(1);
        }
    };
    std::thread::spawn(|| {
        let mut rest = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut rest);
        // SAFETY: kill and getpid have no memory-safety preconditions.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGTERM);
        }
    });
    let out = Mutex::new(std::io::stdout());
    let send = |a: &Answer| {
        if let (Ok(mut o), Ok(text)) = (out.lock(), serde_json::to_string(a)) {
            let _ = writeln!(o, "{text}");
            let _ = o.flush();
        }
    };
    let tick = |p: u64| send(&Answer::Progress(p));
    let req = BuildRequest {
        recipe: &job.recipe,
        source: &job.source,
        variant: job.variant,
        compiler: &job.compiler,
        profile: job.profile.as_ref(),
        work_dir: &job.work_dir,
        jobs: job.jobs,
        progress: Some(&tick),
        cluster: None,
        source_paths: job.source_paths,
    };
    match super::build(&req) {
        Ok(b) => send(&Answer::Built(Box::new(b))),
        Err(e) => send(&Answer::Failed(format!("{e:#}"))),
    }
    Ok(0)
}

/// The facts that must be equal on both hosts, as `KEY VALUE` lines; the same script runs here
/// and there.
fn toolchain_script(req: &BuildRequest) -> String {
    let q = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let generator = if req.recipe.build.generator == "Ninja" {
        "ninja"
    } else {
        "make"
    };
    let mut extra: Vec<String> = vec!["libc6-dev".into(), "binutils".into()];
    extra.extend(req.recipe.apt_packages.iter().cloned());
    format!(
        r#"cc=$(command -v {cc}) || {{ echo "missing {cc}"; exit 0; }}
cxx=$(command -v {cxx}) || {{ echo "missing {cxx}"; exit 0; }}
echo "machine $(uname -m) $("$cc" -dumpmachine)"
echo "cc $("$cc" --version | head -n1)"
echo "cxx $("$cxx" --version | head -n1)"
command -v dpkg-query >/dev/null || {{ echo "no-dpkg"; exit 0; }}
files=""
for t in "$cc" "$cxx" "$(command -v cmake)" "$(command -v {generator})" \
  "$("$cc" -print-prog-name=cc1)" "$("$cxx" -print-prog-name=cc1plus)" \
  "$("$cc" -print-prog-name=lto1)" "$("$cc" -print-prog-name=ld)" "$("$cc" -print-libgcc-file-name)"; do
  f=$(readlink -f "$t" 2>/dev/null) && [ -f "$f" ] && files="$files $f"
done
pkgs=$(dpkg-query -S $files 2>/dev/null | sed 's|: /.*||; s|, |\n|g' | sed 's|:.*||' | sort -u)
dpkg-query -W -f='pkg ${{Package}} ${{Version}} ${{db:Status-Abbrev}}\n' $pkgs {extra} 2>/dev/null | sort
"#,
        cc = q(&req.compiler.cc.display().to_string()),
        cxx = q(&req.compiler.cxx.display().to_string()),
        extra = extra.iter().map(|p| q(p)).collect::<Vec<_>>().join(" ")
    )
}

/// Facts by key: `pkg NAME` for a package (its version and status), the first word otherwise.
fn facts(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let mut w = l.splitn(3, ' ');
            let first = w.next().unwrap_or_default();
            if first == "pkg" {
                let name = w.next().unwrap_or_default();
                (
                    format!("pkg {name}"),
                    w.next().unwrap_or_default().trim().to_string(),
                )
            } else {
                (first.to_string(), l[first.len()..].trim().to_string())
            }
        })
        .collect()
}

/// Every fact that differs, in words; empty when the toolchains are the same.
fn differences(here: &BTreeMap<String, String>, there: &BTreeMap<String, String>) -> Vec<String> {
    let keys: std::collections::BTreeSet<&String> = here.keys().chain(there.keys()).collect();
    keys.into_iter()
        .filter_map(|k| {
            let (a, b) = (here.get(k), there.get(k));
            (a != b).then(|| {
                let show =
                    |v: Option<&String>| v.map_or("absent".to_string(), |v| format!("'{v}'"));
                format!(
                    "{}: {} here, {} there",
                    k.strip_prefix("pkg ").unwrap_or(k),
                    show(a),
                    show(b)
                )
            })
        })
        .collect()
}

/// Refuses a host whose toolchain is not this one's.
fn check_toolchain(host: &SshTarget, req: &BuildRequest) -> Result<()> {
    let script = toolchain_script(req);
    let out = Command::new("sh")
        .args(["-c", &script])
        .output()
        .context("running sh")?;
    let here = facts(&String::from_utf8_lossy(&out.stdout));
    let there = facts(&host.output(ROLE, &script)?);
    for (side, f) in [("here", &here), (host.destination.as_str(), &there)] {
        if f.contains_key("no-dpkg") {
            bail!(
                "cannot compare the toolchains: {side} has no dpkg-query (pgoforge compares \
                 the Debian packages of the compilers, linker and tools)"
            );
        }
        if let Some(m) = f.get("missing") {
            bail!("{ROLE} {}: {m} is missing {side}", host.destination);
        }
    }
    let diff = differences(&here, &there);
    if !diff.is_empty() {
        bail!(
            "{ROLE} {} has another toolchain, so its binary would not be this host's: {}. \
             Install the same versions there (or leave it out)",
            host.destination,
            diff.join("; ")
        );
    }
    Ok(())
}

/// A path that goes into commands on the build host.
fn remote_path(p: &Path, what: &str) -> Result<String> {
    let s = p.display().to_string();
    if !plain_path(&s) {
        bail!(
            "{what} {s} cannot be placed on a build host: the path must be plain (letters, \
             digits, '/._-+'), since it is used as it is there; choose such a --work-dir"
        );
    }
    Ok(s)
}

/// Puts the tree or file `path` at the same path on the host, unless it is there already with
/// `hash` (a marker file beside it records what pgoforge put there). Refuses to replace anything
/// pgoforge did not put there.
fn ship(host: &SshTarget, path: &Path, hash: &str, what: &str) -> Result<()> {
    let p = remote_path(path, what)?;
    let marker = format!("{p}.pgoforge-shipped");
    let state = host.output(
        ROLE,
        &format!("cat '{marker}' 2>/dev/null || {{ test -e '{p}' && echo foreign; }}; true"),
    )?;
    match state.trim() {
        h if h == hash => return Ok(()),
        "foreign" => bail!(
            "{ROLE} {} has {p} already, not put there by pgoforge; move it away there, or use \
             another --work-dir",
            host.destination
        ),
        _ => {}
    }
    let (parent, name) = match (path.parent(), path.file_name()) {
        (Some(d), Some(n)) => (d, n),
        _ => bail!("{what} {p} has no parent directory"),
    };
    let mut tar = Command::new("tar")
        .arg("-C")
        .arg(parent)
        .arg("-cf")
        .arg("-")
        .arg(name)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("running tar")?;
    let stream = tar.stdout.take().context("tar without its stdout")?;
    // The marker goes first and comes back last: an interrupted copy is never taken for a
    // finished one.
    let staging = format!("{p}.pgoforge-partial");
    let out = host
        .command()
        .arg(format!(
            "set -e; rm -f '{marker}'; rm -rf '{staging}'; mkdir -p '{staging}'; \
             tar -C '{staging}' -xf -; rm -rf '{p}'; mv '{staging}/{n}' '{p}'; \
             rmdir '{staging}'; echo '{hash}' > '{marker}'",
            n = name.to_string_lossy()
        ))
        .stdin(Stdio::from(stream))
        .output()
        .context("running ssh")?;
    let tar_status = tar.wait()?;
    if !out.status.success() || !tar_status.success() {
        bail!(
            "copying the {what} to {ROLE} {} failed (ssh {}, tar {tar_status}): {}",
            host.destination,
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Runs the build on the host (pgoforge copied to `bin_dir` there); the host's build record.
fn build_there(host: &SshTarget, bin_dir: &str, req: &BuildRequest) -> Result<BuildOutput> {
    let job = Job {
        recipe: req.recipe.clone(),
        source: req.source.clone(),
        variant: req.variant,
        compiler: req.compiler.clone(),
        profile: req.profile.cloned(),
        work_dir: std::fs::canonicalize(req.work_dir)
            .unwrap_or_else(|_| req.work_dir.to_path_buf()),
        jobs: req.jobs,
        source_paths: req.source_paths,
    };
    let mut session = host.start_copied(bin_dir, "build-serve")?;
    // stdin stays open until the answer is in: closing it is what stops the build there.
    session.send(serde_json::to_string(&job)?);
    let mut answer = None;
    let mut line = String::new();
    while matches!(session.stdout.read_line(&mut line), Ok(n) if n > 0) {
        match serde_json::from_str::<Answer>(line.trim_end()) {
            Ok(Answer::Progress(p)) => {
                if let Some(f) = req.progress {
                    f(p)
                }
            }
            Ok(a) => {
                answer = Some(a);
                break;
            }
            // Not an answer (a login banner, a shell's words): kept for the error.
            Err(_) => session.note(line.trim_end().chars().take(300).collect()),
        }
        line.clear();
    }
    let (status, words) = session.finish()?;
    let words = words.join(" / ");
    match answer {
        Some(Answer::Built(b)) => Ok(*b),
        Some(Answer::Failed(e)) => Err(anyhow!("the build on {} failed: {e}", host.destination)),
        _ => Err(anyhow!(
            "{ROLE} {} stopped answering: its ssh session ended ({status}){}",
            host.destination,
            if words.is_empty() {
                String::new()
            } else {
                format!(": {words}")
            }
        )),
    }
}

/// Brings the host's build directory back to `dir` (its objects stay there): through a staging
/// directory, so an interrupted copy never looks like a build.
fn fetch(host: &SshTarget, dir: &Path) -> Result<()> {
    let d = remote_path(dir, "the build directory")?;
    let (parent, name) = match (dir.parent(), dir.file_name()) {
        (Some(p), Some(n)) => (p, n.to_string_lossy().into_owned()),
        _ => bail!("{d} has no parent directory"),
    };
    let staging = parent.join(format!(".{name}.fetch"));
    if staging.exists() {
        std::fs::remove_dir_all(&staging)
            .with_context(|| format!("removing {}", staging.display()))?;
    }
    std::fs::create_dir_all(&staging).with_context(|| format!("creating {}", staging.display()))?;
    let mut ssh = host
        .command()
        .arg(format!(
            "tar -C '{}' -cf - --exclude='*.o' --exclude='*.a' --exclude='*.gcno' \
             --exclude=thinlto-cache --exclude='{name}/build.json' '{name}'",
            parent.display()
        ))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .context("running ssh")?;
    let stream = ssh.stdout.take().context("ssh without its stdout")?;
    let tar = Command::new("tar")
        .arg("-C")
        .arg(&staging)
        .arg("-xf")
        .arg("-")
        .stdin(Stdio::from(stream))
        .output()
        .context("running tar")?;
    let ssh_out = ssh.wait_with_output()?;
    if !ssh_out.status.success() || !tar.status.success() {
        let _ = std::fs::remove_dir_all(&staging);
        bail!(
            "bringing the build back from {ROLE} {} failed (ssh {}, tar {}): {}{}",
            host.destination,
            ssh_out.status,
            tar.status,
            String::from_utf8_lossy(&ssh_out.stderr).trim(),
            String::from_utf8_lossy(&tar.stderr).trim()
        );
    }
    if dir.exists() {
        // An unfinished local attempt of the same build: the host's finished one replaces it.
        std::fs::remove_dir_all(dir).with_context(|| format!("removing {}", dir.display()))?;
    }
    std::fs::rename(staging.join(&name), dir)
        .with_context(|| format!("moving the fetched build to {}", dir.display()))?;
    let _ = std::fs::remove_dir(&staging);
    Ok(())
}

/// Builds `req` on `host` and brings it back: the build record written here as a local build's,
/// with the host named. Any failure is an error for the caller to report and build here instead.
pub fn build_on(host: &SshTarget, req: &BuildRequest) -> Result<BuildOutput> {
    if !may_go(req.variant) {
        bail!("{} is built here (see `builder::host`)", req.variant);
    }
    let (key, dir) = super::plan(req)?;
    remote_path(&dir, "the build directory")?;
    host.check_arch(ROLE)?;
    check_toolchain(host, req)?;
    ship(host, &req.source.dir, &req.source.hash, "source")?;
    if let Some(p) = req.profile {
        ship(host, p.path(), &p.content_hash()?, "profile")?;
    }
    let bin_dir = host.copy_self(ROLE, "build")?;
    let mut out = build_there(host, &bin_dir, req)?;
    if out.key != key || out.dir != dir {
        bail!(
            "{ROLE} {} built key {} in {}, where this host expects {key} in {}: not the same build",
            host.destination,
            out.key,
            out.dir.display(),
            dir.display()
        );
    }
    fetch(host, &dir)?;
    if !out.binary.is_file() {
        bail!(
            "the build came back from {} without {}",
            host.destination,
            out.binary.display()
        );
    }
    out.built_on = Some(host.destination.clone());
    out.cached = false;
    crate::infra::fs::write_json(&dir.join("build.json"), &out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn which_variants_may_go() {
        for (v, go) in [
            ("baseline", false),
            ("pgo-gen", false),
            ("lto", true),
            ("pgo", true),
            ("pgo+lto+bolt", true),
            // Compiled for the CPU it is compiled on: the build host's would differ.
            ("pgo+lto+native", false),
            ("pgo+march-native", false),
            ("pgo+lto+O3+v3", true),
            // The run's baseline at --cpu-level's level stays here like any baseline.
            ("baseline+v3", false),
        ] {
            let v: Variant = v.parse().unwrap();
            assert_eq!(may_go(v), go, "{v}");
        }
    }

    #[test]
    fn toolchain_differences_name_the_package_and_both_versions() {
        let here = facts(
            "machine x86_64 x86_64-linux-gnu\ncc gcc-12 (Debian 12.2.0-14) 12.2.0\n\
             pkg gcc-12 12.2.0-14 ii \npkg cmake 3.25.1-1 ii \n",
        );
        let same = differences(&here, &here.clone());
        assert!(same.is_empty());
        let there = facts(
            "machine x86_64 x86_64-linux-gnu\ncc gcc-12 (Debian 12.2.0-14+deb12u1) 12.2.0\n\
             pkg gcc-12 12.2.0-14+deb12u1 ii \n",
        );
        let d = differences(&here, &there);
        assert_eq!(d.len(), 3, "{d:?}");
        assert!(d
            .iter()
            .any(|l| l.starts_with("cmake: '3.25.1-1 ii' here, absent there")));
        assert!(d
            .iter()
            .any(|l| l.starts_with("gcc-12: '12.2.0-14 ii' here, '12.2.0-14+deb12u1 ii' there")));
        assert!(d.iter().any(|l| l.starts_with("cc: ")));
    }
}
