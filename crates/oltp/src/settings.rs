//! The typed settings of a workload: sysbench's options, with sysbench 1.0.20's defaults.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::proto::{ConnectOptions, Endpoint};
use crate::rng::RandSettings;
pub use crate::tpcc::options::{IsolationLevel, TpccOptions};

/// The socket libmariadb (Debian's sysbench) uses when the host is `localhost` and no socket is set.
pub const DEFAULT_SOCKET: &str = "/run/mysqld/mysqld.sock";

/// The eleven sysbench OLTP tests, and Percona-Lab's sysbench-tpcc.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestName {
    OltpPointSelect,
    OltpReadOnly,
    OltpWriteOnly,
    OltpReadWrite,
    OltpUpdateIndex,
    OltpUpdateNonIndex,
    OltpInsert,
    OltpDelete,
    SelectRandomPoints,
    SelectRandomRanges,
    BulkInsert,
    /// sysbench-tpcc's TPC-C-like workload (`tpcc.lua`).
    Tpcc,
    /// A workload file replayed (`--replay-file`): a general or slow query log, or SQL.
    Replay,
}

impl TestName {
    pub const ALL: [TestName; 13] = [
        TestName::OltpPointSelect,
        TestName::OltpReadOnly,
        TestName::OltpWriteOnly,
        TestName::OltpReadWrite,
        TestName::OltpUpdateIndex,
        TestName::OltpUpdateNonIndex,
        TestName::OltpInsert,
        TestName::OltpDelete,
        TestName::SelectRandomPoints,
        TestName::SelectRandomRanges,
        TestName::BulkInsert,
        TestName::Tpcc,
        TestName::Replay,
    ];

    pub fn name(self) -> &'static str {
        match self {
            TestName::OltpPointSelect => "oltp_point_select",
            TestName::OltpReadOnly => "oltp_read_only",
            TestName::OltpWriteOnly => "oltp_write_only",
            TestName::OltpReadWrite => "oltp_read_write",
            TestName::OltpUpdateIndex => "oltp_update_index",
            TestName::OltpUpdateNonIndex => "oltp_update_non_index",
            TestName::OltpInsert => "oltp_insert",
            TestName::OltpDelete => "oltp_delete",
            TestName::SelectRandomPoints => "select_random_points",
            TestName::SelectRandomRanges => "select_random_ranges",
            TestName::BulkInsert => "bulk_insert",
            TestName::Tpcc => "tpcc",
            TestName::Replay => "replay",
        }
    }
}

impl fmt::Display for TestName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TestName {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim_end_matches(".lua");
        // The short names the help texts and reports use (read_only for oltp_read_only) are
        // accepted too: no other test has such a name.
        TestName::ALL
            .into_iter()
            .find(|t| t.name() == s || t.name().strip_prefix("oltp_") == Some(s))
            .ok_or_else(|| {
                let names: Vec<_> = TestName::ALL.iter().map(|t| t.name()).collect();
                format!("unknown test '{s}'; the tests are: {}", names.join(", "))
            })
    }
}

/// `--client-io`: how a client thread waits for the replies of its connections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientIo {
    /// One `send` and one `recv` per statement: a blocking read for a lone connection, epoll
    /// over several. The default: on the hosts measured (docs/bench/driver.md) io_uring saved no
    /// client CPU at the thread counts a benchmark runs and cost a quarter more at one connection.
    #[default]
    Epoll,
    /// io_uring: each statement's write and the read of its reply go in one submission, and one
    /// system call serves every connection with a reply ready (fails where the kernel refuses).
    Uring,
}

/// `--db-ps-mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PsMode {
    /// Server-side prepared statements, falling back to text where the server refuses (1295).
    Auto,
    /// Every statement as text, values rendered client-side.
    Disable,
}

/// `--mysql-ignore-errors`: error numbers that restart the event instead of ending the run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IgnoreErrors {
    pub all: bool,
    pub codes: Vec<u16>,
}

impl Default for IgnoreErrors {
    fn default() -> Self {
        IgnoreErrors {
            all: false,
            codes: vec![1213, 1020, 1205],
        }
    }
}

impl IgnoreErrors {
    /// What a long write workload must survive: sysbench's defaults (deadlock, record changed,
    /// lock wait timeout) and a duplicate key (two connections drawing the same id to insert).
    pub fn survivable() -> IgnoreErrors {
        IgnoreErrors {
            all: false,
            codes: vec![1213, 1020, 1205, 1062],
        }
    }

    pub fn contains(&self, code: u16) -> bool {
        self.all || self.codes.contains(&code)
    }
}

impl FromStr for IgnoreErrors {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("all") {
            return Ok(IgnoreErrors {
                all: true,
                codes: vec![],
            });
        }
        let codes = s
            .split(',')
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .map(|c| {
                c.parse::<u16>()
                    .map_err(|_| format!("'{c}' is not an error number"))
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(IgnoreErrors { all: false, codes })
    }
}

/// How to reach the server: sysbench's `--mysql-*` options.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConnSettings {
    pub hosts: Vec<String>,
    pub ports: Vec<u16>,
    pub sockets: Vec<PathBuf>,
    pub user: String,
    /// Never written to results.
    #[serde(skip_serializing, default)]
    pub password: String,
    pub db: String,
    pub connect_timeout_ms: u64,
    /// Left out of serialized settings while it has its default, so that results and keys written
    /// before the limit existed read and hash the same.
    #[serde(
        default = "default_read_timeout_ms",
        skip_serializing_if = "is_default_read_timeout"
    )]
    pub read_timeout_ms: u64,
}

fn default_read_timeout_ms() -> u64 {
    crate::proto::conn::DEFAULT_READ_TIMEOUT.as_millis() as u64
}

fn is_default_read_timeout(ms: &u64) -> bool {
    *ms == default_read_timeout_ms()
}

impl Default for ConnSettings {
    fn default() -> Self {
        ConnSettings {
            hosts: vec!["localhost".into()],
            ports: vec![3306],
            sockets: vec![],
            user: "sbtest".into(),
            password: String::new(),
            db: "sbtest".into(),
            connect_timeout_ms: 4000,
            read_timeout_ms: default_read_timeout_ms(),
        }
    }
}

impl ConnSettings {
    /// The endpoints connections are spread over, as sysbench assigns them: sockets if given,
    /// otherwise every host × port with ports cycling fastest; `localhost` means the default socket.
    pub fn endpoints(&self) -> Vec<Endpoint> {
        if !self.sockets.is_empty() {
            return self.sockets.iter().cloned().map(Endpoint::Socket).collect();
        }
        let mut v = Vec::new();
        for h in &self.hosts {
            for &p in &self.ports {
                let e = if h == "localhost" {
                    Endpoint::Socket(DEFAULT_SOCKET.into())
                } else {
                    Endpoint::Tcp {
                        host: h.clone(),
                        port: p,
                    }
                };
                if !v.contains(&e) {
                    v.push(e);
                }
            }
        }
        v
    }

    pub fn connect_options(&self, endpoint: Endpoint) -> ConnectOptions {
        ConnectOptions {
            endpoint,
            user: self.user.clone(),
            password: self.password.clone(),
            database: Some(self.db.clone()),
            connect_timeout: Duration::from_millis(self.connect_timeout_ms),
            read_timeout: Duration::from_millis(self.read_timeout_ms),
        }
    }

    /// Options for connection number `i` (round-robin over the endpoints).
    pub fn for_connection(&self, i: usize) -> ConnectOptions {
        let eps = self.endpoints();
        self.connect_options(eps[i % eps.len()].clone())
    }
}

/// Per-transaction statement counts of the OLTP tests.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrxShape {
    pub point_selects: u32,
    pub simple_ranges: u32,
    pub sum_ranges: u32,
    pub order_ranges: u32,
    pub distinct_ranges: u32,
    pub index_updates: u32,
    pub non_index_updates: u32,
    pub delete_inserts: u32,
    pub range_size: u32,
    pub range_selects: bool,
    pub skip_trx: bool,
}

impl Default for TrxShape {
    fn default() -> Self {
        TrxShape {
            point_selects: 10,
            simple_ranges: 1,
            sum_ranges: 1,
            order_ranges: 1,
            distinct_ranges: 1,
            index_updates: 1,
            non_index_updates: 1,
            delete_inserts: 1,
            range_size: 100,
            range_selects: true,
            skip_trx: false,
        }
    }
}

/// Table layout (`prepare`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schema {
    pub tables: u32,
    pub table_size: u64,
    pub auto_inc: bool,
    pub secondary: bool,
    pub create_secondary: bool,
    pub storage_engine: String,
}

impl Default for Schema {
    fn default() -> Self {
        Schema {
            tables: 1,
            table_size: 10_000,
            auto_inc: true,
            secondary: false,
            create_secondary: true,
            storage_engine: "innodb".into(),
        }
    }
}

/// Everything a workload command needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Settings {
    pub test: TestName,
    pub schema: Schema,
    pub trx: TrxShape,
    /// Connections ("threads" in sysbench's words).
    pub threads: u32,
    /// OS threads driving the connections; 0 chooses from the CPU count.
    pub client_threads: u32,
    /// CPUs the client threads are pinned to (empty: no pinning).
    #[serde(default)]
    pub client_cpus: Vec<usize>,
    /// How the client threads wait for replies.
    #[serde(default)]
    pub client_io: ClientIo,
    pub time_s: u64,
    pub events: u64,
    pub rate: u64,
    pub report_interval_s: u64,
    pub percentile: u8,
    pub histogram: bool,
    pub warmup_time_s: u64,
    pub rand: RandSettings,
    pub ps_mode: PsMode,
    pub ignore_errors: IgnoreErrors,
    pub random_points: u32,
    pub number_of_ranges: u32,
    pub delta: u32,
    pub conn: ConnSettings,
    /// sysbench-tpcc's own options; left out while they have their defaults, so that settings
    /// (and the keys hashed from them) of the OLTP tests read and hash as before they existed.
    #[serde(default, skip_serializing_if = "TpccOptions::is_default")]
    pub tpcc: TpccOptions,
    /// The replayed workload file; left out while unset, as `tpcc`.
    #[serde(
        default,
        skip_serializing_if = "crate::replay::options::ReplayOptions::is_default"
    )]
    pub replay: crate::replay::options::ReplayOptions,
}

impl Settings {
    pub fn new(test: TestName) -> Settings {
        Settings {
            test,
            schema: Schema::default(),
            trx: TrxShape::default(),
            threads: 1,
            client_threads: 0,
            client_cpus: Vec::new(),
            client_io: ClientIo::Epoll,
            time_s: 10,
            events: 0,
            rate: 0,
            report_interval_s: 0,
            percentile: 95,
            histogram: false,
            warmup_time_s: 0,
            rand: RandSettings::default(),
            ps_mode: PsMode::Auto,
            ignore_errors: IgnoreErrors::default(),
            random_points: 10,
            number_of_ranges: 10,
            delta: 5,
            conn: ConnSettings::default(),
            tpcc: TpccOptions::default(),
            replay: crate::replay::options::ReplayOptions::default(),
        }
    }

    /// Problems a user must fix before anything runs.
    pub fn validate(&self, allow_endless: bool) -> Result<(), String> {
        if self.threads == 0 {
            return Err("--threads must be at least 1".into());
        }
        if self.schema.tables == 0 {
            return Err("--tables must be at least 1".into());
        }
        if self.percentile > 100 {
            return Err("--percentile must be between 0 and 100".into());
        }
        if self.histogram && self.percentile == 0 {
            return Err("--histogram=on needs --percentile above 0".into());
        }
        if self.time_s == 0 && self.events == 0 && !allow_endless {
            return Err(
                "--time=0 and --events=0 would run forever; set one of them, or pass \
                        --endless to run until interrupted"
                    .into(),
            );
        }
        if self.conn.hosts.is_empty() && self.conn.sockets.is_empty() {
            return Err("no --mysql-host or --mysql-socket given".into());
        }
        if self.conn.ports.is_empty() {
            return Err("no --mysql-port given".into());
        }
        if self.rand.spec_res >= 100.0 || self.rand.spec_res < 0.0 {
            return Err("--rand-spec-res must be in [0, 100)".into());
        }
        if !(0.0..1.0).contains(&self.rand.pareto_h) || self.rand.pareto_h == 0.0 {
            return Err("--rand-pareto-h must be in (0, 1)".into());
        }
        if self.test == TestName::Tpcc {
            self.tpcc.validate()?;
        }
        let needs_rows = !matches!(
            self.test,
            TestName::BulkInsert | TestName::OltpInsert | TestName::Tpcc | TestName::Replay
        );
        if needs_rows && self.schema.table_size == 0 {
            return Err(format!("{} needs --table-size of at least 1", self.test));
        }
        if self.schema.table_size > u32::MAX as u64 {
            return Err("--table-size must fit in 32 bits, as in sysbench".into());
        }
        if self.storage_engine_is_unsafe() {
            return Err("--mysql-storage-engine must be a plain engine name".into());
        }
        Ok(())
    }

    fn storage_engine_is_unsafe(&self) -> bool {
        !self
            .schema
            .storage_engine
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
    }

    /// OS threads to drive `threads` connections: one event loop per CPU quarter, at least one.
    pub fn effective_client_threads(&self) -> u32 {
        let n = if self.client_threads > 0 {
            self.client_threads
        } else {
            let cpus = if self.client_cpus.is_empty() {
                std::thread::available_parallelism().map_or(1, |n| n.get()) as u32
            } else {
                self.client_cpus.len() as u32
            };
            (cpus / 4).max(1)
        };
        n.min(self.threads).max(1)
    }

    /// Rows per table that `prepare` loads (oltp_insert with client ids starts empty, as sysbench).
    pub fn rows_to_load(&self) -> u64 {
        if self.test == TestName::OltpInsert && !self.schema.auto_inc {
            0
        } else {
            self.schema.table_size
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn localhost_means_the_socket_and_ip_means_tcp() {
        let mut c = ConnSettings::default();
        assert_eq!(c.endpoints(), vec![Endpoint::Socket(DEFAULT_SOCKET.into())]);
        c.hosts = vec!["127.0.0.1".into()];
        c.ports = vec![3306, 3307];
        assert_eq!(
            c.endpoints(),
            vec![
                Endpoint::Tcp {
                    host: "127.0.0.1".into(),
                    port: 3306
                },
                Endpoint::Tcp {
                    host: "127.0.0.1".into(),
                    port: 3307
                },
            ]
        );
        c.sockets = vec!["/tmp/s".into()];
        assert_eq!(c.endpoints(), vec![Endpoint::Socket("/tmp/s".into())]);
    }

    #[test]
    fn tests_parse_by_sysbench_name_script_name_and_short_name() {
        for s in ["oltp_read_only", "oltp_read_only.lua", "read_only"] {
            assert_eq!(s.parse::<TestName>(), Ok(TestName::OltpReadOnly), "{s}");
        }
        assert_eq!(
            "point_select".parse::<TestName>(),
            Ok(TestName::OltpPointSelect)
        );
        assert_eq!("tpcc".parse::<TestName>(), Ok(TestName::Tpcc));
        // Only the oltp_ prefix may be left out.
        let e = "random_points".parse::<TestName>().unwrap_err();
        assert!(
            e.contains("unknown test 'random_points'") && e.contains("select_random_points"),
            "{e}"
        );
    }

    #[test]
    fn ignore_errors_parse() {
        assert!("all".parse::<IgnoreErrors>().unwrap().contains(1062));
        let e: IgnoreErrors = "2013, 2006".parse().unwrap();
        assert!(e.contains(2006) && !e.contains(1213));
        assert!("".parse::<IgnoreErrors>().unwrap().codes.is_empty());
        assert!("12x".parse::<IgnoreErrors>().is_err());
    }

    #[test]
    fn endless_runs_need_consent() {
        let mut s = Settings::new(TestName::OltpReadOnly);
        s.time_s = 0;
        assert!(s.validate(false).is_err());
        assert!(s.validate(true).is_ok());
        s.threads = 0;
        assert!(s.validate(true).unwrap_err().contains("--threads"));
    }

    #[test]
    fn password_is_not_serialized() {
        let mut s = Settings::new(TestName::OltpReadOnly);
        s.conn.password = "hunter2".into();
        assert!(!serde_json::to_string(&s).unwrap().contains("hunter2"));
    }
}
