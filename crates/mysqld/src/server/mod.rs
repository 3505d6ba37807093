//! Running MySQL-family servers: initialize, configure, start, stop cleanly.
//!
//! A [`Server`] is one server process on a private instance directory: its datadir, a generated
//! my.cnf shared by every variant of a comparison, an error log, and a unix socket in a 0700 run
//! directory. It listens on 127.0.0.1 only, has a benchmark user with a random password, and is
//! stopped by SHUTDOWN/SIGTERM and waited for — an instrumented server writes its profile only when
//! it exits normally, so a server that has to be killed is an error, never a silent success.

pub mod accounts;
pub mod adopt;
pub mod config;
pub mod cpu;
pub mod flavor;
mod init;
mod launch;
pub mod layout;
pub mod prewarm;
mod state;
mod stop;
pub mod template;

use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::time::Duration;

use crate::infra::fs::tail;
use anyhow::{bail, Result};

pub use accounts::Credentials;
pub use config::ServerConfig;
pub use flavor::{Family, Flavor};
pub use layout::Layout;

/// How to run a server binary.
#[derive(Clone, Debug)]
pub struct ServerSpec {
    pub binary: PathBuf,
    pub config: ServerConfig,
    pub share_dir: Option<PathBuf>,
    pub source_dir: Option<PathBuf>,
    /// Pin the server to these CPUs.
    pub cpus: Option<Vec<usize>>,
    /// A fixed port; `None` picks a free one.
    pub port: Option<u16>,
    /// One more address the server listens on besides 127.0.0.1: the one a benchmark client on
    /// another host reaches (`bench --client-host`). Never 0.0.0.0: only that interface.
    pub also_listen: Option<std::net::IpAddr>,
    pub start_timeout: Duration,
    pub stop_timeout: Duration,
    /// Let the server outlive this process (`pgoforge server start`); otherwise it dies with us.
    pub detach: bool,
    /// Extra environment for the server (e.g. LLVM_PROFILE_FILE for an instrumented build).
    pub env: Vec<(String, String)>,
    /// A command the server runs under (valgrind and its options); the datadir is still
    /// initialized by the binary itself.
    pub wrapper: Vec<String>,
}

impl ServerSpec {
    /// A spec with `config` and everything else default; the binary is filled in per use.
    pub fn with_config(config: ServerConfig) -> ServerSpec {
        ServerSpec {
            config,
            ..ServerSpec::new("")
        }
    }

    pub fn new(binary: impl Into<PathBuf>) -> ServerSpec {
        ServerSpec {
            binary: binary.into(),
            config: ServerConfig::default(),
            share_dir: None,
            source_dir: None,
            cpus: None,
            port: None,
            also_listen: None,
            start_timeout: Duration::from_secs(120),
            stop_timeout: Duration::from_secs(300),
            detach: false,
            env: Vec::new(),
            wrapper: Vec::new(),
        }
    }
}

pub use state::ServerState;
pub use stop::stop_by_pid;

/// The prefix of the private /tmp directory holding a socket when the instance path is too long.
const SOCKET_DIR_PREFIX: &str = "pgoforge-";

/// A running server this process started (or took over from a state file).
pub struct Server {
    pub state: ServerState,
    pub layout: Layout,
    pub(super) error_log: PathBuf,
    pub(super) child: Option<Child>,
    pub(super) detach: bool,
    pub(super) stop_timeout: Duration,
    /// A private /tmp directory holding the socket when the instance path is too long for one.
    pub(super) socket_dir: Option<PathBuf>,
}

impl Server {
    /// Initializes a fresh datadir in `dir` (which must not hold one), starts the server and creates
    /// the accounts.
    pub fn create(spec: &ServerSpec, dir: &Path) -> Result<Server> {
        let setup = Self::setup(spec, dir, |paths| {
            if paths.datadir.exists() {
                bail!(
                    "{} already holds a datadir; start it with `pgoforge server start` or remove it",
                    dir.display()
                );
            }
            Ok(())
        })?;
        let p = &setup.paths;
        init::initialize(
            &spec.env,
            &spec.binary,
            &setup.flavor,
            &setup.layout,
            &p.cnf,
            &p.datadir,
            &p.error_log,
        )?;
        let mysql_like = setup.flavor.family.is_mysql_like();
        let creds = Credentials {
            user: "sbtest".into(),
            password: accounts::random_password()?,
            db: "sbtest".into(),
            root_user: if mysql_like {
                "root".into()
            } else {
                accounts::os_user()
            },
            root_password: String::new(),
        };
        let mut srv = Self::launch(spec, setup, creds, false)?;
        let mut creds = srv.state.credentials.clone();
        if mysql_like {
            creds.root_password = accounts::random_password()?;
        }
        accounts::create(&mut srv.state.root()?, &srv.state.flavor, &creds)?;
        srv.state.credentials = creds;
        srv.state.accounts_ready = true;
        srv.state.save()?;
        Ok(srv)
    }

    /// Starts the server on the datadir already in `dir` (made by [`Server::create`] or copied from a
    /// template) with the credentials recorded there.
    pub fn start(spec: &ServerSpec, dir: &Path) -> Result<Server> {
        let mut old = None;
        let setup = Self::setup(spec, dir, |paths| {
            if !paths.datadir.join("mysql").is_dir() {
                bail!("{} holds no initialized datadir", dir.display());
            }
            let st = ServerState::load(dir)?;
            if !st.accounts_ready {
                bail!(
                    "{} was interrupted while it was first set up (its accounts were never \
                     created, so its credentials are void); remove the directory and start a new \
                     server there",
                    dir.display()
                );
            }
            if st.is_running() {
                bail!(
                    "a server from {} is already running (pid {}); stop it first",
                    dir.display(),
                    st.pid
                );
            }
            old = Some(st);
            Ok(())
        })?;
        let creds = old.expect("set by the check").credentials;
        Self::launch(spec, setup, creds, true)
    }

    /// Gives the benchmark user a new random password (for copies of a template).
    pub fn rotate_password(&mut self) -> Result<()> {
        let mut creds = self.state.credentials.clone();
        creds.password = accounts::random_password()?;
        accounts::rotate(&mut self.state.root()?, &creds)?;
        self.state.credentials = creds;
        self.state.save()
    }

    /// Lets the benchmark user in from a client at `client` (see [`accounts::allow_client`]).
    pub fn allow_client(&self, client: std::net::IpAddr) -> Result<()> {
        accounts::allow_client(&mut self.state.root()?, &self.state.credentials, client)
    }

    /// How a client at another host reaches this server: TCP to `addr`, which the server
    /// listens on (`ServerSpec::also_listen`).
    pub fn remote_settings(&self, addr: std::net::IpAddr) -> oltp::settings::ConnSettings {
        oltp::settings::ConnSettings {
            hosts: vec![addr.to_string()],
            ..self.state.tcp_settings()
        }
    }

    pub fn log_tail(&self, n: usize) -> String {
        tail(&self.error_log, n)
    }

    pub fn error_log(&self) -> &Path {
        &self.error_log
    }

    /// Leaves the server running after this handle is dropped (`pgoforge server start`).
    pub fn detach(mut self) -> ServerState {
        self.child = None;
        self.socket_dir = None;
        self.state.clone()
    }

    /// Kills the server at once (SIGKILL), as a crash would; for tests of failure handling.
    pub fn kill(&mut self) -> Option<ExitStatus> {
        let c = self.child.as_mut()?;
        let _ = c.kill();
        let st = c.wait().ok();
        self.child = None;
        self.cleanup_socket_dir();
        st
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.detach || self.child.is_none() {
            return;
        }
        if self.stop().is_err() {
            let _ = self.kill();
        }
    }
}
