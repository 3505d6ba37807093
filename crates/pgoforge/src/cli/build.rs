//! `pgoforge build`, `pgoforge recipes`, `pgoforge doctor`.

use std::path::PathBuf;
use std::process::Command;

use anyhow::Result;
use clap::Args;
use pgoforge::build::{self, BuildRequest, ProfileInput, Variant};
use pgoforge::recipe::{Recipe, SourceSpec, DEFAULT};
use pgoforge::source;
use pgoforge::toolchain::{Bolt, Compiler, FlagFamily};

#[derive(Args)]
pub struct BuildArgs {
    /// The variant: baseline, lto, pgo-gen, pgo, pgo+lto; each optionally +bolt and/or +native.
    #[arg(long, default_value = "baseline")]
    variant: String,
    /// gcc, clang, a versioned name (clang-16), or a path (with --flag-family).
    #[arg(long, default_value = "gcc")]
    compiler: String,
    /// The flag dialect of a compiler given by path.
    #[arg(long = "flag-family", value_parser = ["gcc", "clang"])]
    flag_family: Option<String>,
    /// An embedded recipe name or a recipe TOML file.
    #[arg(long, default_value = DEFAULT)]
    recipe: String,
    /// A source directory, tarball or URL (instead of the recipe's source).
    #[arg(long)]
    source: Option<String>,
    /// The sha256 of --source (required for URLs; checked for tarballs when given).
    #[arg(long)]
    sha256: Option<String>,
    /// The profile for pgo variants: a gcda directory (gcc) or a .profdata file (clang).
    #[arg(long)]
    profile: Option<PathBuf>,
    #[arg(long = "work-dir", default_value = "pgoforge-work")]
    work_dir: PathBuf,
    /// Parallel jobs (0: from cores and memory).
    #[arg(long, short = 'j', default_value_t = 0)]
    jobs: usize,
    /// Print the build record as JSON.
    #[arg(long)]
    json: bool,
    /// Only print where the build would be (its key and directory); build nothing.
    #[arg(long)]
    plan: bool,
}

pub fn build_main(a: BuildArgs) -> Result<i32> {
    let variant: Variant = a
        .variant
        .parse()
        .unwrap_or_else(|e: String| super::usage_error(e));
    let family = a.flag_family.as_deref().map(|f| {
        if f == "gcc" {
            FlagFamily::Gcc
        } else {
            FlagFamily::Clang
        }
    });
    let compiler = Compiler::find(&a.compiler, family)?;
    let recipe = Recipe::load(&a.recipe)?;
    std::fs::create_dir_all(&a.work_dir)?;
    let src = source::fetch(
        &recipe,
        a.source.as_deref(),
        a.sha256.as_deref(),
        &a.work_dir,
    )?;
    let profile = a.profile.map(ProfileInput::from_path);
    let req = BuildRequest {
        recipe: &recipe,
        source: &src,
        variant,
        compiler: &compiler,
        profile: profile.as_ref(),
        work_dir: &a.work_dir,
        jobs: a.jobs,
        show_progress: !a.json,
    };
    if a.plan {
        let (key, dir) = build::plan(&req)?;
        println!("{key} {}", dir.display());
        return Ok(0);
    }
    let out = build::build(&req)?;
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(0);
    }
    println!(
        "{} {} ({}) {}: {}",
        recipe.name,
        out.variant,
        compiler.label(),
        if out.cached { "is cached" } else { "built" },
        out.binary.display()
    );
    let attempts = if out.attempts > 1 {
        format!(" over {} attempts (resumed)", out.attempts)
    } else {
        String::new()
    };
    println!(
        "  {:.1} MiB, {:.0} s{attempts} with -j{}, log {}",
        out.binary_size as f64 / 1048576.0,
        out.seconds,
        out.jobs,
        out.log.display()
    );
    if variant.needs_profile() {
        println!(
            "  missing-profile warnings: {}",
            out.missing_profile_warnings
        );
    }
    if let Some(g) = &out.profile_gen_dir {
        println!(
            "Next: run this binary on a workload; it writes profiles to {}",
            g.display()
        );
    }
    Ok(0)
}

#[derive(Args)]
pub struct RecipesArgs {}

pub fn recipes_main(_: RecipesArgs) -> Result<i32> {
    for n in Recipe::embedded_names() {
        let r = Recipe::embedded(n)?;
        let src = match &r.source {
            SourceSpec::Debian {
                package,
                version,
                suite,
            } => format!("Debian source {package} {version} ({suite})"),
            SourceSpec::User { .. } => "your tarball (--source)".into(),
            SourceSpec::Url { url, .. } => url.clone(),
        };
        let default = if n == DEFAULT { " (default)" } else { "" };
        println!(
            "{n:<14} {}{default}\n               source: {src}; builds {}",
            r.description,
            r.build.targets.join(", ")
        );
    }
    Ok(0)
}

#[derive(Args)]
pub struct DoctorArgs {}

fn tool_line(name: &str, found: Option<String>, fix: &str, missing: &mut Vec<String>) {
    match found {
        Some(v) => println!("  ok       {name:<14} {v}"),
        None => {
            println!("  missing  {name:<14} (apt-get install {fix})");
            missing.push(fix.to_string());
        }
    }
}

fn version_of(cmd: &str, arg: &str) -> Option<String> {
    let out = Command::new(cmd).arg(arg).output().ok()?;
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    text.lines()
        .find(|l| !l.trim().is_empty())
        .map(|l| l.trim().to_string())
}

pub fn doctor_main(_: DoctorArgs) -> Result<i32> {
    let mut missing = Vec::new();
    println!("Build tools:");
    tool_line(
        "cmake",
        version_of("cmake", "--version"),
        "cmake",
        &mut missing,
    );
    tool_line(
        "make",
        version_of("make", "--version"),
        "make",
        &mut missing,
    );
    tool_line(
        "bison",
        version_of("bison", "--version"),
        "bison",
        &mut missing,
    );
    tool_line(
        "ccache",
        version_of("ccache", "--version"),
        "ccache",
        &mut missing,
    );
    tool_line(
        "dpkg-source",
        version_of("dpkg-source", "--version"),
        "dpkg-dev",
        &mut missing,
    );
    println!("Compilers:");
    let gcc = Compiler::find("gcc", None).ok();
    tool_line(
        "gcc",
        gcc.as_ref().map(|c| c.version.clone()),
        "gcc g++",
        &mut missing,
    );
    let clang = Compiler::find("clang", None).ok();
    tool_line(
        "clang",
        clang
            .as_ref()
            .map(|c| format!("{} ({})", c.version, c.cc.display())),
        "clang-16 llvm-16 lld-16",
        &mut missing,
    );
    if let Some(c) = &clang {
        let fix = format!("llvm-{}", c.major);
        tool_line(
            "llvm-profdata",
            c.profdata
                .as_ref()
                .map(|p| format!("{} (matches clang {})", p.display(), c.major)),
            &fix,
            &mut missing,
        );
    }
    println!("BOLT:");
    let bolt = Bolt::find();
    tool_line(
        "llvm-bolt",
        bolt.as_ref()
            .map(|b| format!("{} (LLVM {})", b.llvm_bolt.display(), b.major)),
        "bolt-22",
        &mut missing,
    );
    if let Some(b) = &bolt {
        tool_line(
            "merge-fdata",
            b.merge_fdata.as_ref().map(|p| p.display().to_string()),
            &format!("bolt-{}", b.major),
            &mut missing,
        );
    }
    println!("Profiling:");
    let perf = version_of("perf", "--version");
    tool_line("perf", perf.clone(), "linux-perf", &mut missing);
    if perf.is_some() {
        let lbr = pgoforge::profile::bolt::lbr_available();
        println!(
            "  {}  branch sampling (LBR): {}",
            if lbr { "ok      " } else { "no      " },
            if lbr {
                "available: BOLT profiles by sampling"
            } else {
                "not available here: BOLT profiles by instrumentation"
            }
        );
    }
    println!("Build dependencies of the default recipe ({DEFAULT}):");
    let recipe = Recipe::load(DEFAULT)?;
    let check = pgoforge::pipeline::deps::check(&recipe, "gcc", false);
    for p in &recipe.apt_packages {
        let gone = check.missing.iter().any(|m| &m.package == p);
        if check.unchecked.contains(p) {
            println!("  ?        {p:<14} (no dpkg-query: not checked)");
        } else {
            tool_line(p, (!gone).then(|| "installed".to_string()), p, &mut missing);
        }
    }
    println!("Servers and workloads:");
    tool_line(
        "mariadbd",
        version_of("/usr/sbin/mariadbd", "--version"),
        "mariadb-server",
        &mut missing,
    );
    tool_line(
        "sysbench",
        version_of("sysbench", "--version"),
        "sysbench",
        &mut missing,
    );
    if missing.is_empty() {
        println!("Everything is present.");
        Ok(0)
    } else {
        missing.sort();
        missing.dedup();
        println!("Fix with:\n  apt-get install {}", missing.join(" "));
        Ok(1)
    }
}
