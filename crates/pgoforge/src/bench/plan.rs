//! What a benchmark is asked to do: the contenders (the first is the baseline), the measured
//! cells ([`BenchSpec`]), the server configuration, pinning, and how rounds are ordered. Stored as
//! the run directory's plan.json, whose hash names the run.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::order::OrderScheme;
use super::spec::BenchSpec;
use crate::server::ServerConfig;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Contender {
    pub name: String,
    pub binary: PathBuf,
    /// A buffer pool size for this contender (a settings sweep); the plan's otherwise.
    #[serde(default)]
    pub buffer_pool_mb: Option<u64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchPlan {
    /// The first is the baseline every other is compared with.
    pub contenders: Vec<Contender>,
    /// Flattened: plan.json keeps the fields (and their order) it always had.
    #[serde(flatten)]
    pub spec: BenchSpec,
    pub config: ServerConfig,
    /// Pin server and client to disjoint CPU sets when the machine has two or more CPUs.
    pub pin: bool,
    /// Seeds the per-round contender order.
    pub seed: u64,
    /// Free text recorded with the results (recipe, flags, source hash...).
    pub label: String,
    /// How round orders are made ([`OrderScheme`]). Absent from plans that shuffle, so plans
    /// written before this field keep their hash (and run directory).
    #[serde(default, skip_serializing_if = "OrderScheme::is_shuffle")]
    pub order_scheme: OrderScheme,
    /// Contenders compared for reference only (not built by the run, never the winner).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reference_only: Vec<String>,
    /// The workloads the contenders' profiles were trained on; every other workload of the plan is
    /// held out, and the report says whether any of them regressed. Absent (empty) from plans of
    /// benchmarks without training, so their hash stays.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trained_on: Vec<oltp::settings::TestName>,
    /// A train × evaluate matrix: each trained contender's mix and what it trained on (then
    /// `trained_on` is empty). Absent from other plans, so their hash stays.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub training: Vec<Training>,
    /// The contender that is the baseline's binary served again (an A/A control interleaved like
    /// every contender): its scatter against the baseline is this run's own noise. Not a claim:
    /// outside Holm's family, never chosen. Absent from plans without one, so their hash stays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aa_control: Option<String>,
}

/// The name the A/A control runs under.
pub const AA_CONTROL: &str = "baseline-again";

/// One contender of a matrix and the training mix of its profile.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Training {
    pub contender: String,
    pub mix: String,
    pub workloads: Vec<oltp::settings::TestName>,
}

impl BenchPlan {
    /// The plan's workloads some trained contender's profile never saw (none when nothing was
    /// trained).
    pub fn held_out(&self) -> Vec<oltp::settings::TestName> {
        self.spec
            .workloads
            .iter()
            .filter(|w| {
                self.contenders
                    .iter()
                    .any(|c| self.held_out_for(&c.name).contains(w))
            })
            .copied()
            .collect()
    }

    /// The plan's workloads `contender`'s profile was not trained on (none for a contender
    /// without training).
    pub fn held_out_for(&self, contender: &str) -> Vec<oltp::settings::TestName> {
        let trained = if self.training.is_empty() {
            &self.trained_on
        } else {
            match self.training.iter().find(|t| t.contender == contender) {
                Some(t) => &t.workloads,
                None => return Vec::new(),
            }
        };
        if trained.is_empty() || contender == self.contenders[0].name || self.is_control(contender)
        {
            return Vec::new();
        }
        self.spec
            .workloads
            .iter()
            .filter(|w| !trained.contains(w))
            .copied()
            .collect()
    }

    /// Whether `contender` is the A/A control.
    pub fn is_control(&self, contender: &str) -> bool {
        self.aa_control.as_deref() == Some(contender)
    }

    /// The contender the A/A control serves again: the first other one with its binary and
    /// buffer pool. A report against another baseline (`--baseline`) still compares the control
    /// with this one, so its scatter stays the run's own noise and not a comparison of builds.
    pub fn aa_reference(&self) -> Option<&Contender> {
        let name = self.aa_control.as_deref()?;
        let ctl = self.contenders.iter().find(|c| c.name == name)?;
        self.contenders.iter().find(|c| {
            c.name != name && c.binary == ctl.binary && c.buffer_pool_mb == ctl.buffer_pool_mb
        })
    }

    /// The training mix `contender` was trained on, in a matrix.
    pub fn mix_of(&self, contender: &str) -> Option<&str> {
        self.training
            .iter()
            .find(|t| t.contender == contender)
            .map(|t| t.mix.as_str())
    }
}

/// A seed for a new benchmark's round orders, from the kernel's random source.
pub fn fresh_seed() -> u64 {
    let b: [u8; 8] = crate::infra::random_bytes().unwrap_or_default();
    // Never 0 (the clock's seed in the driver's convention); a read failure still varies.
    u64::from_le_bytes(b) ^ crate::infra::time::now_secs() | 1
}

impl BenchPlan {
    /// The buffer pool contender `c`'s server runs with: its own in a sweep, else the plan's.
    pub fn buffer_pool_mb_of(&self, c: &Contender) -> u64 {
        c.buffer_pool_mb.unwrap_or(self.config.buffer_pool_mb)
    }

    /// Every contender's buffer pool, in plan order: one entry per server the benchmark runs.
    pub fn server_pools(&self) -> Vec<u64> {
        self.contenders
            .iter()
            .map(|c| self.buffer_pool_mb_of(c))
            .collect()
    }

    /// The contender `c` is compared with: the first one with the same server settings.
    pub fn baseline_for(&self, c: &Contender) -> &Contender {
        self.contenders
            .iter()
            .find(|b| b.buffer_pool_mb == c.buffer_pool_mb)
            .unwrap_or(&self.contenders[0])
    }

    /// Each contender once per buffer pool size, named `name@bpN` — but the A/A control only at
    /// the first size: one control measures the run's noise (every size's rounds interleave on
    /// the same host), where one per size would cost a contender's share per size. The names the
    /// plan lists elsewhere (reference-only contenders, a matrix's trainings) follow.
    pub fn sweep_buffer_pool(&mut self, sizes: &[u64]) {
        if sizes.is_empty() {
            return;
        }
        let base = std::mem::take(&mut self.contenders);
        let control = self.aa_control.take();
        for (i, &mb) in sizes.iter().enumerate() {
            for c in &base {
                if control.as_ref() == Some(&c.name) {
                    if i > 0 {
                        continue;
                    }
                    self.aa_control = Some(at_pool(&c.name, mb));
                }
                self.contenders.push(Contender {
                    name: at_pool(&c.name, mb),
                    binary: c.binary.clone(),
                    buffer_pool_mb: Some(mb),
                });
            }
        }
        self.reference_only = std::mem::take(&mut self.reference_only)
            .into_iter()
            .flat_map(|n| sizes.iter().map(move |&mb| at_pool(&n, mb)))
            .collect();
        self.training = std::mem::take(&mut self.training)
            .into_iter()
            .flat_map(|t| {
                sizes.iter().map(move |&mb| Training {
                    contender: at_pool(&t.contender, mb),
                    ..t.clone()
                })
            })
            .collect();
    }

    /// The contender `name` names at the buffer pool `like` runs with: `name@bpN` in a sweep,
    /// `name` itself otherwise (e.g. the distribution's server beside a sweep's winner).
    pub fn at_pool_of(&self, name: &str, like: &str) -> Option<&Contender> {
        let pool = self
            .contenders
            .iter()
            .find(|c| c.name == like)?
            .buffer_pool_mb;
        let want = pool.map_or_else(|| name.to_string(), |mb| at_pool(name, mb));
        self.contenders
            .iter()
            .find(|c| c.name == want && c.buffer_pool_mb == pool)
    }
}

/// Why a buffer-pool sweep of these sizes over contenders of these names cannot run, if it
/// cannot: a size given twice would pair a contender with itself under two names, and a name
/// that already ends in `@bpN` would be read back as another pool's.
pub fn sweep_refusal<'a>(
    names: impl IntoIterator<Item = &'a str>,
    sizes: &[u64],
) -> Option<String> {
    let mut seen = std::collections::BTreeSet::new();
    if let Some(mb) = sizes.iter().find(|&&mb| !seen.insert(mb)) {
        return Some(format!(
            "--sweep-buffer-pool-mb names {mb} twice; give each size once"
        ));
    }
    if let Some(n) = names.into_iter().find(|n| split_pool(n).1.is_some()) {
        return Some(format!(
            "the contender name '{n}' ends like a sweep's pool suffix (@bpN), which the sweep \
             adds itself; rename it"
        ));
    }
    None
}

/// A contender's name at buffer pool size `mb` in a sweep.
pub fn at_pool(name: &str, mb: u64) -> String {
    format!("{name}@bp{mb}")
}

/// The name a sweep's contender had before [`at_pool`] named it by its pool, and that pool;
/// a name without the suffix as it is. Only a plan's own contender names are split: a
/// `@bpN` that `at_pool` did not add cannot reach a plan, since a sweep refuses such names.
pub fn split_pool(name: &str) -> (&str, Option<u64>) {
    match name.rsplit_once("@bp") {
        Some((base, mb)) if !base.is_empty() => match mb.parse::<u64>() {
            Ok(n) if at_pool(base, n) == name => (base, Some(n)),
            _ => (name, None),
        },
        _ => (name, None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oltp::settings::TestName;

    #[test]
    fn every_benchmark_draws_its_own_seed() {
        // Different seeds give different round orders (crates/stats' order tests).
        assert!(fresh_seed() != fresh_seed());
    }

    fn plan_of(contenders: Vec<Contender>) -> BenchPlan {
        BenchPlan {
            contenders,
            spec: BenchSpec {
                workloads: vec![TestName::OltpReadOnly],
                threads: vec![1],
                rounds: 1,
                seconds: 1,
                warmup_seconds: 0,
                tables: 1,
                table_size: 10,
                ..BenchSpec::standard()
            },
            config: ServerConfig::default(),
            pin: false,
            seed: 1,
            label: String::new(),
            order_scheme: OrderScheme::Shuffle,
            reference_only: Vec::new(),
            trained_on: Vec::new(),
            training: Vec::new(),
            aa_control: None,
        }
    }

    #[test]
    fn a_buffer_pool_sweep_compares_like_with_like() {
        let c = |n: &str| Contender {
            name: n.into(),
            binary: "/x".into(),
            buffer_pool_mb: None,
        };
        let mut p = plan_of(vec![c("base"), c("pgo")]);
        p.sweep_buffer_pool(&[512, 2048]);
        let names: Vec<&str> = p.contenders.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            vec!["base@bp512", "pgo@bp512", "base@bp2048", "pgo@bp2048"]
        );
        assert_eq!(p.baseline_for(&p.contenders[3]).name, "base@bp2048");
        assert_eq!(p.baseline_for(&p.contenders[1]).name, "base@bp512");
        assert_eq!(p.aa_control, None);
    }

    #[test]
    fn a_sweep_keeps_one_a_a_control_at_its_first_size() {
        let c = |n: &str| Contender {
            name: n.into(),
            binary: "/x".into(),
            buffer_pool_mb: None,
        };
        let mut p = BenchPlan {
            contenders: vec![c("base"), c("pgo"), c(AA_CONTROL)],
            aa_control: Some(AA_CONTROL.into()),
            ..plan_of(vec![])
        };
        p.sweep_buffer_pool(&[512, 2048]);
        let names: Vec<&str> = p.contenders.iter().map(|c| c.name.as_str()).collect();
        let ctl = format!("{AA_CONTROL}@bp512");
        assert_eq!(
            names,
            vec!["base@bp512", "pgo@bp512", &ctl, "base@bp2048", "pgo@bp2048"]
        );
        assert_eq!(p.aa_control.as_deref(), Some(ctl.as_str()));
        assert!(p.is_control(&ctl));
        assert_eq!(
            p.aa_reference().map(|c| c.name.as_str()),
            Some("base@bp512")
        );
        assert_eq!(p.baseline_for(&p.contenders[2]).name, "base@bp512");
    }

    #[test]
    fn a_sweep_names_reference_contenders_at_every_size_and_names_split_back() {
        let c = |n: &str| Contender {
            name: n.into(),
            binary: format!("/{n}").into(),
            buffer_pool_mb: None,
        };
        let mut p = BenchPlan {
            reference_only: vec!["debian".into()],
            ..plan_of(vec![c("base"), c("pgo"), c("debian")])
        };
        // Without a sweep the reference is itself.
        assert_eq!(p.at_pool_of("debian", "pgo").unwrap().name, "debian");
        p.sweep_buffer_pool(&[512, 2048]);
        assert_eq!(p.reference_only, vec!["debian@bp512", "debian@bp2048"]);
        // The reference beside a contender is the one at that contender's pool.
        assert_eq!(
            p.at_pool_of("debian", "pgo@bp2048").unwrap().name,
            "debian@bp2048"
        );
        assert!(p.at_pool_of("nobody", "pgo@bp2048").is_none());
        assert_eq!(split_pool("pgo+lto@bp2048"), ("pgo+lto", Some(2048)));
        assert_eq!(split_pool("pgo+lto"), ("pgo+lto", None));
        // Not a suffix at_pool writes: kept whole.
        assert_eq!(split_pool("pgo@bp02048"), ("pgo@bp02048", None));
        assert_eq!(split_pool("pgo@bpx"), ("pgo@bpx", None));
        assert_eq!(split_pool("@bp5"), ("@bp5", None));
        assert!(sweep_refusal(["base", "pgo"], &[512, 2048]).is_none());
        let twice = sweep_refusal(["base"], &[512, 512]).unwrap();
        assert!(twice.contains("512 twice"), "{twice}");
        let named = sweep_refusal(["base", "x@bp64"], &[512]).unwrap();
        assert!(named.contains("'x@bp64'"), "{named}");
    }
}
