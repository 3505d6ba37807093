//! Starting a server: the instance directory laid out, my.cnf written, a private socket and a free
//! port chosen, the process started (pinned, dying with pgoforge unless detached) and waited for
//! until it accepts connections.

use std::fs;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use oltp::proto::Conn;

use super::state::ServerState;
use super::stop::describe;
use super::{
    accounts, config, cpu, Credentials, Flavor, Layout, Server, ServerSpec, SOCKET_DIR_PREFIX,
};
use crate::infra::interrupt::die_with_parent;

/// The paths of an instance directory.
pub(super) struct Paths {
    pub(super) dir: PathBuf,
    pub(super) datadir: PathBuf,
    pub(super) run: PathBuf,
    pub(super) tmp: PathBuf,
    pub(super) cnf: PathBuf,
    pub(super) error_log: PathBuf,
}

impl Paths {
    pub(super) fn new(dir: &Path) -> Paths {
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

pub(super) fn private_dir(p: &Path) -> Result<()> {
    fs::create_dir_all(p).with_context(|| format!("creating {}", p.display()))?;
    fs::set_permissions(p, fs::Permissions::from_mode(0o700))
        .with_context(|| format!("restricting {}", p.display()))
}

pub(super) fn port_free(port: u16) -> bool {
    TcpListener::bind(("127.0.0.1", port)).is_ok()
}

pub(super) fn free_port() -> Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0").context("finding a free port on 127.0.0.1")?;
    Ok(l.local_addr()?.port())
}

/// An instance directory configured for one start: my.cnf written, socket and port chosen.
pub(super) struct Setup {
    pub(super) flavor: Flavor,
    pub(super) layout: Layout,
    pub(super) paths: Paths,
    pub(super) socket: PathBuf,
    pub(super) socket_dir: Option<PathBuf>,
    pub(super) port: u16,
}

impl Server {
    /// Recognises the binary and lays out `dir`; `check` runs before anything is written.
    pub(super) fn setup(
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

    pub(super) fn socket_path(paths: &Paths) -> Result<(PathBuf, Option<PathBuf>)> {
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

    pub(super) fn choose_port(spec: &ServerSpec) -> Result<u16> {
        match spec.port {
            Some(p) if !port_free(p) => bail!(
                "port {p} on 127.0.0.1 is in use (another server?); choose another --port or leave it \
                 out to take a free one"
            ),
            Some(p) => Ok(p),
            None => free_port(),
        }
    }

    pub(super) fn write_cnf(
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
        let plugin_dir = layout.engine_plugin_dir(spec.config.engine, &spec.binary)?;
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
                also_listen: spec.also_listen,
                plugin_dir: plugin_dir.as_deref(),
            },
        );
        fs::write(&paths.cnf, text).with_context(|| format!("writing {}", paths.cnf.display()))
    }

    pub(super) fn launch(
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

    pub(super) fn wait_ready(&mut self, timeout: Duration) -> Result<()> {
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
}
