//! The optimized server as a package: `NAME.tar.zst` holding `NAME/bin/<server>` (stripped),
//! `NAME/share/<family>/` (error messages, character sets, the bootstrap SQL a MariaDB datadir needs),
//! `NAME/manifest.json` (how it was made and what it measured), `NAME/SHA256SUMS`, and what running
//! it as a service needs (`deploy.rs`: `etc/my.cnf`, `systemd/pgoforge-FAMILY.service`,
//! `README.md`); `verify.rs` checks a package against all of it on any host.
//!
//! The unpacked directory is an installed prefix as `server::Layout` understands one, so
//! `pgoforge server start --binary NAME/bin/mariadbd` runs it from wherever it was unpacked. The
//! archive is written under a temporary name and renamed when complete: a `.tar.zst` that exists is
//! a finished one.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::infra::fs::sha256_file;
use crate::server::config::Engine;
use crate::server::flavor::Flavor;
use crate::server::Layout;

/// A measured gain over the baseline, as the report states it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Gain {
    pub workload: String,
    pub threads: u32,
    /// Throughput ratio to the baseline (1.10 = 10% faster) and its 95% bootstrap CI.
    pub ratio: f64,
    /// An unbounded end (too few rounds for the test to bound it) is `null` in the JSON.
    #[serde(with = "ratio_bounds")]
    pub ci: (f64, f64),
    pub verdict: String,
}

/// A ratio's interval in JSON, which has no infinity: an end the test could not bound is
/// written `null` and read back as 0 (lower) or +∞ (upper).
mod ratio_bounds {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(ci: &(f64, f64), s: S) -> Result<S::Ok, S::Error> {
        let end = |v: f64| v.is_finite().then_some(v);
        (end(ci.0), end(ci.1)).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<(f64, f64), D::Error> {
        let (lo, hi) = <(Option<f64>, Option<f64>)>::deserialize(d)?;
        Ok((lo.unwrap_or(0.0), hi.unwrap_or(f64::INFINITY)))
    }
}

pub mod cpu;
pub mod deb;
pub mod deb_scripts;
pub mod deploy;
pub mod provenance;
pub mod rebuild;
pub mod reproducible;
pub mod runtime;
pub mod sidecar;
pub mod unpack;
pub mod verify;

pub use crate::source::DebianSource;

/// How the packaged server was made.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub name: String,
    /// `mariadbd --version` of the packaged binary.
    pub server_version: String,
    pub variant: String,
    pub recipe: String,
    pub source: String,
    pub source_hash: String,
    pub compiler: String,
    pub cflags: Vec<String>,
    pub ldflags: Vec<String>,
    pub cmake_defs: Vec<String>,
    /// Compiler and BOLT profiles applied, as `kind:hash`.
    pub profiles: Vec<String>,
    /// BOLT's flags, when the binary was optimized by BOLT.
    pub bolt_flags: Vec<String>,
    pub gains: Vec<Gain>,
    /// What `gains` were measured against when it was not the run's own -O2 build: `debian`,
    /// Debian's server of the same release (`run --baseline debian`, as `follow` runs). Absent:
    /// the built baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gains_against: Option<String>,
    pub pgoforge_version: String,
    /// The package's one date, seconds since the epoch: every file's time in the tarball and the
    /// .deb and the changelog's date, taken from the source (`reproducible::source_date_epoch`),
    /// so packing the same build again gives the same bytes. Packages made before 2026-12-04
    /// stored the time of packing instead, as `created`; the time of packing is now written
    /// beside the package (NAME.tar.zst.packing.json).
    #[serde(default, alias = "created")]
    pub source_date_epoch: u64,
    /// How the packaged binary was reduced (set by `package`).
    #[serde(default)]
    pub binary_note: String,
    /// The Debian source package built, for a Debian-sourced recipe (absent in packages made
    /// before 2026-12-02, and for other sources): what a .deb of it fits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub debian_source: Option<DebianSource>,
    /// The CPU level the binary was compiled for and what a machine needs to run it (absent: the
    /// compiler's default, x86-64, which every amd64 machine has). The package's checks refuse a
    /// CPU without it (cpu.rs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<cpu::CpuRequirement>,
    /// The sha256 of the packaged server binary (`bin/mariadbd`, as packed): what `package
    /// verify` and `rebuild` hold the binary to (empty in packages made before 2026-12-05).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub binary_sha256: String,
    /// Where the profiles came from when the run took them from an earlier build instead of
    /// training (`run --profile-from`; absent: trained by the run, or given by `--profile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_provenance: Option<sidecar::ProfileProvenance>,
    /// The engine the run measured (absent: InnoDB). A plugin engine's plugin, built and
    /// optimized with the server, is packed beside it (`lib/plugin/`) and loaded by its my.cnf.
    #[serde(default, skip_serializing_if = "Engine::is_innodb")]
    pub engine: Engine,
    /// The Debian packages the server's shared libraries come from on the packing machine
    /// (runtime.rs), less those every Debian has: what the README installs on a host that
    /// lacks them (absent in packages made before 2026-12-07, and where the packing machine
    /// has no dpkg).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub runtime_packages: Vec<String>,
}

impl Manifest {
    /// What `gains` were measured against, in words: Debian's server of the same release, or
    /// `built` — how the caller names the run's own baseline build.
    pub fn gains_against_words<'a>(&self, built: &'a str) -> &'a str {
        match self.gains_against.as_deref() {
            Some(crate::source::distro::NAME) => "Debian's server of the same release",
            _ => built,
        }
    }
}

/// Where a package keeps an engine's plugin, relative to its root.
pub const PLUGIN_DIR: &str = "lib/plugin";

/// Where a work dir's packages go.
pub fn packages_dir(work: &Path) -> PathBuf {
    work.join("packages")
}

pub struct PackageRequest<'a> {
    pub binary: &'a Path,
    /// Where the binary's share files are (see `Layout::discover`).
    pub layout: &'a Layout,
    pub manifest: &'a Manifest,
    pub out_dir: &'a Path,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Package {
    pub path: PathBuf,
    pub sha256: String,
    pub bytes: u64,
    /// Files inside, SHA256SUMS included.
    pub files: usize,
    /// The server binary's path inside the package (`bin/mariadbd`), its sha256 and the
    /// manifest's: what the rebuild sidecar binds itself to (absent in records made before
    /// 2026-12-05).
    #[serde(default)]
    pub binary: String,
    #[serde(default)]
    pub binary_sha256: String,
    #[serde(default)]
    pub manifest_sha256: String,
}

/// The name the server binary goes by inside the package (`mariadbd.bolt` is a `mariadbd`).
fn installed_name(binary: &Path) -> String {
    let n = binary
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "mysqld".into());
    n.strip_suffix(".bolt").map(str::to_string).unwrap_or(n)
}

fn version_line(bin: &Path) -> Option<String> {
    // The copy was just written: retried while another thread's fork still holds it open.
    let out =
        crate::infra::runner::output_retrying_busy(Command::new(bin).arg("--version")).ok()?;
    out.status.success().then(|| {
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or_default()
            .to_string()
    })
}

/// Writes a stripped copy of `src` to `dst` and checks that it still runs; a binary that strip
/// breaks (BOLT's output: binutils and llvm-strip both mangle its new program headers,
/// llvm/llvm-project#89336) is copied whole instead. Returns what was done, for the manifest.
fn strip_checked(src: &Path, dst: &Path, flavor: &Flavor) -> Result<String> {
    let strip = strip("--strip-all", src, dst)?;
    let runs = |p: &Path| version_line(p).is_some_and(|v| v.contains(&flavor.version));
    if strip.status.success() && runs(dst) {
        // A bolt-ready build packaged unBOLTed carries the relocations --emit-relocs kept for
        // BOLT (tens of MB on a server); strip drops them with the symbols — say so, and check.
        if crate::profile::bolt::is_bolt_ready(src)? {
            if crate::profile::bolt::is_bolt_ready(dst)? {
                bail!(
                    "strip --strip-all left the relocation sections of bolt-ready {} in place",
                    src.display()
                );
            }
            return Ok(
                "stripped (strip --strip-all), which also removed the relocation \
                       sections the bolt-ready build kept for BOLT (--emit-relocs)"
                    .into(),
            );
        }
        return Ok("stripped (strip --strip-all)".into());
    }
    fs::copy(src, dst).with_context(|| format!("copying {}", src.display()))?;
    if !runs(dst) {
        bail!(
            "{} does not run from the package ({} --version fails)",
            src.display(),
            dst.display()
        );
    }
    Ok(format!(
        "not stripped: the stripped copy did not run (strip: {}; BOLT output cannot be stripped, \
         llvm/llvm-project#89336); BOLT already dropped its debug info",
        if strip.status.success() {
            "succeeded, binary crashed".to_string()
        } else {
            String::from_utf8_lossy(&strip.stderr)
                .lines()
                .next()
                .unwrap_or("failed")
                .to_string()
        }
    ))
}

/// Shared libraries `binary` loads from under `tree` (MySQL links its bundled ICU, protobuf and
/// abseil from the build tree's library_output_directory through a RUNPATH into that tree).
fn libraries_from(binary: &Path, tree: &Path) -> Result<Vec<PathBuf>> {
    let out = Command::new("ldd")
        .arg(binary)
        .output()
        .context("running ldd (part of libc-bin)")?;
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text
        .lines()
        .filter_map(|l| l.split("=>").nth(1))
        .filter_map(|r| r.split_whitespace().next())
        .map(PathBuf::from)
        .filter(|p| p.starts_with(tree))
        .collect())
}

/// Copies the libraries the binary takes from its build tree into `lib/` beside `bin/` and points
/// the packaged binary there (`$ORIGIN/../lib`), so the package runs where it is unpacked; checks
/// with ldd that nothing is still taken from the build tree. Returns a note for the manifest.
fn bundle_libraries(src: &Path, bin: &Path, tree: &Path, root: &Path) -> Result<Option<String>> {
    let libs = libraries_from(src, tree)?;
    if libs.is_empty() {
        return Ok(None);
    }
    let patchelf = crate::infra::tools::require(
        "patchelf",
        "packaging a server that links libraries from its build tree",
    )?;
    let lib_dir = root.join("lib");
    fs::create_dir_all(&lib_dir)?;
    let set_rpath = |file: &Path, rpath: &str| {
        crate::infra::runner::run_tool(
            Command::new(&patchelf)
                .arg("--set-rpath")
                .arg(rpath)
                .arg(file),
            &format!("patchelf --set-rpath {rpath} {}", file.display()),
            None,
        )
    };
    for l in &libs {
        let name = l
            .file_name()
            .context("a library path ends in a file name")?;
        let copy = lib_dir.join(name);
        fs::copy(l, &copy).with_context(|| format!("copying {}", l.display()))?;
        // The libraries find each other beside themselves, not in the build tree either.
        set_rpath(&copy, "$ORIGIN")?;
    }
    set_rpath(bin, "$ORIGIN/../lib")?;
    let still = libraries_from(bin, tree)?;
    if !still.is_empty() {
        bail!(
            "the packaged {} still loads {} from the build tree",
            bin.display(),
            still[0].display()
        );
    }
    Ok(Some(format!(
        "{} libraries from the build tree in lib/ (RUNPATH $ORIGIN/../lib)",
        libs.len()
    )))
}

/// Lays out, checksums and archives the server; returns the finished archive.
pub fn package(req: &PackageRequest) -> Result<Package> {
    let m = req.manifest;
    if m.name.is_empty() || m.name.contains(['/', ' ']) {
        bail!(
            "package name '{}' must be non-empty without spaces or slashes",
            m.name
        );
    }
    let flavor = Flavor::detect(req.binary)
        .with_context(|| format!("packaging {}", req.binary.display()))?;
    let Some(messages) = &req.layout.lc_messages_dir else {
        bail!(
            "cannot package {}: its error messages (english/errmsg.sys) were not found; \
             package a finished build or an installed server",
            req.binary.display()
        );
    };
    fs::create_dir_all(req.out_dir)
        .with_context(|| format!("creating {}", req.out_dir.display()))?;
    let staging = tempfile::Builder::new()
        .prefix(".package-")
        .tempdir_in(req.out_dir)
        .with_context(|| format!("making a staging directory in {}", req.out_dir.display()))?;
    let root = staging.path().join(&m.name);
    let family_dir = if flavor.family.is_mysql_like() {
        "mysql"
    } else {
        "mariadb"
    };
    let share = root.join("share").join(family_dir);
    let bin_dir = root.join("bin");
    fs::create_dir_all(&bin_dir)?;
    let bin = bin_dir.join(installed_name(req.binary));
    let mut m = m.clone();
    prepare_binary(req, &flavor, &bin, &root, &mut m)?;
    // Only the language directories: a build tree's sql/share also holds CMake leftovers.
    for e in fs::read_dir(messages).with_context(|| format!("reading {}", messages.display()))? {
        let e = e?;
        if e.path().join("errmsg.sys").is_file() {
            crate::infra::fs::copy_tree(&e.path(), &share.join(e.file_name()))?;
        }
    }
    if let Some(cs) = &req.layout.charsets_dir {
        crate::infra::fs::copy_tree(cs, &share.join("charsets"))?;
    }
    if !flavor.family.is_mysql_like() {
        for s in req.layout.bootstrap_scripts(req.binary)? {
            let name = s.file_name().expect("a script path ends in a file name");
            fs::copy(&s, share.join(name)).with_context(|| format!("copying {}", s.display()))?;
        }
    }
    // What running it as a service needs (deploy.rs): my.cnf, the systemd unit, README.md.
    let server_name = installed_name(req.binary);
    let kit = deploy::kit(&deploy::KitFor {
        manifest: &m,
        flavor: &flavor,
        server: &server_name,
        share_family: family_dir,
        has_charsets: share.join("charsets").is_dir(),
        notify: deploy::notifies(req.binary),
    });
    write_kit(&root, &kit.files)?;
    m.binary_sha256 = sha256_file(&bin)?;
    fs::write(
        root.join("manifest.json"),
        serde_json::to_string_pretty(&m)? + "\n",
    )?;
    let manifest_sha256 = sha256_file(&root.join("manifest.json"))?;
    let files = write_sha256sums(&root)?;

    let path = req.out_dir.join(format!("{}.tar.zst", m.name));
    let tmp = req.out_dir.join(format!(".{}.tar.zst.tmp", m.name));
    reproducible::write_tar_zst(&root, &m.name, m.source_date_epoch, &tmp)?;
    fs::rename(&tmp, &path).with_context(|| format!("renaming to {}", path.display()))?;
    // When and by what it was packed: beside the package, not in it.
    crate::infra::fs::write_json(
        &req.out_dir.join(format!("{}.tar.zst.packing.json", m.name)),
        &serde_json::json!({
            "packed_at": crate::infra::time::now_secs(),
            "pgoforge_version": env!("CARGO_PKG_VERSION"),
        }),
    )?;
    let sha256 = sha256_file(&path)?;
    fs::write(
        req.out_dir.join(format!("{}.tar.zst.sha256", m.name)),
        format!("{sha256}  {}.tar.zst\n", m.name),
    )?;
    Ok(Package {
        bytes: fs::metadata(&path)?.len(),
        path,
        sha256,
        files: files.len() + 1,
        binary: format!("bin/{server_name}"),
        binary_sha256: m.binary_sha256.clone(),
        manifest_sha256,
    })
}

/// The server in `bin/` (stripped where it still runs), the libraries it takes from its build
/// tree beside it, its engine's plugin, and what the host must install for the rest: the
/// manifest's binary note and runtime packages say which.
fn prepare_binary(
    req: &PackageRequest,
    flavor: &Flavor,
    bin: &Path,
    root: &Path,
    m: &mut Manifest,
) -> Result<()> {
    m.binary_note = strip_checked(req.binary, bin, flavor)?;
    if let Some(tree) = &req.layout.build_dir {
        if let Some(note) = bundle_libraries(req.binary, bin, tree, root)? {
            if !version_line(bin).is_some_and(|v| v.contains(&flavor.version)) {
                bail!(
                    "{} does not run after its RUNPATH was pointed at the package's lib/",
                    bin.display()
                );
            }
            m.binary_note = format!("{}; {note}", m.binary_note);
        }
    }
    if let Some(note) = pack_engine_plugin(req, m, root)? {
        m.binary_note = format!("{}; {note}", m.binary_note);
    }
    let rt = runtime::of(bin, root);
    m.runtime_packages = rt.packages;
    if !rt.unowned.is_empty() {
        let libs: Vec<String> = rt.unowned.iter().map(|p| p.display().to_string()).collect();
        m.binary_note = format!(
            "{}; loads {} from no Debian package: a host needs them put there by hand",
            m.binary_note,
            libs.join(", ")
        );
    }
    Ok(())
}

/// `strip FLAG -o dst src` (`--strip-all` for the server; `--strip-unneeded` for a plugin, which
/// keeps the symbols the server resolves); its output, for the caller to judge.
fn strip(flag: &str, src: &Path, dst: &Path) -> Result<std::process::Output> {
    Command::new("strip")
        .arg(flag)
        .arg("-o")
        .arg(dst)
        .arg(src)
        .output()
        .context("running strip (apt-get install binutils)")
}

/// The deployment files (deploy.rs) written into the package root; the CPU check executable.
fn write_kit(root: &Path, files: &[(PathBuf, String)]) -> Result<()> {
    for (rel, text) in files {
        let p = root.join(rel);
        if let Some(d) = p.parent() {
            fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
        }
        fs::write(&p, text).with_context(|| format!("writing {}", p.display()))?;
        if rel == Path::new(cpu::TARBALL_CHECK) {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&p, fs::Permissions::from_mode(0o755))?;
        }
    }
    Ok(())
}

/// Copies the engine's plugin the binary was measured with (found beside it, as the benchmark
/// found it) into `lib/plugin/`, without its debug info; None for an engine built into the server.
fn pack_engine_plugin(req: &PackageRequest, m: &Manifest, root: &Path) -> Result<Option<String>> {
    let Some(file) = m.engine.plugin() else {
        return Ok(None);
    };
    let Some(dir) = req.layout.engine_plugin_dir(m.engine, req.binary)? else {
        return Ok(None);
    };
    let (src, dst_dir) = (dir.join(file), root.join(PLUGIN_DIR));
    fs::create_dir_all(&dst_dir).with_context(|| format!("creating {}", dst_dir.display()))?;
    let dst = dst_dir.join(file);
    let strip = strip("--strip-unneeded", &src, &dst)?;
    if strip.status.success() {
        return Ok(Some(format!(
            "{} plugin {PLUGIN_DIR}/{file} from {} (strip --strip-unneeded)",
            m.engine,
            src.display()
        )));
    }
    fs::copy(&src, &dst).with_context(|| format!("copying {}", src.display()))?;
    Ok(Some(format!(
        "{} plugin {PLUGIN_DIR}/{file} from {} (not stripped: {})",
        m.engine,
        src.display(),
        String::from_utf8_lossy(&strip.stderr).trim()
    )))
}

/// SHA256SUMS at the package's root: every file under it, relative; returns the files listed.
pub(crate) fn write_sha256sums(root: &Path) -> Result<Vec<PathBuf>> {
    let files: Vec<PathBuf> = crate::infra::fs::files_under(root, "")?
        .into_iter()
        .map(|f| f.strip_prefix(root).map(Path::to_path_buf))
        .collect::<Result<_, _>>()?;
    let mut sums = String::new();
    for f in &files {
        sums += &format!("{}  {}\n", sha256_file(&root.join(f))?, f.display());
    }
    fs::write(root.join("SHA256SUMS"), sums)?;
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A package of a run with too few rounds: its gain's upper end is unbounded, and the
    /// manifest must still read back (it did not: `null` for a float).
    #[test]
    fn an_unbounded_gain_is_written_and_read_back() {
        let g = Gain {
            workload: "oltp_point_select".into(),
            threads: 4,
            ratio: 1.33,
            ci: (0.0, f64::INFINITY),
            verdict: "no significant difference".into(),
        };
        let text = serde_json::to_string(&g).unwrap();
        assert!(text.contains(r#""ci":[0.0,null]"#), "{text}");
        let back: Gain = serde_json::from_str(&text).unwrap();
        assert_eq!(back.ci, (0.0, f64::INFINITY));
        let bounded: Gain = serde_json::from_str(&text.replace("null", "1.5")).unwrap();
        assert_eq!(bounded.ci, (0.0, 1.5));
    }

    #[test]
    fn bolted_binaries_keep_the_server_name() {
        assert_eq!(
            installed_name(Path::new("/b/sql/mariadbd.bolt")),
            "mariadbd"
        );
        assert_eq!(installed_name(Path::new("/b/mysqld")), "mysqld");
    }
}

#[cfg(test)]
mod strip_tests {
    use super::*;

    /// A tiny "server" that answers --version like mariadbd, built by the real compiler with the
    /// bolt-ready link flag, then packaged the way a bolt-ready build's unBOLTed binary is.
    #[test]
    fn packaging_a_bolt_ready_binary_drops_its_relocations_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let c = dir.path().join("server.c");
        let version =
            "mariadbd  Ver 10.11.18-MariaDB for debian-linux-gnu on x86_64 (Source distribution)";
        fs::write(
            &c,
            format!("#include <stdio.h>\nint main(void){{puts(\"{version}\");return 0;}}\n"),
        )
        .unwrap();
        let bin = dir.path().join("mariadbd");
        let st = Command::new("gcc")
            .args(["-O2", "-Wl,--emit-relocs", "-o"])
            .arg(&bin)
            .arg(&c)
            .status()
            .unwrap();
        assert!(st.success());
        assert!(crate::profile::bolt::is_bolt_ready(&bin).unwrap());
        let flavor = Flavor::parse(version).unwrap();
        let out = dir.path().join("packaged");
        let note = strip_checked(&bin, &out, &flavor).unwrap();
        assert!(!crate::profile::bolt::is_bolt_ready(&out).unwrap());
        assert!(note.contains("relocation sections"), "{note}");
        // A binary that was never bolt-ready gets the plain note.
        let plain = dir.path().join("plain");
        let st = Command::new("gcc")
            .args(["-O2", "-o"])
            .arg(&plain)
            .arg(&c)
            .status()
            .unwrap();
        assert!(st.success());
        let note = strip_checked(&plain, &dir.path().join("p2"), &flavor).unwrap();
        assert_eq!(note, "stripped (strip --strip-all)");
    }
}
