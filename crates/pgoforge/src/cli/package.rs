//! `pgoforge package`: a contender of a finished run as a tar.zst with its manifest and SHA256SUMS,
//! and, for a Debian-sourced MariaDB, a .deb that takes the distribution server's place
//! (`--deb`, or `package deb TARBALL` from a tarball alone).

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::{Args, Subcommand};
use pgoforge::bench::report;
use pgoforge::package::deb::{self, Deb, DebRequest};
use pgoforge::pipeline::{self, Outcome};

use super::args::WorkDirArgs;

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct PackageArgs {
    #[command(subcommand)]
    from_tarball: Option<FromTarball>,
    /// The variant (contender name) of the finished run to package, e.g. pgo+bolt.
    #[arg(required = true)]
    variant: Option<String>,
    /// Also make a Debian package that installs the server in place of Debian's mariadbd
    /// (MariaDB from a Debian source package only); it fits exactly the server version built.
    #[arg(long)]
    deb: bool,
    #[command(flatten)]
    deb_opts: DebOpts,
    #[command(flatten)]
    work: WorkDirArgs,
    /// Print the package record as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Clone)]
struct DebOpts {
    /// The Debian version of mariadb-server-core the .deb fits, for a tarball whose manifest does
    /// not name one (made before 2026-12-02, or from a source pgoforge did not fetch from Debian).
    #[arg(long, value_name = "VERSION")]
    for_version: Option<String>,
    /// The .deb's Maintainer, 'Name <address>' [DEBFULLNAME and DEBEMAIL; else
    /// 'Local pgoforge build <USER@HOST.invalid>'].
    #[arg(long, value_name = "CONTACT")]
    maintainer: Option<String>,
}

#[derive(Subcommand)]
enum FromTarball {
    /// Check a package against its manifest, on any host (no build tree needed): every file
    /// against SHA256SUMS, the server's version, the deployment files (etc/my.cnf, the systemd
    /// unit) against the layout, the CPU level it was compiled for against this CPU, and a short
    /// start on a scratch datadir. Exit status 6 when a check fails, 8 when only the CPU does.
    Verify {
        /// A NAME.tar.zst, or the directory it was unpacked to (checked in place, read only).
        package: PathBuf,
        /// Skip the short start (checks files and the version only).
        #[arg(long)]
        no_start: bool,
        /// Print the checks as JSON.
        #[arg(long)]
        json: bool,
        /// Check the package's CPU level against this CPU instead of this machine's: a
        /// /proc/cpuinfo copy, or its flags separated by white space (exit status 8 when a
        /// feature the server was compiled for is missing).
        #[arg(long, value_name = "FILE")]
        cpu_flags: Option<PathBuf>,
        /// The package's rebuild sidecar [NAME.rebuild.tar.zst beside it, when there is one]:
        /// checked to belong to the package and to carry the manifest's profiles (exit status
        /// 9 when it does not).
        #[arg(long, value_name = "FILE")]
        sidecar: Option<PathBuf>,
    },
    /// Make the .deb from a package tarball (NAME.tar.zst), on any host: checked against its
    /// SHA256SUMS first.
    Deb {
        tarball: PathBuf,
        /// Where to write the .deb [beside the tarball].
        #[arg(long)]
        out: Option<PathBuf>,
        #[command(flatten)]
        deb_opts: DebOpts,
        /// Print the .deb's record as JSON.
        #[arg(long)]
        json: bool,
    },
}

fn show_deb(d: &Deb) {
    println!(
        "{}\n  {} {} (fits mariadb-server-core {}), sha256 {} ({:.1} MiB)\n  install: dpkg -i {}   roll back: dpkg -r {}",
        d.path.display(),
        d.package,
        d.version,
        d.fits,
        d.sha256,
        d.bytes as f64 / 1048576.0,
        d.path.display(),
        d.package
    );
}

fn make_deb(tarball: &Path, out: &Path, o: &DebOpts) -> Result<Deb> {
    let d = deb::build(&DebRequest {
        tarball,
        out_dir: out,
        for_version: o.for_version.as_deref(),
        maintainer: o.maintainer.as_deref(),
    })?;
    for w in deb::fit_warning(&d.fits).iter().chain(&d.left_out) {
        eprintln!("warning: {w}");
    }
    Ok(d)
}

fn verify(
    package: &Path,
    no_start: bool,
    json: bool,
    cpu_flags: Option<&Path>,
    sidecar: Option<&Path>,
) -> Result<i32> {
    if !package.exists() {
        pgoforge::usage!(
            "{} does not exist (give a NAME.tar.zst or the directory it was unpacked to)",
            package.display()
        );
    }
    let scratch = tempfile::Builder::new()
        .prefix("pgoforge-verify-")
        .tempdir()?;
    if let Some(s) = sidecar.filter(|s| !s.is_file()) {
        pgoforge::usage!("--sidecar {} does not exist", s.display());
    }
    let v =
        pgoforge::package::verify::verify(package, scratch.path(), !no_start, cpu_flags, sidecar)?;
    if json {
        println!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        println!("{} ({})", v.name, v.server_version);
        for c in &v.checks {
            println!(
                "  {:<6} {:<20} {}",
                if c.ok { "ok" } else { "FAILED" },
                c.name,
                c.detail
            );
        }
        use pgoforge::infra::exit::ExitStatus;
        println!(
            "{}",
            match v.status() {
                ExitStatus::Success => "verified: the package is what its manifest says",
                ExitStatus::CpuUnsupported =>
                    "the package is sound, but this CPU cannot run it: deploy it only where the cpu check passes",
                ExitStatus::Provenance =>
                    "NOT verified: the package is not what its manifest says it is made of; do not deploy it",
                _ => "NOT verified: do not deploy this package",
            }
        );
    }
    Ok(v.status().code())
}

pub fn main(a: PackageArgs) -> Result<i32> {
    if let Some(FromTarball::Verify {
        package,
        no_start,
        json,
        cpu_flags,
        sidecar,
    }) = &a.from_tarball
    {
        return verify(
            package,
            *no_start,
            *json,
            cpu_flags.as_deref(),
            sidecar.as_deref(),
        );
    }
    if let Some(FromTarball::Deb {
        tarball,
        out,
        deb_opts,
        json,
    }) = &a.from_tarball
    {
        let out = out
            .clone()
            .or_else(|| tarball.parent().map(Path::to_path_buf))
            .unwrap_or_else(|| PathBuf::from("."));
        let d = make_deb(tarball, &out, deb_opts)?;
        if *json {
            println!("{}", serde_json::to_string_pretty(&d)?);
        } else {
            show_deb(&d);
        }
        return Ok(0);
    }
    let variant = a.variant.as_deref().unwrap_or_default();
    let work = a.work.existing()?;
    let _lock = pgoforge::infra::lock::WorkLock::acquire(&work)?;
    let out = Outcome::load(&work)?;
    let rep = report::build(&out.run_dir).ok();
    let p = pipeline::package_contender(&work, &out, rep.as_ref(), variant)?;
    let d = if a.deb {
        let dir = p.path.parent().unwrap_or(&work).to_path_buf();
        Some(make_deb(&p.path, &dir, &a.deb_opts)?)
    } else {
        None
    };
    if a.json {
        // Without --deb the record keeps the shape it always had.
        let v = match &d {
            Some(d) => serde_json::json!({"package": p, "deb": d}),
            None => serde_json::to_value(&p)?,
        };
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(0);
    }
    println!(
        "{}\n  sha256 {}  ({:.1} MiB, {} files)",
        p.path.display(),
        p.sha256,
        p.bytes as f64 / 1048576.0,
        p.files
    );
    println!(
        "  rebuild sidecar {} (publish it beside the package: `pgoforge rebuild {}` makes the \
         binary again from it)",
        pgoforge::package::sidecar::beside(&p.path).display(),
        p.path.display()
    );
    if let Some(d) = &d {
        show_deb(d);
    }
    Ok(0)
}
