//! Throwaway MariaDB servers for tests: Debian's `mariadbd` through pgoforge's own server module, on a
//! private instance directory (datadir, unix socket, loopback port) with a benchmark user whose
//! password is random.
//!
//! The server is stopped when the [`TestServer`] is dropped, which also happens while a failing test
//! unwinds; should the test process die outright, the kernel kills the server too (parent-death
//! signal). One initialized instance is kept per mariadbd build and copied for each server, so a
//! start costs about a second rather than a bootstrap.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use anyhow::{bail, Context, Result};
use mysqld::server::{template, Server, ServerSpec};
use oltp::proto::Conn;
use oltp::settings::ConnSettings;

pub const MARIADBD: &str = "/usr/sbin/mariadbd";

pub struct TestServer {
    /// The instance directory (removed on drop).
    pub dir: tempfile::TempDir,
    pub socket: PathBuf,
    pub port: u16,
    pub user: String,
    pub password: String,
    pub db: String,
    server: Option<Server>,
    spec: ServerSpec,
}

fn spec() -> ServerSpec {
    let mut s = ServerSpec::new(MARIADBD);
    s.config.buffer_pool_mb = 128;
    s.config.redo_log_mb = 32;
    s.config.max_connections = 200;
    s
}

/// An initialized, stopped instance, cached across test binaries and runs (keyed by the binary).
fn template_dir() -> Result<&'static Path> {
    static TEMPLATE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let r = TEMPLATE.get_or_init(|| make_template().map_err(|e| format!("{e:#}")));
    match r {
        Ok(p) => Ok(p.as_path()),
        Err(e) => bail!("initializing the test template: {e}"),
    }
}

fn make_template() -> Result<PathBuf> {
    if !Path::new(MARIADBD).exists() {
        bail!("{MARIADBD} is missing: run scripts/install-test-deps.sh (installs mariadb-server)");
    }
    let meta = fs::metadata(MARIADBD)?;
    let mtime = meta
        .modified()?
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs();
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let tmp = std::env::temp_dir();
    let cached = tmp.join(format!(
        "pgoforge-test-instance-{uid}-{}-{mtime}",
        meta.len()
    ));
    if cached.join("data/mysql").is_dir() && cached.join("state.json").is_file() {
        return Ok(cached);
    }
    // RunContender under a private name and renamed, so concurrent test binaries never see half of one.
    let building = tmp.join(format!("pgoforge-test-instance-tmp-{}", std::process::id()));
    let _ = fs::remove_dir_all(&building);
    Server::create(&spec(), &building)?.stop()?;
    if fs::rename(&building, &cached).is_err() {
        let _ = fs::remove_dir_all(&building);
    }
    Ok(cached)
}

impl TestServer {
    /// Starts a fresh server with an empty `sbtest` database and the user `sbtest`.
    pub fn start() -> Result<TestServer> {
        let tpl = template_dir()?;
        let dir = tempfile::Builder::new().prefix("pgf-").tempdir_in("/tmp")?;
        let spec = spec();
        let srv = template::start_copy(tpl, &spec, &dir.path().join("i"))
            .context("starting a test server")?;
        let st = srv.state.clone();
        Ok(TestServer {
            dir,
            socket: st.socket,
            port: st.port,
            user: st.credentials.user,
            password: st.credentials.password,
            db: st.credentials.db,
            server: Some(srv),
            spec,
        })
    }

    fn server(&self) -> &Server {
        self.server.as_ref().expect("the test server is running")
    }

    pub fn log_tail(&self) -> String {
        mysqld::infra::fs::tail(&self.dir.path().join("i/error.log"), 15)
    }

    /// Starts the server again on the same datadir, socket and port (after [`TestServer::kill`]).
    pub fn launch(&mut self) -> Result<()> {
        let mut spec = self.spec.clone();
        spec.port = Some(self.port);
        self.server = Some(Server::start(&spec, &self.dir.path().join("i"))?);
        Ok(())
    }

    /// A superuser connection over the socket.
    pub fn root(&self) -> Result<Conn> {
        self.server().state.root()
    }

    /// Connection settings for the benchmark user over the unix socket.
    pub fn conn_socket(&self) -> ConnSettings {
        self.server().state.conn_settings()
    }

    /// Connection settings for the benchmark user over TCP on 127.0.0.1.
    pub fn conn_tcp(&self) -> ConnSettings {
        self.server().state.tcp_settings()
    }

    /// `--mysql-*` arguments for the socket, as sysbench and `pgoforge oltp` take them.
    pub fn socket_args(&self) -> Vec<String> {
        vec![
            format!("--mysql-socket={}", self.socket.display()),
            format!("--mysql-user={}", self.user),
            format!("--mysql-password={}", self.password),
            format!("--mysql-db={}", self.db),
        ]
    }

    /// `--mysql-*` arguments for TCP on 127.0.0.1.
    pub fn tcp_args(&self) -> Vec<String> {
        vec![
            "--mysql-host=127.0.0.1".into(),
            format!("--mysql-port={}", self.port),
            format!("--mysql-user={}", self.user),
            format!("--mysql-password={}", self.password),
            format!("--mysql-db={}", self.db),
        ]
    }

    /// A value from a query run as root, e.g. `SELECT COUNT(*) FROM sbtest.sbtest1`.
    pub fn value(&self, sql: &str) -> Result<String> {
        self.root()?
            .query_value(sql)
            .with_context(|| format!("running {sql}"))?
            .with_context(|| format!("{sql} returned no value"))
    }

    pub fn count(&self, sql: &str) -> Result<i64> {
        Ok(self.value(sql)?.parse()?)
    }

    pub fn pid(&self) -> Option<u32> {
        self.server.as_ref().map(|s| s.state.pid)
    }

    /// Kills the server abruptly (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut s) = self.server.take() {
            s.kill();
        }
    }
}

/// True when a process with this pid is alive.
pub fn process_alive(pid: u32) -> bool {
    mysqld::infra::pid_alive(pid)
}
