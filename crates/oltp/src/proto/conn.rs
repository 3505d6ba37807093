//! One client connection: connect and authenticate, then send commands and read replies.
//!
//! Blocking calls ([`Conn::query`], [`Conn::prepare`], [`Conn::execute`]) serve set-up work; the
//! runner's event loop uses the same connection in non-blocking mode through [`Conn::send`],
//! [`Conn::recv`] and the encoders.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::auth;
use super::error::{DbError, ServerError};
use super::packet::{begin_packet, finish_packet, get_u16, get_u32, put_lenenc, ReadBuf};
use super::response::{Expect, Outcome, Prepared, Reply, ResponseParser, TextRow};

const CLIENT_LONG_PASSWORD: u32 = 1;
const CLIENT_LONG_FLAG: u32 = 4;
const CLIENT_CONNECT_WITH_DB: u32 = 8;
const CLIENT_PROTOCOL_41: u32 = 512;
const CLIENT_TRANSACTIONS: u32 = 8192;
const CLIENT_SECURE_CONNECTION: u32 = 1 << 15;
const CLIENT_MULTI_STATEMENTS: u32 = 1 << 16;
const CLIENT_MULTI_RESULTS: u32 = 1 << 17;
const CLIENT_PS_MULTI_RESULTS: u32 = 1 << 18;
const CLIENT_PLUGIN_AUTH: u32 = 1 << 19;
/// MariaDB's extended capability (bit 36 overall, bit 4 of the extended word): the server sends a
/// statement's result metadata only when it changed. libmariadb, and so Debian's sysbench,
/// negotiates it; doing the same keeps the server's work per statement identical.
const MARIADB_CLIENT_CACHE_METADATA: u32 = 1 << 4;

/// utf8mb4_general_ci: known to every MySQL and MariaDB version the driver targets.
const HANDSHAKE_COLLATION: u8 = 45;

const COM_QUIT: u8 = 0x01;
/// Authentication exchanges after the handshake response (a switch and a full authentication
/// need three).
const MAX_AUTH_ROUNDS: usize = 8;
const COM_QUERY: u8 = 0x03;
const COM_STMT_PREPARE: u8 = 0x16;
const COM_STMT_EXECUTE: u8 = 0x17;
const COM_STMT_CLOSE: u8 = 0x19;

const MYSQL_TYPE_LONGLONG: u8 = 8;
const MYSQL_TYPE_VAR_STRING: u8 = 253;

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

const CONNECT_TIMEOUT_SETTING: &str = "connect timeout, --mysql-connect-timeout";
const READ_TIMEOUT_SETTING: &str = "read timeout, --mysql-read-timeout";

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

/// A statement parameter, sent with the wire types sysbench binds (BIGINT, VARCHAR).
#[derive(Debug, Clone, Copy)]
pub enum Param<'a> {
    Int(i64),
    Str(&'a [u8]),
}

enum Stream {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
        }
    }
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
        }
    }
    fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_read_timeout(t),
            Stream::Tcp(s) => s.set_read_timeout(t),
        }
    }
    fn set_write_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_write_timeout(t),
            Stream::Tcp(s) => s.set_write_timeout(t),
        }
    }
    fn set_nonblocking(&self, on: bool) -> io::Result<()> {
        match self {
            Stream::Unix(s) => s.set_nonblocking(on),
            Stream::Tcp(s) => s.set_nonblocking(on),
        }
    }
    fn fd(&self) -> RawFd {
        match self {
            Stream::Unix(s) => s.as_raw_fd(),
            Stream::Tcp(s) => s.as_raw_fd(),
        }
    }
}

/// Facts about the server learned at connect time.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ServerInfo {
    pub version: String,
    pub connection_id: u32,
}

pub struct Conn {
    stream: Stream,
    endpoint: Endpoint,
    rbuf: ReadBuf,
    wbuf: Vec<u8>,
    parser: ResponseParser,
    info: ServerInfo,
    nonblocking: bool,
    /// The limit on the current wait, and what is waited for (named in the error).
    timeout: Duration,
    timeout_setting: &'static str,
    waiting_for: &'static str,
    /// When the command whose reply is awaited was sent (the event loop's stall check).
    sent_at: Option<Instant>,
}

fn lost(endpoint: &Endpoint, source: io::Error) -> DbError {
    DbError::Lost {
        endpoint: endpoint.to_string(),
        source,
    }
}

impl Conn {
    pub fn connect(opts: &ConnectOptions) -> Result<Conn, DbError> {
        let connect_err = |source: io::Error| DbError::Connect {
            endpoint: opts.endpoint.to_string(),
            source,
        };
        let stream = match &opts.endpoint {
            Endpoint::Socket(path) => Stream::Unix(UnixStream::connect(path).map_err(connect_err)?),
            Endpoint::Tcp { host, port } => {
                let addrs = (host.as_str(), *port)
                    .to_socket_addrs()
                    .map_err(connect_err)?;
                let mut last = io::Error::new(io::ErrorKind::NotFound, "host has no address");
                let mut stream = None;
                for a in addrs {
                    match TcpStream::connect_timeout(&a, opts.connect_timeout) {
                        Ok(s) => {
                            stream = Some(s);
                            break;
                        }
                        Err(e) => last = e,
                    }
                }
                let s = stream.ok_or_else(|| connect_err(last))?;
                s.set_nodelay(true).map_err(connect_err)?;
                Stream::Tcp(s)
            }
        };
        stream
            .set_read_timeout(Some(opts.connect_timeout))
            .map_err(connect_err)?;
        let mut conn = Conn {
            stream,
            endpoint: opts.endpoint.clone(),
            rbuf: ReadBuf::default(),
            wbuf: Vec::with_capacity(4096),
            parser: ResponseParser::new(Expect::Result),
            info: ServerInfo {
                version: String::new(),
                connection_id: 0,
            },
            nonblocking: false,
            timeout: opts.connect_timeout,
            timeout_setting: CONNECT_TIMEOUT_SETTING,
            waiting_for: "the server's greeting (it accepted the connection but sent no handshake)",
            sent_at: None,
        };
        conn.handshake(opts)?;
        conn.timeout = opts.read_timeout;
        conn.timeout_setting = READ_TIMEOUT_SETTING;
        conn.waiting_for = "a reply";
        conn.stream
            .set_read_timeout(Some(opts.read_timeout))
            .map_err(connect_err)?;
        conn.stream
            .set_write_timeout(Some(opts.read_timeout))
            .map_err(connect_err)?;
        Ok(conn)
    }

    /// The current limit expired while waiting for `waiting_for`.
    fn timed_out(&self, waiting_for: &'static str) -> DbError {
        DbError::TimedOut {
            endpoint: self.endpoint.to_string(),
            waiting_for,
            limit: self.timeout,
            setting: self.timeout_setting,
        }
    }

    /// When the reply to the command in flight is overdue (`None` when nothing is awaited).
    pub fn reply_due(&self) -> Option<Instant> {
        self.sent_at.map(|t| t + self.timeout)
    }

    /// The timeout error if the reply in flight is overdue at `now`: the event loop's check for a
    /// server that stalls while the socket stays open.
    pub fn check_overdue(&self, now: Instant) -> Result<(), DbError> {
        match self.reply_due() {
            Some(due) if now >= due => Err(self.timed_out(self.waiting_for)),
            _ => Ok(()),
        }
    }

    pub fn server_info(&self) -> &ServerInfo {
        &self.info
    }

    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    pub fn fd(&self) -> RawFd {
        self.stream.fd()
    }

    fn read_packet(&mut self) -> Result<Vec<u8>, DbError> {
        loop {
            if let Some((_, p)) = self.rbuf.next_packet()? {
                return Ok(p.to_vec());
            }
            self.fill()?;
        }
    }

    /// One read into the buffer; `Ok(false)` when a non-blocking socket has nothing yet.
    fn fill(&mut self) -> Result<bool, DbError> {
        loop {
            match self.stream.read(self.rbuf.spare()) {
                Ok(0) => {
                    return Err(lost(
                        &self.endpoint,
                        io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "the server closed the connection",
                        ),
                    ))
                }
                Ok(n) => {
                    self.rbuf.filled(n);
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock && self.nonblocking => {
                    return Ok(false)
                }
                // A blocking socket's read timeout expired.
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    return Err(self.timed_out(self.waiting_for))
                }
                Err(e) => return Err(lost(&self.endpoint, e)),
            }
        }
    }

    fn handshake(&mut self, opts: &ConnectOptions) -> Result<(), DbError> {
        let hello = self.read_packet()?;
        if hello.first() == Some(&0xFF) {
            return Err(DbError::Server(ServerError::parse(&hello)));
        }
        if hello.first() != Some(&10) {
            return Err(DbError::Protocol(format!(
                "{} does not speak the MySQL protocol (greeting starts with {:?})",
                self.endpoint,
                hello.first()
            )));
        }
        let bad = || DbError::Protocol("truncated server greeting".into());
        let vend = hello[1..].iter().position(|&b| b == 0).ok_or_else(bad)? + 1;
        let version = String::from_utf8_lossy(&hello[1..vend]);
        // MariaDB prefixes "5.5.5-" so that old clients accept it; the real version follows.
        self.info.version = version
            .strip_prefix("5.5.5-")
            .unwrap_or(&version)
            .to_string();
        let mut pos = vend + 1;
        self.info.connection_id = get_u32(&hello, pos);
        pos += 4;
        let mut nonce = hello.get(pos..pos + 8).ok_or_else(bad)?.to_vec();
        pos += 9;
        let caps_lo = get_u16(&hello, pos) as u32;
        pos += 2 + 1 + 2; // capabilities, collation, status
        let caps_hi = get_u16(&hello, pos) as u32;
        pos += 2;
        let server_caps = caps_lo | caps_hi << 16;
        let auth_len = *hello.get(pos).ok_or_else(bad)? as usize;
        // A MariaDB server clears CLIENT_LONG_PASSWORD ("CLIENT_MYSQL") and puts its extended
        // capabilities in the last 4 of the 10 reserved bytes.
        let server_ext = if server_caps & CLIENT_LONG_PASSWORD == 0 {
            get_u32(&hello, pos + 7)
        } else {
            0
        };
        pos += 1 + 10;
        let part2 = auth_len.saturating_sub(8).max(13);
        if let Some(p2) = hello.get(pos..(pos + part2).min(hello.len())) {
            // The second part is NUL-terminated; the nonce is 20 bytes in all.
            nonce.extend(p2.iter().take_while(|&&b| b != 0));
            pos += part2;
        }
        let mut plugin = String::from("mysql_native_password");
        if server_caps & CLIENT_PLUGIN_AUTH != 0 {
            if let Some(rest) = hello.get(pos..) {
                let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
                if end > 0 {
                    plugin = String::from_utf8_lossy(&rest[..end]).into_owned();
                }
            }
        }
        if server_caps & CLIENT_PROTOCOL_41 == 0 {
            return Err(DbError::Protocol("server predates protocol 4.1".into()));
        }

        let mut caps = CLIENT_LONG_PASSWORD
            | CLIENT_LONG_FLAG
            | CLIENT_PROTOCOL_41
            | CLIENT_TRANSACTIONS
            | CLIENT_SECURE_CONNECTION
            | CLIENT_MULTI_STATEMENTS
            | CLIENT_MULTI_RESULTS
            | CLIENT_PS_MULTI_RESULTS
            | CLIENT_PLUGIN_AUTH;
        if opts.database.is_some() {
            caps |= CLIENT_CONNECT_WITH_DB;
        }
        caps &= server_caps | CLIENT_CONNECT_WITH_DB;
        let ext = server_ext & MARIADB_CLIENT_CACHE_METADATA;
        self.parser.set_metadata_flag(ext != 0);

        let auth_data = self.scramble(&plugin, opts.password.as_bytes(), &nonce)?;
        self.wbuf.clear();
        let p = begin_packet(&mut self.wbuf, 1);
        self.wbuf.extend_from_slice(&caps.to_le_bytes());
        self.wbuf.extend_from_slice(&(16u32 << 20).to_le_bytes());
        self.wbuf.push(HANDSHAKE_COLLATION);
        self.wbuf.extend_from_slice(&[0u8; 19]);
        self.wbuf.extend_from_slice(&ext.to_le_bytes());
        self.wbuf.extend_from_slice(opts.user.as_bytes());
        self.wbuf.push(0);
        self.wbuf.push(auth_data.len() as u8);
        self.wbuf.extend_from_slice(&auth_data);
        if let Some(db) = &opts.database {
            self.wbuf.extend_from_slice(db.as_bytes());
            self.wbuf.push(0);
        }
        self.wbuf.extend_from_slice(plugin.as_bytes());
        self.wbuf.push(0);
        finish_packet(&mut self.wbuf, p)?;
        self.waiting_for = "the server's answer to the login";
        self.flush()?;

        let mut seq = 3u8;
        // A server that keeps asking (auth switch after auth switch) is broken or hostile: each
        // read is bounded by the connect timeout, and the rounds are bounded here.
        for _round in 0..MAX_AUTH_ROUNDS {
            let reply = self.read_packet()?;
            match reply.first() {
                Some(0x00) => return Ok(()),
                Some(0xFF) => {
                    let e = ServerError::parse(&reply);
                    if e.code == 1045 || e.code == 1698 {
                        return Err(DbError::AccessDenied {
                            user: opts.user.clone(),
                            endpoint: self.endpoint.to_string(),
                            message: e.message,
                        });
                    }
                    return Err(DbError::Server(e));
                }
                Some(0xFE) => {
                    // Auth switch: the account uses another plugin, with a fresh nonce.
                    let rest = &reply[1..];
                    let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
                    plugin = String::from_utf8_lossy(&rest[..end]).into_owned();
                    let mut data = rest.get(end + 1..).unwrap_or(&[]).to_vec();
                    if data.last() == Some(&0) {
                        data.pop();
                    }
                    nonce = data;
                    let resp = self.scramble(&plugin, opts.password.as_bytes(), &nonce)?;
                    self.send_auth_data(&resp, seq)?;
                }
                Some(0x01) if plugin == "caching_sha2_password" => match reply.get(1) {
                    Some(3) => continue, // fast auth succeeded; OK follows
                    Some(4) => {
                        if matches!(self.endpoint, Endpoint::Socket(_)) {
                            // A unix socket is a secure transport: the password goes in clear.
                            let mut pw = opts.password.as_bytes().to_vec();
                            pw.push(0);
                            self.send_auth_data(&pw, seq)?;
                        } else {
                            // TCP without TLS: ask for the server's RSA public key and send the
                            // password encrypted with it (MySQL's --get-server-public-key).
                            self.send_auth_data(&[0x02], seq)?;
                            let key = self.read_packet()?;
                            if key.first() != Some(&0x01) {
                                return Err(DbError::Protocol(
                                    "caching_sha2_password: the server sent no public key".into(),
                                ));
                            }
                            let nonce = &nonce[..nonce.len().min(20)];
                            let Some(enc) = auth::rsa_encrypted_password(
                                opts.password.as_bytes(),
                                nonce,
                                &key[1..],
                            ) else {
                                return Err(DbError::UnsupportedAuth {
                                    endpoint: self.endpoint.to_string(),
                                    plugin,
                                    hint:
                                        "the server's RSA public key did not parse; connect over \
                                           the unix socket once (which caches the password)",
                                });
                            };
                            seq = seq.wrapping_add(2);
                            self.send_auth_data(&enc, seq)?;
                        }
                    }
                    _ => return Err(DbError::Protocol("unexpected caching_sha2 message".into())),
                },
                _ => return Err(DbError::Protocol("unexpected authentication reply".into())),
            }
            seq = seq.wrapping_add(2);
        }
        Err(DbError::Protocol(format!(
            "the server asked for authentication more than {MAX_AUTH_ROUNDS} times"
        )))
    }

    fn scramble(&self, plugin: &str, pw: &[u8], nonce: &[u8]) -> Result<Vec<u8>, DbError> {
        let nonce = &nonce[..nonce.len().min(20)];
        match plugin {
            "mysql_native_password" => Ok(auth::native_password(pw, nonce)),
            "caching_sha2_password" => Ok(auth::caching_sha2(pw, nonce)),
            "mysql_clear_password" if matches!(self.endpoint, Endpoint::Socket(_)) => {
                let mut v = pw.to_vec();
                v.push(0);
                Ok(v)
            }
            other => Err(DbError::UnsupportedAuth {
                endpoint: self.endpoint.to_string(),
                plugin: other.to_string(),
                hint: "create the benchmark user IDENTIFIED WITH mysql_native_password",
            }),
        }
    }

    fn send_auth_data(&mut self, data: &[u8], seq: u8) -> Result<(), DbError> {
        self.wbuf.clear();
        let p = begin_packet(&mut self.wbuf, seq);
        self.wbuf.extend_from_slice(data);
        finish_packet(&mut self.wbuf, p)?;
        self.flush()
    }

    /// Writes the whole output buffer, waiting (up to the timeout) while the socket is full.
    fn flush(&mut self) -> Result<(), DbError> {
        let mut off = 0;
        let start = Instant::now();
        while off < self.wbuf.len() {
            match self.stream.write(&self.wbuf[off..]) {
                Ok(0) => {
                    return Err(lost(&self.endpoint, io::ErrorKind::WriteZero.into()));
                }
                Ok(n) => off += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) =>
                {
                    // A server that stopped reading: it is not taking the command.
                    if start.elapsed() >= self.timeout {
                        return Err(
                            self.timed_out("the server to take the command (it stopped reading)")
                        );
                    }
                    wait_fd(self.fd(), libc::POLLOUT)
                }
                Err(e) => return Err(lost(&self.endpoint, e)),
            }
        }
        self.wbuf.clear();
        Ok(())
    }

    /// The buffer the next command is encoded into (see the `encode_*` functions).
    pub fn out(&mut self) -> &mut Vec<u8> {
        self.wbuf.clear();
        &mut self.wbuf
    }

    /// Sends the encoded command and arms the parser for its reply.
    pub fn send(&mut self, expect: Expect) -> Result<(), DbError> {
        self.parser.reset(expect);
        self.flush()?;
        self.sent_at = Some(Instant::now());
        Ok(())
    }

    /// Reads what has arrived; `Some` once the reply is complete. A blocking connection waits.
    pub fn recv(&mut self) -> Result<Option<Reply>, DbError> {
        loop {
            if !self.rbuf.is_empty() {
                if let Some(r) = self.parser.feed(&mut self.rbuf)? {
                    self.sent_at = None;
                    return Ok(Some(r));
                }
            }
            if !self.fill()? {
                return Ok(None);
            }
        }
    }

    pub fn set_nonblocking(&mut self, on: bool) -> Result<(), DbError> {
        self.stream
            .set_nonblocking(on)
            .map_err(|e| lost(&self.endpoint, e))?;
        self.nonblocking = on;
        Ok(())
    }

    fn roundtrip(&mut self, expect: Expect) -> Result<Reply, DbError> {
        self.send(expect)?;
        loop {
            if let Some(r) = self.recv()? {
                return Ok(r);
            }
            self.check_overdue(Instant::now())?;
            wait_fd(self.fd(), libc::POLLIN);
        }
    }

    /// Runs a statement over the text protocol and discards any rows.
    pub fn query(&mut self, sql: &str) -> Result<Outcome, DbError> {
        encode_query(self.out(), sql.as_bytes())?;
        match self.roundtrip(Expect::Result)? {
            Reply::Done(o) => Ok(o),
            Reply::Error(e) => Err(DbError::Server(e)),
            Reply::Prepared(_) => Err(DbError::Protocol("prepare reply to a query".into())),
        }
    }

    /// Runs a statement over the text protocol and returns its rows as text.
    pub fn query_rows(&mut self, sql: &str) -> Result<Vec<TextRow>, DbError> {
        encode_query(self.out(), sql.as_bytes())?;
        self.parser.capture_rows(true);
        let reply = self.roundtrip(Expect::Result);
        let rows = self.parser.take_rows();
        self.parser.capture_rows(false);
        match reply? {
            Reply::Done(_) => Ok(rows),
            Reply::Error(e) => Err(DbError::Server(e)),
            Reply::Prepared(_) => Err(DbError::Protocol("prepare reply to a query".into())),
        }
    }

    /// The first column of the first row, if any.
    pub fn query_value(&mut self, sql: &str) -> Result<Option<String>, DbError> {
        Ok(self
            .query_rows(sql)?
            .into_iter()
            .next()
            .and_then(|r| r.into_iter().next().flatten()))
    }

    pub fn prepare(&mut self, sql: &str) -> Result<Prepared, DbError> {
        encode_prepare(self.out(), sql.as_bytes())?;
        match self.roundtrip(Expect::Prepare)? {
            Reply::Prepared(p) => Ok(p),
            Reply::Error(e) => Err(DbError::Server(e)),
            Reply::Done(_) => Err(DbError::Protocol("result reply to a prepare".into())),
        }
    }

    pub fn execute(&mut self, stmt: &Prepared, params: &[Param]) -> Result<Outcome, DbError> {
        encode_execute(self.out(), stmt.id, params, true)?;
        match self.roundtrip(Expect::Result)? {
            Reply::Done(o) => Ok(o),
            Reply::Error(e) => Err(DbError::Server(e)),
            Reply::Prepared(_) => Err(DbError::Protocol("prepare reply to an execute".into())),
        }
    }

    /// Frees a prepared statement on the server (no reply is sent).
    pub fn close_statement(&mut self, id: u32) -> Result<(), DbError> {
        let out = self.out();
        let p = begin_packet(out, 0);
        out.push(COM_STMT_CLOSE);
        out.extend_from_slice(&id.to_le_bytes());
        finish_packet(out, p)?;
        self.flush()
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        // A polite COM_QUIT keeps the server's "aborted connection" counters clean.
        let mut out = Vec::with_capacity(5);
        let p = begin_packet(&mut out, 0);
        out.push(COM_QUIT);
        if finish_packet(&mut out, p).is_ok() {
            let _ = self.stream.write(&out);
        }
    }
}

fn wait_fd(fd: RawFd, events: libc::c_short) {
    let mut pfd = libc::pollfd {
        fd,
        events,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    unsafe {
        libc::poll(&mut pfd, 1, 1000);
    }
}

fn encode_sql_command(out: &mut Vec<u8>, command: u8, sql: &[u8]) -> Result<(), DbError> {
    let p = begin_packet(out, 0);
    out.push(command);
    out.extend_from_slice(sql);
    finish_packet(out, p)
}

pub fn encode_query(out: &mut Vec<u8>, sql: &[u8]) -> Result<(), DbError> {
    encode_sql_command(out, COM_QUERY, sql)
}

pub fn encode_prepare(out: &mut Vec<u8>, sql: &[u8]) -> Result<(), DbError> {
    encode_sql_command(out, COM_STMT_PREPARE, sql)
}

/// COM_STMT_EXECUTE (no cursor, one iteration). Like libmariadb, callers send the parameter types
/// with the first execution only; the server keeps them for later ones.
pub fn encode_execute(
    out: &mut Vec<u8>,
    stmt_id: u32,
    params: &[Param],
    send_types: bool,
) -> Result<(), DbError> {
    let p = begin_packet(out, 0);
    out.push(COM_STMT_EXECUTE);
    out.extend_from_slice(&stmt_id.to_le_bytes());
    out.push(0);
    out.extend_from_slice(&1u32.to_le_bytes());
    if !params.is_empty() {
        out.extend(std::iter::repeat_n(0u8, params.len().div_ceil(8)));
        out.push(send_types as u8);
        if send_types {
            for prm in params {
                match prm {
                    Param::Int(_) => out.extend_from_slice(&[MYSQL_TYPE_LONGLONG, 0]),
                    Param::Str(_) => out.extend_from_slice(&[MYSQL_TYPE_VAR_STRING, 0]),
                }
            }
        }
        for prm in params {
            match prm {
                Param::Int(v) => out.extend_from_slice(&v.to_le_bytes()),
                Param::Str(s) => {
                    put_lenenc(out, s.len() as u64);
                    out.extend_from_slice(s);
                }
            }
        }
    }
    finish_packet(out, p)
}
