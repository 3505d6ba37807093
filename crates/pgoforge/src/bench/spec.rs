//! What a benchmark measures — workloads, client threads, rounds, durations, dataset — defined
//! once and shared by `pgoforge bench`, `pgoforge run` and the cachegrind measurement.

use oltp::settings::TestName;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchSpec {
    pub workloads: Vec<TestName>,
    /// Client connections, one cell per count.
    pub threads: Vec<u32>,
    /// Every contender runs once per round, in a new order each round.
    pub rounds: u32,
    /// Seconds per measured run.
    pub seconds: u64,
    /// Seconds of warm-up before each measured run.
    pub warmup_seconds: u64,
    pub tables: u32,
    pub table_size: u64,
}

impl BenchSpec {
    /// The full look: point_select, read_only and read_write, 4 threads, 5 rounds of 30 s.
    pub fn standard() -> BenchSpec {
        BenchSpec {
            workloads: vec![
                TestName::OltpPointSelect,
                TestName::OltpReadOnly,
                TestName::OltpReadWrite,
            ],
            threads: vec![4],
            rounds: 5,
            seconds: 30,
            warmup_seconds: 5,
            tables: 4,
            table_size: 100_000,
        }
    }

    /// A first look (`--quick`): two workloads, 4 rounds of 10 s on a smaller dataset.
    pub fn quick() -> BenchSpec {
        BenchSpec {
            workloads: vec![TestName::OltpPointSelect, TestName::OltpReadOnly],
            rounds: 4,
            seconds: 10,
            warmup_seconds: 3,
            tables: 2,
            table_size: 20_000,
            ..BenchSpec::standard()
        }
    }

    /// Why the spec cannot run, if it cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.rounds == 0 || self.seconds == 0 || self.threads.contains(&0) {
            return Err("--rounds, --time and --threads must be at least 1".into());
        }
        if self.workloads.is_empty() || self.threads.is_empty() {
            return Err("a benchmark needs at least one workload and one thread count".into());
        }
        if self.tables == 0 || self.table_size == 0 {
            return Err("--tables and --table-size must be at least 1".into());
        }
        Ok(())
    }
}
