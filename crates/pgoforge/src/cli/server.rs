//! `pgoforge server start|stop|status`: a server by hand, on a private instance directory.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::args::WorkDirArgs;
use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use pgoforge::infra::exit::Refuse;
use pgoforge::server::{self, cpu, Server, ServerConfig, ServerSpec, ServerState};

#[derive(Args)]
pub struct ServerArgs {
    #[command(subcommand)]
    command: ServerCommand,
}

#[derive(Args, Clone)]
struct Where {
    /// Instances live in WORK/servers/NAME.
    #[command(flatten)]
    work: WorkDirArgs,
    /// The instance's name (letters, digits, '.', '_', '-').
    #[arg(long, default_value = "manual", value_parser = instance_name)]
    name: String,
}

/// An instance name stays one directory below WORK/servers.
fn instance_name(s: &str) -> Result<String, String> {
    if pgoforge::recipe::is_safe_name(s) {
        Ok(s.to_string())
    } else {
        Err(format!(
            "'{}' is not an instance name: use letters, digits, '.', '_' or '-', not starting with '.'",
            s.escape_debug()
        ))
    }
}

impl Where {
    fn dir(&self) -> PathBuf {
        self.work.work_dir.join("servers").join(&self.name)
    }
}

#[derive(Subcommand)]
enum ServerCommand {
    /// Initialize (first time) and start a server; prints how to connect.
    Start {
        #[command(flatten)]
        at: Where,
        /// The server binary (mariadbd or mysqld; installed or in a build tree).
        #[arg(long)]
        binary: Option<PathBuf>,
        /// Share directory with errmsg.sys and the bootstrap SQL (found next to the binary otherwise).
        #[arg(long = "share-dir")]
        share_dir: Option<PathBuf>,
        /// Source tree of a build-tree binary (read from CMakeCache.txt otherwise).
        #[arg(long = "source-dir")]
        source_dir: Option<PathBuf>,
        /// Port on 127.0.0.1 (a free one if not given).
        #[arg(long)]
        port: Option<u16>,
        /// Pin the server to these CPUs, e.g. 1 or 2-3.
        #[arg(long)]
        cpus: Option<String>,
        #[arg(long = "buffer-pool-mb")]
        buffer_pool_mb: Option<u64>,
        #[arg(long = "redo-log-mb")]
        redo_log_mb: Option<u64>,
        /// Extra my.cnf lines, NAME=VALUE (repeatable).
        #[arg(long = "set", value_name = "NAME=VALUE", value_parser = super::args::server_option)]
        set: Vec<String>,
    },
    /// Stop a server started with `server start`, cleanly.
    Stop {
        #[command(flatten)]
        at: Where,
    },
    /// Is the server running, and how to reach it.
    Status {
        #[command(flatten)]
        at: Where,
        /// Print the state as JSON (includes the password).
        #[arg(long)]
        json: bool,
    },
}

/// The first server binary found in the usual places.
fn default_binary() -> Result<PathBuf> {
    for name in ["mariadbd", "mysqld"] {
        if let Some(p) = pgoforge::infra::tools::which(name) {
            return Ok(p);
        }
        for d in ["/usr/sbin", "/usr/local/sbin", "/usr/local/mysql/bin"] {
            let p = Path::new(d).join(name);
            if p.is_file() {
                return Ok(p);
            }
        }
    }
    bail!("no mariadbd or mysqld found; give --binary PATH (or install mariadb-server)")
}

pub fn main(args: ServerArgs) -> Result<i32> {
    match args.command {
        ServerCommand::Start {
            at,
            binary,
            share_dir,
            source_dir,
            port,
            cpus,
            buffer_pool_mb,
            redo_log_mb,
            set,
        } => {
            let binary = match binary {
                Some(b) => b,
                None => default_binary()?,
            };
            let binary = std::fs::canonicalize(&binary).unwrap_or(binary);
            // Refused before anything is created under the work dir.
            pgoforge::server::Flavor::detect(&binary).refused()?;
            let mut config = ServerConfig::default();
            if let Some(v) = buffer_pool_mb {
                config.buffer_pool_mb = v;
            }
            if let Some(v) = redo_log_mb {
                config.redo_log_mb = v;
            }
            config.extra = set;
            let spec = ServerSpec {
                config,
                share_dir,
                source_dir,
                cpus: cpus.as_deref().map(cpu::parse_list).transpose()?,
                port,
                detach: true,
                ..ServerSpec::new(binary)
            };
            let dir = at.dir();
            let srv = if dir.join("data/mysql").is_dir() {
                Server::start(&spec, &dir)?
            } else {
                Server::create(&spec, &dir)?
            };
            let st = srv.detach();
            print_connect(&st, &at);
            Ok(0)
        }
        ServerCommand::Stop { at } => {
            let dir = at.dir();
            let st = ServerState::load(&dir)?;
            server::stop_by_pid(&st, Duration::from_secs(300), &dir.join("error.log"))?;
            println!("stopped {} (pid {}) cleanly", st.flavor, st.pid);
            Ok(0)
        }
        ServerCommand::Status { at, json } => {
            let dir = at.dir();
            let st = ServerState::load(&dir)?;
            let running = st.pid != 0 && pgoforge::infra::pid_alive(st.pid);
            if json {
                let mut v = serde_json::to_value(&st)?;
                v["running"] = running.into();
                println!("{}", serde_json::to_string_pretty(&v)?);
            } else if running {
                print_connect(&st, &at);
            } else {
                println!("{} in {} is not running", st.flavor, dir.display());
            }
            Ok(if running { 0 } else { 3 })
        }
    }
}

fn print_connect(st: &ServerState, at: &Where) {
    let c = &st.credentials;
    println!(
        "{} is running (pid {}) in {}",
        st.flavor,
        st.pid,
        st.instance_dir.display()
    );
    println!("  socket: {}", st.socket.display());
    println!("  tcp:    127.0.0.1:{}", st.port);
    println!(
        "  user:   {} (password in {}/state.json)",
        c.user,
        st.instance_dir.display()
    );
    println!("Run a workload:");
    println!(
        "  pgoforge oltp prepare oltp_read_write --mysql-socket={} --mysql-user={} --mysql-password={} --mysql-db={}",
        st.socket.display(),
        c.user,
        c.password,
        c.db
    );
    println!("Connect with a client:");
    println!(
        "  {} -S {} -u {} -p{} {}",
        if st.flavor.family.is_mysql_like() {
            "mysql"
        } else {
            "mariadb"
        },
        st.socket.display(),
        c.user,
        c.password,
        c.db
    );
    println!(
        "Stop it:\n  pgoforge server stop --work-dir {} --name {}",
        at.work.work_dir.display(),
        at.name
    );
}
