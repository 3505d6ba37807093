//! A lean client for the MySQL/MariaDB wire protocol: exactly what the workloads need.
//!
//! Written for the driver's hot path rather than taken from a general-purpose crate: one `write` per
//! command, replies read into a reusable buffer and walked in place, no per-row allocation, and no
//! session statements behind the user's back (sysbench sends none either).

mod auth;
pub mod conn;
pub mod error;
pub mod packet;
pub mod response;

pub use conn::{
    encode_execute, encode_prepare, encode_query, Conn, ConnectOptions, Endpoint, Param, ServerInfo,
};
pub use error::{client_code, DbError, ServerError};
pub use response::{Expect, Outcome, Prepared, Reply};

#[cfg(test)]
mod robustness_tests;
