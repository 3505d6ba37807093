//! `pgoforge build`: one variant, through the same build stage `pgoforge run` uses.

use anyhow::Result;
use clap::Args;
use pgoforge::builder::relative::SourcePaths;
use pgoforge::builder::{self, BuildRequest, ProfileInput, Variant};
use pgoforge::pipeline::stage::Ctx;
use pgoforge::pipeline::stages::BuildStage;
use pgoforge::pipeline::Tracker;

use super::args::{BuildHostArgs, CompilerArgs, SourceArgs, WorkDirArgs};
use pgoforge::infra::exit::Refuse;

#[derive(Args)]
pub struct BuildArgs {
    /// The variant: baseline, lto, pgo-gen, pgo, pgo+lto; each optionally +bolt and/or +native.
    #[arg(long, default_value = "baseline")]
    variant: Variant,
    #[command(flatten)]
    compiler: CompilerArgs,
    #[command(flatten)]
    source: SourceArgs,
    /// The profile for pgo variants: a gcda directory (gcc) or a .profdata file (clang).
    #[arg(long)]
    profile: Option<std::path::PathBuf>,
    #[command(flatten)]
    work: WorkDirArgs,
    /// Parallel jobs (0: from cores and memory).
    #[arg(long, short = 'j', default_value_t = 0)]
    jobs: usize,
    /// Print the build record as JSON (progress events go to stderr as JSON lines).
    #[arg(long)]
    json: bool,
    /// Only print where the build would be (its key and directory); build nothing.
    #[arg(long)]
    plan: bool,
    #[command(flatten)]
    build_hosts: BuildHostArgs,
    /// An ssh config file for --build-host (`ssh -F FILE`) [ssh's own].
    #[arg(long = "ssh-config", value_name = "FILE", requires = "build_host")]
    ssh_config: Option<std::path::PathBuf>,
}

pub fn main(a: BuildArgs) -> Result<i32> {
    let (recipe, release) = a.source.recipe()?;
    SourceArgs::warn(release.as_ref());
    let compiler = a.compiler.find(&recipe)?;
    let profile = a.profile.clone().map(ProfileInput::from_path);
    // Checked before anything is fetched or built.
    builder::check_inputs(a.variant, profile.as_ref(), &compiler).refused()?;
    let (work, _lock) = a.work.locked()?;
    let reporter = super::reporter(a.json);
    let cx = Ctx {
        work: &work,
        reporter: reporter.as_ref(),
    };
    let mut t = Tracker::ephemeral();
    let cluster = pgoforge::builder::cluster::probe();
    if a.plan {
        // Nothing is fetched or built: a plan needs the source there already (its hash is part
        // of the key).
        let Some(src) = pgoforge::source::peek(
            &recipe,
            a.source.source.as_deref(),
            a.source.sha256.as_deref(),
            &work,
        )?
        else {
            anyhow::bail!(
                "the source of {} is not in {} yet, and a build's key depends on it; \
                 fetch it first (pgoforge build without --plan fetches it)",
                recipe.name,
                work.display()
            );
        };
        let (key, dir) = builder::plan(&BuildRequest {
            recipe: &recipe,
            source: &src,
            variant: a.variant,
            compiler: &compiler,
            profile: profile.as_ref(),
            work_dir: &work,
            jobs: a.jobs,
            progress: None,
            cluster: cluster.cluster(),
            source_paths: SourcePaths::of_profile(profile.as_ref()),
        })?;
        println!("{key} {}", dir.display());
        if !cluster.is_not_configured() {
            println!(
                "compiles: {}",
                placement_line(&cluster, a.variant, &compiler)
            );
        }
        return Ok(0);
    }
    let src = t.run(&a.source.stage(&recipe), &cx)?;
    let stage = BuildStage {
        recipe: &recipe,
        source: &src,
        compiler: &compiler,
        variant: a.variant,
        profile: profile.as_ref(),
        mix: None,
        jobs: a.jobs,
        cluster: cluster.cluster(),
    };
    if !cluster.is_not_configured() {
        reporter.message(
            "build",
            &format!(
                "compiles: {}",
                placement_line(&cluster, a.variant, &compiler)
            ),
        );
    }
    build_elsewhere(&a, &stage, &cx);
    let out = t.run(&stage, &cx)?;
    let cached = t.timings.last().is_some_and(|s| s.reused);
    if a.json {
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(0);
    }
    println!(
        "{} {} ({}) {}: {}",
        recipe.name,
        out.variant,
        compiler.label(),
        if cached { "is cached" } else { "built" },
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
    if let Some(d) = &out.distributed {
        println!("  {}", d.sentence());
    }
    if a.variant.needs_profile() {
        show_profile_use(&out);
    }
    if let Some(g) = &out.profile_gen_dir {
        println!(
            "Next: run this binary on a workload; it writes profiles to {}",
            g.display()
        );
    }
    Ok(0)
}

/// What became of the profile in a build that used one.
fn show_profile_use(out: &pgoforge::builder::BuildOutput) {
    println!(
        "  missing-profile warnings: {}",
        out.missing_profile_warnings
    );
    if let Some(st) = out.stale.as_ref().filter(|s| s.mismatched > 0) {
        println!("  stale profile: {}", st.sentence());
    }
    if let Some(r) = &out.profile_relocated {
        println!("  {}", r.sentence());
    }
}

/// Where a build's compiles go, in words (the cluster is configured).
fn placement_line(
    cluster: &pgoforge::builder::cluster::ClusterState,
    variant: pgoforge::builder::Variant,
    compiler: &pgoforge::toolchain::Compiler,
) -> String {
    use pgoforge::builder::cluster::Placement;
    match cluster.placement(variant, compiler) {
        Some(Placement::Cluster { scheduler, cpus }) => {
            format!("on the build cluster ({scheduler}, {cpus} CPUs) through sccache")
        }
        Some(Placement::Local { reason }) => format!("here ({reason})"),
        None => "here (no build cluster configured)".into(),
    }
}

/// Builds on the first build host that manages it, when the variant may go there and is not
/// built yet; a host that fails is warned about and the next tried (in the end, this host).
fn build_elsewhere(a: &BuildArgs, stage: &BuildStage, cx: &Ctx) {
    let hosts = a.build_hosts.hosts(a.ssh_config.as_deref());
    if hosts.is_empty() || stage.finished(cx.work) {
        return;
    }
    if !builder::host::may_go(a.variant) {
        cx.reporter.message(
            "build",
            &format!(
                "{} is built here: the baseline and instrumented builds never go to a build host",
                a.variant
            ),
        );
        return;
    }
    // The build host's make percentages, each new value once (as a local build shows them).
    let last = std::cell::Cell::new(u64::MAX);
    let tick = |pct: u64| {
        if last.replace(pct) != pct {
            cx.reporter.event(pgoforge::events::Event::Progress {
                stage: "build".into(),
                done: pct,
                total: 100,
            })
        }
    };
    for h in &hosts {
        cx.reporter.message(
            "build",
            &format!("building {} on the build host {}", a.variant, h.destination),
        );
        match builder::host::build_on(h, &stage.request(cx.work, Some(&tick))) {
            Ok(_) => return,
            Err(e) => cx.reporter.warning(&format!(
                "the build host {} could not build {} ({e:#}); trying {}",
                h.destination,
                a.variant,
                if std::ptr::eq(h, hosts.last().unwrap_or(h)) {
                    "here"
                } else {
                    "the next host"
                }
            )),
        }
    }
}
