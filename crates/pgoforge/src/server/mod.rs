//! Running MySQL-family servers: initialize, configure, start, stop cleanly.
//!
//! A [`Server`] is one server process on a private instance directory: its datadir, a generated
//! my.cnf shared by every variant of a comparison, an error log, and a unix socket in a 0700 run
//! directory. It listens on 127.0.0.1 only, has a benchmark user with a random password, and is
//! stopped by SHUTDOWN/SIGTERM and waited for — an instrumented server writes its profile only when
//! it exits normally, so a server that has to be killed is an error, never a silent success.

pub mod accounts;
pub mod config;
pub mod cpu;
pub mod flavor;
mod init;
pub mod layout;
pub mod template;

use std::fs;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use crate::infra::fs::tail;
use anyhow::{bail, Context, Result};
use oltp::proto::{Conn, ConnectOptions, Endpoint};
use oltp::settings::ConnSettings;
use serde::{Deserialize, Serialize};

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
            start_timeout: Duration::from_secs(120),
            stop_timeout: Duration::from_secs(300),
            detach: false,
            env: Vec::new(),
            wrapper: Vec::new(),
        }
    }
}

/// What `pgoforge server status|stop` and later stages read about a started server.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ServerState {
    pub pid: u32,
    pub binary: PathBuf,
    pub flavor: Flavor,
    pub instance_dir: PathBuf,
    pub datadir: PathBuf,
    pub socket: PathBuf,
    pub port: u16,
    pub credentials: Credentials,
    /// False from the first start until the accounts in `credentials` exist: a server killed
    /// in between leaves credentials of users that were never created. (States written before
    /// this field existed were always complete.)
    #[serde(default = "complete")]
    pub accounts_ready: bool,
}

fn complete() -> bool {
    true
}

impl ServerState {
    pub fn conn_settings(&self) -> ConnSettings {
        ConnSettings {
            sockets: vec![self.socket.clone()],
            user: self.credentials.user.clone(),
            password: self.credentials.password.clone(),
            db: self.credentials.db.clone(),
            ..ConnSettings::default()
        }
    }

    pub fn tcp_settings(&self) -> ConnSettings {
        ConnSettings {
            hosts: vec!["127.0.0.1".into()],
            ports: vec![self.port],
            sockets: Vec::new(),
            ..self.conn_settings()
        }
    }

    fn root_options(&self) -> ConnectOptions {
        ConnectOptions::new(
            Endpoint::Socket(self.socket.clone()),
            &self.credentials.root_user,
            &self.credentials.root_password,
        )
    }

    /// A superuser connection over the socket.
    pub fn root(&self) -> Result<Conn> {
        Conn::connect(&self.root_options()).context("connecting as the superuser over the socket")
    }

    pub fn load(instance_dir: &Path) -> Result<ServerState> {
        let p = instance_dir.join("state.json");
        let text = fs::read_to_string(&p).with_context(|| {
            format!(
                "reading {} (was the server started with `pgoforge server start`?)",
                p.display()
            )
        })?;
        serde_json::from_str(&text).with_context(|| format!("parsing {}", p.display()))
    }

    fn save(&self) -> Result<()> {
        let p = self.instance_dir.join("state.json");
        let tmp = p.with_extension("json.tmp");
        fs::write(&tmp, serde_json::to_string_pretty(self)?)
            .with_context(|| format!("writing {}", tmp.display()))?;
        // It holds passwords.
        fs::set_permissions(&tmp, fs::Permissions::from_mode(0o600))?;
        fs::rename(&tmp, &p).with_context(|| format!("writing {}", p.display()))
    }
}

/// Whether `pid` is a live process (not a zombie).
pub fn alive(pid: u32) -> bool {
    crate::infra::pid_alive(pid)
}

/// A running server this process started (or took over from a state file).
pub struct Server {
    pub state: ServerState,
    pub layout: Layout,
    error_log: PathBuf,
    child: Option<Child>,
    detach: bool,
    stop_timeout: Duration,
    /// A private /tmp directory holding the socket when the instance path is too long for one.
    socket_dir: Option<PathBuf>,
}

/// The paths of an instance directory.
struct Paths {
    dir: PathBuf,
    datadir: PathBuf,
    run: PathBuf,
    tmp: PathBuf,
    cnf: PathBuf,
    error_log: PathBuf,
}

impl Paths {
    fn new(dir: &Path) -> Paths {
        Paths {
            dir: dir.to_path_buf(),
            datadir: dir.join("data"),
            run: dir.join("run"),
            tmp: dir.join("tmp"),
            cnf: dir.join("my.cnf"),
            error_log: dir.join("error.log"),
        }
    }
}

fn private_dir(p: &Path) -> Result<()> {
    fs::create_dir_all(p).with_context(|| format!("creating {}", p.display()))?;
    fs::set_permissions(p, fs::Permissions::from_mode(0o700))
        .with_context(|| format!("restricting {}", p.display()))
}

fn port_free(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

fn free_port() -> Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0").context("finding a free port on 127.0.0.1")?;
    Ok(l.local_addr()?.port())
}

/// An instance directory configured for one start: my.cnf written, socket and port chosen.
struct Setup {
    flavor: Flavor,
    layout: Layout,
    paths: Paths,
    socket: PathBuf,
    socket_dir: Option<PathBuf>,
    port: u16,
}

impl Server {
    /// Recognises the binary and lays out `dir`; `check` runs before anything is written.
    fn setup(
        spec: &ServerSpec,
        dir: &Path,
        check: impl FnOnce(&Paths) -> Result<()>,
    ) -> Result<Setup> {
        let flavor = Flavor::detect(&spec.binary)?;
        let layout = Layout::discover(
            &spec.binary,
            spec.share_dir.as_deref(),
            spec.source_dir.as_deref(),
        );
        let paths = Paths::new(dir);
        check(&paths)?;
        private_dir(&paths.dir)?;
        let (socket, socket_dir) = Self::socket_path(&paths)?;
        let port = Self::choose_port(spec)?;
        Self::write_cnf(spec, &flavor, &layout, &paths, &socket, port)?;
        Ok(Setup {
            flavor,
            layout,
            paths,
            socket,
            socket_dir,
            port,
        })
    }

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
            let exe = fs::read_link(format!("/proc/{}/exe", st.pid));
            if st.pid != 0 && alive(st.pid) && exe.is_ok_and(|e| e == st.binary) {
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

    fn socket_path(paths: &Paths) -> Result<(PathBuf, Option<PathBuf>)> {
        // The run dir holds the pid file, and the socket when its path is short enough.
        private_dir(&paths.run)?;
        let s = paths.run.join("mysqld.sock");
        // sun_path holds 107 bytes; long work dirs get a private directory under /tmp instead.
        if s.as_os_str().len() < 100 {
            return Ok((s, None));
        }
        let d = tempfile::Builder::new()
            .prefix(SOCKET_DIR_PREFIX)
            .tempdir_in("/tmp")
            .context("creating a socket directory under /tmp")?
            .keep();
        private_dir(&d)?;
        Ok((d.join("mysqld.sock"), Some(d)))
    }

    fn choose_port(spec: &ServerSpec) -> Result<u16> {
        match spec.port {
            Some(p) if !port_free(p) => bail!(
                "port {p} on 127.0.0.1 is in use (another server?); choose another --port or leave it \
                 out to take a free one"
            ),
            Some(p) => Ok(p),
            None => free_port(),
        }
    }

    fn write_cnf(
        spec: &ServerSpec,
        flavor: &Flavor,
        layout: &Layout,
        paths: &Paths,
        socket: &Path,
        port: u16,
    ) -> Result<()> {
        private_dir(&paths.tmp)?;
        let pid_file = paths.run.join("mysqld.pid");
        let user = accounts::os_user();
        let text = spec.config.render(
            flavor,
            &config::Instance {
                datadir: &paths.datadir,
                socket,
                port,
                pid_file: &pid_file,
                error_log: &paths.error_log,
                tmpdir: &paths.tmp,
                lc_messages_dir: layout.lc_messages_dir.as_deref(),
                charsets_dir: layout.charsets_dir.as_deref(),
                os_user: Some(&user),
            },
        );
        fs::write(&paths.cnf, text).with_context(|| format!("writing {}", paths.cnf.display()))
    }

    fn launch(
        spec: &ServerSpec,
        setup: Setup,
        credentials: Credentials,
        accounts_ready: bool,
    ) -> Result<Server> {
        let Setup {
            flavor,
            layout,
            paths,
            socket,
            socket_dir,
            port,
        } = setup;
        let mut cmd = match spec.wrapper.split_first() {
            Some((prog, args)) => {
                let mut c = Command::new(prog);
                c.args(args).arg(&spec.binary);
                c
            }
            None => Command::new(&spec.binary),
        };
        cmd.arg(format!("--defaults-file={}", paths.cnf.display()))
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let cpus = spec.cpus.clone();
        let detach = spec.detach;
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                if detach {
                    libc::setsid();
                } else {
                    die_with_parent(parent);
                }
                if let Some(c) = &cpus {
                    cpu::pin_current(c)?;
                }
                Ok(())
            });
        }
        let child = cmd
            .spawn()
            .with_context(|| format!("starting {}", spec.binary.display()))?;
        let state = ServerState {
            pid: child.id(),
            binary: spec.binary.clone(),
            flavor,
            instance_dir: paths.dir.clone(),
            datadir: paths.datadir.clone(),
            socket,
            port,
            credentials,
            accounts_ready,
        };
        let mut srv = Server {
            state,
            layout,
            error_log: paths.error_log.clone(),
            child: Some(child),
            detach: spec.detach,
            stop_timeout: spec.stop_timeout,
            socket_dir,
        };
        srv.state.save()?;
        srv.wait_ready(spec.start_timeout)?;
        Ok(srv)
    }

    fn wait_ready(&mut self, timeout: Duration) -> Result<()> {
        let t0 = Instant::now();
        let opts = self.state.root_options();
        loop {
            if let Some(st) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                self.child = None;
                self.cleanup_socket_dir();
                bail!(
                    "{} exited during start-up ({}); error log {}:\n{}",
                    self.state.binary.display(),
                    describe(st),
                    self.error_log.display(),
                    self.log_tail(20)
                );
            }
            if self.state.socket.exists() && Conn::connect(&opts).is_ok() {
                return Ok(());
            }
            if t0.elapsed() > timeout {
                let _ = self.kill();
                bail!(
                    "{} did not answer on {} within {:?}; killed it. Error log:\n{}",
                    self.state.binary.display(),
                    self.state.socket.display(),
                    timeout,
                    self.log_tail(20)
                );
            }
            thread::sleep(Duration::from_millis(50));
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

    fn cleanup_socket_dir(&mut self) {
        if let Some(d) = self.socket_dir.take() {
            let _ = fs::remove_dir_all(d);
        }
    }

    /// Stops the server cleanly and checks that it exited normally.
    pub fn stop(&mut self) -> Result<()> {
        let Some(mut child) = self.child.take() else {
            return stop_by_pid(&self.state, self.stop_timeout, &self.error_log);
        };
        let result = self.stop_child(&mut child);
        self.cleanup_socket_dir();
        result
    }

    fn stop_child(&self, child: &mut Child) -> Result<()> {
        if let Ok(Some(st)) = child.try_wait() {
            bail!(
                "the server (pid {}) had already exited ({}) before it was stopped; an instrumented \
                 server's profile is not written. Error log:\n{}",
                self.state.pid,
                describe(st),
                self.log_tail(20)
            );
        }
        request_shutdown(&self.state);
        let t0 = Instant::now();
        loop {
            match child.try_wait() {
                Ok(Some(st)) if st.success() => return Ok(()),
                Ok(Some(st)) => bail!(
                    "the server exited abnormally on shutdown ({}); error log:\n{}",
                    describe(st),
                    self.log_tail(20)
                ),
                Ok(None) if t0.elapsed() < self.stop_timeout => {
                    thread::sleep(Duration::from_millis(20))
                }
                _ => break,
            }
        }
        // Still running after the timeout: kill it, and say what that costs.
        let _ = child.kill();
        let _ = child.wait();
        bail!(
            "the server did not stop within {:?} and was killed: no profile written for an \
             instrumented build. Error log:\n{}",
            self.stop_timeout,
            self.log_tail(20)
        )
    }
}

/// Asks the server to shut down: SHUTDOWN over the protocol, SIGTERM if that is not possible.
fn request_shutdown(state: &ServerState) {
    let via_sql = state
        .root()
        .and_then(|mut c| c.query("SHUTDOWN").map_err(anyhow::Error::from));
    if via_sql.is_err() {
        // SAFETY: signalling the server process we started.
        unsafe { libc::kill(state.pid as i32, libc::SIGTERM) };
    }
}

/// Stops a server this process did not start (from its state file): we cannot read its exit status,
/// so success is "it exited on request and its log says the shutdown completed".
pub fn stop_by_pid(state: &ServerState, timeout: Duration, error_log: &Path) -> Result<()> {
    let r = stop_pid(state, timeout, error_log);
    // A detached server with a long work dir had its socket in a private /tmp directory, which
    // no handle remembers: once the server is gone, remove it here.
    if !alive(state.pid) {
        if let Some(d) = private_socket_dir(state) {
            let _ = fs::remove_dir_all(d);
        }
    }
    r
}

/// The private /tmp directory holding the server's socket, when it is not in the instance dir.
fn private_socket_dir(state: &ServerState) -> Option<&Path> {
    let d = state.socket.parent()?;
    let name = d.file_name()?.to_string_lossy();
    (d.parent() == Some(Path::new("/tmp"))
        && name.starts_with(SOCKET_DIR_PREFIX)
        && !d.starts_with(&state.instance_dir))
    .then_some(d)
}

fn stop_pid(state: &ServerState, timeout: Duration, error_log: &Path) -> Result<()> {
    let is_ours =
        fs::read_link(format!("/proc/{}/exe", state.pid)).is_ok_and(|e| e == state.binary);
    if !alive(state.pid) || !is_ours {
        bail!(
            "the server of {} (pid {}) is not running; if it was killed, an instrumented server's \
             profile was not written. Error log:\n{}",
            state.instance_dir.display(),
            state.pid,
            tail(error_log, 20)
        );
    }
    request_shutdown(state);
    let t0 = Instant::now();
    while alive(state.pid) {
        if t0.elapsed() > timeout {
            // SAFETY: signalling the server process recorded in our state file.
            unsafe { libc::kill(state.pid as i32, libc::SIGKILL) };
            bail!(
                "the server (pid {}) did not stop within {timeout:?} and was killed: no profile written \
                 for an instrumented build",
                state.pid
            );
        }
        thread::sleep(Duration::from_millis(20));
    }
    let log = tail(error_log, 30);
    if !log.contains("Shutdown complete") {
        bail!("the server exited but its log does not report a complete shutdown:\n{log}");
    }
    Ok(())
}

const SOCKET_DIR_PREFIX: &str = "pgoforge-";

/// In a child between fork and exec: be killed when pgoforge dies (no stray server if it is
/// killed), and exit at once if it already died before the request took effect — the race
/// PR_SET_PDEATHSIG alone leaves open. Only async-signal-safe calls.
pub(crate) fn die_with_parent(parent: libc::pid_t) {
    // SAFETY: prctl, getppid and _exit are async-signal-safe.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() != parent {
            libc::_exit(1);
        }
    }
}

fn describe(st: ExitStatus) -> String {
    match (st.code(), st.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => st.to_string(),
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
