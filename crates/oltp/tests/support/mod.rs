//! Recorded server conversations (tests/captures/*.json) and the pieces of a fake server that
//! replays them: shared by the replay tests and the misbehaving-server tests.

#![allow(dead_code)]

use std::io::Read;
use std::net::TcpStream;
use std::path::Path;

use serde::Deserialize;

#[derive(Deserialize)]
pub struct Capture {
    pub server: String,
    pub user: String,
    pub password: String,
    /// The recorded server's RSA private key (PEM), where a connection used full authentication.
    #[serde(default)]
    pub private_key: Option<String>,
    pub connections: Vec<Recorded>,
}

#[derive(Deserialize)]
pub struct Recorded {
    pub name: String,
    /// What the session printed live.
    #[serde(default)]
    pub lines: Vec<String>,
    pub packets: Vec<Packet>,
}

#[derive(Deserialize, Clone)]
pub struct Packet {
    pub from: String,
    pub seq: u8,
    pub hex: String,
}

pub fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

pub fn load(name: &str) -> Capture {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/captures")
        .join(name);
    serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap()
}

/// Every capture the driver is tested against.
pub const CAPTURES: [&str; 2] = ["mariadb-10.11.18.json", "mysql-9.7.2.json"];

pub fn read_packet(s: &mut TcpStream) -> std::io::Result<(u8, Vec<u8>)> {
    let mut h = [0u8; 4];
    s.read_exact(&mut h)?;
    let n = h[0] as usize | (h[1] as usize) << 8 | (h[2] as usize) << 16;
    let mut p = vec![0u8; n];
    s.read_exact(&mut p)?;
    Ok((h[3], p))
}

/// A packet on the wire: the 3-byte length, the sequence number, the payload.
pub fn frame(seq: u8, payload: &[u8]) -> Vec<u8> {
    let n = payload.len();
    let mut w = vec![n as u8, (n >> 8) as u8, (n >> 16) as u8, seq];
    w.extend_from_slice(payload);
    w
}
