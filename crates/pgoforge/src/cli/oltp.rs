//! `pgoforge oltp prepare|prewarm|run|cleanup|check TEST`, with sysbench's option names (and
//! sysbench-tpcc's for `tpcc`).
//!
//! Options accept both spellings sysbench accepts (`--table-size` and `--table_size`), and booleans
//! take `on/off/true/false/1/0` or stand alone. Output follows sysbench's layout line by line; the
//! typed result can be written as JSON with `--json FILE`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use oltp::report::{final_report, header, interval_line};
use oltp::result::Interval;
use oltp::rng::{RandSettings, RandType};
use oltp::settings::{
    ClientIo, ConnSettings, IgnoreErrors, IsolationLevel, PsMode, Schema, Settings, TestName,
    TpccOptions, TrxShape,
};
use oltp::{Observer, RunError, RunResult};

#[derive(Clone, Copy, ValueEnum)]
pub enum OltpCommand {
    Prepare,
    Prewarm,
    Run,
    Cleanup,
    /// sysbench-tpcc's consistency checks (tpcc only).
    Check,
}

fn parse_bool(s: &str) -> Result<bool, String> {
    match s.to_ascii_lowercase().as_str() {
        "on" | "true" | "1" | "yes" => Ok(true),
        "off" | "false" | "0" | "no" => Ok(false),
        _ => Err(format!("'{s}' is not a boolean (use on/off)")),
    }
}

fn parse_rand_type(s: &str) -> Result<RandType, String> {
    RandType::ALL
        .into_iter()
        .find(|t| t.name() == s)
        .ok_or_else(|| {
            format!("unknown rand-type '{s}'; use uniform, gaussian, special, pareto or zipfian")
        })
}

/// A CPU list such as `0-1,3`.
#[derive(Clone, Debug)]
pub struct CpuList(pub Vec<usize>);

fn parse_cpus(s: &str) -> Result<CpuList, String> {
    pgoforge::server::cpu::parse_list(s)
        .map(CpuList)
        .map_err(|e| e.to_string())
}

fn parse_threads(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("'{s}' is not a positive number")),
    }
}

/// The engine's own defaults: every flag's default below is read from them, so the two cannot
/// drift apart (a test checks that an empty command line gives exactly these settings).
fn defaults() -> Settings {
    Settings::new(TestName::OltpReadOnly)
}

#[derive(Args)]
#[command(about = "sysbench-compatible OLTP workloads (sysbench 1.0.20 semantics, native driver)")]
pub struct OltpArgs {
    /// What to do.
    #[arg(value_enum)]
    command: OltpCommand,
    /// The test: oltp_point_select, oltp_read_only, oltp_write_only, oltp_read_write,
    /// oltp_update_index, oltp_update_non_index, oltp_insert, oltp_delete, select_random_points,
    /// select_random_ranges, bulk_insert; tpcc (sysbench-tpcc's TPC-C-like workload); or replay
    /// (--replay-file: your own statements from a query log or SQL file).
    test: TestName,

    /// Number of tables.
    #[arg(long, default_value_t = defaults().schema.tables, value_parser = parse_threads)]
    tables: u32,
    /// Rows per table.
    #[arg(long = "table-size", alias = "table_size", default_value_t = defaults().schema.table_size)]
    table_size: u64,
    /// Connections (sysbench: worker threads).
    #[arg(long, default_value_t = defaults().threads, value_parser = parse_threads)]
    threads: u32,
    /// OS threads driving the connections (0: one per four CPUs, at least one).
    #[arg(long = "client-threads", alias = "client_threads", default_value_t = defaults().client_threads)]
    client_threads: u32,
    /// Pin the client's threads to these CPUs (e.g. 0-1); keep them apart from the server's.
    #[arg(long = "client-cpus", alias = "client_cpus", value_parser = parse_cpus, default_value = "")]
    client_cpus: CpuList,
    /// How the client waits for replies: epoll (a send and a recv per statement) or io_uring
    /// (a statement's write and its reply's read in one submission, one system call per wake-up).
    #[arg(long = "client-io", alias = "client_io", default_value = "epoll")]
    client_io: ClientIoArg,
    /// Time limit in seconds (0: none).
    #[arg(long, default_value_t = defaults().time_s)]
    time: u64,
    /// Limit on the total number of events (0: none).
    #[arg(long, default_value_t = defaults().events)]
    events: u64,
    /// Accept --time=0 with --events=0: run until interrupted.
    #[arg(long)]
    endless: bool,
    /// Target transactions per second, Poisson arrivals (0: as fast as possible).
    #[arg(long, default_value_t = defaults().rate)]
    rate: u64,
    /// Seconds between intermediate reports (0: none).
    #[arg(
        long = "report-interval",
        alias = "report_interval",
        default_value_t = defaults().report_interval_s)]
    report_interval: u64,
    /// Latency percentile to report (0 disables).
    #[arg(long, default_value_t = defaults().percentile, value_parser = clap::value_parser!(u8).range(0..=100))]
    percentile: u8,
    /// Print the latency histogram.
    #[arg(long, default_value_t = defaults().histogram, num_args = 0..=1, default_missing_value = "on", value_parser = parse_bool)]
    histogram: bool,
    /// Seconds of load before statistics start (sysbench 1.1).
    #[arg(long = "warmup-time", alias = "warmup_time", default_value_t = defaults().warmup_time_s)]
    warmup_time: u64,

    /// Distribution of row ids: uniform, gaussian, special, pareto, zipfian.
    #[arg(long = "rand-type", alias = "rand_type", default_value = "special", value_parser = parse_rand_type)]
    rand_type: RandType,
    /// Seed of the random generators (0: from the clock).
    #[arg(long = "rand-seed", alias = "rand_seed", default_value_t = defaults().rand.seed)]
    rand_seed: u64,
    #[arg(
        long = "rand-spec-iter",
        alias = "rand_spec_iter",
        default_value_t = defaults().rand.spec_iter)]
    rand_spec_iter: u32,
    #[arg(long = "rand-spec-pct", alias = "rand_spec_pct", default_value_t = defaults().rand.spec_pct)]
    rand_spec_pct: f64,
    #[arg(
        long = "rand-spec-res",
        alias = "rand_spec_res",
        default_value_t = defaults().rand.spec_res)]
    rand_spec_res: f64,
    #[arg(long = "rand-pareto-h", alias = "rand_pareto_h", default_value_t = defaults().rand.pareto_h)]
    rand_pareto_h: f64,
    #[arg(
        long = "rand-zipfian-exp",
        alias = "rand_zipfian_exp",
        default_value_t = defaults().rand.zipfian_exp)]
    rand_zipfian_exp: f64,

    #[arg(long = "point-selects", alias = "point_selects", default_value_t = defaults().trx.point_selects)]
    point_selects: u32,
    #[arg(long = "simple-ranges", alias = "simple_ranges", default_value_t = defaults().trx.simple_ranges)]
    simple_ranges: u32,
    #[arg(long = "sum-ranges", alias = "sum_ranges", default_value_t = defaults().trx.sum_ranges)]
    sum_ranges: u32,
    #[arg(long = "order-ranges", alias = "order_ranges", default_value_t = defaults().trx.order_ranges)]
    order_ranges: u32,
    #[arg(
        long = "distinct-ranges",
        alias = "distinct_ranges",
        default_value_t = defaults().trx.distinct_ranges)]
    distinct_ranges: u32,
    #[arg(long = "index-updates", alias = "index_updates", default_value_t = defaults().trx.index_updates)]
    index_updates: u32,
    #[arg(
        long = "non-index-updates",
        alias = "non_index_updates",
        default_value_t = defaults().trx.non_index_updates)]
    non_index_updates: u32,
    #[arg(long = "delete-inserts", alias = "delete_inserts", default_value_t = defaults().trx.delete_inserts)]
    delete_inserts: u32,
    #[arg(long = "range-size", alias = "range_size", default_value_t = defaults().trx.range_size)]
    range_size: u32,
    #[arg(long = "range-selects", alias = "range_selects", default_value_t = defaults().trx.range_selects, num_args = 0..=1, default_missing_value = "on", value_parser = parse_bool)]
    range_selects: bool,
    #[arg(long = "skip-trx", alias = "skip_trx", default_value_t = defaults().trx.skip_trx, num_args = 0..=1, default_missing_value = "on", value_parser = parse_bool)]
    skip_trx: bool,
    #[arg(long = "random-points", alias = "random_points", default_value_t = defaults().random_points, value_parser = clap::value_parser!(u32).range(1..=64))]
    random_points: u32,
    #[arg(long = "number-of-ranges", alias = "number_of_ranges", default_value_t = defaults().number_of_ranges, value_parser = clap::value_parser!(u32).range(1..=32))]
    number_of_ranges: u32,
    #[arg(long, default_value_t = defaults().delta)]
    delta: u32,

    #[arg(long = "auto-inc", alias = "auto_inc", default_value_t = defaults().schema.auto_inc, num_args = 0..=1, default_missing_value = "on", value_parser = parse_bool)]
    auto_inc: bool,
    #[arg(long, default_value_t = defaults().schema.secondary, num_args = 0..=1, default_missing_value = "on", value_parser = parse_bool)]
    secondary: bool,
    #[arg(long = "create-secondary", alias = "create_secondary", default_value_t = defaults().schema.create_secondary, num_args = 0..=1, default_missing_value = "on", value_parser = parse_bool)]
    create_secondary: bool,
    #[arg(
        long = "mysql-storage-engine",
        alias = "mysql_storage_engine",
        default_value_t = defaults().schema.storage_engine
    )]
    mysql_storage_engine: String,

    /// Prepared statements (auto) or text protocol (disable).
    #[arg(long = "db-ps-mode", alias = "db_ps_mode", default_value = "auto")]
    db_ps_mode: PsModeArg,
    /// Host(s); `localhost` means the unix socket, an IP address means TCP.
    #[arg(
        long = "mysql-host",
        alias = "mysql_host",
        default_value = "localhost",
        value_delimiter = ','
    )]
    mysql_host: Vec<String>,
    #[arg(
        long = "mysql-port",
        alias = "mysql_port",
        default_value = "3306",
        value_delimiter = ','
    )]
    mysql_port: Vec<u16>,
    #[arg(long = "mysql-socket", alias = "mysql_socket", value_delimiter = ',')]
    mysql_socket: Vec<PathBuf>,
    #[arg(long = "mysql-user", alias = "mysql_user", default_value_t = defaults().conn.user)]
    mysql_user: String,
    #[arg(
        long = "mysql-password",
        alias = "mysql_password",
        default_value_t = defaults().conn.password,
        env = "PGOFORGE_MYSQL_PASSWORD",
        hide_env_values = true
    )]
    mysql_password: String,
    #[arg(long = "mysql-db", alias = "mysql_db", default_value_t = defaults().conn.db)]
    mysql_db: String,
    /// Error numbers that restart the event instead of stopping the run ("all" for every error).
    #[arg(
        long = "mysql-ignore-errors",
        alias = "mysql_ignore_errors",
        default_value = "1213,1020,1205"
    )]
    mysql_ignore_errors: IgnoreErrors,
    /// Seconds to wait for the server to answer the login before giving up.
    #[arg(long = "mysql-connect-timeout", value_name = "SECONDS", default_value_t = defaults().conn.connect_timeout_ms as f64 / 1000.0, value_parser = timeout_secs)]
    mysql_connect_timeout: f64,
    /// Seconds a statement may go without any reply before the connection counts as lost (a
    /// stalled server is an error, not a hang; sysbench has no such limit).
    #[arg(long = "mysql-read-timeout", value_name = "SECONDS", default_value_t = defaults().conn.read_timeout_ms as f64 / 1000.0, value_parser = timeout_secs)]
    mysql_read_timeout: f64,

    /// tpcc: warehouses per table copy (sysbench-tpcc's default, 100, is about 10 GB per copy).
    #[arg(long, default_value_t = defaults().tpcc.scale)]
    scale: u32,
    /// tpcc: add the foreign keys (1/0).
    #[arg(long = "use_fk", alias = "use-fk", default_value_t = defaults().tpcc.use_fk, value_parser = parse_bool)]
    use_fk: bool,
    /// tpcc: an auto-increment primary key on the history table (1/0).
    #[arg(long = "force_pk", alias = "force-pk", default_value_t = defaults().tpcc.force_pk, value_parser = parse_bool)]
    force_pk: bool,
    /// tpcc: isolation level, RR, RC or SER.
    #[arg(long = "trx_level", alias = "trx-level", default_value_t = defaults().tpcc.trx_level)]
    trx_level: IsolationLevel,
    /// tpcc: add the purge transaction to the mix (yes/no).
    #[arg(long = "enable_purge", alias = "enable-purge", default_value_t = defaults().tpcc.enable_purge, value_parser = parse_bool)]
    enable_purge: bool,
    /// tpcc: extra table options, e.g. 'COLLATE latin1_bin'.
    #[arg(long = "mysql_table_options", alias = "mysql-table-options", default_value_t = defaults().tpcc.table_options)]
    mysql_table_options: String,
    /// tpcc: START TRANSACTION READ WRITE/READ ONLY instead of BEGIN, for splitting proxies (yes/no).
    #[arg(long, default_value_t = defaults().tpcc.splittable, value_parser = parse_bool)]
    splittable: bool,

    /// replay: the workload file, a general or slow query log (long_query_time=0) or SQL.
    #[arg(long = "replay-file", alias = "replay_file", value_name = "FILE")]
    replay_file: Option<PathBuf>,
    /// replay: the file's kind, auto, general, slow or sql.
    #[arg(
        long = "replay-format",
        alias = "replay_format",
        default_value = "auto"
    )]
    replay_format: oltp::replay::Format,
    /// replay: a SQL file (e.g. a mysqldump) that `prepare replay` loads.
    #[arg(long = "replay-dataset", alias = "replay_dataset", value_name = "FILE")]
    replay_dataset: Option<PathBuf>,

    /// Write the typed result (every counter, intervals, settings, server) as JSON to FILE.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum ClientIoArg {
    Epoll,
    Uring,
}

#[derive(Clone, Copy, ValueEnum)]
enum PsModeArg {
    Auto,
    Disable,
}

impl OltpArgs {
    fn settings(&self) -> Settings {
        Settings {
            test: self.test,
            schema: Schema {
                tables: self.tables,
                table_size: self.table_size,
                auto_inc: self.auto_inc,
                secondary: self.secondary,
                create_secondary: self.create_secondary,
                storage_engine: self.mysql_storage_engine.clone(),
            },
            trx: TrxShape {
                point_selects: self.point_selects,
                simple_ranges: self.simple_ranges,
                sum_ranges: self.sum_ranges,
                order_ranges: self.order_ranges,
                distinct_ranges: self.distinct_ranges,
                index_updates: self.index_updates,
                non_index_updates: self.non_index_updates,
                delete_inserts: self.delete_inserts,
                range_size: self.range_size,
                range_selects: self.range_selects,
                skip_trx: self.skip_trx,
            },
            threads: self.threads,
            client_threads: self.client_threads,
            client_cpus: self.client_cpus.0.clone(),
            client_io: match self.client_io {
                ClientIoArg::Uring => ClientIo::Uring,
                ClientIoArg::Epoll => ClientIo::Epoll,
            },
            time_s: self.time,
            events: self.events,
            rate: self.rate,
            report_interval_s: self.report_interval,
            percentile: self.percentile,
            histogram: self.histogram,
            warmup_time_s: self.warmup_time,
            rand: RandSettings {
                rand_type: self.rand_type,
                seed: self.rand_seed,
                spec_iter: self.rand_spec_iter,
                spec_pct: self.rand_spec_pct,
                spec_res: self.rand_spec_res,
                pareto_h: self.rand_pareto_h,
                zipfian_exp: self.rand_zipfian_exp,
            },
            ps_mode: match self.db_ps_mode {
                PsModeArg::Auto => PsMode::Auto,
                PsModeArg::Disable => PsMode::Disable,
            },
            ignore_errors: self.mysql_ignore_errors.clone(),
            random_points: self.random_points,
            number_of_ranges: self.number_of_ranges,
            delta: self.delta,
            conn: ConnSettings {
                hosts: self.mysql_host.clone(),
                ports: self.mysql_port.clone(),
                sockets: self.mysql_socket.clone(),
                user: self.mysql_user.clone(),
                password: self.mysql_password.clone(),
                db: self.mysql_db.clone(),
                connect_timeout_ms: (self.mysql_connect_timeout * 1000.0).round() as u64,
                read_timeout_ms: (self.mysql_read_timeout * 1000.0).round() as u64,
            },
            tpcc: TpccOptions {
                scale: self.scale,
                use_fk: self.use_fk,
                force_pk: self.force_pk,
                trx_level: self.trx_level,
                enable_purge: self.enable_purge,
                table_options: self.mysql_table_options.clone(),
                splittable: self.splittable,
            },
            replay: oltp::replay::ReplayOptions {
                file: self.replay_file.clone().unwrap_or_default(),
                format: self.replay_format,
                dataset: self.replay_dataset.clone(),
                datadir: None,
            },
        }
    }
}

/// Prints sysbench's lines as the run goes.
struct Printer {
    percentile: u8,
}

impl Observer for Printer {
    fn started(&mut self) {
        println!("Threads started!\n");
        let _ = std::io::stdout().flush();
    }
    fn interval(&mut self, i: &Interval) {
        println!("{}", interval_line(i, self.percentile));
        let _ = std::io::stdout().flush();
    }
}

fn write_json(path: &std::path::Path, r: &RunResult) -> Result<()> {
    let text = serde_json::to_string_pretty(r).context("serializing the result")?;
    pgoforge::infra::fs::write_atomic(path, text)
}

pub fn main(args: OltpArgs) -> Result<i32> {
    let s = args.settings();
    if let Err(msg) = s.validate(args.endless) {
        super::usage_error(msg);
    }
    let log = |line: &str| println!("{line}");
    match args.command {
        OltpCommand::Prepare => {
            println!("{}", banner());
            oltp::schema::prepare(&s, &log).with_context(|| format!("preparing {}", s.test))?;
        }
        OltpCommand::Prewarm => {
            println!("{}", banner());
            oltp::schema::prewarm(&s, &log).with_context(|| format!("prewarming {}", s.test))?;
        }
        OltpCommand::Cleanup => {
            println!("{}", banner());
            oltp::schema::cleanup(&s, &log).with_context(|| format!("cleaning up {}", s.test))?;
        }
        OltpCommand::Check => {
            if s.test != TestName::Tpcc {
                super::usage_error(format!(
                    "`check` is sysbench-tpcc's command: `oltp check tpcc`, not `oltp check {}`",
                    s.test
                ));
            }
            println!("{}", banner());
            let outcomes = oltp::tpcc::check::check(&s, &log).context("checking tpcc")?;
            let failed = outcomes.iter().filter(|o| !o.passed).count();
            if failed > 0 {
                eprintln!(
                    "error: {failed} of {} consistency checks failed (see the FAILED lines)",
                    outcomes.len()
                );
                return Ok(1);
            }
        }
        OltpCommand::Run => return run(&s, args.json.as_ref()),
    }
    Ok(0)
}

fn banner() -> String {
    format!(
        "pgoforge oltp {} (sysbench {} compatible, native driver)\n",
        env!("CARGO_PKG_VERSION"),
        oltp::report::SYSBENCH_COMPAT
    )
}

fn run(s: &Settings, json: Option<&PathBuf>) -> Result<i32> {
    print!("{}", header(s, s.rand.seed == 0));
    let _ = std::io::stdout().flush();
    let mut printer = Printer {
        percentile: s.percentile,
    };
    match oltp::run(s, &mut printer) {
        Ok(r) => {
            print!("{}", final_report(&r));
            if let Some(c) = &r.replay {
                print!("{}", oltp::report::replay_lines(c));
            }
            if let Some(path) = json {
                write_json(path, &r)?;
            }
            Ok(0)
        }
        Err(RunError::Failed {
            message, partial, ..
        }) => {
            eprintln!("{message}");
            println!("\nStatistics so far (the run stopped early):\n");
            println!("{}", final_report(&partial));
            if let Some(path) = json {
                write_json(path, &partial)?;
            }
            eprintln!("error: the run stopped: {message}");
            Ok(1)
        }
        Err(RunError::Replay(e)) => super::usage_error(e.to_string()),
        Err(e) => Err(anyhow::Error::new(e).context(format!("running {}", s.test))),
    }
}

/// A timeout in seconds: positive, at most a day (a larger number is a typo, not a wish).
fn timeout_secs(s: &str) -> Result<f64, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("'{s}' is not a number of seconds"))?;
    if !(0.001..=86_400.0).contains(&v) {
        return Err(format!(
            "{v} s is out of range: give 0.001 to 86400 seconds"
        ));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        oltp: OltpArgs,
    }

    #[test]
    fn an_empty_command_line_gives_the_engines_defaults() {
        let a = Cli::try_parse_from(["oltp", "run", "oltp_read_only"]).unwrap();
        assert_eq!(a.oltp.settings(), defaults());
        // And each flag reaches its setting.
        let a = Cli::try_parse_from([
            "oltp",
            "run",
            "oltp_point_select",
            "--table_size=7",
            "--rand-type=uniform",
            "--skip-trx",
            "--db-ps-mode=disable",
            "--mysql-ignore-errors=all",
            "--client-io=uring",
        ])
        .unwrap();
        let s = a.oltp.settings();
        assert_eq!(s.schema.table_size, 7);
        assert_eq!(s.rand.rand_type.name(), "uniform");
        assert!(s.trx.skip_trx);
        assert_eq!(s.ps_mode, PsMode::Disable);
        assert!(s.ignore_errors.all);
        assert_eq!(s.client_io, ClientIo::Uring);
        assert_ne!(s, defaults());
    }
}
