//! Where a server listens, what a connection needs to open, and the stream (unix socket or TCP)
//! it runs over.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Where a server listens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Endpoint {
    Socket(PathBuf),
    Tcp { host: String, port: u16 },
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Endpoint::Socket(p) => write!(f, "unix socket {}", p.display()),
            Endpoint::Tcp { host, port } => write!(f, "TCP {host}:{port}"),
        }
    }
}

impl Endpoint {
    pub fn transport(&self) -> &'static str {
        match self {
            Endpoint::Socket(_) => "unix-socket",
            Endpoint::Tcp { .. } => "tcp",
        }
    }
}

/// Everything needed to open a connection.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    pub endpoint: Endpoint,
    pub user: String,
    pub password: String,
    pub database: Option<String>,
    /// Bounds connecting and the handshake, so an unreachable or hung server fails fast.
    pub connect_timeout: Duration,
    /// Bounds every wait for a reply (or for the server to take a command) after the handshake,
    /// so a server that stalls mid-session is an error, not a hang.
    pub read_timeout: Duration,
}

/// Long enough for any statement pgoforge sends (a dataset's bulk load, CHECKSUM TABLE on a
/// large table); a server silent for this long is stuck.
pub const DEFAULT_READ_TIMEOUT: Duration = Duration::from_secs(600);

pub(super) const CONNECT_TIMEOUT_SETTING: &str = "connect timeout, --mysql-connect-timeout";
pub(super) const READ_TIMEOUT_SETTING: &str = "read timeout, --mysql-read-timeout";

impl ConnectOptions {
    /// Options with the default connect (5 s) and read ([`DEFAULT_READ_TIMEOUT`]) limits.
    pub fn new(endpoint: Endpoint, user: &str, password: &str) -> ConnectOptions {
        ConnectOptions {
            endpoint,
            user: user.to_string(),
            password: password.to_string(),
            database: None,
            connect_timeout: Duration::from_secs(5),
            read_timeout: DEFAULT_READ_TIMEOUT,
        }
    }
}

pub(super) enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    pub(super) fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
    pub(super) fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }
    pub(super) fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_read_timeout(t),
            Stream::Tcp(s) => s.set_read_timeout(t),
        }
    }
    pub(super) fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_write_timeout(t),
            Stream::Tcp(s) => s.set_write_timeout(t),
        }
    }
    pub(super) fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_nonblocking(on),
            Stream::Tcp(s) => s.set_nonblocking(on),
        }
    }
    pub(super) fn fd(&self) -> RawFd {
        match self {
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tcp(s) => s.as_raw_fd(),
        }
    }
}
