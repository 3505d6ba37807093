//! Whether a benchmark can take the sliced design: every contender's server is up at once, so
//! every buffer pool must fit in memory together. Where they do not, the benchmark runs plain
//! (one server at a time) and says so — a server killed for memory mid-run would cost the run.

use super::plan::BenchPlan;

/// What one server needs beyond its buffer pool: threads, the performance schema's tables,
/// the log buffer and the dictionary. MySQL 9.7 with the recipes' settings holds about 400–450 MiB
/// resident before its pool fills (MariaDB 10.11 less); rounded up.
pub const SERVER_OVERHEAD_MB: u64 = 512;

/// The share of the memory available now that the servers may take: the client, the page cache
/// of the datadir copies and the rest of the machine keep the remainder.
const SHARE_PERCENT: u64 = 90;

/// Memory the plan's servers need at once: each contender's buffer pool (its own, or the
/// plan's) as if filled, plus [`SERVER_OVERHEAD_MB`].
pub fn servers_mb(plan: &BenchPlan) -> u64 {
    plan.contenders
        .iter()
        .map(|c| plan.buffer_pool_mb_of(c) + SERVER_OVERHEAD_MB)
        .sum()
}

/// `MemAvailable` of /proc/meminfo in MiB (`None` where the kernel does not say).
pub fn available_mb() -> Option<u64> {
    crate::infra::fs::meminfo_kb("MemAvailable").map(|kb| kb / 1024)
}

/// The plan as it will run, given the plan of the benchmark it resumes (`earlier`, if any): a
/// benchmark begun plain — it fell back for memory, or was begun before the sliced design became
/// the default — stays plain, whatever memory is free now, so its plan still matches; otherwise
/// [`fitted`].
pub fn as_run(
    plan: &BenchPlan,
    earlier: Option<&BenchPlan>,
    available: Option<u64>,
) -> (BenchPlan, Option<String>) {
    if let Some(e) = earlier {
        let mut plain = plan.clone();
        plain.spec.slice_seconds = None;
        if *e == plain {
            return (plain, None);
        }
    }
    fitted(plan, available)
}

/// The plan as it will run: sliced if its servers fit in `available` MiB (unknown: assumed to
/// fit), otherwise plain, with the reason for the log. A plain plan is returned unchanged.
pub fn fitted(plan: &BenchPlan, available: Option<u64>) -> (BenchPlan, Option<String>) {
    let (Some(slice), Some(avail)) = (plan.spec.slice_seconds, available) else {
        return (plan.clone(), None);
    };
    let need = servers_mb(plan);
    if need * 100 <= avail * SHARE_PERCENT {
        return (plan.clone(), None);
    }
    let n = plan.contenders.len() as u64;
    // The largest pool at which all of them would fit, for the message's remedy.
    let pool_fits = (avail * SHARE_PERCENT / 100 / n).saturating_sub(SERVER_OVERHEAD_MB);
    let mut plain = plan.clone();
    plain.spec.slice_seconds = None;
    let why = format!(
        "the sliced design (--slice {slice}) keeps all {n} servers up at once: about {need} MiB \
         with their buffer pools filled, more than {SHARE_PERCENT}% of the {avail} MiB available; \
         benchmarking with the plain design instead (one server at a time). --buffer-pool-mb \
         {pool_fits} or less would fit them; --slice 0 chooses the plain design without this note"
    );
    (plain, Some(why))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::order::OrderScheme;
    use crate::bench::plan::Contender;
    use crate::bench::spec::BenchSpec;
    use crate::server::ServerConfig;

    fn plan(n: usize, pool: u64) -> BenchPlan {
        BenchPlan {
            contenders: (0..n)
                .map(|i| Contender {
                    name: format!("c{i}"),
                    binary: "/bin/true".into(),
                    buffer_pool_mb: None,
                })
                .collect(),
            spec: BenchSpec::standard(),
            config: ServerConfig {
                buffer_pool_mb: pool,
                ..ServerConfig::default()
            },
            pin: false,
            seed: 1,
            label: String::new(),
            order_scheme: OrderScheme::Williams,
            reference_only: Vec::new(),
            trained_on: Vec::new(),
            training: Vec::new(),
            aa_control: None,
        }
    }

    #[test]
    fn servers_that_fit_keep_the_sliced_design() {
        let p = plan(5, 2048);
        assert_eq!(servers_mb(&p), 5 * (2048 + 512));
        let (q, why) = fitted(&p, Some(22_000));
        assert_eq!(q.spec.slice_seconds, Some(2));
        assert!(why.is_none());
        // Unknown memory: assumed to fit.
        assert_eq!(fitted(&p, None).0.spec.slice_seconds, Some(2));
    }

    #[test]
    fn servers_that_do_not_fit_run_plain_and_the_note_names_a_pool_that_would() {
        let p = plan(5, 2048);
        let (q, why) = fitted(&p, Some(8_000));
        assert_eq!(q.spec.slice_seconds, None);
        let why = why.expect("a reason");
        assert!(
            why.contains("12800 MiB") && why.contains("8000 MiB"),
            "{why}"
        );
        assert!(why.contains("--buffer-pool-mb 928 "), "{why}");
        // The pool it names does fit.
        assert!(fitted(&plan(5, 928), Some(8_000)).1.is_none());
        assert!(fitted(&plan(5, 929), Some(8_000)).1.is_some());
    }

    #[test]
    fn a_contenders_own_pool_counts_and_a_plain_plan_is_left_alone() {
        let mut p = plan(2, 1024);
        p.contenders[1].buffer_pool_mb = Some(4096);
        assert_eq!(servers_mb(&p), 1024 + 4096 + 2 * 512);
        p.spec.slice_seconds = None;
        let (q, why) = fitted(&p, Some(100));
        assert_eq!(q, p);
        assert!(why.is_none());
    }

    #[test]
    fn a_resumed_benchmark_that_fell_back_stays_plain_whatever_memory_is_free_now() {
        let p = plan(5, 2048);
        let (earlier, why) = fitted(&p, Some(8_000));
        assert!(why.is_some());
        // Memory freed since: the resumed benchmark keeps the design it began with.
        let (q, why) = as_run(&p, Some(&earlier), Some(64_000));
        assert_eq!(q, earlier);
        assert!(why.is_none());
        // A sliced one resumed stays sliced; a first run fits as usual.
        assert_eq!(as_run(&p, Some(&p), Some(64_000)).0, p);
        assert_eq!(as_run(&p, None, Some(8_000)).0, earlier);
    }

    #[test]
    fn mem_available_is_read_in_mib() {
        let m = "MemTotal:       24000000 kB\nMemFree:  100 kB\nMemAvailable:   23068672 kB\n";
        let mb =
            |m: &str| crate::infra::fs::parse_meminfo_kb(m, "MemAvailable").map(|kb| kb / 1024);
        assert_eq!(mb(m), Some(22_528));
        assert_eq!(mb("MemTotal: 1 kB\n"), None);
    }
}
