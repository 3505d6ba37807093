//! `pgoforge package verify PKG`: a package (the `.tar.zst`, or the directory it was unpacked
//! to) checked against its own manifest on any host, without the build tree: every file against
//! SHA256SUMS and nothing unlisted, the server's version string against the manifest's, the
//! deployment files against the package's layout, and a short start of the packaged server on a
//! scratch datadir (initialized, started, `VERSION()` asked, a table written and read, stopped).
//! A package compiled for a CPU level is also checked against this machine's CPU (or a stand-in's
//! flags, `--cpu-flags`): one that lacks a feature fails with its own exit status, 8, and the
//! server is not started (it would die with SIGILL). Every check is reported; the verdict is that
//! all passed.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::{deploy, Manifest};
use crate::infra::exit::ExitStatus;
use crate::server::{Flavor, Server, ServerSpec};

/// One check and what it found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    pub name: String,
    pub ok: bool,
    pub detail: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Verification {
    pub package: PathBuf,
    pub name: String,
    pub server_version: String,
    pub checks: Vec<Check>,
}

impl Verification {
    pub fn passed(&self) -> bool {
        self.checks.iter().all(|c| c.ok)
    }

    /// The exit status: 0; 6 when the package is damaged, altered or does not start; 9 when its
    /// files match SHA256SUMS but not the manifest's or the sidecar's hashes; 8 when all that
    /// fails is the CPU (the package is sound, this machine cannot run it).
    pub fn status(&self) -> ExitStatus {
        let failed = |cpu: bool| self.checks.iter().any(|c| !c.ok && (c.name == CPU) == cpu);
        let damaged = self.checks.iter().any(|c| !c.ok && c.name == HASHES);
        // Damage first (a file that differs from SHA256SUMS also differs from the manifest's
        // hash); provenance when the files agree with SHA256SUMS but not with the manifest or
        // the sidecar — a swap that rewrote SHA256SUMS too.
        if !damaged
            && self
                .checks
                .iter()
                .any(|c| !c.ok && c.name.starts_with(PROVENANCE))
        {
            ExitStatus::Provenance
        } else if failed(false) {
            ExitStatus::VerifyFailed
        } else if failed(true) {
            ExitStatus::CpuUnsupported
        } else {
            ExitStatus::Success
        }
    }
}

/// The CPU check's name.
const CPU: &str = "cpu";
/// The provenance checks' names begin so (exit status 9).
const PROVENANCE: &str = "provenance";
/// The SHA256SUMS check's name.
const HASHES: &str = "hashes";

/// The check of the CPU (this machine's, or the stand-in `cpuinfo`) against the manifest's
/// requirement; None when the package asks nothing beyond x86-64.
fn cpu_check(m: &Manifest, cpuinfo: Option<&Path>) -> Result<Option<Check>> {
    let Some(r) = deploy::cpu_needed(m) else {
        return Ok(None);
    };
    let whose = cpuinfo.map_or("this machine".to_string(), |p| p.display().to_string());
    // A stand-in that cannot be read is a bad argument; this machine's, a failed check.
    let text = match (cpuinfo, super::cpu::read_cpuinfo(cpuinfo)) {
        (_, Ok(t)) => t,
        (Some(_), Err(e)) => return Err(crate::infra::exit::Stop::Usage(format!("{e:#}")).into()),
        (None, Err(e)) => return Ok(Some(check(CPU, false, format!("{e:#}")))),
    };
    let missing = r.missing(&crate::builder::codegen::cpuinfo_flags(&text));
    Ok(Some(if missing.is_empty() {
        check(
            CPU,
            true,
            format!(
                "{whose} has all {} features of {}",
                r.flags.len(),
                r.describe()
            ),
        )
    } else {
        check(CPU, false, format!("{whose}: {}", r.refusal(&missing)))
    }))
}

/// Files a DBA is told to edit (paths in the configuration and the unit): a change there is
/// reported, not failed.
fn editable(name: &str) -> bool {
    name.starts_with("etc/") || name.starts_with("systemd/") || name == "README.md"
}

fn check(name: &str, ok: bool, detail: impl Into<String>) -> Check {
    Check {
        name: name.into(),
        ok,
        detail: detail.into(),
    }
}

/// Verifies `pkg`; `scratch` holds the unpacked copy and the short start's datadir. Errors
/// only for what is not a package at all (exit 2 from the caller); a package that fails a check
/// comes back with that check failed.
pub fn verify(
    pkg: &Path,
    scratch: &Path,
    start: bool,
    cpuinfo: Option<&Path>,
    sidecar: Option<&Path>,
) -> Result<Verification> {
    let root = if pkg.is_dir() {
        pkg.to_path_buf()
    } else {
        let into = scratch.join("unpacked");
        fs::create_dir_all(&into)?;
        // What does not unpack is not a package at all: refused, like a bad argument.
        crate::infra::exit::Refuse::refused(super::unpack::unpack(pkg, &into))?
    };
    let manifest: Manifest = serde_json::from_str(
        &fs::read_to_string(root.join("manifest.json")).map_err(|e| {
            crate::infra::exit::Stop::Usage(format!(
                "{}: no manifest.json ({e}): not a pgoforge package",
                pkg.display()
            ))
        })?,
    )
    .map_err(|e| {
        crate::infra::exit::Stop::Usage(format!(
            "{}: manifest.json does not parse ({e}): not a pgoforge package, or a damaged one",
            pkg.display()
        ))
    })?;
    let mut checks = vec![hashes(&root)];
    let dir_name = root
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    checks.push(check(
        "name",
        dir_name == manifest.name,
        if dir_name == manifest.name {
            format!("directory and manifest both say {}", manifest.name)
        } else {
            format!(
                "the directory is {dir_name}, the manifest says {}",
                manifest.name
            )
        },
    ));
    let server = server_binary(&root);
    let flavor = match &server {
        Some(b) => Flavor::detect(b).ok(),
        None => None,
    };
    checks.push(match (&server, &flavor) {
        (None, _) => check("version", false, "bin/ holds no mariadbd or mysqld"),
        (Some(b), None) => check(
            "version",
            false,
            format!(
                "{} does not run or is not a MySQL-family server",
                b.display()
            ),
        ),
        (Some(_), Some(f)) if f.version == manifest.server_version => check(
            "version",
            true,
            format!("the server says {}, as the manifest does", f.version),
        ),
        (Some(_), Some(f)) => check(
            "version",
            false,
            format!(
                "the server says {}, the manifest {}",
                f.version, manifest.server_version
            ),
        ),
    });
    checks.extend(provenance(
        pkg,
        &root,
        &manifest,
        server.as_deref(),
        sidecar,
        scratch,
    ));
    checks.push(deployment(&root, &manifest, server.as_deref()));
    let cpu = cpu_check(&manifest, cpuinfo)?;
    let cpu_lacks = cpu.as_ref().is_some_and(|c| !c.ok);
    checks.extend(cpu);
    if start && cpu_lacks {
        // Not a failure of the package: the verdict is the CPU's, and starting would crash.
        checks.push(check(
            "start",
            true,
            "not tried: the server would die with SIGILL on this CPU",
        ));
    } else if start {
        checks.push(match &server {
            Some(b) => short_start(b, &manifest, scratch),
            None => check("start", false, "no server to start"),
        });
    }
    Ok(Verification {
        package: pkg.to_path_buf(),
        name: manifest.name.clone(),
        server_version: manifest.server_version.clone(),
        checks,
    })
}

/// The binary against the manifest's hash, and the rebuild sidecar (`--sidecar`, else
/// NAME.rebuild.tar.zst beside the package when there is one) against the package
/// (provenance.rs).
fn provenance(
    pkg: &Path,
    root: &Path,
    m: &Manifest,
    server: Option<&Path>,
    sidecar: Option<&Path>,
    scratch: &Path,
) -> Vec<Check> {
    let as_check = |name: &str, r: Result<String>| match r {
        Ok(d) => check(name, true, d),
        Err(e) => check(name, false, format!("{e:#}")),
    };
    let mut out = Vec::new();
    if let Some(b) = server.and_then(|b| b.strip_prefix(root).ok()) {
        out.push(as_check(
            "provenance: binary",
            super::provenance::binary_matches(root, &b.to_string_lossy(), m),
        ));
    }
    let beside = if pkg.is_dir() {
        pkg.with_file_name(format!("{}.rebuild.tar.zst", m.name))
    } else {
        super::sidecar::beside(pkg)
    };
    let path = match sidecar {
        Some(p) => p.to_path_buf(),
        None if beside.is_file() => beside,
        None => {
            out.push(check(
                "provenance: sidecar",
                true,
                format!(
                    "no rebuild sidecar beside the package ({}): its profiles are not checked",
                    beside.display()
                ),
            ));
            return out;
        }
    };
    let r = super::sidecar::open(&path, &scratch.join("sidecar"))
        .and_then(|s| super::provenance::sidecar_belongs(&s, root, m))
        .map(|d| format!("{}: {d}", path.display()));
    out.push(as_check("provenance: sidecar", r));
    out
}

/// The server in `bin/`: the one executable named like a server.
fn server_binary(root: &Path) -> Option<PathBuf> {
    ["mariadbd", "mysqld"]
        .iter()
        .map(|n| root.join("bin").join(n))
        .find(|p| p.is_file())
}

/// Every file against SHA256SUMS, nothing unlisted; an edited configuration file is reported
/// as such, not failed.
fn hashes(root: &Path) -> Check {
    let sums = match super::unpack::check_sums(root) {
        Ok(s) => s,
        Err(e) => return check(HASHES, false, format!("no SHA256SUMS: {e}")),
    };
    let (edited, differing): (Vec<&String>, Vec<&String>) =
        sums.differing.iter().partition(|n| editable(n));
    let bad: Vec<String> = sums
        .bad_lines
        .iter()
        .cloned()
        .chain(differing.iter().map(|n| format!("{n} differs")))
        .chain(sums.missing.iter().map(|n| format!("{n} is missing")))
        .chain(
            sums.unlisted
                .iter()
                .map(|n| format!("{n} is not in SHA256SUMS")),
        )
        .collect();
    let mut detail = if bad.is_empty() {
        format!("{} files match SHA256SUMS", sums.matching)
    } else {
        format!("damaged or altered: {}", bad.join("; "))
    };
    if !edited.is_empty() {
        let names: Vec<&str> = edited.iter().map(|n| n.as_str()).collect();
        detail += &format!(
            "; changed since packaged (local edits?): {}",
            names.join(", ")
        );
    }
    check(HASHES, bad.is_empty(), detail)
}

/// The deployment files (packages made since 2026-12-02): my.cnf names directories the package
/// has, the unit runs the package's server with that my.cnf.
fn deployment(root: &Path, m: &Manifest, server: Option<&Path>) -> Check {
    let cnf_path = root.join("etc/my.cnf");
    let Ok(cnf) = fs::read_to_string(&cnf_path) else {
        return check(
            "deployment files",
            true,
            "none (a package made before 2026-12-02): run it with `pgoforge server start --binary`",
        );
    };
    let mut problems = Vec::new();
    for (key, rel) in deploy::package_dirs_named(&cnf, m) {
        match rel {
            Some(r) if root.join(&r).is_dir() => {}
            Some(r) => problems.push(format!(
                "my.cnf's {key} names {} , not in the package",
                r.display()
            )),
            None => problems.push(format!(
                "my.cnf's {key} is outside {} (moved? README says how)",
                deploy::prefix(m)
            )),
        }
    }
    let units: Vec<PathBuf> = fs::read_dir(root.join("systemd"))
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    let server_name = server
        .and_then(|s| s.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let want = format!(
        "ExecStart={p}/bin/{server_name} --defaults-file={p}/etc/my.cnf",
        p = deploy::prefix(m)
    );
    match units.as_slice() {
        [u] => {
            let text = fs::read_to_string(u).unwrap_or_default();
            if !text.lines().any(|l| l.trim() == want) {
                problems.push(format!(
                    "{} does not run the package's server with its my.cnf ({want})",
                    u.display()
                ));
            }
        }
        _ => problems.push("systemd/ must hold exactly one unit".into()),
    }
    if !root.join("README.md").is_file() {
        problems.push("README.md is missing".into());
    }
    if problems.is_empty() {
        check(
            "deployment files",
            true,
            format!(
                "etc/my.cnf and {} fit the package at {}",
                units
                    .first()
                    .and_then(|u| u.strip_prefix(root).ok())
                    .map(|u| u.display().to_string())
                    .unwrap_or_default(),
                deploy::prefix(m)
            ),
        )
    } else {
        check("deployment files", false, problems.join("; "))
    }
}

/// Starts the packaged server on a new datadir under `scratch`, asks its version, writes and
/// reads a table, stops it.
fn short_start(server: &Path, m: &Manifest, scratch: &Path) -> Check {
    let t0 = std::time::Instant::now();
    let r = (|| -> Result<String> {
        let dir = scratch.join("start");
        let _ = fs::remove_dir_all(&dir);
        let mut spec = ServerSpec::new(server);
        spec.config.buffer_pool_mb = 128;
        // A package of a MyRocks run loads its own plugin (lib/plugin) and the table is MyRocks'.
        spec.config.engine = m.engine;
        let mut srv = Server::create(&spec, &dir).context("starting the packaged server")?;
        let mut c = srv.state.root()?;
        let version = c
            .query_value("SELECT VERSION()")
            .map_err(|e| anyhow::anyhow!("SELECT VERSION(): {e}"))?
            .unwrap_or_default();
        let create = format!(
            "CREATE TABLE pgoforge_verify.t (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE={}",
            m.engine.name()
        );
        for sql in [
            "CREATE DATABASE IF NOT EXISTS pgoforge_verify",
            create.as_str(),
            "INSERT INTO pgoforge_verify.t VALUES (1, 'one'), (2, 'two'), (3, 'three')",
        ] {
            c.query(sql).map_err(|e| anyhow::anyhow!("{sql}: {e}"))?;
        }
        let n = c
            .query_value("SELECT COUNT(*) FROM pgoforge_verify.t WHERE v LIKE 't%'")
            .map_err(|e| anyhow::anyhow!("reading the table back: {e}"))?
            .unwrap_or_default();
        drop(c);
        srv.stop()?;
        if n != "2" {
            anyhow::bail!("wrote 3 rows, 2 matching; read back {n}");
        }
        Ok(version)
    })();
    let secs = t0.elapsed().as_secs_f64();
    match r {
        Ok(v) if m.server_version.starts_with(&v) || v == m.server_version => check(
            "start",
            true,
            format!(
                "initialized, started, served VERSION() = {v}, wrote and read {} table, stopped \
                 ({secs:.1} s)",
                match m.engine.plugin() {
                    Some(p) => format!("a {} table (its {p} from the package)", m.engine),
                    None => "a".to_string(),
                }
            ),
        ),
        Ok(v) => check(
            "start",
            false,
            format!(
                "the running server says VERSION() = {v}, the manifest {}",
                m.server_version
            ),
        ),
        Err(e) => check("start", false, format!("{e:#}")),
    }
}
