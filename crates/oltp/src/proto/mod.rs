//! A lean client for the MySQL/MariaDB wire protocol: exactly what the workloads need.
//!
//! Written for the driver's hot path rather than taken from a general-purpose crate: one `write` per
//! command, replies read into a reusable buffer and walked in place, no per-row allocation, and no
//! session statements behind the user's back (sysbench sends none either).

mod auth;
mod command;
pub mod conn;
mod endpoint;
pub mod error;
mod handshake;
mod int;
pub mod packet;
pub mod response;

pub use command::{encode_execute, encode_prepare, encode_query, Param};
pub use conn::{Conn, ServerInfo};
pub use endpoint::{ConnectOptions, Endpoint};
pub use error::{client_code, DbError, ServerError};
pub use response::{Expect, Outcome, Prepared, Reply, TextRow};

#[cfg(test)]
mod robustness_tests;
