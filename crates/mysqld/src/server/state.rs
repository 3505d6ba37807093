//! What `pgoforge server status|stop` and later stages read about a started server: its state
//! file (state.json), how to connect, and whether it is still up.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use oltp::proto::{Conn, ConnectOptions, Endpoint};
use oltp::settings::ConnSettings;
use serde::{Deserialize, Serialize};

use super::{Credentials, Flavor};

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

pub(super) fn complete() -> bool {
    true
}

impl ServerState {
    /// Whether this state's server is running: its process alive (not a zombie) and still the
    /// recorded binary (a pid reused by another program is not it).
    pub fn is_running(&self) -> bool {
        self.pid != 0
            && crate::infra::pid_alive(self.pid)
            && fs::read_link(format!("/proc/{}/exe", self.pid)).is_ok_and(|e| e == self.binary)
    }

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

    pub(super) fn root_options(&self) -> ConnectOptions {
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

    pub(super) fn save(&self) -> Result<()> {
        let p = self.instance_dir.join("state.json");
        let tmp = p.with_extension("json.tmp");
        fs::write(&tmp, serde_json::to_string_pretty(self)?)
            .with_context(|| format!("writing {}", tmp.display()))?;
        // It holds passwords.
        fs::set_permissions(&tmp, fs::Permissions::from_mode(0o600))?;
        fs::rename(&tmp, &p).with_context(|| format!("writing {}", p.display()))
    }
}
