//! `pgoforge doctor`: which tools are present, which are missing, required or optional, and the
//! apt command that fixes it. Exits 1 only when something required is missing.

use anyhow::Result;
use clap::Args;
use pgoforge::infra::exit::Refuse;
use pgoforge::infra::tools::{Env, Need, Probed, BOLT_PACKAGE};
use pgoforge::recipe::{Recipe, DEFAULT};
use pgoforge::source::release::{self, ReleaseCheck};
use pgoforge::toolchain::{Bolt, Compiler};

#[derive(Args)]
pub struct DoctorArgs {
    /// Print the table as JSON.
    #[arg(long)]
    json: bool,
    /// The recipe whose source release to check against what Debian serves and what is
    /// installed (`pgoforge recipes`).
    #[arg(long, default_value = DEFAULT)]
    recipe: String,
}

/// What the machine's sccache configuration offers, in words.
fn cluster_line(c: &pgoforge::builder::cluster::ClusterState) -> String {
    use pgoforge::builder::cluster::{ClusterState, INSTALL};
    match c {
        ClusterState::NotConfigured => format!(
            "none configured (builds are local); to spread compiles over sccache-dist, name its \
             scheduler in sccache's config ([dist] scheduler_url, [dist.auth]; docs/bench/scale.md) \
             with an sccache that has dist support: {INSTALL}"
        ),
        ClusterState::Unavailable { reason } => format!("configured but unavailable: {reason}"),
        ClusterState::Ready { cluster } => format!(
            "sccache-dist at {}: {} build server(s), {} CPUs (compiles of baseline, instrumented \
             and clang profile-use builds go there)",
            cluster.scheduler, cluster.servers, cluster.cpus
        ),
    }
}

/// The recipe's source release, as `source::release` sees it, in lines for the terminal.
fn release_lines(recipe: &str, c: &ReleaseCheck) -> Vec<String> {
    let mut v = vec![format!(
        "Source (recipe {recipe}):\n  builds     {} {}",
        c.package, c.building
    )];
    for r in c.available.iter().filter(|r| r.unfetchable.is_some()) {
        v.push(format!(
            "  listed     {} ({}): its source cannot be fetched",
            r.version, r.suite
        ));
    }
    if let Some(n) = c.newest() {
        v.push(format!(
            "  newest     {} ({}){}",
            n.version,
            n.suite,
            if c.newer().is_some() {
                ""
            } else {
                ": the one built, the newest release whose source the mirror serves"
            }
        ));
    }
    v.push(format!(
        "  installed  {} {}",
        c.server_package,
        c.installed.as_deref().unwrap_or("(not installed)")
    ));
    v.extend(c.warnings().into_iter().map(|w| format!("  warning: {w}")));
    v
}

fn probed(
    name: &str,
    package: &str,
    need: Need,
    purpose: &str,
    found: Option<(String, String)>,
) -> Probed {
    Probed {
        name: name.into(),
        package: package.into(),
        need,
        purpose: purpose.into(),
        path: found.as_ref().map(|(p, _)| p.into()),
        version: found.map(|(_, v)| v),
    }
}

/// The machine's tools, its compilers and BOLT, and the default recipe's library packages.
fn environment() -> Result<Env> {
    let mut env = Env::probe();
    let gcc = Compiler::find("gcc", None).ok();
    env.add(probed(
        "gcc",
        "gcc g++",
        Need::Required,
        "the default compiler",
        gcc.map(|c| (c.cc.display().to_string(), c.version)),
    ));
    let clang = Compiler::find("clang", None).ok();
    let clang_pkg = "clang-16 llvm-16 lld-16";
    env.add(probed(
        "clang",
        clang_pkg,
        Need::Optional,
        "--compiler clang",
        clang
            .as_ref()
            .map(|c| (c.cc.display().to_string(), c.version.clone())),
    ));
    if let Some(c) = &clang {
        env.add(probed(
            "llvm-profdata",
            &format!("llvm-{}", c.major),
            Need::Optional,
            "merges clang's profiles (must match clang's LLVM)",
            c.profdata.as_ref().map(|p| {
                (
                    p.display().to_string(),
                    format!("matches clang {}", c.major),
                )
            }),
        ));
    }
    let bolt = Bolt::find();
    env.add(probed(
        "llvm-bolt",
        BOLT_PACKAGE,
        Need::Required,
        "the +bolt variants of the default run",
        bolt.as_ref().map(|b| {
            (
                b.llvm_bolt.display().to_string(),
                format!("LLVM {}", b.major),
            )
        }),
    ));
    if let Some(b) = &bolt {
        env.add(probed(
            "merge-fdata",
            &format!("bolt-{}", b.major),
            Need::Required,
            "merges BOLT profiles",
            b.merge_fdata
                .as_ref()
                .map(|p| (p.display().to_string(), format!("LLVM {}", b.major))),
        ));
    }
    let recipe = Recipe::load(DEFAULT)?;
    let check = pgoforge::pipeline::deps::check(&recipe, "gcc", false);
    for p in &recipe.apt_packages {
        if check.unchecked.contains(p) || env.get(p).is_some() {
            continue;
        }
        let gone = check.missing.iter().any(|m| &m.package == p);
        env.add(probed(
            p,
            p,
            Need::Required,
            &format!("a build dependency of {DEFAULT}"),
            (!gone).then(|| ("(package)".into(), "installed".into())),
        ));
    }
    Ok(env)
}

pub fn main(a: DoctorArgs) -> Result<i32> {
    let env = environment()?;
    let recipe = Recipe::load(&a.recipe).refused()?;
    // The same resolution as `run`: the release it would build, checked against the mirror.
    let source_release = release::resolve(&recipe.source, &release::Want::Default)?;
    let cluster = pgoforge::builder::cluster::probe();
    let missing_required = env.missing_required();
    if a.json {
        let mut v = serde_json::to_value(&env)?;
        if let Some(o) = v.as_object_mut() {
            if let Some(c) = &source_release {
                o.insert("source_release".into(), serde_json::to_value(c)?);
            }
            o.insert("build_cluster".into(), serde_json::to_value(&cluster)?);
        }
        println!("{}", serde_json::to_string_pretty(&v)?);
        return Ok(i32::from(!missing_required.is_empty()));
    }
    if let Some(c) = &source_release {
        for l in release_lines(&recipe.name, c) {
            println!("{l}");
        }
    }
    println!("Build cluster: {}", cluster_line(&cluster));
    for need in [Need::Required, Need::Optional] {
        println!(
            "{}:",
            match need {
                Need::Required => "Required",
                Need::Optional => "Optional (used when present)",
            }
        );
        for t in env.tools.iter().filter(|t| t.need == need) {
            match (&t.path, &t.version) {
                (Some(_), v) => println!(
                    "  ok       {:<16} {}",
                    t.name,
                    v.clone().unwrap_or_default()
                ),
                (None, _) => println!(
                    "  missing  {:<16} {} (apt-get install {})",
                    t.name, t.purpose, t.package
                ),
            }
        }
    }
    if env.get("perf").is_some_and(Probed::found) {
        let lbr = pgoforge::profile::bolt::lbr_available();
        println!(
            "  branch sampling (LBR): {}",
            if lbr {
                "available: BOLT profiles by sampling"
            } else {
                "not available here: BOLT profiles by instrumentation"
            }
        );
    }
    let fix = |tools: &[&Probed]| {
        let mut p: Vec<&str> = tools.iter().map(|t| t.package.as_str()).collect();
        p.sort();
        p.dedup();
        p.join(" ")
    };
    let optional: Vec<&Probed> = env
        .tools
        .iter()
        .filter(|t| t.need == Need::Optional && !t.found())
        .collect();
    if !optional.is_empty() {
        println!(
            "Optional tools missing (nothing needs them by default):\n  apt-get install {}",
            fix(&optional)
        );
    }
    if missing_required.is_empty() {
        println!("Everything required is present.");
        Ok(0)
    } else {
        println!(
            "Required tools missing; fix with:\n  apt-get install {}",
            fix(&missing_required)
        );
        Ok(1)
    }
}
