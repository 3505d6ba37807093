//! Accounts on a fresh server: a benchmark user with a random password, reachable only from this
//! machine (socket and 127.0.0.1) and, for a remote benchmark client, from that one address; and a
//! superuser that never accepts a passwordless TCP login.

use anyhow::{Context, Result};
use oltp::proto::Conn;
use serde::{Deserialize, Serialize};

use super::flavor::Flavor;

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Credentials {
    pub user: String,
    pub password: String,
    pub db: String,
    /// The superuser; MariaDB's authenticates by unix socket peer (no password), MySQL's gets a
    /// random password after `--initialize-insecure`.
    pub root_user: String,
    pub root_password: String,
}

pub fn random_password() -> Result<String> {
    let bytes: [u8; 18] =
        crate::infra::random_bytes().context("reading /dev/urandom for a password")?;
    Ok(crate::infra::fs::hex(&bytes))
}

/// The OS user the server runs as and MariaDB's socket-authenticated superuser.
pub fn os_user() -> String {
    if crate::infra::is_root() {
        return "root".into();
    }
    std::env::var("USER").unwrap_or_else(|_| "root".into())
}

/// Creates the benchmark database and user; secures root on MySQL.
pub fn create(root: &mut Conn, flavor: &Flavor, creds: &Credentials) -> Result<()> {
    let pw = &creds.password;
    let mut stmts = vec![
        format!("CREATE DATABASE IF NOT EXISTS `{}`", creds.db),
        format!(
            "CREATE USER '{}'@'localhost' IDENTIFIED BY '{pw}'",
            creds.user
        ),
        format!(
            "CREATE USER '{}'@'127.0.0.1' IDENTIFIED BY '{pw}'",
            creds.user
        ),
        format!(
            "GRANT ALL ON `{}`.* TO '{}'@'localhost', '{}'@'127.0.0.1'",
            creds.db, creds.user, creds.user
        ),
    ];
    if flavor.family.is_mysql_like() {
        stmts.push(format!(
            "ALTER USER 'root'@'localhost' IDENTIFIED BY '{}'",
            creds.root_password
        ));
    }
    for sql in stmts {
        root.query(&sql)
            .with_context(|| format!("setting up accounts: {}", redact(&sql, creds)))?;
    }
    Ok(())
}

/// On a copy of someone's datadir started with the grant tables skipped: loads them and creates
/// the superuser and the benchmark user of `creds` (the benchmark user with every privilege: a
/// replayed log may use any database of the copy). Same-named users the copy had are replaced.
pub fn create_on_copy(conn: &mut Conn, creds: &Credentials) -> Result<()> {
    let (pw, admin_pw) = (&creds.password, &creds.root_password);
    let mut stmts = vec!["FLUSH PRIVILEGES".to_string()];
    for (user, pw) in [(&creds.root_user, admin_pw), (&creds.user, pw)] {
        for host in ["localhost", "127.0.0.1"] {
            stmts.push(format!("DROP USER IF EXISTS '{user}'@'{host}'"));
            stmts.push(format!(
                "CREATE USER '{user}'@'{host}' IDENTIFIED BY '{pw}'"
            ));
        }
        stmts.push(format!(
            "GRANT ALL ON *.* TO '{user}'@'localhost', '{user}'@'127.0.0.1' WITH GRANT OPTION"
        ));
    }
    stmts.push(format!("CREATE DATABASE IF NOT EXISTS `{}`", creds.db));
    for sql in stmts {
        conn.query(&sql)
            .with_context(|| format!("setting up accounts on the copy: {}", redact(&sql, creds)))?;
    }
    Ok(())
}

/// Lets the benchmark user in from `client` too (a benchmark client on another host), with the
/// same random password and the same grant as from this machine; the superuser stays local.
pub fn allow_client(root: &mut Conn, creds: &Credentials, client: std::net::IpAddr) -> Result<()> {
    let stmts = [
        format!(
            "CREATE USER IF NOT EXISTS '{}'@'{client}' IDENTIFIED BY '{}'",
            creds.user, creds.password
        ),
        format!(
            "ALTER USER '{}'@'{client}' IDENTIFIED BY '{}'",
            creds.user, creds.password
        ),
        format!(
            "GRANT ALL ON `{}`.* TO '{}'@'{client}'",
            creds.db, creds.user
        ),
    ];
    for sql in stmts {
        root.query(&sql).with_context(|| {
            format!("letting in the client at {client}: {}", redact(&sql, creds))
        })?;
    }
    Ok(())
}

/// Gives the benchmark user a new password (a template's copy must not reuse the template's).
pub fn rotate(root: &mut Conn, creds: &Credentials) -> Result<()> {
    for host in ["localhost", "127.0.0.1"] {
        let sql = format!(
            "ALTER USER '{}'@'{host}' IDENTIFIED BY '{}'",
            creds.user, creds.password
        );
        root.query(&sql)
            .with_context(|| format!("setting a new password: {}", redact(&sql, creds)))?;
    }
    Ok(())
}

fn redact(sql: &str, c: &Credentials) -> String {
    sql.replace(&c.password, "***")
        .replace(&c.root_password, "***")
}
