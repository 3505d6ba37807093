//! One client connection: connect and authenticate, then send commands and read replies.
//!
//! Blocking calls ([`Conn::query`], [`Conn::prepare`], [`Conn::execute`]) serve set-up work; the
//! runner's event loop uses the same connection in non-blocking mode through [`Conn::send`],
//! [`Conn::recv`] and the encoders.

use std::io;
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::RawFd;
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::error::DbError;
use super::packet::{begin_packet, finish_packet, ReadBuf};
use super::response::{Expect, Outcome, Prepared, Reply, ResponseParser, TextRow};

use super::command::{
    encode_execute, encode_prepare, encode_query, Param, COM_QUIT, COM_STMT_CLOSE,
};
pub use super::endpoint::{ConnectOptions, Endpoint, DEFAULT_READ_TIMEOUT};
use super::endpoint::{Stream, CONNECT_TIMEOUT_SETTING, READ_TIMEOUT_SETTING};

/// Facts about the server learned at connect time.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct ServerInfo {
    pub version: String,
    pub connection_id: u32,
}

pub struct Conn {
    pub(super) stream: Stream,
    pub(super) endpoint: Endpoint,
    pub(super) rbuf: ReadBuf,
    pub(super) wbuf: Vec<u8>,
    pub(super) parser: ResponseParser,
    pub(super) info: ServerInfo,
    pub(super) nonblocking: bool,
    /// The limit on the current wait, and what is waited for (named in the error).
    pub(super) timeout: Duration,
    pub(super) timeout_setting: &'static str,
    pub(super) waiting_for: &'static str,
    /// When the command whose reply is awaited was sent (the event loop's stall check).
    pub(super) sent_at: Option<Instant>,
    /// [`Conn::send`] leaves the command in the output buffer for an io_uring loop to submit.
    pub(super) deferred: bool,
}

pub(super) fn lost(endpoint: &Endpoint, source: io::Error) -> DbError {
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
            deferred: false,
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
    pub(super) fn timed_out(&self, waiting_for: &'static str) -> DbError {
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

    pub(super) fn read_packet(&mut self) -> Result<Vec<u8>, DbError> {
        loop {
            if let Some((_, p)) = self.rbuf.next_packet()? {
                return Ok(p.to_vec());
            }
            self.fill()?;
        }
    }

    /// One read into the buffer; `Ok(false)` when a non-blocking socket has nothing yet.
    pub(super) fn fill(&mut self) -> Result<bool, DbError> {
        loop {
            match self.stream.read(self.rbuf.spare()) {
                Ok(0) => return Err(self.closed()),
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

    /// Writes the whole output buffer, waiting (up to the timeout) while the socket is full.
    pub(super) fn flush(&mut self) -> Result<(), DbError> {
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

    /// Sends the encoded command and arms the parser for its reply. With sends deferred the
    /// command stays in [`Conn::pending_out`] for the caller's ring to submit.
    pub fn send(&mut self, expect: Expect) -> Result<(), DbError> {
        self.arm(expect, !self.deferred)
    }

    /// Arms the parser for the reply to the encoded command, writing the command first if `write`.
    fn arm(&mut self, expect: Expect, write: bool) -> Result<(), DbError> {
        self.parser.reset(expect);
        if write {
            self.flush()?;
        }
        self.sent_at = Some(Instant::now());
        Ok(())
    }

    /// Leaves each command [`Conn::send`] arms in the output buffer instead of writing it: an
    /// io_uring loop submits the write and the read of its reply in one system call. Blocking
    /// set-up calls ([`Conn::query`], the statement closes) still write at once.
    pub fn defer_sends(&mut self, on: bool) {
        self.deferred = on;
    }

    /// The armed command a deferred [`Conn::send`] left to write (empty when none).
    pub fn pending_out(&self) -> &[u8] {
        &self.wbuf
    }

    /// The deferred command was written in full.
    pub fn sent_out(&mut self) {
        self.wbuf.clear();
    }

    /// Room for the next read: the ring reads into it, then reports the count to
    /// [`Conn::received`]. Nothing else may touch the connection while that read is in flight.
    pub fn recv_space(&mut self) -> &mut [u8] {
        self.rbuf.spare()
    }

    /// Takes `n` bytes a ring read put into [`Conn::recv_space`]; `Some` once the reply is
    /// complete. Zero bytes is the server closing the connection.
    pub fn received(&mut self, n: usize) -> Result<Option<Reply>, DbError> {
        if n == 0 {
            return Err(self.closed());
        }
        self.rbuf.filled(n);
        let r = self.parser.feed(&mut self.rbuf)?;
        if r.is_some() {
            self.sent_at = None;
        }
        Ok(r)
    }

    /// The error of a read that found the connection closed by the server.
    fn closed(&self) -> DbError {
        lost(
            &self.endpoint,
            io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "the server closed the connection",
            ),
        )
    }

    /// The connection-lost error for a failed ring read or write (`errno` as the kernel gave it).
    pub fn lost_errno(&self, errno: i32) -> DbError {
        lost(&self.endpoint, io::Error::from_raw_os_error(errno))
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

    pub(super) fn roundtrip(&mut self, expect: Expect) -> Result<Reply, DbError> {
        // Set-up and closing calls write now even when the event loop defers its sends.
        self.arm(expect, true)?;
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
        self.query_bytes(sql.as_bytes())
    }

    /// [`Conn::query`] for a statement that need not be UTF-8 (a replayed one).
    pub fn query_bytes(&mut self, sql: &[u8]) -> Result<Outcome, DbError> {
        encode_query(self.out(), sql)?;
        match self.roundtrip(Expect::Result)? {
            Reply::Done(o) => Ok(o),
            Reply::Error(e) => Err(DbError::Server(e)),
            Reply::Prepared(_) => Err(DbError::Protocol("prepare reply to a query".into())),
        }
    }

    /// Keeps the text rows of every later reply until taken (a scripted workload reads them).
    pub fn capture_rows(&mut self, on: bool) {
        self.parser.capture_rows(on);
    }

    /// The rows of the reply last received, when capturing.
    pub fn take_rows(&mut self) -> Vec<TextRow> {
        self.parser.take_captured()
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

pub(super) fn wait_fd(fd: RawFd, events: libc::c_short) {
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
