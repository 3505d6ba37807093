//! A Debian package that puts an optimized MariaDB server in the distribution's place, the way
//! Debian does such things: the package's `preinst` diverts Debian's `/usr/sbin/mariadbd` to
//! `/usr/sbin/mariadbd.distrib` (dpkg-divert), the package ships the optimized binary as
//! `/usr/sbin/mariadbd-pgo` and, as `/usr/sbin/mariadbd`, a selector that runs it only beside
//! the release of Debian's server it was built from (else Debian's binary); `postrm` removes the
//! diversion, which puts Debian's binary back. A running service is restarted on the new binary
//! and checked; when it does not come back, the optimized server is disabled and the service
//! restarted on Debian's binary, with dpkg left consistent. The scripts, and why they are so,
//! are in [`super::deb_scripts`].
//!
//! The package is installed only beside exactly the release it was built from (its `preinst`
//! refuses any other, before anything changes) and pre-depends on that release or newer, so
//! Debian's security updates of the server install through `apt-get upgrade` with nothing kept
//! back; from then on Debian's new binary serves until a package built for the new release is
//! installed.
//!
//! Input is a finished package tarball (`NAME.tar.zst`, [`super::package`]), checked against its
//! own SHA256SUMS: the .deb can be made on any host from the tarball alone.

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::unpack::unpack_checked;
use super::{DebianSource, Manifest};
use crate::infra::exit::Refuse;
use crate::usage;

use super::deb_scripts::{self as scripts, Facts, CORE_PACKAGE, CPU_CHECK, PACKAGE, STATUS, WHICH};

pub struct DebRequest<'a> {
    /// A finished package tarball.
    pub tarball: &'a Path,
    pub out_dir: &'a Path,
    /// The Debian version of the server package the .deb fits, when the manifest has none (or
    /// to override it).
    pub for_version: Option<&'a str>,
    /// `Name <address>` for the Maintainer field [DEBFULLNAME and DEBEMAIL, as Debian's tools
    /// read them; else `Local pgoforge build <USER@HOST.invalid>`].
    pub maintainer: Option<&'a str>,
}

/// A .deb made by [`build`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Deb {
    pub path: PathBuf,
    pub package: String,
    pub version: String,
    /// The exact `mariadb-server-core` version it installs beside.
    pub fits: String,
    pub sha256: String,
    pub bytes: u64,
    /// What the tarball holds and the .deb does not: a MyRocks run's optimized plugin, which
    /// would replace a file of another Debian package (mariadb-plugin-rocksdb).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_out: Option<String>,
}

/// The sentence [`Deb::left_out`] carries for a package of a plugin engine's run.
fn plugin_left_out(m: &Manifest, tarball: &Path) -> Option<String> {
    let file = m.engine.plugin()?;
    Some(format!(
        "the .deb replaces the server only: {}'s optimized {} plugin ({}/{file}) stays in the \
         tarball, and Debian's service loads Debian's own where mariadb-plugin-rocksdb is \
         installed — the benchmark measured the pair; to run the optimized plugin, deploy the \
         tarball (its my.cnf loads it)",
        tarball.display(),
        m.engine,
        super::PLUGIN_DIR
    ))
}

/// What a DBA must hear before copying a .deb to this machine's dpkg: it fits another release
/// of Debian's server than the one installed here (None: it fits, or none is installed).
pub fn fit_warning(fits: &str) -> Option<String> {
    let installed = crate::source::release::installed(CORE_PACKAGE)?;
    (installed != fits).then(|| {
        format!(
            "this .deb fits {CORE_PACKAGE} {fits}, but the installed one is {installed}: dpkg \
             will refuse it on this machine and change nothing. Install it where {CORE_PACKAGE} \
             is {fits} (apt-get install --allow-downgrades {CORE_PACKAGE}={fits} and the rest of \
             the mariadb packages at that version: `pgoforge doctor` prints the whole command), or \
             deploy the tarball under systemd (its README)"
        )
    })
}

/// The .deb's version: the distribution's, then what it is (`+pgoforge+VARIANT.PROFILE`), so
/// `dpkg -l` says it at a glance. Debian versions allow `+` and `.` (lintian wants at most two
/// dots in a revision); other characters of the variant (`@` of a matrix) become `+`.
pub fn deb_version(fits: &str, m: &Manifest) -> String {
    let variant: String = m
        .variant
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '+' })
        .collect();
    let profile = m
        .profiles
        .first()
        .and_then(|p| p.split_once(':'))
        .map(|(_, h)| format!(".{}", &h[..h.len().min(8)]))
        .unwrap_or_default();
    format!("{fits}+pgoforge+{variant}{profile}")
}

/// Whether `v` is a Debian version dpkg accepts: `[epoch:]upstream[-revision]`.
fn is_debian_version(v: &str) -> bool {
    let rest = match v.split_once(':') {
        Some((e, r)) if !e.is_empty() && e.bytes().all(|b| b.is_ascii_digit()) => r,
        Some(_) => return false,
        None => v,
    };
    let (upstream, revision) = match rest.rsplit_once('-') {
        Some((u, r)) => (u, Some(r)),
        None => (rest, None),
    };
    let ok = |s: &str, extra: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || extra.contains(c))
    };
    upstream.starts_with(|c: char| c.is_ascii_digit())
        && ok(upstream, ".+~-")
        && revision.is_none_or(|r| ok(r, ".+~"))
}

/// The upstream version in a Debian version (`1:10.11.18-0+deb12u1` → `10.11.18`).
fn upstream_of(v: &str) -> &str {
    let v = v.split_once(':').map_or(v, |(_, r)| r);
    v.rsplit_once('-').map_or(v, |(u, _)| u)
}

fn write_mode(p: &Path, text: &str, mode: u32) -> Result<()> {
    fs::write(p, text).with_context(|| format!("writing {}", p.display()))?;
    fs::set_permissions(p, fs::Permissions::from_mode(mode))?;
    Ok(())
}

/// The Debian architecture of this machine (the binary was built here or for here).
fn architecture() -> Result<String> {
    let out = Command::new("dpkg")
        .arg("--print-architecture")
        .output()
        .context("running dpkg --print-architecture (a .deb is made on Debian)")?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Who the .deb says made it: whoever built it on this machine.
fn maintainer(given: Option<&str>) -> Result<String> {
    if let Some(m) = given {
        if !(m.contains('<') && m.trim_end().ends_with('>') && m.contains('@')) {
            usage!("--maintainer '{m}': give 'Name <address>'");
        }
        return Ok(m.to_string());
    }
    if let Ok(mail) = std::env::var("DEBEMAIL") {
        let name = std::env::var("DEBFULLNAME").unwrap_or_else(|_| "pgoforge user".into());
        return Ok(format!("{name} <{mail}>"));
    }
    // No address was given: say so with RFC 2606's reserved `.invalid`, which lintian accepts
    // (it rejects localhost and .localdomain).
    let host = fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().split('.').next().unwrap_or_default().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into());
    let host = format!("{host}.invalid");
    let user = match crate::server::accounts::os_user().as_str() {
        "root" => "pgoforge".to_string(),
        u => u.to_string(),
    };
    Ok(format!("Local pgoforge build <{user}@{host}>"))
}

/// The libraries the binary needs, as Debian states them (`dpkg-shlibdeps`, from the installed
/// packages' shlibs/symbols files).
fn shlib_depends(binary: &Path, scratch: &Path) -> Result<String> {
    let d = scratch.join("shlibdeps");
    fs::create_dir_all(d.join("debian"))?;
    fs::write(
        d.join("debian/control"),
        format!("Source: {PACKAGE}\n\nPackage: {PACKAGE}\nArchitecture: any\n"),
    )?;
    let out = Command::new("dpkg-shlibdeps")
        .arg("-O")
        .arg(format!("-e{}", binary.display()))
        .current_dir(&d)
        .output()
        .context("running dpkg-shlibdeps (apt-get install dpkg-dev)")?;
    let text = String::from_utf8_lossy(&out.stdout);
    match text.lines().find_map(|l| l.strip_prefix("shlibs:Depends=")) {
        Some(deps) if out.status.success() => Ok(deps.trim().to_string()),
        _ => bail!(
            "dpkg-shlibdeps found no library dependencies for {}: {}",
            binary.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ),
    }
}

struct Control<'a> {
    version: &'a str,
    fits: &'a str,
    arch: &'a str,
    installed_kib: u64,
    maintainer: &'a str,
    depends: &'a str,
}

fn control(m: &Manifest, c: &Control) -> String {
    let Control {
        version,
        fits,
        arch,
        installed_kib,
        maintainer,
        depends,
    } = *c;
    let gains: Vec<String> = m
        .gains
        .iter()
        .map(|g| {
            format!(
                " {} at {} threads: {:+.1} % [{:+.1}, {:+.1}]",
                g.workload,
                g.threads,
                (g.ratio - 1.0) * 100.0,
                (g.ci.0 - 1.0) * 100.0,
                (g.ci.1 - 1.0) * 100.0
            )
        })
        .collect();
    let mut long = vec![
        format!(
            " The MariaDB server {} built from Debian's",
            upstream_of(fits)
        ),
        format!(" source {fits} by pgoforge, variant {},", m.variant),
        " installed in place of Debian's /usr/sbin/mariadbd (diverted to".to_string(),
        " /usr/sbin/mariadbd.distrib and put back when this package is removed).".to_string(),
        format!(" The optimized server runs only beside {CORE_PACKAGE} {fits}:"),
        " after a Debian update of the server, Debian's new binary runs until a".to_string(),
        format!(" {PACKAGE} built for that release is installed ({STATUS})."),
        " .".to_string(),
        format!(" Compiler: {}.", m.compiler),
    ];
    if !m.profiles.is_empty() {
        long.push(format!(" Profiles: {}.", m.profiles.join(", ")));
    }
    if !gains.is_empty() {
        long.push(" .".into());
        long.push(format!(
            " Throughput against {} (interval):",
            m.gains_against_words("the -O2 baseline")
        ));
        long.extend(gains);
    }
    long.push(" .".into());
    long.push(format!(
        " The full manifest is in /usr/share/doc/{PACKAGE}/manifest.json."
    ));
    format!(
        "Package: {PACKAGE}\nVersion: {version}\nArchitecture: {arch}\nMaintainer: {maintainer}\n\
         Installed-Size: {installed_kib}\nPre-Depends: {CORE_PACKAGE} (>= {fits})\nDepends: {depends}\n\
         Section: database\n\
         Priority: optional\nDescription: MariaDB server optimized by pgoforge ({})\n{}\n",
        m.variant,
        long.join("\n")
    )
}

const COPYRIGHT: &str = "\
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: MariaDB
Comment: The MariaDB server built from Debian's source package by pgoforge; see that source
 package's debian/copyright for the full list of authors and licenses.

Files: *
Copyright: MariaDB Corporation Ab, MariaDB Foundation, Oracle and/or its affiliates, and others
License: GPL-2
 On Debian systems, the complete text of the GNU General Public License version 2 can be found
 in /usr/share/common-licenses/GPL-2.
";

/// Builds `PACKAGE_VERSION_ARCH.deb` in `out_dir` from the package tarball.
pub fn build(req: &DebRequest) -> Result<Deb> {
    let work = tempfile::Builder::new()
        .prefix(".deb-")
        .tempdir_in(req.out_dir)
        .or_else(|_| tempfile::tempdir())
        .context("making a staging directory")?;
    // Whatever is wrong with the tarball is the input's fault (exit status 2).
    let (root, m) = unpack_checked(req.tarball, &work.path().join("tarball")).refused()?;
    if !m.server_version.contains("MariaDB") {
        usage!(
            "{}: a .deb takes the place of Debian's MariaDB server; this package holds {} \
             (MySQL from Debian unstable has no Debian 12 server package to replace: deploy the \
             tarball under systemd instead)",
            req.tarball.display(),
            m.server_version
        );
    }
    let fits = match (req.for_version, &m.debian_source) {
        (Some(v), _) => v.to_string(),
        (None, Some(DebianSource { version, .. })) => version.clone(),
        (None, None) => usage!(
            "{}: its manifest names no Debian source version (built from {}); give the version of \
             Debian's mariadb-server-core it was built from with --for-version",
            req.tarball.display(),
            m.source
        ),
    };
    if !is_debian_version(&fits) {
        usage!("--for-version '{fits}' is not a Debian version (e.g. 1:10.11.18-0+deb12u1)");
    }
    if !m.server_version.starts_with(upstream_of(&fits)) {
        usage!(
            "the packaged server is {} but the .deb would fit {CORE_PACKAGE} {fits}: a .deb may \
             only replace the server version it was built from",
            m.server_version
        );
    }
    let binary = root.join("bin/mariadbd");
    if !binary.is_file() {
        usage!("{}: no bin/mariadbd inside", req.tarball.display());
    }
    let version = deb_version(&fits, &m);
    let arch = architecture()?;

    let tree = work.path().join("deb");
    let sbin = tree.join("usr/sbin");
    let doc = tree.join("usr/share/doc").join(PACKAGE);
    let debian = tree.join("DEBIAN");
    for d in [&sbin, &doc, &debian] {
        fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
        fs::set_permissions(d, fs::Permissions::from_mode(0o755))?;
    }
    let installed = sbin.join("mariadbd-pgo");
    fs::copy(&binary, &installed).with_context(|| format!("copying {}", binary.display()))?;
    fs::set_permissions(&installed, fs::Permissions::from_mode(0o755))?;
    fs::copy(root.join("manifest.json"), doc.join("manifest.json"))?;
    fs::set_permissions(doc.join("manifest.json"), fs::Permissions::from_mode(0o644))?;
    write_mode(&doc.join("copyright"), COPYRIGHT, 0o644)?;
    let maintainer = maintainer(req.maintainer)?;
    write_changelog(&doc, &m, &version, &maintainer)?;
    let facts = Facts {
        fits: &fits,
        version: &version,
        variant: &m.variant,
    };
    let cpu = super::deploy::cpu_needed(&m);
    write_selection(&tree, &facts, cpu)?;
    let kib = installed_kib(&tree)?;
    write_mode(
        &debian.join("control"),
        &control(
            &m,
            &Control {
                version: &version,
                fits: &fits,
                arch: &arch,
                installed_kib: kib,
                maintainer: &maintainer,
                depends: &shlib_depends(&installed, work.path())?,
            },
        ),
        0o644,
    )?;
    write_mode(
        &debian.join("preinst"),
        &scripts::preinst(&facts, cpu),
        0o755,
    )?;
    write_mode(&debian.join("postinst"), &scripts::postinst(&facts), 0o755)?;
    write_mode(&debian.join("postrm"), &scripts::postrm(), 0o755)?;
    write_md5sums(&tree, &debian)?;

    fs::create_dir_all(req.out_dir)?;
    let name = format!("{PACKAGE}_{}_{arch}.deb", version.replace(':', "%3a"));
    let path = req.out_dir.join(&name);
    let tmp = req.out_dir.join(format!(".{name}.tmp"));
    crate::infra::runner::run_tool(
        // The package's date for the ar members and every file's time (dpkg-deb clamps to it),
        // and one compressor thread: the same tarball gives the same .deb.
        Command::new("dpkg-deb")
            .env("SOURCE_DATE_EPOCH", m.source_date_epoch.to_string())
            .args(["--root-owner-group", "-Zxz", "--threads-max=1", "--build"])
            .arg(&tree)
            .arg(&tmp),
        "dpkg-deb --build",
        None,
    )?;
    fs::rename(&tmp, &path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok(Deb {
        sha256: crate::infra::fs::sha256_file(&path)?,
        bytes: fs::metadata(&path)?.len(),
        path,
        package: PACKAGE.into(),
        version,
        fits,
        left_out: plugin_left_out(&m, req.tarball),
    })
}

/// The files that choose which binary runs ([`super::deb_scripts`]): the selector at
/// /usr/sbin/mariadbd, the decision, the status command, and the CPU check where the server
/// needs more than every amd64 CPU has (the decision runs it: a host that lacks the level, after
/// a migration say, runs Debian's binary instead of dying with SIGILL).
fn write_selection(tree: &Path, f: &Facts, cpu: Option<&super::cpu::CpuRequirement>) -> Result<()> {
    let mut files = vec![
        (scripts::SERVER_BINARY, scripts::selector()),
        (WHICH, scripts::which(f, cpu.is_some())),
        (STATUS, scripts::status(f)),
    ];
    if let Some(r) = cpu {
        files.push((CPU_CHECK, super::cpu::check_script(r, PACKAGE)));
    }
    for (path, text) in files {
        let file = tree.join(path.trim_start_matches('/'));
        let d = file
            .parent()
            .context("a path in the package has a directory")?;
        fs::create_dir_all(d)?;
        for a in d
            .ancestors()
            .take_while(|a| a.starts_with(tree) && *a != tree)
        {
            fs::set_permissions(a, fs::Permissions::from_mode(0o755))?;
        }
        write_mode(&file, &text, 0o755)?;
    }
    Ok(())
}

/// usr/share/doc/PACKAGE/changelog.Debian.gz: one entry saying what was built, from what.
fn write_changelog(doc: &Path, m: &Manifest, version: &str, maintainer: &str) -> Result<()> {
    let changelog = format!(
        "{PACKAGE} ({version}) unstable; urgency=medium\n\n  * Built by pgoforge {}, variant {}.\n  * From {}.\n\n -- {maintainer}  {}\n",
        m.pgoforge_version,
        m.variant,
        m.source,
        rfc2822(m.source_date_epoch)
    );
    let gz = doc.join("changelog.Debian.gz");
    gzip_n(changelog.as_bytes(), &gz)?;
    fs::set_permissions(&gz, fs::Permissions::from_mode(0o644))?;
    Ok(())
}

/// `text` gzip'ed into `to` as Debian's tools write it (`gzip -9n`: no name or time in the
/// header, so the same text gives the same bytes).
pub fn gzip_n(text: &[u8], to: &Path) -> Result<()> {
    let mut child = Command::new("gzip")
        .args(["-9n", "-c"])
        .stdin(std::process::Stdio::piped())
        .stdout(fs::File::create(to).with_context(|| format!("creating {}", to.display()))?)
        .spawn()
        .context("running gzip")?;
    child
        .stdin
        .take()
        .context("gzip's stdin")?
        .write_all(text)?;
    if !child.wait()?.success() {
        bail!("gzip failed writing {}", to.display());
    }
    Ok(())
}

/// Installed-Size: the package's files in KiB, each rounded up, as dpkg-gencontrol counts.
fn installed_kib(tree: &Path) -> Result<u64> {
    Ok(crate::infra::fs::files_under(&tree.join("usr"), "")?
        .iter()
        .map(|f| fs::symlink_metadata(f).map(|m| m.len().div_ceil(1024)))
        .sum::<std::io::Result<u64>>()?)
}

/// DEBIAN/md5sums: every file but the links, as dpkg verifies them.
fn write_md5sums(tree: &Path, debian: &Path) -> Result<()> {
    let mut sums = String::new();
    for f in crate::infra::fs::files_under(&tree.join("usr"), "")? {
        if f.is_symlink() {
            continue;
        }
        let rel = f.strip_prefix(tree)?;
        sums += &format!("{}  {}\n", md5_file(&f)?, rel.display());
    }
    write_mode(&debian.join("md5sums"), &sums, 0o644)
}

fn md5_file(p: &Path) -> Result<String> {
    let out = Command::new("md5sum")
        .arg(p)
        .output()
        .context("running md5sum")?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.split_whitespace()
        .next()
        .map(str::to_string)
        .with_context(|| format!("md5sum {}", p.display()))
}

/// A Debian changelog date (`date -R`) for seconds since the epoch.
fn rfc2822(secs: u64) -> String {
    let out = Command::new("date")
        .args(["-u", "-R", "-d", &format!("@{secs}")])
        .output();
    out.ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "Thu, 01 Jan 1970 00:00:00 +0000".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plugin_engine_package_says_its_deb_leaves_the_plugin_out() {
        let mut m = Manifest::default();
        assert_eq!(plugin_left_out(&m, Path::new("p.tar.zst")), None);
        m.engine = crate::server::config::Engine::RocksDb;
        let w = plugin_left_out(&m, Path::new("p.tar.zst")).unwrap();
        assert!(w.contains("lib/plugin/ha_rocksdb.so") && w.contains("deploy the tarball"));
    }

    #[test]
    fn the_description_names_what_the_gains_were_measured_against() {
        let gain = crate::package::Gain {
            workload: "oltp_point_select".into(),
            threads: 4,
            ratio: 1.99,
            ci: (1.88, 2.10),
            verdict: String::new(),
        };
        let mut m = Manifest {
            variant: "pgo+lto+bolt".into(),
            gains: vec![gain],
            ..Manifest::default()
        };
        let c = Control {
            version: "1:10.11.19-0+deb12u1+pgoforge+pgo+lto+bolt.1ea43489",
            fits: "1:10.11.19-0+deb12u1",
            arch: "amd64",
            installed_kib: 1,
            maintainer: "a <a@b.invalid>",
            depends: "",
        };
        let built = control(&m, &c);
        assert!(built.contains("against the -O2 baseline"), "{built}");
        // `follow`'s runs compare with Debian's server (`run --baseline debian`).
        m.gains_against = Some("debian".into());
        let debian = control(&m, &c);
        assert!(
            debian.contains("against Debian's server of the same release (interval):\n oltp_point_select at 4 threads: +99.0 % [+88.0, +110.0]"),
            "{debian}"
        );
    }

    #[test]
    fn versions_say_what_the_package_is_and_stay_valid() {
        let m = Manifest {
            variant: "pgo+lto".into(),
            profiles: vec!["compiler:f3a38cac059e9328130d".into()],
            ..Manifest::default()
        };
        let v = deb_version("1:10.11.18-0+deb12u1", &m);
        assert_eq!(v, "1:10.11.18-0+deb12u1+pgoforge+pgo+lto.f3a38cac");
        assert!(is_debian_version(&v));
        assert_eq!(upstream_of(&v), "10.11.18");
        for bad in ["", "x1.0", "1:", "a:1.0", "1.0-", "1.0-a b", "1.0_2"] {
            assert!(!is_debian_version(bad), "{bad}");
        }
        for good in ["10.11.18", "1:10.11.18-0+deb12u1", "1.0~rc1-2"] {
            assert!(is_debian_version(good), "{good}");
        }
    }
}
