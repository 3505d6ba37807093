//! Stopping a server cleanly — SHUTDOWN, then SIGTERM, waited for — and checking that it exited
//! normally, for a server this process started and for one known only from its state file.

use std::fs;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Child, ExitStatus};
use std::thread;
use std::time::{Duration, Instant};

use crate::infra::fs::tail;
use anyhow::{bail, Result};

use super::state::ServerState;
use super::Server;
use super::SOCKET_DIR_PREFIX;
use crate::infra::pid_alive as alive;

impl Server {
    pub(super) fn cleanup_socket_dir(&mut self) {
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

    pub(super) fn stop_child(&self, child: &mut Child) -> Result<()> {
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
pub(super) fn request_shutdown(state: &ServerState) {
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
pub(super) fn private_socket_dir(state: &ServerState) -> Option<&Path> {
    let d = state.socket.parent()?;
    let name = d.file_name()?.to_string_lossy();
    (d.parent() == Some(Path::new("/tmp"))
        && name.starts_with(SOCKET_DIR_PREFIX)
        && !d.starts_with(&state.instance_dir))
    .then_some(d)
}

pub(super) fn stop_pid(state: &ServerState, timeout: Duration, error_log: &Path) -> Result<()> {
    if !state.is_running() {
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

pub(super) fn describe(st: ExitStatus) -> String {
    match (st.code(), st.signal()) {
        (Some(c), _) => format!("exit status {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => st.to_string(),
    }
}
