//! The fast tier of the driver: recorded MariaDB and MySQL conversations replayed by a fake
//! server, whole and with faults injected at every packet. No server needed.

#[path = "../../examples/mysql_session.rs"]
mod mysql_session;
#[path = "../support/mod.rs"]
mod support;

mod hostile_server;
mod mysql_captures;
