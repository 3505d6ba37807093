//! Throwaway MariaDB servers for tests: Debian's `mariadbd` on a private datadir, unix socket and
//! loopback port, with a benchmark user whose password is random.
//!
//! The server is stopped when the [`TestServer`] is dropped, which also happens while a failing test
//! unwinds; should the test process die outright, the kernel kills the server too (parent-death
//! signal). A datadir initialized once per test binary is copied for each server, so starting one
//! costs a second or two rather than a full `mariadb-install-db`.

use std::fs;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use oltp::proto::{Conn, ConnectOptions, Endpoint};
use oltp::settings::ConnSettings;

pub const MARIADBD: &str = "/usr/sbin/mariadbd";
pub const INSTALL_DB: &str = "/usr/bin/mariadb-install-db";

pub struct TestServer {
    pub dir: tempfile::TempDir,
    pub datadir: PathBuf,
    pub socket: PathBuf,
    pub port: u16,
    pub user: String,
    pub password: String,
    pub db: String,
    child: Option<Child>,
}

fn os_user() -> String {
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    if uid == 0 {
        return "root".into();
    }
    std::env::var("USER").unwrap_or_else(|_| "root".into())
}

fn random_password() -> String {
    let mut bytes = [0u8; 18];
    if let Ok(mut f) = fs::File::open("/dev/urandom") {
        use std::io::Read;
        let _ = f.read_exact(&mut bytes);
    }
    bytes.iter().map(|b| format!("{:02x}", b)).collect()
}

fn free_port() -> Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0").context("binding a probe port on 127.0.0.1")?;
    Ok(l.local_addr()?.port())
}

/// A datadir initialized by mariadb-install-db once per test process.
fn template() -> Result<&'static Path> {
    static TEMPLATE: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let r = TEMPLATE.get_or_init(|| init_template().map_err(|e| format!("{e:#}")));
    match r {
        Ok(p) => Ok(p.as_path()),
        Err(e) => bail!("initializing the template datadir: {e}"),
    }
}

fn init_template() -> Result<PathBuf> {
    for tool in [MARIADBD, INSTALL_DB] {
        if !Path::new(tool).exists() {
            bail!("{tool} is missing: run scripts/install-test-deps.sh (installs mariadb-server)");
        }
    }
    // Cached across test binaries and runs, keyed by the server binary; built under a private name
    // and renamed into place so that concurrent test binaries never see a half-made template.
    let meta = fs::metadata(MARIADBD)?;
    let mtime = meta
        .modified()?
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs();
    // SAFETY: geteuid has no preconditions.
    let uid = unsafe { libc::geteuid() };
    let cached = std::env::temp_dir().join(format!(
        "pgoforge-test-template-{uid}-{}-{mtime}",
        meta.len()
    ));
    if cached.join("mysql").is_dir() {
        return Ok(cached);
    }
    let building =
        std::env::temp_dir().join(format!("pgoforge-test-template-tmp-{}", std::process::id()));
    let _ = fs::remove_dir_all(&building);
    let datadir = building.clone();
    fs::create_dir_all(&datadir)?;
    let out = Command::new(INSTALL_DB)
        .arg("--no-defaults")
        .arg(format!("--datadir={}", datadir.display()))
        .arg(format!("--user={}", os_user()))
        .arg("--auth-root-authentication-method=socket")
        .arg("--skip-test-db")
        .arg("--innodb-log-file-size=16M")
        .arg("--innodb-buffer-pool-size=64M")
        .output()
        .context("running mariadb-install-db")?;
    if !out.status.success() {
        bail!(
            "mariadb-install-db failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    if fs::rename(&building, &cached).is_err() {
        // Another test binary won the race; use its template.
        let _ = fs::remove_dir_all(&building);
    }
    Ok(cached)
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to)?;
    for e in fs::read_dir(from)? {
        let e = e?;
        let dst = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_dir(&e.path(), &dst)?;
        } else {
            fs::copy(e.path(), &dst)?;
        }
    }
    Ok(())
}

impl TestServer {
    /// Starts a fresh server with an empty `sbtest` database and the user `sbtest`.
    pub fn start() -> Result<TestServer> {
        let tpl = template()?;
        // Short path: unix socket paths are limited to 107 bytes.
        let dir = tempfile::Builder::new().prefix("pgf-").tempdir_in("/tmp")?;
        let datadir = dir.path().join("data");
        copy_dir(tpl, &datadir).context("copying the template datadir")?;
        let socket = dir.path().join("mysqld.sock");
        let mut srv = TestServer {
            datadir,
            socket,
            port: 0,
            user: "sbtest".into(),
            password: random_password(),
            db: "sbtest".into(),
            child: None,
            dir,
        };
        srv.launch()?;
        srv.create_account()?;
        Ok(srv)
    }

    fn error_log(&self) -> PathBuf {
        self.dir.path().join("error.log")
    }

    /// The last lines of the server's error log, for failure messages.
    pub fn log_tail(&self) -> String {
        let Ok(f) = fs::File::open(self.error_log()) else {
            return String::new();
        };
        let lines: Vec<String> = BufReader::new(f).lines().map_while(Result::ok).collect();
        lines[lines.len().saturating_sub(15)..].join("\n")
    }

    /// Starts mariadbd on this server's datadir, socket and a free port (same port on restarts).
    pub fn launch(&mut self) -> Result<()> {
        if self.port == 0 {
            self.port = free_port()?;
        }
        let mut cmd = Command::new(MARIADBD);
        cmd.arg("--no-defaults")
            .arg(format!("--datadir={}", self.datadir.display()))
            .arg(format!("--socket={}", self.socket.display()))
            .arg(format!("--port={}", self.port))
            .arg("--bind-address=127.0.0.1")
            .arg(format!(
                "--pid-file={}",
                self.dir.path().join("mysqld.pid").display()
            ))
            .arg(format!("--log-error={}", self.error_log().display()))
            .arg(format!("--user={}", os_user()))
            .arg("--skip-name-resolve")
            .arg("--innodb-log-file-size=16M")
            .arg("--innodb-buffer-pool-size=128M")
            .arg("--innodb-flush-log-at-trx-commit=2")
            .arg("--max-connections=200")
            .arg("--skip-log-bin")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        // SAFETY: prctl in the forked child before exec; async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let child = cmd.spawn().context("spawning mariadbd")?;
        self.child = Some(child);
        let t0 = Instant::now();
        loop {
            if let Some(c) = self.child.as_mut() {
                if let Some(st) = c.try_wait()? {
                    self.child = None;
                    bail!(
                        "mariadbd exited during start-up ({st}); log:\n{}",
                        self.log_tail()
                    );
                }
            }
            if Conn::connect(&self.root_options()).is_ok() {
                return Ok(());
            }
            if t0.elapsed() > Duration::from_secs(60) {
                self.stop();
                bail!(
                    "mariadbd did not answer within 60 s; log:\n{}",
                    self.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn root_options(&self) -> ConnectOptions {
        ConnectOptions {
            endpoint: Endpoint::Socket(self.socket.clone()),
            user: os_user(),
            password: String::new(),
            database: None,
            connect_timeout: Duration::from_secs(2),
        }
    }

    /// A superuser connection over the socket (unix_socket authentication).
    pub fn root(&self) -> Result<Conn> {
        Conn::connect(&self.root_options()).context("connecting as root over the socket")
    }

    fn create_account(&self) -> Result<()> {
        let mut c = self.root()?;
        let pw = &self.password;
        for sql in [
            format!("CREATE DATABASE {}", self.db),
            format!("CREATE USER 'sbtest'@'localhost' IDENTIFIED BY '{pw}'"),
            format!("CREATE USER 'sbtest'@'127.0.0.1' IDENTIFIED BY '{pw}'"),
            format!(
                "GRANT ALL ON {}.* TO 'sbtest'@'localhost', 'sbtest'@'127.0.0.1'",
                self.db
            ),
        ] {
            c.query(&sql).with_context(|| format!("running {sql}"))?;
        }
        Ok(())
    }

    /// Connection settings for the benchmark user over the unix socket.
    pub fn conn_socket(&self) -> ConnSettings {
        ConnSettings {
            sockets: vec![self.socket.clone()],
            user: self.user.clone(),
            password: self.password.clone(),
            db: self.db.clone(),
            ..ConnSettings::default()
        }
    }

    /// Connection settings for the benchmark user over TCP on 127.0.0.1.
    pub fn conn_tcp(&self) -> ConnSettings {
        ConnSettings {
            hosts: vec!["127.0.0.1".into()],
            ports: vec![self.port],
            user: self.user.clone(),
            password: self.password.clone(),
            db: self.db.clone(),
            ..ConnSettings::default()
        }
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
        self.child.as_ref().map(|c| c.id())
    }

    /// Kills the server abruptly (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Stops the server cleanly (SIGTERM), killing it if it has not exited after 60 s.
    pub fn stop(&mut self) {
        let Some(mut c) = self.child.take() else {
            return;
        };
        // SAFETY: signalling our own child.
        unsafe {
            libc::kill(c.id() as i32, libc::SIGTERM);
        }
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(60) {
            if let Ok(Some(_)) = c.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = c.kill();
        let _ = c.wait();
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// True when a process with this pid exists (and is not a zombie we reaped).
pub fn process_alive(pid: u32) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}
