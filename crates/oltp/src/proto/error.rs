//! Errors of the client protocol, with the numeric codes sysbench's error policy is written in.

use std::fmt;
use std::io;

/// Client-side error numbers of libmysqlclient/libmariadb, so that `--mysql-ignore-errors` lists
/// written for sysbench mean the same here.
pub mod client_code {
    pub const CONN_HOST_ERROR: u16 = 2003;
    pub const CONNECTION_ERROR: u16 = 2002;
    pub const SERVER_GONE: u16 = 2006;
    pub const SERVER_LOST: u16 = 2013;
    pub const MALFORMED_PACKET: u16 = 2027;
    pub const AUTH_PLUGIN_CANNOT_LOAD: u16 = 2059;
}

/// An ERR packet from the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerError {
    pub code: u16,
    pub sqlstate: String,
    pub message: String,
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "error {} ({}): {}",
            self.code, self.sqlstate, self.message
        )
    }
}

impl ServerError {
    pub(crate) fn parse(payload: &[u8]) -> ServerError {
        let code = super::int::get_u16(payload, 1);
        let (sqlstate, msg) = if payload.get(3) == Some(&b'#') && payload.len() >= 9 {
            (
                String::from_utf8_lossy(&payload[4..9]).into_owned(),
                &payload[9..],
            )
        } else {
            (String::from("HY000"), payload.get(3..).unwrap_or(&[]))
        };
        ServerError {
            code,
            sqlstate,
            message: String::from_utf8_lossy(msg).into_owned(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The server answered a statement with an error.
    #[error("{0}")]
    Server(ServerError),
    /// No connection could be made to the endpoint.
    #[error("cannot connect to the server at {endpoint}: {source} (is a server running there? check --mysql-host, --mysql-port and --mysql-socket)")]
    Connect { endpoint: String, source: io::Error },
    /// The connection broke while a command was in flight.
    #[error("lost connection to the server at {endpoint}: {source}")]
    Lost { endpoint: String, source: io::Error },
    /// The server refused the credentials.
    #[error("access denied for user '{user}' at {endpoint}: {message}")]
    AccessDenied {
        user: String,
        endpoint: String,
        message: String,
    },
    #[error("authentication at {endpoint} needs the '{plugin}' plugin, which pgoforge does not speak; {hint}")]
    UnsupportedAuth {
        endpoint: String,
        plugin: String,
        hint: &'static str,
    },
    /// The server kept the connection open but sent nothing (or took nothing) for too long.
    #[error("the server at {endpoint} stalled: nothing within {limit:?} while waiting for {waiting_for} (the {setting}); a server this slow is stuck — check its error log")]
    TimedOut {
        endpoint: String,
        waiting_for: &'static str,
        limit: std::time::Duration,
        /// Which limit expired, as the user would change it.
        setting: &'static str,
    },
    #[error("protocol error: {0}")]
    Protocol(String),
}

impl DbError {
    /// The error number as libmysqlclient would report it (server codes as sent, client codes for
    /// connection failures).
    pub fn code(&self) -> u16 {
        match self {
            DbError::Server(e) => e.code,
            DbError::Connect { endpoint, .. } => {
                if endpoint.starts_with("unix") {
                    client_code::CONNECTION_ERROR
                } else {
                    client_code::CONN_HOST_ERROR
                }
            }
            DbError::Lost { source, .. } => match source.kind() {
                io::ErrorKind::BrokenPipe => client_code::SERVER_GONE,
                _ => client_code::SERVER_LOST,
            },
            DbError::AccessDenied { .. } => 1045,
            DbError::UnsupportedAuth { .. } => client_code::AUTH_PLUGIN_CANNOT_LOAD,
            DbError::Protocol(_) => client_code::MALFORMED_PACKET,
            // libmysqlclient reports an expired read timeout as a lost connection.
            DbError::TimedOut { .. } => client_code::SERVER_LOST,
        }
    }

    /// True when the connection is unusable afterwards and must be re-established.
    pub fn is_connection_loss(&self) -> bool {
        matches!(
            self,
            DbError::Lost { .. }
                | DbError::Connect { .. }
                | DbError::Protocol(_)
                | DbError::TimedOut { .. }
        )
    }
}
