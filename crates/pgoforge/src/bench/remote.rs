//! The benchmark client on another host (`--client-host`), over ssh: the seeds ran sysbench from a
//! separate machine so that the client never takes the server's CPU.
//!
//! pgoforge copies its own binary to a private temporary directory on the client host and starts
//! it there as `pgoforge client-serve` in one ssh session for the whole benchmark; runs are asked
//! for and answered as JSON lines over that session's stdin and stdout (typed data, the same
//! [`RunResult`] a local run returns). Passwords travel only inside the session, never on a command
//! line. When the session ends — pgoforge done, killed, or the connection lost — the remote
//! process sees its stdin close and exits at once, and the shell around it removes the copied
//! binary: nothing stays behind on the client host.
//!
//! The servers stay where pgoforge runs; they listen on 127.0.0.1 and on the one address the
//! client reached this host at (from the session's `$SSH_CONNECTION`), and the benchmark user is
//! let in from the client's address only.

use std::io::{BufRead, Write};
use std::net::IpAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use oltp::settings::{ConnSettings, Settings};
use oltp::RunResult;
use serde::{Deserialize, Serialize};

use crate::infra::ssh::{Session, SshTarget};

/// Where the client runs: an ssh destination (`[user@]host`, anything `ssh` accepts, so
/// ~/.ssh/config applies) and, for tests and unusual set-ups, an ssh config file of its own.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ClientHost {
    pub destination: String,
    /// `ssh -F FILE` (`--ssh-config`). Not part of the plan: how the host is reached does not
    /// change what is measured, and a resumed benchmark may reach it another way.
    #[serde(skip)]
    pub ssh_config: Option<PathBuf>,
}

impl PartialEq for ClientHost {
    fn eq(&self, other: &ClientHost) -> bool {
        self.destination == other.destination
    }
}

impl ClientHost {
    /// `[user@]host`: no option-like or shell-special text (it becomes an ssh argument).
    pub fn parse(destination: &str, ssh_config: Option<PathBuf>) -> Result<ClientHost, String> {
        let t = SshTarget::parse("--client-host", destination, ssh_config)?;
        Ok(ClientHost {
            destination: t.destination,
            ssh_config: t.ssh_config,
        })
    }

    fn target(&self) -> SshTarget {
        SshTarget {
            destination: self.destination.clone(),
            ssh_config: self.ssh_config.clone(),
        }
    }

    fn ssh(&self) -> Command {
        self.target().command()
    }
}

/// What pgoforge asks of the remote client.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Request {
    /// One run with these settings (settings never serialize the password: it travels beside).
    Run {
        settings: Box<Settings>,
        password: String,
    },
    /// The median `SELECT 1` round trip over one connection, measured from the client's side.
    RoundTrip {
        conn: ConnSettings,
        password: String,
    },
}

/// What the remote client answers.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Response {
    /// Sent once when the client is up: its version, which must be ours.
    Ready {
        version: String,
    },
    Ran(Box<RunResult>),
    RoundTrip(Option<f64>),
    Failed(String),
}

/// `pgoforge client-serve`: answers requests on stdin until it closes. Exits the moment stdin
/// closes, even in the middle of a run: the session that asked is gone.
pub fn serve() -> Result<i32> {
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        let stdin = std::io::stdin();
        for line in stdin.lock().lines() {
            let Ok(l) = line else { break };
            if tx.send(l).is_err() {
                break;
            }
        }
        std::process::exit(0);
    });
    let mut out = std::io::stdout().lock();
    let mut send = |r: &Response| -> Result<()> {
        writeln!(out, "{}", serde_json::to_string(r)?)?;
        out.flush()?;
        Ok(())
    };
    send(&Response::Ready {
        version: env!("CARGO_PKG_VERSION").to_string(),
    })?;
    for line in rx {
        let answer = match serde_json::from_str::<Request>(&line) {
            Err(e) => Response::Failed(format!("a request that does not parse: {e}")),
            Ok(Request::Run {
                mut settings,
                password,
            }) => {
                settings.conn.password = password;
                match oltp::run(&settings, &mut oltp::Quiet) {
                    Ok(r) => Response::Ran(Box::new(r)),
                    Err(e) => Response::Failed(e.to_string()),
                }
            }
            Ok(Request::RoundTrip { mut conn, password }) => {
                conn.password = password;
                Response::RoundTrip(super::network::round_trip_us(&conn))
            }
        };
        send(&answer)?;
    }
    Ok(0)
}

/// A running client on the client host: one ssh session.
pub struct Remote {
    host: ClientHost,
    /// Boxed: the session's pipes and threads make it large beside a local client.
    session: Box<Session>,
    /// This host's address as the client host reaches it: the servers listen on it.
    pub server_addr: IpAddr,
    /// The client host's address: the servers let the benchmark user in from it.
    pub client_addr: IpAddr,
}

impl Remote {
    /// Reaches the client host, copies this binary there and starts it; `log` says what it does.
    pub fn open(host: &ClientHost, log: &dyn Fn(&str)) -> Result<Remote> {
        let (server_addr, client_addr) = probe(host)?;
        log(&format!(
            "client host {}: reached from {server_addr}, client at {client_addr}; copying pgoforge there",
            host.destination
        ));
        let dir = host.target().copy_self("the client host", "client")?;
        let session = Box::new(host.target().start_copied(&dir, "client-serve")?);
        let mut remote = Remote {
            host: host.clone(),
            session,
            server_addr,
            client_addr,
        };
        match remote.receive()? {
            Response::Ready { version } if version == env!("CARGO_PKG_VERSION") => Ok(remote),
            other => bail!(
                "the client on {} answered {other:?} instead of being ready",
                host.destination
            ),
        }
    }

    pub fn destination(&self) -> &str {
        &self.host.destination
    }

    /// One run of `s` on the client host (its CPU pinning is this host's: dropped there).
    pub fn run(&mut self, s: &Settings) -> Result<RunResult> {
        let mut settings = Box::new(s.clone());
        settings.client_cpus.clear();
        let password = std::mem::take(&mut settings.conn.password);
        self.send(&Request::Run { settings, password })?;
        match self.receive()? {
            Response::Ran(r) => Ok(*r),
            Response::Failed(e) => Err(anyhow!("{e} (on the client host {})", self.destination())),
            other => bail!("the client answered {other:?} to a run"),
        }
    }

    /// The round trip measured on the client host (None: it could not connect or query).
    pub fn round_trip_us(&mut self, conn: &ConnSettings) -> Result<Option<f64>> {
        let mut conn = conn.clone();
        let password = std::mem::take(&mut conn.password);
        self.send(&Request::RoundTrip { conn, password })?;
        match self.receive()? {
            Response::RoundTrip(rtt) => Ok(rtt),
            Response::Failed(e) => Err(anyhow!("{e}")),
            other => bail!("the client answered {other:?} to a round-trip probe"),
        }
    }

    /// Queues a request; a session already gone is found here or by the next [`Self::receive`].
    fn send(&mut self, r: &Request) -> Result<()> {
        let line = serde_json::to_string(r)?;
        let queued = self.session.send(line);
        if queued {
            Ok(())
        } else {
            Err(self.ended())
        }
    }

    fn receive(&mut self) -> Result<Response> {
        let mut line = String::new();
        match self.session.stdout.read_line(&mut line) {
            Ok(n) if n > 0 => serde_json::from_str(&line).with_context(|| {
                format!(
                    "the client on {} answered something that is not a response: {}",
                    self.destination(),
                    line.trim()
                )
            }),
            _ => Err(self.ended()),
        }
    }

    /// Why the session is gone, with ssh's exit status and its last words.
    fn ended(&mut self) -> anyhow::Error {
        let deadline = Instant::now() + Duration::from_secs(5);
        let status = loop {
            match self.session.child.try_wait() {
                Ok(Some(s)) => break Some(s),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                _ => break None,
            }
        };
        // Give the stderr reader a moment to take ssh's last line.
        std::thread::sleep(Duration::from_millis(100));
        let tail = self.session.tail();
        anyhow!(
            "the benchmark client on {} stopped: its ssh session ended ({}){}. What was measured \
             is kept; once `ssh {}` works again the same command with --resume continues",
            self.destination(),
            status.map_or("ssh still running".to_string(), |s| s.to_string()),
            if tail.is_empty() {
                String::new()
            } else {
                format!(": {}", tail.join(" / "))
            },
            self.destination()
        )
    }
}

impl Drop for Remote {
    /// Closing stdin ends the remote client (and removes its binary); ssh then exits.
    fn drop(&mut self) {
        self.session.close_stdin();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.session.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.session.child.kill();
        let _ = self.session.child.wait();
    }
}

/// This host's and the client host's addresses as the session sees them, and a check that the
/// client host can run this binary.
fn probe(host: &ClientHost) -> Result<(IpAddr, IpAddr)> {
    let out = host
        .ssh()
        .arg("echo \"$SSH_CONNECTION\"; uname -m")
        .stdin(Stdio::null())
        .output()
        .context("running ssh (is openssh-client installed?)")?;
    if !out.status.success() {
        bail!(
            "cannot reach the client host {} over ssh ({}): {}. `ssh {0} true` must work without \
             a password prompt (a key or an agent; BatchMode)",
            host.destination,
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut lines = text.lines();
    let conn: Vec<&str> = lines.next().unwrap_or("").split_whitespace().collect();
    let arch = lines.next().unwrap_or("").trim();
    if arch != std::env::consts::ARCH {
        bail!(
            "the client host {} is '{arch}'; pgoforge runs its own binary there, built for {}",
            host.destination,
            std::env::consts::ARCH
        );
    }
    // $SSH_CONNECTION: client address, client port, server address, server port — from the
    // client host's side, where "client" is this host.
    match (
        conn.first().and_then(|a| a.parse::<IpAddr>().ok()),
        conn.get(2).and_then(|a| a.parse::<IpAddr>().ok()),
    ) {
        (Some(here), Some(there)) if !here.is_loopback() && !here.is_unspecified() => {
            Ok((here, there))
        }
        (Some(here), Some(_)) => bail!(
            "the client host {} reached this host at {here}: a client on another host has to \
             reach it over the network (give an address or name that is not this machine)",
            host.destination
        ),
        _ => bail!(
            "the client host {} did not say where the session came from ($SSH_CONNECTION: '{}')",
            host.destination,
            conn.join(" ")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_are_plain_and_the_config_is_not_part_of_the_plan() {
        assert!(ClientHost::parse("bench@10.0.0.2", None).is_ok());
        assert!(ClientHost::parse("client-1.example", None).is_ok());
        for bad in ["", "-oProxyCommand=x", "a b", "h;rm", "h$(x)", "h'"] {
            assert!(ClientHost::parse(bad, None).is_err(), "{bad}");
        }
        let a = ClientHost::parse("h", Some("/x".into())).unwrap();
        let b = ClientHost::parse("h", None).unwrap();
        assert_eq!(a, b);
        assert_eq!(serde_json::to_string(&a).unwrap(), r#"{"destination":"h"}"#);
    }

    #[test]
    fn requests_carry_the_password_beside_settings_that_never_serialize_it() {
        let mut s = Settings::new(oltp::settings::TestName::OltpPointSelect);
        s.conn.password = "secret".into();
        let line = serde_json::to_string(&Request::Run {
            settings: Box::new(s),
            password: "secret".into(),
        })
        .unwrap();
        assert_eq!(line.matches("secret").count(), 1, "{line}");
        match serde_json::from_str::<Request>(&line).unwrap() {
            Request::Run { settings, password } => {
                assert_eq!(password, "secret");
                assert!(settings.conn.password.is_empty());
            }
            other => panic!("{other:?}"),
        }
    }
}
