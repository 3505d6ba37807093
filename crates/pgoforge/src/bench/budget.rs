//! Whether a benchmark's dataset and servers fit this machine, checked before any work (issue
//! 51): a dataset the work dir's disk cannot hold in every copy the benchmark makes, or a buffer
//! pool larger than the machine's memory, is refused with the figures and the remedy (exit 2)
//! instead of failing after the builds in a load that fills the disk or a server the kernel
//! kills for memory.

use std::path::Path;

use mysqld::server::config::ServerConfig;
use oltp::settings::TestName;

use super::design::SERVER_OVERHEAD_MB;
use super::spec::BenchSpec;

/// On-disk bytes per sysbench row with its secondary index, as InnoDB holds them after a
/// prepare (about 240 MiB per million rows: 24 MiB for each 100 000-row table here).
pub const BYTES_PER_ROW: f64 = 250.0;

/// One sysbench-tpcc warehouse with its indexes, measured after prepare.
pub const MB_PER_WAREHOUSE: f64 = 120.0;

/// What every datadir holds besides the tables: the system tablespace, undo logs and the
/// system tables (a fresh MariaDB 10.11 datadir is ~110 MiB), rounded up.
const DATADIR_BASE_MB: f64 = 128.0;

/// The dataset's tables on disk in MiB: the OLTP tables and, with tpcc, its warehouses.
pub fn data_mb(spec: &BenchSpec) -> f64 {
    let mut mb = spec.tables as f64 * spec.table_size as f64 * BYTES_PER_ROW / 1_048_576.0;
    if spec.workloads.contains(&TestName::Tpcc) {
        mb += MB_PER_WAREHOUSE * spec.tpcc.warehouses() as f64;
    }
    mb
}

/// The machine's side of the check.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Machine {
    /// Free space of the filesystem the work dir is (or will be) on, MiB.
    pub free_disk_mb: u64,
    /// `MemTotal`: a buffer pool above it cannot be filled whatever else is stopped.
    pub mem_total_mb: u64,
}

impl Machine {
    /// The machine now, for a work dir that may not exist yet (its nearest existing parent
    /// holds the filesystem). None where either figure cannot be read: nothing is refused then.
    pub fn probe(work: &Path) -> Option<Machine> {
        let on = work.ancestors().find(|p| p.exists())?;
        let free = crate::infra::fs::free_bytes(on).ok()?;
        Some(Machine {
            free_disk_mb: free >> 20,
            mem_total_mb: crate::infra::fs::meminfo_kb("MemTotal")? / 1024,
        })
    }
}

/// Disk a benchmark of `servers` servers needs at once, MiB: the dataset template and one
/// datadir copy per server (the sliced design keeps them all up; a plain one still keeps each
/// round's copies until the round ends), each with its redo log and system tablespace.
pub fn disk_mb(spec: &BenchSpec, config: &ServerConfig, servers: usize) -> f64 {
    let per_datadir = data_mb(spec) + config.redo_mb() as f64 + DATADIR_BASE_MB;
    per_datadir * (1 + servers) as f64
}

/// The flag that set a benchmark's largest buffer pool, as a refusal names it.
pub const POOL_FLAG: &str = "--buffer-pool-mb";
/// The same, in a buffer-pool sweep.
pub const SWEEP_FLAG: &str = "--sweep-buffer-pool-mb";

/// The flag that set a server's buffer pool: the sweep's where a sweep did.
pub fn pool_flag(swept: bool) -> &'static str {
    if swept {
        SWEEP_FLAG
    } else {
        POOL_FLAG
    }
}

/// The refusal, if the benchmark cannot fit `m`; the message names the figures and the fix, and
/// `pool_flag` ([`POOL_FLAG`] or [`SWEEP_FLAG`]) as the flag that set `config`'s buffer pool.
pub fn check(
    spec: &BenchSpec,
    config: &ServerConfig,
    servers: usize,
    m: &Machine,
    pool_flag: &str,
) -> Result<(), String> {
    let one_server = config.buffer_pool_mb + SERVER_OVERHEAD_MB;
    if one_server > m.mem_total_mb {
        return Err(format!(
            "{pool_flag} {}: one server needs about {one_server} MiB (its buffer pool and \
             ~{SERVER_OVERHEAD_MB} MiB of its own), more than this machine's {} MiB of memory; \
             give {pool_flag} {} or less",
            config.buffer_pool_mb,
            m.mem_total_mb,
            m.mem_total_mb.saturating_sub(SERVER_OVERHEAD_MB)
        ));
    }
    let need = disk_mb(spec, config, servers);
    if need > m.free_disk_mb as f64 {
        return Err(format!(
            "the dataset ({} tables x {} rows{}, ~{:.1} GiB on disk) does not fit: the \
             benchmark keeps a template and a copy for each of its {servers} servers, about \
             {:.1} GiB with their logs, and the work dir's disk has {:.1} GiB free; choose a \
             smaller --tables/--table-size{}, fewer contenders, or a --work-dir on a larger disk",
            spec.tables,
            spec.table_size,
            if spec.workloads.contains(&TestName::Tpcc) {
                format!(" and tpcc's {} warehouses", spec.tpcc.warehouses())
            } else {
                String::new()
            },
            data_mb(spec) / 1024.0,
            need / 1024.0,
            m.free_disk_mb as f64 / 1024.0,
            if spec.workloads.contains(&TestName::Tpcc) {
                " or --tpcc-scale/--tpcc-tables"
            } else {
                ""
            }
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(tables: u32, rows: u64) -> BenchSpec {
        BenchSpec {
            tables,
            table_size: rows,
            workloads: vec![TestName::OltpPointSelect],
            ..BenchSpec::standard()
        }
    }

    const BIG: Machine = Machine {
        free_disk_mb: 70 * 1024,
        mem_total_mb: 23 * 1024,
    };

    #[test]
    fn seed_datasets_fit_this_kind_of_machine_and_larger_ones_are_refused() {
        let c = ServerConfig::default();
        // Seed 003's 10 x 1 M and seed 004's 16 x 2 M (7.7 GB) with three servers.
        check(&spec(10, 1_000_000), &c, 3, &BIG, POOL_FLAG).unwrap();
        check(&spec(16, 2_000_000), &c, 3, &BIG, POOL_FLAG).unwrap();
        let e = check(&spec(64, 10_000_000), &c, 3, &BIG, POOL_FLAG).unwrap_err();
        assert!(
            e.contains("64 tables x 10000000 rows")
                && e.contains("149.0 GiB on disk")
                && e.contains("70.0 GiB free")
                && e.contains("--work-dir"),
            "{e}"
        );
    }

    #[test]
    fn a_buffer_pool_larger_than_memory_is_refused_with_the_largest_that_fits() {
        let c = ServerConfig {
            buffer_pool_mb: 32 * 1024,
            ..ServerConfig::default()
        };
        let e = check(&spec(4, 100_000), &c, 3, &BIG, POOL_FLAG).unwrap_err();
        assert!(
            e.contains("--buffer-pool-mb 32768")
                && e.contains("23552 MiB of memory")
                && e.contains("--buffer-pool-mb 23040 or less"),
            "{e}"
        );
        // In a sweep the largest size is the sweep's.
        let e = check(&spec(4, 100_000), &c, 3, &BIG, SWEEP_FLAG).unwrap_err();
        assert!(
            e.starts_with("--sweep-buffer-pool-mb 32768: one server needs")
                && e.contains("give --sweep-buffer-pool-mb 23040 or less"),
            "{e}"
        );
    }

    #[test]
    fn the_disk_counts_every_copy_and_tpcc() {
        let c = ServerConfig::default();
        let s = spec(4, 100_000);
        assert!((data_mb(&s) - 95.4).abs() < 0.1, "{}", data_mb(&s));
        let one = disk_mb(&s, &c, 1);
        assert!((disk_mb(&s, &c, 3) - 2.0 * one).abs() < 1e-6);
        let mut t = s.clone();
        t.workloads.push(TestName::Tpcc);
        assert!(data_mb(&t) > data_mb(&s) + 100.0);
        // Seed 004's tpcc: 10 warehouses in each of 10 copies, 100 warehouses' worth.
        let mut big = t.clone();
        big.tpcc = crate::server::template::TpccSize {
            scale: 10,
            tables: 10,
        };
        let added = data_mb(&big) - data_mb(&t);
        assert!((added - 99.0 * MB_PER_WAREHOUSE).abs() < 1e-6, "{added}");
        let small_disk = Machine {
            free_disk_mb: 20 * 1024,
            ..BIG
        };
        let e = check(&big, &c, 2, &small_disk, POOL_FLAG).unwrap_err();
        assert!(
            e.contains("tpcc's 100 warehouses") && e.contains("--tpcc-scale/--tpcc-tables"),
            "{e}"
        );
    }

    #[test]
    fn the_machine_is_read_for_a_work_dir_not_made_yet() {
        let t = tempfile::tempdir().unwrap();
        let m = Machine::probe(&t.path().join("not/yet")).unwrap();
        assert!(m.free_disk_mb > 0 && m.mem_total_mb > 0, "{m:?}");
        let kb = |m: &str| crate::infra::fs::parse_meminfo_kb(m, "MemTotal");
        assert_eq!(
            kb("MemTotal:       24576000 kB\n").map(|k| k / 1024),
            Some(24000)
        );
        assert_eq!(kb("MemTotalX: 1 kB\nMemAvailable: 2 kB\n"), None);
        assert_eq!(kb("garbage"), None);
    }
}
