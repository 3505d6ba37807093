//! The connection's opening: the server's greeting read, the capabilities negotiated, the
//! password scrambled for the server's authentication plugin, auth switches and full
//! authentication followed to the OK.

use super::auth;
use super::error::{DbError, ServerError};
use super::packet::{begin_packet, finish_packet, get_u16, get_u32};

use super::conn::Conn;
use super::endpoint::{ConnectOptions, Endpoint};

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

/// Authentication exchanges after the handshake response (a switch and a full authentication
/// need three).
const MAX_AUTH_ROUNDS: usize = 8;
/// What the server's greeting offers: its capabilities (MariaDB's extended ones apart), the
/// nonce to scramble the password with, and the authentication plugin it expects.
struct Greeting {
    caps: u32,
    ext: u32,
    nonce: Vec<u8>,
    plugin: String,
}

impl Conn {
    pub(super) fn handshake(&mut self, opts: &ConnectOptions) -> Result<(), DbError> {
        let g = self.greeting()?;
        self.login(opts, &g)?;
        self.authenticate(opts, g.plugin, g.nonce)
    }

    /// Reads the server's greeting (its version and connection id kept in `info`).
    fn greeting(&mut self) -> Result<Greeting, DbError> {
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
        Ok(Greeting {
            caps: server_caps,
            ext: server_ext,
            nonce,
            plugin,
        })
    }

    /// Sends the handshake response: the capabilities both sides have, the user, the scrambled
    /// password, the database and the plugin.
    fn login(&mut self, opts: &ConnectOptions, g: &Greeting) -> Result<(), DbError> {
        let (server_caps, server_ext, plugin, nonce) = (g.caps, g.ext, &g.plugin, &g.nonce);
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

        let auth_data = self.scramble(plugin, opts.password.as_bytes(), nonce)?;
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
        Ok(())
    }

    /// Follows the server's answers to the login — auth switches, caching_sha2's full
    /// authentication — to its OK or its error.
    fn authenticate(
        &mut self,
        opts: &ConnectOptions,
        mut plugin: String,
        mut nonce: Vec<u8>,
    ) -> Result<(), DbError> {
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

    pub(super) fn scramble(
        &self,
        plugin: &str,
        pw: &[u8],
        nonce: &[u8],
    ) -> Result<Vec<u8>, DbError> {
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

    pub(super) fn send_auth_data(&mut self, data: &[u8], seq: u8) -> Result<(), DbError> {
        self.wbuf.clear();
        let p = begin_packet(&mut self.wbuf, seq);
        self.wbuf.extend_from_slice(data);
        finish_packet(&mut self.wbuf, p)?;
        self.flush()
    }
}
