//! The server's configuration, typed, rendered to one my.cnf that every variant shares.
//!
//! Defaults keep an OLTP benchmark CPU-bound (a buffer pool larger than the dataset, relaxed flushing,
//! no binary log, no performance schema), as published PGO benchmark setups
//! (pgobuild_percona_server, for one) configure theirs.

use std::fmt::Write;
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::flavor::{Family, Flavor};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ServerConfig {
    pub buffer_pool_mb: u64,
    /// The redo log's size, at least: the server gets half its buffer pool when that is more
    /// (see [`ServerConfig::redo_mb`]).
    pub redo_log_mb: u64,
    /// innodb_flush_log_at_trx_commit: 2 writes the log at commit and flushes it once a second.
    pub flush_log_at_trx_commit: u8,
    pub max_connections: u32,
    pub max_prepared_stmt_count: u32,
    pub performance_schema: bool,
    pub binlog: bool,
    /// The engine the benchmark's tables use: InnoDB, or MyRocks (MariaDB's RocksDB plugin,
    /// loaded from the plugin directory found beside the binary). Absent for InnoDB, so every
    /// configuration written before keeps its hash.
    #[serde(skip_serializing_if = "Engine::is_innodb")]
    pub engine: Engine,
    /// Raw `name=value` lines appended to [mysqld], for what the typed settings do not cover.
    pub extra: Vec<String>,
}

/// The storage engine of a benchmark's tables.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    #[default]
    InnoDb,
    RocksDb,
}

impl Engine {
    pub fn is_innodb(&self) -> bool {
        *self == Engine::InnoDb
    }

    /// The name `ENGINE =` and sysbench's `--mysql-storage-engine` take.
    pub fn name(&self) -> &'static str {
        match self {
            Engine::InnoDb => "innodb",
            Engine::RocksDb => "rocksdb",
        }
    }

    /// What holds the engine's data in memory: what `--buffer-pool-mb` sizes for it.
    pub fn cache(&self) -> &'static str {
        match self {
            Engine::InnoDb => "buffer pool",
            Engine::RocksDb => "block cache",
        }
    }

    /// What a prewarm's read count counts (`Prewarmed::disk_reads`): InnoDB's pages read from
    /// disk; MyRocks' block-cache misses, which the page cache may serve.
    pub fn cache_reads(&self) -> &'static str {
        match self {
            Engine::InnoDb => "pages read from disk",
            Engine::RocksDb => "block-cache misses",
        }
    }

    /// The plugin library that provides the engine, for an engine that is not built in.
    pub fn plugin(&self) -> Option<&'static str> {
        match self {
            Engine::InnoDb => None,
            Engine::RocksDb => Some("ha_rocksdb.so"),
        }
    }
}

impl std::str::FromStr for Engine {
    type Err = String;
    fn from_str(s: &str) -> Result<Engine, String> {
        match s.to_ascii_lowercase().as_str() {
            "innodb" => Ok(Engine::InnoDb),
            "rocksdb" | "myrocks" => Ok(Engine::RocksDb),
            _ => Err(format!(
                "engine {s:?}: pgoforge benchmarks innodb or rocksdb (MyRocks)"
            )),
        }
    }
}

impl std::fmt::Display for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// InnoDB's pool when the tables are MyRocks': the system tables and little else live in it.
const INNODB_POOL_BESIDE_ROCKSDB_MB: u64 = 128;

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            buffer_pool_mb: 1024,
            redo_log_mb: 512,
            flush_log_at_trx_commit: 2,
            max_connections: 1000,
            max_prepared_stmt_count: 1_000_000,
            performance_schema: false,
            binlog: false,
            engine: Engine::InnoDb,
            extra: Vec::new(),
        }
    }
}

/// Per-instance values that differ between runs of the same configuration.
pub struct Instance<'a> {
    pub datadir: &'a Path,
    pub socket: &'a Path,
    pub port: u16,
    pub pid_file: &'a Path,
    pub error_log: &'a Path,
    pub tmpdir: &'a Path,
    pub lc_messages_dir: Option<&'a Path>,
    pub charsets_dir: Option<&'a Path>,
    /// `user=` line, needed when running as root.
    pub os_user: Option<&'a str>,
    /// An address listened on besides 127.0.0.1 (a remote benchmark client's way in).
    pub also_listen: Option<std::net::IpAddr>,
    /// The directory holding the engine's plugin, where the engine needs one.
    pub plugin_dir: Option<&'a Path>,
}

impl ServerConfig {
    /// The redo log the server gets: `redo_log_mb`, or half the buffer pool when that is more.
    /// With a pool of 4.8 GB over seed 004's 7.7 GB, oltp_read_write at 16 threads stalled
    /// MariaDB 10.11.19 at 0 transactions/s within a minute with a 256 or 512 MiB log ("Long wait
    /// for double-write buffer flush", for minutes) and ran 300 s steadily with 2 GiB
    /// (docs/bench/dataset-reset.md). The default pool (1 GiB) keeps its 512 MiB.
    pub fn redo_mb(&self) -> u64 {
        match self.engine {
            Engine::InnoDb => self.redo_log_mb.max(self.buffer_pool_mb / 2),
            // InnoDB holds only the system tables then; MyRocks keeps its own log.
            Engine::RocksDb => self.redo_log_mb,
        }
    }

    pub fn render(&self, flavor: &Flavor, i: &Instance) -> String {
        let mut c = String::from("# generated by pgoforge; every variant of a comparison runs with this file\n[mysqld]\n");
        let mut line = |k: &str, v: &dyn std::fmt::Display| {
            let _ = writeln!(c, "{k} = {v}");
        };
        line("datadir", &i.datadir.display());
        line("socket", &i.socket.display());
        line("port", &i.port);
        // MySQL 8.0.13+ and MariaDB 10.11+ take a list: loopback stays for local tools, and the
        // one extra address is the interface a remote client reaches, never every interface.
        match i.also_listen {
            Some(ip) => line("bind-address", &format!("127.0.0.1,{ip}")),
            None => line("bind-address", &"127.0.0.1"),
        }
        line("pid-file", &i.pid_file.display());
        line("log-error", &i.error_log.display());
        line("tmpdir", &i.tmpdir.display());
        if let Some(d) = i.lc_messages_dir {
            line("lc-messages-dir", &d.display());
        }
        if let Some(d) = i.charsets_dir {
            line("character-sets-dir", &d.display());
        }
        if let Some(u) = i.os_user {
            line("user", &u);
        }
        line("skip-name-resolve", &"ON");
        // The memory the benchmark gives its data goes to the engine that holds the tables.
        let innodb_pool = match self.engine {
            Engine::InnoDb => self.buffer_pool_mb,
            Engine::RocksDb => INNODB_POOL_BESIDE_ROCKSDB_MB,
        };
        line("innodb_buffer_pool_size", &format!("{innodb_pool}M"));
        if flavor.family.is_mysql_like() && flavor.at_least(8, 0, 30) {
            line("innodb_redo_log_capacity", &format!("{}M", self.redo_mb()));
        } else {
            line("innodb_log_file_size", &format!("{}M", self.redo_mb()));
        }
        line(
            "innodb_flush_log_at_trx_commit",
            &self.flush_log_at_trx_commit,
        );
        line("max_connections", &self.max_connections);
        line("max_prepared_stmt_count", &self.max_prepared_stmt_count);
        line(
            "performance_schema",
            &if self.performance_schema { "ON" } else { "OFF" },
        );
        if !self.binlog {
            // MySQL 8 logs binary by default; MariaDB does not, but saying so is harmless.
            line("skip-log-bin", &"ON");
        }
        if flavor.family == Family::MariaDb {
            // Keep the server from writing a core-dump-sized buffer pool dump between runs.
            line("innodb_buffer_pool_dump_at_shutdown", &"OFF");
            line("innodb_buffer_pool_load_at_startup", &"OFF");
        }
        if self.engine == Engine::RocksDb {
            if let Some(d) = i.plugin_dir {
                line("plugin_dir", &d.display());
            }
            line("plugin_load_add", &"ha_rocksdb");
            // The block cache plays the buffer pool's part; the write-ahead log is flushed as
            // InnoDB's redo log is (2: written at commit, synced once a second).
            line(
                "rocksdb_block_cache_size",
                &format!("{}M", self.buffer_pool_mb),
            );
            line(
                "rocksdb_flush_log_at_trx_commit",
                &self.flush_log_at_trx_commit,
            );
        }
        for e in &self.extra {
            let _ = writeln!(c, "{e}");
        }
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flavor(text: &str) -> Flavor {
        Flavor::parse(text).unwrap()
    }

    /// An instance with every path `p`, running as root.
    fn instance<'a>(p: &'a Path, plugin_dir: Option<&'a Path>) -> Instance<'a> {
        Instance {
            datadir: p,
            socket: p,
            port: 3307,
            pid_file: p,
            error_log: p,
            tmpdir: p,
            lc_messages_dir: None,
            charsets_dir: None,
            os_user: Some("root"),
            also_listen: None,
            plugin_dir,
        }
    }

    #[test]
    fn renders_flavor_specific_redo_settings() {
        let i = instance(Path::new("/x"), None);
        let cfg = ServerConfig::default();
        let maria = cfg.render(&flavor("mariadbd  Ver 10.11.18-MariaDB for x"), &i);
        assert!(maria.contains("innodb_log_file_size = 512M"));
        assert!(maria.contains("bind-address = 127.0.0.1"));
        assert!(maria.contains("user = root"));
        let mysql = cfg.render(
            &flavor("mysqld  Ver 8.4.3 for Linux (MySQL Community Server - GPL)"),
            &i,
        );
        assert!(mysql.contains("innodb_redo_log_capacity = 512M"));
        // A large pool gets a redo log of half its size (a smaller one stalled MariaDB).
        let big = ServerConfig {
            buffer_pool_mb: 4915,
            ..ServerConfig::default()
        };
        let maria_big = big.render(&flavor("mariadbd  Ver 10.11.18-MariaDB for x"), &i);
        assert!(
            maria_big.contains("innodb_log_file_size = 2457M"),
            "{maria_big}"
        );
        assert!(maria_big.contains("innodb_buffer_pool_size = 4915M"));
        assert!(mysql.contains("skip-log-bin = ON"));
        let old = cfg.render(
            &flavor("mysqld  Ver 8.0.20 for Linux (MySQL Community Server - GPL)"),
            &i,
        );
        assert!(old.contains("innodb_log_file_size"));
        let remote = Instance {
            also_listen: Some("10.1.2.3".parse().unwrap()),
            ..i
        };
        let r = cfg.render(&flavor("mariadbd  Ver 10.11.18-MariaDB for x"), &remote);
        assert!(r.contains("bind-address = 127.0.0.1,10.1.2.3\n"), "{r}");
        assert!(!r.contains("0.0.0.0"));
    }

    #[test]
    fn myrocks_gets_the_memory_and_its_plugin_and_innodb_configs_keep_their_json() {
        let i = instance(Path::new("/x"), Some(Path::new("/build/storage/rocksdb")));
        let rocks = ServerConfig {
            engine: Engine::RocksDb,
            buffer_pool_mb: 4096,
            ..ServerConfig::default()
        };
        let c = rocks.render(&flavor("mariadbd  Ver 10.11.18-MariaDB for x"), &i);
        assert!(c.contains("plugin_dir = /build/storage/rocksdb\n"), "{c}");
        assert!(c.contains("plugin_load_add = ha_rocksdb\n"), "{c}");
        assert!(c.contains("rocksdb_block_cache_size = 4096M\n"), "{c}");
        assert!(c.contains("innodb_buffer_pool_size = 128M\n"), "{c}");
        let inno =
            ServerConfig::default().render(&flavor("mariadbd  Ver 10.11.18-MariaDB for x"), &i);
        assert!(
            !inno.contains("plugin") && !inno.contains("rocksdb"),
            "{inno}"
        );
        let json = serde_json::to_string(&ServerConfig::default()).unwrap();
        assert!(!json.contains("engine"), "{json}");
        let back: ServerConfig =
            serde_json::from_str(&serde_json::to_string(&rocks).unwrap()).unwrap();
        assert_eq!(back, rocks);
        assert_eq!("MyRocks".parse::<Engine>(), Ok(Engine::RocksDb));
        assert!("aria"
            .parse::<Engine>()
            .unwrap_err()
            .contains("innodb or rocksdb"));
    }

    #[test]
    fn unknown_fields_are_rejected_by_name() {
        let e = serde_json::from_str::<ServerConfig>(r#"{"buffer_pool_gb": 4}"#).unwrap_err();
        assert!(e.to_string().contains("buffer_pool_gb"), "{e}");
    }
}
