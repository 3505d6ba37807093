//! `pgoforge rebuild PACKAGE`: the package's binary made again from its sidecar (the recipe,
//! the source's identity, the profiles, the toolchain) and compared byte for byte
//! (package/rebuild.rs).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use pgoforge::infra::exit::ExitStatus;
use pgoforge::package::rebuild::{self, RebuildRequest, Rebuilt};

use super::args::WorkDirArgs;

#[derive(Args)]
pub struct RebuildArgs {
    /// The package: NAME.tar.zst, with NAME.rebuild.tar.zst beside it.
    package: PathBuf,
    /// Its rebuild sidecar [NAME.rebuild.tar.zst beside the package].
    #[arg(long, value_name = "FILE")]
    sidecar: Option<PathBuf>,
    /// The source, for a recipe built from the user's own (a directory or tarball; checked
    /// against the package's source hash).
    #[arg(long, value_name = "DIR|TARBALL")]
    source: Option<String>,
    /// Rebuild with this machine's compiler, linker or BOLT even where their versions are not
    /// the package's (the result is compared all the same, and the differences are named).
    #[arg(long)]
    allow_toolchain_change: bool,
    #[command(flatten)]
    work: WorkDirArgs,
    /// Parallel jobs (0: from cores and memory).
    #[arg(long, short = 'j', default_value_t = 0)]
    jobs: usize,
    /// Print the result as JSON (progress events go to stderr as JSON lines).
    #[arg(long)]
    json: bool,
}

pub fn main(a: RebuildArgs) -> Result<i32> {
    if !a.package.is_file() {
        pgoforge::usage!(
            "{} does not exist (give the NAME.tar.zst `pgoforge package` made)",
            a.package.display()
        );
    }
    if let Some(s) = a.sidecar.as_ref().filter(|s| !s.is_file()) {
        pgoforge::usage!("--sidecar {} does not exist", s.display());
    }
    let (work, _lock) = a.work.locked()?;
    let reporter = super::reporter(a.json);
    let r = rebuild::rebuild(&RebuildRequest {
        package: &a.package,
        sidecar: a.sidecar.as_deref(),
        work: &work,
        source: a.source.as_deref(),
        allow_toolchain_change: a.allow_toolchain_change,
        jobs: a.jobs,
        reporter: reporter.as_ref(),
    })?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&r)?);
    } else {
        show(&r);
    }
    Ok(if r.binary_identical {
        ExitStatus::Success
    } else {
        ExitStatus::NotReproduced
    }
    .code())
}

fn show(r: &Rebuilt) {
    println!("{}", r.package);
    for d in &r.toolchain_differences {
        println!("  toolchain: {d}");
    }
    for n in &r.notes {
        println!("  note: {n}");
    }
    if r.binary_identical {
        println!(
            "  {}: byte-identical to the package's (sha256 {})",
            r.binary, r.rebuilt_binary_sha256
        );
    } else {
        println!(
            "  {}: DIFFERS — the package's sha256 {}, the rebuilt {}",
            r.binary, r.package_binary_sha256, r.rebuilt_binary_sha256
        );
        for s in &r.sections {
            let size = |b: Option<u64>| b.map_or("absent".to_string(), |b| format!("{b} bytes"));
            println!(
                "    section {:<24} package {:>14}, rebuilt {:>14}{}",
                s.name,
                size(s.package_bytes),
                size(s.rebuilt_bytes),
                if s.loaded { "  (loaded)" } else { "" }
            );
        }
        if r.loaded_identical {
            println!(
                "  every section the server loads is identical: what differs is symbol names \
                 and the build id computed over them"
            );
        }
    }
    println!(
        "  the package packed again: {} ({})",
        r.rebuilt_package.display(),
        if r.package_identical {
            "the same bytes as the package"
        } else {
            "other bytes than the package"
        }
    );
}
