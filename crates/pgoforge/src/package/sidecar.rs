//! What it takes to rebuild a package, published beside it: `NAME.rebuild.tar.zst` holds
//! `NAME.rebuild/rebuild.json` ([`RebuildRecord`]: which package it belongs to, the source's
//! identity, the build variant, the toolchain's versions, the BOLT flags), `recipe.toml` (the
//! recipe as resolved, the release pinned), the profiles (`profiles/compiler.profdata` or
//! `profiles/compiler.gcda/`, `profiles/bolt.fdata`) and `SHA256SUMS`; packed like the package
//! itself, the same bytes every time. `pgoforge rebuild` (rebuild.rs) starts from it, and
//! `package verify` checks it against the package (provenance.rs). The profiles are also
//! what a next release's build can start from without training.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::builder::relative::SourcePaths;
use crate::builder::{BuildOutput, ProfileInput};
use crate::infra::runner::version_of;
use crate::source::{DebianSource, Source};
use crate::toolchain::{Bolt, Compiler, FlagFamily};

/// The kind of the BOLT profile's YAML form in a sidecar (derived from the .fdata the manifest
/// names; checked against the sidecar's own record).
pub const BOLT_YAML: &str = "bolt-yaml";

/// The sidecar of `tarball` (NAME.tar.zst): NAME.rebuild.tar.zst beside it.
pub fn beside(tarball: &Path) -> PathBuf {
    let name = tarball
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = name.strip_suffix(".tar.zst").unwrap_or(&name);
    tarball.with_file_name(format!("{stem}.rebuild.tar.zst"))
}

/// The tools whose versions decide the bytes of a rebuilt binary.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Toolchain {
    /// The compiler's label (`clang-22`) and its `--version` line.
    pub compiler: String,
    pub compiler_version: String,
    /// The C compiler the build ran (`/usr/bin/gcc`, `/usr/bin/clang-22`): a build's key names
    /// it, so the rebuild calls the same one.
    #[serde(default)]
    pub cc: String,
    /// ld.lld's `--version` line (clang builds link with it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lld: Option<String>,
    /// GNU binutils' (`ld --version`): GCC's linker, and the `strip` that made the packaged
    /// binary.
    pub binutils: String,
    /// llvm-bolt's version line, for a BOLTed binary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bolt: Option<String>,
}

/// The first line of `cmd arg` that contains `needle` (llvm-bolt's version is not its first).
fn first_line_with(cmd: &Path, arg: &str, needle: &str) -> Option<String> {
    let out = Command::new(cmd).arg(arg).output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .find(|l| l.contains(needle))
        .map(|l| l.trim().to_string())
}

impl Toolchain {
    /// This machine's toolchain for `compiler` (and BOLT when `bolted`).
    pub fn here(compiler: &Compiler, bolted: bool) -> Result<Toolchain> {
        let lld = match compiler.family {
            FlagFamily::Clang => {
                let p = PathBuf::from(format!("/usr/lib/llvm-{}/bin/ld.lld", compiler.major));
                let p = if p.is_file() {
                    p
                } else {
                    crate::infra::tools::which("ld.lld").unwrap_or(p)
                };
                version_of(&p, "--version")
            }
            FlagFamily::Gcc => None,
        };
        let bolt = if bolted {
            let b = Bolt::find().context("llvm-bolt is not installed (apt-get install bolt-22)")?;
            first_line_with(&b.llvm_bolt, "--version", "version")
        } else {
            None
        };
        Ok(Toolchain {
            compiler: compiler.label(),
            compiler_version: compiler.version.clone(),
            cc: compiler.cc.display().to_string(),
            lld,
            binutils: version_of(Path::new("ld"), "--version")
                .context("ld --version gave nothing (apt-get install binutils)")?,
            bolt,
        })
    }

    /// The package's compiler on this machine: by the name the build called it (`gcc`,
    /// `clang-22`), else by its path.
    pub fn find_compiler(&self) -> Result<Compiler> {
        let name = Path::new(&self.cc)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let by_name = matches!(name.as_str(), "gcc" | "clang")
            || name.starts_with("gcc-")
            || name.starts_with("clang-");
        if by_name {
            return Compiler::find(&name, None);
        }
        if self.cc.is_empty() {
            return Compiler::find(&self.compiler, None);
        }
        let family = if self.compiler.starts_with("clang") {
            FlagFamily::Clang
        } else {
            FlagFamily::Gcc
        };
        Compiler::find(&self.cc, Some(family))
    }

    /// What differs from `other` (the package's), one sentence per tool.
    pub fn differences(&self, package: &Toolchain) -> Vec<String> {
        let mut d = Vec::new();
        let mut cmp = |what: &str, here: Option<&String>, there: Option<&String>| {
            if here != there {
                d.push(format!(
                    "{what}: the package was built with {}, this machine has {}",
                    there.map_or("none", |s| s.as_str()),
                    here.map_or("none", |s| s.as_str())
                ));
            }
        };
        cmp(
            "compiler",
            Some(&self.compiler_version),
            Some(&package.compiler_version),
        );
        cmp("lld", self.lld.as_ref(), package.lld.as_ref());
        cmp("binutils", Some(&self.binutils), Some(&package.binutils));
        cmp("llvm-bolt", self.bolt.as_ref(), package.bolt.as_ref());
        d
    }
}

/// A profile the sidecar carries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CarriedProfile {
    /// `compiler` or `bolt`, as the manifest's `profiles` entries name them.
    pub kind: String,
    /// Inside the sidecar's directory.
    pub path: String,
    /// Its content hash (`ProfileInput::content_hash`), the one in the manifest.
    pub hash: String,
    /// What the training ran (the stored profile's record; empty when not known).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub training: Vec<String>,
    /// How the instrumented build named its sources (builder/relative.rs); absent: absolute.
    #[serde(default, skip_serializing_if = "SourcePaths::is_absolute")]
    pub source_paths: SourcePaths,
}

/// Where a run's profiles came from when it did not train them (`run --profile-from`): the
/// earlier build's package, source, compiler and training. Recorded in the manifest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProfileProvenance {
    /// The sidecar they were taken from.
    pub from: String,
    pub package: String,
    pub source_origin: String,
    pub source_hash: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debian_source: Option<DebianSource>,
    pub compiler: String,
    pub compiler_version: String,
    pub training: Vec<String>,
    /// The profiles as `kind:hash`.
    pub hashes: Vec<String>,
}

/// rebuild.json.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RebuildRecord {
    /// The package it belongs to (the manifest's name), its binary's path inside and hash, and
    /// the hash of its manifest.json.
    pub package: String,
    pub binary: String,
    pub binary_sha256: String,
    pub manifest_sha256: String,
    pub recipe: String,
    pub source_origin: String,
    pub source_hash: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debian_source: Option<DebianSource>,
    /// The build's variant (a `+bolt` build's, the bolt-ready one) and key.
    pub variant: String,
    pub build_key: String,
    /// Whether the package's binary is the BOLTed one, and BOLT's flags.
    pub bolted: bool,
    pub bolt_flags: Vec<String>,
    pub toolchain: Toolchain,
    pub profiles: Vec<CarriedProfile>,
    /// Whether the build mapped its paths (builder/paths.rs); a build that did not names the
    /// paths it was built at, and no rebuild elsewhere gives its bytes.
    pub path_neutral: bool,
    /// Where the package's build ran (WORK/builds/NAME-KEY/build). A clang ThinLTO build names
    /// the functions it promotes by a hash of each module's absolute source path, which no
    /// prefix map changes: rebuilt in another directory, its symbol table and build id differ
    /// (the code does not), and a rebuild at this path is byte-identical.
    /// Empty (absent) for a build whose sources were named relative (builder/relative.rs): its
    /// bytes do not depend on the directory, so the record leaves it out and a sidecar packed
    /// again elsewhere is the same file.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub build_dir: String,
}

impl RebuildRecord {
    pub fn profile(&self, kind: &str) -> Option<&CarriedProfile> {
        self.profiles.iter().find(|p| p.kind == kind)
    }
}

/// What the sidecar is made from: the packaged contender's build and profiles.
pub struct SidecarInputs<'a> {
    pub package: &'a super::Package,
    pub recipe: &'a crate::recipe::Recipe,
    pub source: &'a Source,
    pub build: &'a BuildOutput,
    pub compiler_profile: Option<&'a ProfileInput>,
    /// What trained it (empty when not known).
    pub training: &'a [String],
    /// The BOLT profile (.fdata) and flags, for a BOLTed binary, and the bolt-ready binary it
    /// profiled (its YAML form, which a next release's BOLT can infer moved code from, is made
    /// from both).
    pub bolt: Option<(&'a Path, &'a [String])>,
    pub bolt_ready: Option<&'a Path>,
    pub epoch: u64,
}

/// Writes `NAME.rebuild.tar.zst` into `out_dir`; returns its path.
pub fn write(i: &SidecarInputs, name: &str, out_dir: &Path) -> Result<PathBuf> {
    let staging = tempfile::Builder::new()
        .prefix(".sidecar-")
        .tempdir_in(out_dir)
        .with_context(|| format!("making a staging directory in {}", out_dir.display()))?;
    let dir_name = format!("{name}.rebuild");
    let root = staging.path().join(&dir_name);
    let profiles_dir = root.join("profiles");
    fs::create_dir_all(&profiles_dir)?;
    let mut profiles = Vec::new();
    if let Some(p) = i.compiler_profile {
        let rel = match p {
            ProfileInput::Profdata(f) => {
                fs::copy(f, profiles_dir.join("compiler.profdata"))
                    .with_context(|| format!("copying {}", f.display()))?;
                "profiles/compiler.profdata"
            }
            ProfileInput::GccDir(d) => {
                crate::infra::fs::copy_tree(d, &profiles_dir.join("compiler.gcda"))?;
                "profiles/compiler.gcda"
            }
        };
        profiles.push(CarriedProfile {
            kind: "compiler".into(),
            path: rel.into(),
            hash: p.content_hash()?,
            training: i.training.to_vec(),
            // The build named its sources as its profile was trained.
            source_paths: i.build.source_paths,
        });
    }
    if let Some((fdata, _)) = i.bolt {
        fs::copy(fdata, profiles_dir.join("bolt.fdata"))
            .with_context(|| format!("copying {}", fdata.display()))?;
        profiles.push(CarriedProfile {
            kind: "bolt".into(),
            path: "profiles/bolt.fdata".into(),
            hash: ProfileInput::Profdata(fdata.to_path_buf()).content_hash()?,
            training: Vec::new(),
            source_paths: SourcePaths::default(),
        });
        if let Some(ready) = i.bolt_ready {
            let b = Bolt::find().context("llvm-bolt is not installed (apt-get install bolt-22)")?;
            let yaml = profiles_dir.join("bolt.yaml");
            crate::profile::bolt::yaml_profile(&b, ready, fdata, &yaml)?;
            profiles.push(CarriedProfile {
                kind: BOLT_YAML.into(),
                path: "profiles/bolt.yaml".into(),
                hash: ProfileInput::Profdata(yaml).content_hash()?,
                training: Vec::new(),
                source_paths: SourcePaths::default(),
            });
        }
    }
    let record = RebuildRecord {
        package: name.into(),
        binary: i.package.binary.clone(),
        binary_sha256: i.package.binary_sha256.clone(),
        manifest_sha256: i.package.manifest_sha256.clone(),
        recipe: i.recipe.name.clone(),
        source_origin: i.source.origin.clone(),
        source_hash: i.source.hash.clone(),
        debian_source: i.source.debian.clone(),
        variant: i.build.variant.clone(),
        build_key: i.build.key.clone(),
        bolted: i.bolt.is_some(),
        bolt_flags: i.bolt.map(|(_, f)| f.to_vec()).unwrap_or_default(),
        toolchain: Toolchain::here(&i.build.compiler, i.bolt.is_some())?,
        profiles,
        path_neutral: i.build.path_neutral,
        build_dir: match i.build.source_paths {
            SourcePaths::Relative => String::new(),
            SourcePaths::Absolute => i.build.build_dir.display().to_string(),
        },
    };
    fs::write(
        root.join("rebuild.json"),
        serde_json::to_string_pretty(&record)? + "\n",
    )?;
    fs::write(
        root.join("recipe.toml"),
        toml::to_string(i.recipe).context("writing the recipe as TOML")?,
    )?;
    super::write_sha256sums(&root)?;
    let path = out_dir.join(format!("{dir_name}.tar.zst"));
    let tmp = out_dir.join(format!(".{dir_name}.tar.zst.tmp"));
    super::reproducible::write_tar_zst(&root, &dir_name, i.epoch, &tmp)?;
    fs::rename(&tmp, &path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok(path)
}

/// A sidecar unpacked: its directory and record, every file checked against its SHA256SUMS.
pub struct Opened {
    pub root: PathBuf,
    pub record: RebuildRecord,
}

impl Opened {
    pub fn path_of(&self, p: &CarriedProfile) -> PathBuf {
        self.root.join(&p.path)
    }

    /// The compiler profile as a build takes it.
    pub fn compiler_profile(&self) -> Option<ProfileInput> {
        self.record
            .profile("compiler")
            .map(|p| ProfileInput::from_path(self.path_of(p)))
    }

    pub fn recipe(&self) -> Result<crate::recipe::Recipe> {
        let path = self.root.join("recipe.toml");
        let text =
            fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
        crate::recipe::Recipe::parse_user(&path.display().to_string(), &text)
    }
}

/// Unpacks `sidecar` into `into`; a file that is not a sidecar, or one whose files do not match
/// its SHA256SUMS, is a provenance failure naming the file.
pub fn open(sidecar: &Path, into: &Path) -> Result<Opened> {
    use crate::infra::exit::Stop;
    let bad = |what: String| -> anyhow::Error { Stop::Provenance(what).into() };
    fs::create_dir_all(into)?;
    let root = super::unpack::unpack(sidecar, into).map_err(|e| {
        bad(format!(
            "{}: not a rebuild sidecar ({e:#})",
            sidecar.display()
        ))
    })?;
    let sums = super::unpack::check_sums(&root)
        .map_err(|e| bad(format!("{}: no SHA256SUMS ({e:#})", sidecar.display())))?;
    let wrong: Vec<String> = sums
        .differing
        .iter()
        .map(|n| format!("{n} differs from its SHA256SUMS entry (truncated or altered)"))
        .chain(sums.missing.iter().map(|n| format!("{n} is missing")))
        .chain(
            sums.unlisted
                .iter()
                .map(|n| format!("{n} is not in SHA256SUMS")),
        )
        .chain(sums.bad_lines.iter().cloned())
        .collect();
    if !wrong.is_empty() {
        return Err(bad(format!("{}: {}", sidecar.display(), wrong.join("; "))));
    }
    let text = fs::read_to_string(root.join("rebuild.json"))
        .map_err(|e| bad(format!("{}: no rebuild.json ({e})", sidecar.display())))?;
    let record: RebuildRecord = serde_json::from_str(&text).map_err(|e| {
        bad(format!(
            "{}: rebuild.json does not parse ({e})",
            sidecar.display()
        ))
    })?;
    for p in &record.profiles {
        // Paths inside the sidecar only: a record naming ../ or / is hostile.
        if p.path.split('/').any(|c| c == ".." || c.is_empty()) {
            return Err(bad(format!(
                "{}: rebuild.json names a profile outside the sidecar ({})",
                sidecar.display(),
                p.path
            )));
        }
    }
    Ok(Opened { root, record })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_embedded_recipe_survives_the_sidecars_toml() {
        for name in crate::recipe::Recipe::embedded_names() {
            let r = crate::recipe::Recipe::embedded(name).unwrap();
            let text = toml::to_string(&r).unwrap();
            let back = crate::recipe::Recipe::parse_user("recipe.toml", &text)
                .unwrap_or_else(|e| panic!("{name}: {e:#}\n{text}"));
            assert_eq!(back, r, "{name}");
        }
    }

    #[test]
    fn the_sidecar_sits_beside_its_package() {
        assert_eq!(
            beside(Path::new("/p/mariadb-10.11.18-pgo+lto-clang-22.tar.zst")),
            Path::new("/p/mariadb-10.11.18-pgo+lto-clang-22.rebuild.tar.zst")
        );
    }
}
