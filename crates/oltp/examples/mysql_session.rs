//! One scripted client session against a server, for protocol captures: connect over TCP, then
//! the replies whose shapes differ between servers — a text result set with NULLs, an OK packet,
//! prepared statements with integer and string parameters, a server error. Prints what it got.
//!
//! tools/capture-mysql-protocol.py records the bytes of this session between the driver and a
//! real mysqld; crates/oltp/tests/fast/mysql_captures.rs replays the server's side of the recording to
//! the same session (this file, included there) and checks the driver reads it as it did live.
//!
//!     cargo run -p oltp --example mysql_session -- 127.0.0.1 PORT USER PASSWORD

use oltp::proto::{Conn, ConnectOptions, DbError, Endpoint, Param};

/// The session; returns one line per step.
pub fn session(c: &mut Conn) -> Result<Vec<String>, DbError> {
    let mut out = vec![format!("version {}", c.server_info().version)];
    let rows = c.query_rows("SELECT 1, NULL, 'x' UNION ALL SELECT 2, 'y', 'z'")?;
    out.push(format!("rows {rows:?}"));
    let ok = c.query("DO 1")?;
    out.push(format!(
        "ok result_set={} affected={}",
        ok.result_set, ok.affected_rows
    ));
    let plus = c.prepare("SELECT ? + 1")?;
    out.push(format!(
        "prepared params={} columns={}",
        plus.params, plus.columns
    ));
    let r = c.execute(&plus, &[Param::Int(41)])?;
    out.push(format!("executed rows={}", r.rows));
    let cat = c.prepare("SELECT CONCAT(?, 'b'), ?")?;
    let r = c.execute(&cat, &[Param::Str(b"a"), Param::Int(7)])?;
    out.push(format!("executed rows={} columns={}", r.rows, cat.columns));
    match c.query("SELECT no_such_column") {
        Err(DbError::Server(e)) => out.push(format!("error {} {}", e.code, e.sqlstate)),
        other => out.push(format!("expected an error, got {other:?}")),
    }
    c.close_statement(plus.id)?;
    c.close_statement(cat.id)?;
    Ok(out)
}

#[allow(dead_code)]
fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let [host, port, user, password] = a.as_slice() else {
        eprintln!("usage: mysql_session HOST PORT USER PASSWORD");
        std::process::exit(2);
    };
    let opts = ConnectOptions {
        endpoint: Endpoint::Tcp {
            host: host.clone(),
            port: port.parse().expect("a port number"),
        },
        user: user.clone(),
        password: password.clone(),
        database: None,
        connect_timeout: std::time::Duration::from_secs(5),
        read_timeout: oltp::proto::conn::DEFAULT_READ_TIMEOUT,
    };
    let mut c = match Conn::connect(&opts) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("connect: {e}");
            std::process::exit(1);
        }
    };
    match session(&mut c) {
        Ok(lines) => lines.iter().for_each(|l| println!("{l}")),
        Err(e) => {
            eprintln!("session: {e}");
            std::process::exit(1);
        }
    }
}
