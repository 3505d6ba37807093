//! `pgoforge rebuild PACKAGE`: the package's binary made again from its published inputs alone —
//! the source fetched as the recipe in its sidecar pins it, the build variant compiled with the
//! sidecar's compiler profile (no training), BOLT applied with its BOLT profile and flags, the
//! package packed again — and compared byte for byte with the package's. Before any work the
//! sidecar must belong to the package (provenance.rs, exit status 9) and this machine's
//! toolchain must be the package's (exit status 10, unless `--allow-toolchain-change`); a
//! rebuilt binary that differs is exit status 11, with the ELF sections that differ.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::sidecar::{self, Toolchain};
use super::{Manifest, PackageRequest};
use crate::builder::{self, BuildRequest, Variant};
use crate::events::{Event, Reporter};
use crate::infra::exit::Stop;
use crate::infra::fs::sha256_file;
use crate::server::Layout;
use crate::toolchain::Bolt;

pub struct RebuildRequest<'a> {
    /// NAME.tar.zst.
    pub package: &'a Path,
    /// Its sidecar [NAME.rebuild.tar.zst beside it].
    pub sidecar: Option<&'a Path>,
    pub work: &'a Path,
    /// The source, for a recipe whose source is the user's (a directory or tarball).
    pub source: Option<&'a str>,
    pub allow_toolchain_change: bool,
    pub jobs: usize,
    pub reporter: &'a dyn Reporter,
}

/// An ELF section whose bytes differ between the package's binary and the rebuilt one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SectionDiff {
    pub name: String,
    /// Sizes in the package's binary and in the rebuilt one (None: the section is absent).
    pub package_bytes: Option<u64>,
    pub rebuilt_bytes: Option<u64>,
    /// Loaded into memory when the server runs (SHF_ALLOC): code and data, not symbols.
    pub loaded: bool,
}

/// What a rebuild made and found.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Rebuilt {
    pub package: String,
    pub binary: String,
    pub binary_identical: bool,
    /// Every section the server loads is identical (what differs, if anything, is symbol
    /// names and the build id computed over them).
    pub loaded_identical: bool,
    pub package_binary_sha256: String,
    pub rebuilt_binary_sha256: String,
    /// The whole tarball packed again (its own sidecar beside it), and whether its bytes are
    /// the package's.
    pub rebuilt_package: PathBuf,
    pub package_identical: bool,
    pub sections: Vec<SectionDiff>,
    /// The toolchain differences allowed by `--allow-toolchain-change`.
    pub toolchain_differences: Vec<String>,
    /// Facts that bear on the comparison (a build that was not path-neutral, a build key that
    /// differs, a relocated profile, a build found finished in the work dir).
    pub notes: Vec<String>,
    pub build_seconds: f64,
}

/// The package and its sidecar, unpacked and checked against each other.
struct Inputs {
    /// Holds the unpacked copies until the rebuild ends.
    scratch: tempfile::TempDir,
    root: PathBuf,
    manifest: Manifest,
    side: sidecar::Opened,
}

/// Rebuilds the package and compares; a rebuild that ran and differs is `Ok` with
/// `binary_identical: false` (the caller's exit status 11).
pub fn rebuild(req: &RebuildRequest) -> Result<Rebuilt> {
    let out_dir = req.work.join("rebuild");
    let i = open_inputs(req, &out_dir)?;
    let r = &i.side.record;
    let (compiler, differences) = toolchain(r, &i.manifest, req.allow_toolchain_change)?;
    let mut notes = Vec::new();
    if !r.path_neutral {
        notes.push(
            "the package's build was not path-neutral (made before 2026-12-05): its binary names \
             the directories it was built in, so a build in any other directory differs"
                .to_string(),
        );
    }
    let recipe = i.side.recipe()?;
    req.reporter.message("rebuild", "fetching the source");
    let source = crate::source::fetch(&recipe, req.source, None, req.work)?;
    if source.hash != r.source_hash {
        return Err(Stop::Provenance(format!(
            "the source fetched ({}, sha256 {}) is not the one {} was built from ({}, sha256 {})",
            source.origin, source.hash, i.manifest.name, r.source_origin, r.source_hash
        ))
        .into());
    }
    let profile = i.side.compiler_profile();
    let build = build_again(req, &i, &recipe, &source, &compiler, profile.as_ref())?;
    notes.extend(build_notes(r, &build));
    let binary = if r.bolted {
        bolt(
            &i.side,
            &build.binary,
            &out_dir,
            &i.manifest.name,
            req.reporter,
        )?
    } else {
        build.binary.clone()
    };
    req.reporter
        .message("rebuild", "packing the rebuilt binary");
    // The share files come from the build tree the binary (or its bolt-ready original) is in.
    let layout = Layout::discover(&build.binary, None, Some(&source.dir));
    let pkg = super::package(&PackageRequest {
        binary: &binary,
        layout: &layout,
        manifest: &i.manifest,
        out_dir: &out_dir,
    })?;
    // The rebuilt package gets its own sidecar: whoever rebuilt it can publish both, and the
    // next rebuild starts from theirs.
    let fdata = r.profile("bolt").map(|p| i.side.path_of(p));
    sidecar::write(
        &sidecar::SidecarInputs {
            package: &pkg,
            recipe: &recipe,
            source: &source,
            build: &build,
            compiler_profile: profile.as_ref(),
            training: r
                .profile("compiler")
                .map(|p| p.training.as_slice())
                .unwrap_or_default(),
            bolt: fdata
                .as_deref()
                .filter(|_| r.bolted)
                .map(|f| (f, r.bolt_flags.as_slice())),
            bolt_ready: Some(build.binary.as_path()).filter(|_| r.bolted),
            epoch: i.manifest.source_date_epoch,
        },
        &i.manifest.name,
        &out_dir,
    )?;
    let (rroot, _) = super::unpack::unpack_checked(&pkg.path, &i.scratch.path().join("r"))?;
    let sections = if pkg.binary_sha256 == r.binary_sha256 {
        Vec::new()
    } else {
        differing_sections(&i.root.join(&r.binary), &rroot.join(&r.binary))?
    };
    Ok(Rebuilt {
        package: i.manifest.name.clone(),
        binary: r.binary.clone(),
        binary_identical: pkg.binary_sha256 == r.binary_sha256,
        loaded_identical: sections
            .iter()
            .all(|d| !d.loaded || d.name == ".note.gnu.build-id"),
        package_binary_sha256: r.binary_sha256.clone(),
        rebuilt_binary_sha256: pkg.binary_sha256.clone(),
        package_identical: pkg.sha256 == sha256_file(req.package)?,
        rebuilt_package: pkg.path,
        sections,
        toolchain_differences: differences,
        notes,
        build_seconds: if build.cached { 0.0 } else { build.seconds },
    })
}

/// The package unpacked and checked against its SHA256SUMS, its sidecar opened, and the two
/// checked against each other (provenance.rs) — before anything is fetched or built.
fn open_inputs(req: &RebuildRequest, out_dir: &Path) -> Result<Inputs> {
    let here = |p: &Path| p.parent().and_then(|d| fs::canonicalize(d).ok());
    if here(req.package).is_some_and(|d| Some(d) == fs::canonicalize(out_dir).ok()) {
        crate::usage!(
            "{} is in {}, where this rebuild writes its own package: rebuild it in another \
             --work-dir",
            req.package.display(),
            out_dir.display()
        );
    }
    fs::create_dir_all(out_dir).with_context(|| format!("creating {}", out_dir.display()))?;
    let scratch = tempfile::Builder::new()
        .prefix(".scratch-")
        .tempdir_in(out_dir)?;
    // What does not unpack, or does not match its SHA256SUMS, is refused like a bad argument.
    let (root, manifest) = crate::infra::exit::Refuse::refused(super::unpack::unpack_checked(
        req.package,
        &scratch.path().join("p"),
    ))?;
    let sidecar_path = req
        .sidecar
        .map(Path::to_path_buf)
        .unwrap_or_else(|| sidecar::beside(req.package));
    if !sidecar_path.is_file() {
        crate::usage!(
            "{} has no rebuild sidecar ({} does not exist): a package made by pgoforge since \
             2026-12-05 has one beside it; give it with --sidecar",
            req.package.display(),
            sidecar_path.display()
        );
    }
    let side = sidecar::open(&sidecar_path, &scratch.path().join("s"))?;
    super::provenance::binary_matches(&root, &side.record.binary, &manifest)?;
    super::provenance::sidecar_belongs(&side, &root, &manifest)?;
    Ok(Inputs {
        scratch,
        root,
        manifest,
        side,
    })
}

/// The package's compiler here, and what of this machine's toolchain differs from the
/// package's; refused when something does, unless allowed.
fn toolchain(
    r: &sidecar::RebuildRecord,
    m: &Manifest,
    allow: bool,
) -> Result<(crate::toolchain::Compiler, Vec<String>)> {
    let compiler = r.toolchain.find_compiler().map_err(|e| {
        Stop::ToolchainDiffers(format!(
            "the package was built with {} ({}), which this machine does not have: {e:#}",
            r.toolchain.compiler, r.toolchain.compiler_version
        ))
    })?;
    let differences = Toolchain::here(&compiler, r.bolted)?.differences(&r.toolchain);
    if !differences.is_empty() && !allow {
        return Err(Stop::ToolchainDiffers(format!(
            "refusing to rebuild {} with another toolchain — {}. Another version makes another \
             binary; install the package's, or pass --allow-toolchain-change to rebuild and \
             compare anyway",
            m.name,
            differences.join("; ")
        ))
        .into());
    }
    Ok((compiler, differences))
}

/// The record's build variant compiled with the sidecar's profile (no training).
fn build_again(
    req: &RebuildRequest,
    i: &Inputs,
    recipe: &crate::recipe::Recipe,
    source: &crate::source::Source,
    compiler: &crate::toolchain::Compiler,
    profile: Option<&crate::builder::ProfileInput>,
) -> Result<builder::BuildOutput> {
    let r = &i.side.record;
    let variant: Variant = r
        .variant
        .parse()
        .map_err(|e| Stop::Provenance(format!("rebuild.json's variant '{}': {e}", r.variant)))?;
    req.reporter
        .message("rebuild", &format!("building {variant} (no training)"));
    let tick = |pct: u64| {
        req.reporter.event(Event::Progress {
            stage: "rebuild".into(),
            done: pct,
            total: 100,
        })
    };
    builder::build(&BuildRequest {
        recipe,
        source,
        variant,
        compiler,
        profile,
        work_dir: req.work,
        jobs: req.jobs,
        progress: Some(&tick),
        cluster: None,
        source_paths: builder::relative::SourcePaths::of_profile(profile),
    })
}

/// What bears on the comparison: a build found finished, a key that differs, a ThinLTO build
/// in another directory than the package's, a relocated profile.
fn build_notes(r: &sidecar::RebuildRecord, build: &builder::BuildOutput) -> Vec<String> {
    let mut notes = Vec::new();
    if build.cached {
        notes.push(format!(
            "the build was found finished in {} (same key): not compiled again",
            build.dir.display()
        ));
    }
    if build.key != r.build_key {
        notes.push(format!(
            "the build's key is {}, the package's build had {} (another pgoforge, or recipe \
             format)",
            build.key, r.build_key
        ));
    }
    let thin_lto = build
        .flags
        .compile_flags()
        .iter()
        .any(|f| f == "-flto=thin");
    let gcc_profile =
        build.compiler.family == crate::toolchain::FlagFamily::Gcc && build.profile_hash.is_some();
    // Sources named relative (builder/relative.rs) make neither of the next two matter.
    let elsewhere = !r.build_dir.is_empty()
        && build.build_dir != Path::new(&r.build_dir)
        && build.source_paths == builder::relative::SourcePaths::Absolute;
    if gcc_profile && elsewhere {
        notes.push(format!(
            "the package was built in {}, this rebuild in {}: GCC's profile records do not \
             match functions compiled from another source path, so in another directory most \
             functions find no profile ({} missing-profile warnings here) and the code differs; \
             rebuild with the package's --work-dir (three levels above its build directory)",
            r.build_dir,
            build.build_dir.display(),
            build.missing_profile_warnings
        ));
    }
    if thin_lto && elsewhere {
        // WORK/builds/NAME-KEY/build: the work dir is three levels up.
        let work = Path::new(&r.build_dir)
            .ancestors()
            .nth(3)
            .map(|p| p.display().to_string())
            .unwrap_or_default();
        notes.push(format!(
            "the package was built in {}, this rebuild in {}: clang's ThinLTO names the \
             functions it promotes by a hash of each module's absolute source path, so the \
             symbol table and build id will differ though the code does not; for the same \
             bytes rebuild with --work-dir {work}",
            r.build_dir,
            build.build_dir.display()
        ));
    }
    if let Some(rel) = &build.profile_relocated {
        notes.push(rel.sentence());
    }
    notes
}

/// BOLT with the sidecar's profile and flags, on the rebuilt bolt-ready binary.
fn bolt(
    side: &sidecar::Opened,
    ready: &Path,
    out_dir: &Path,
    name: &str,
    reporter: &dyn Reporter,
) -> Result<PathBuf> {
    let b = Bolt::find().context("llvm-bolt is not installed (apt-get install bolt-22)")?;
    let fdata = side
        .record
        .profile("bolt")
        .map(|p| side.path_of(p))
        .ok_or_else(|| {
            Stop::Provenance("the sidecar of a BOLTed binary carries no bolt profile".into())
        })?;
    let dir = out_dir.join(format!("{name}.bolt"));
    fs::create_dir_all(&dir)?;
    let file_name = ready
        .file_name()
        .map(|n| format!("{}.bolt", n.to_string_lossy()))
        .unwrap_or_else(|| "server.bolt".into());
    let out = dir.join(file_name);
    reporter.message("rebuild", "optimizing with BOLT (the sidecar's profile)");
    crate::profile::bolt::optimize_binary(
        &b,
        ready,
        &fdata,
        &side.record.bolt_flags,
        &out,
        &dir.join("bolt.log"),
    )?;
    Ok(out)
}

/// Each section's name, file offset, size and whether it is loaded, from `readelf -S -W`.
fn sections(bin: &Path) -> Result<Vec<(String, u64, u64, bool)>> {
    let out = Command::new("readelf")
        .args(["-S", "-W"])
        .arg(bin)
        .output()
        .context("running readelf (apt-get install binutils)")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut v = Vec::new();
    for line in text.lines() {
        // "  [12] .text  PROGBITS  0000000000401000 001000 0a1b2c 00  AX  0   0 16"
        let Some((_, rest)) = line.split_once(']') else {
            continue;
        };
        let w: Vec<&str> = rest.split_whitespace().collect();
        if w.len() < 5 || w[1] == "NOBITS" {
            continue;
        }
        let hex = |s: &str| u64::from_str_radix(s, 16).ok();
        // The flags column is left out when a section has none.
        let loaded = w
            .get(6)
            .is_some_and(|f| f.contains('A') && !f.bytes().all(|b| b.is_ascii_digit()));
        if let (Some(off), Some(size)) = (hex(w[3]), hex(w[4])) {
            v.push((w[0].to_string(), off, size, loaded));
        }
    }
    Ok(v)
}

/// The sections whose bytes differ, in the package's order (then those only the rebuild has).
pub fn differing_sections(package: &Path, rebuilt: &Path) -> Result<Vec<SectionDiff>> {
    let (a, b) = (sections(package)?, sections(rebuilt)?);
    let (da, db) = (
        fs::read(package).with_context(|| format!("reading {}", package.display()))?,
        fs::read(rebuilt).with_context(|| format!("reading {}", rebuilt.display()))?,
    );
    let bytes = |d: &[u8], off: u64, size: u64| -> Vec<u8> {
        d.get(off as usize..(off + size) as usize)
            .map(<[u8]>::to_vec)
            .unwrap_or_default()
    };
    let mut diffs = Vec::new();
    for (name, off, size, loaded) in &a {
        let other = b.iter().find(|s| &s.0 == name);
        let same =
            other.is_some_and(|(_, o2, s2, _)| bytes(&da, *off, *size) == bytes(&db, *o2, *s2));
        if !same {
            diffs.push(SectionDiff {
                name: name.clone(),
                package_bytes: Some(*size),
                rebuilt_bytes: other.map(|s| s.2),
                loaded: *loaded,
            });
        }
    }
    for (name, _, size, loaded) in b.iter().filter(|s| !a.iter().any(|x| x.0 == s.0)) {
        diffs.push(SectionDiff {
            name: name.clone(),
            package_bytes: None,
            rebuilt_bytes: Some(*size),
            loaded: *loaded,
        });
    }
    Ok(diffs)
}
