//! The driver against byte sequences recorded from real servers (tests/captures/*.json, made by
//! tools/capture-mysql-protocol.py; the README there says from which server and how). A fake
//! server replays the server's side of each recorded connection packet by packet; the driver runs
//! the same scripted session (examples/mysql_session.rs) and must read every reply as it did
//! live, and send what it sent then — the one exception is caching_sha2_password's RSA-encrypted
//! password (random padding), which is decrypted with the recorded server's private key instead.
//!
//! These run in CI without a MySQL server: the bytes are MySQL 9.7.2's own.

use crate::mysql_session;

use crate::support;

use std::io::Write;
use std::net::TcpListener;
use std::thread::JoinHandle;
use std::time::Duration;

use oltp::proto::{Conn, ConnectOptions, Endpoint};
use support::{frame, load, read_packet, unhex, Capture, Packet, Recorded};

/// Packets as (sequence number, payload).
type Sent = Vec<(u8, Vec<u8>)>;

/// Serves one recorded connection; returns what the client sent, packet by packet.
fn serve(packets: Vec<Packet>) -> (u16, JoinHandle<Sent>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let h = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut got = Vec::new();
        for p in packets {
            if p.from == "server" {
                s.write_all(&frame(p.seq, &unhex(&p.hex))).unwrap();
            } else {
                match read_packet(&mut s) {
                    Ok(x) => got.push(x),
                    Err(_) => break,
                }
            }
        }
        got
    });
    (port, h)
}

/// The driver's options for the fake server on `port`, as the capture's account.
fn options(cap: &Capture, port: u16) -> ConnectOptions {
    ConnectOptions {
        endpoint: Endpoint::Tcp {
            host: "127.0.0.1".into(),
            port,
        },
        user: cap.user.clone(),
        password: cap.password.clone(),
        database: None,
        connect_timeout: Duration::from_secs(5),
        read_timeout: oltp::proto::conn::DEFAULT_READ_TIMEOUT,
    }
}

/// Replays `conn` to the driver's session; returns what the driver sent and what it printed.
fn replay(cap: &Capture, conn: &Recorded) -> (Sent, Vec<String>) {
    let (port, server) = serve(conn.packets.clone());
    let opts = options(cap, port);
    let mut c = Conn::connect(&opts).unwrap_or_else(|e| panic!("{}: {e}", conn.name));
    let lines = mysql_session::session(&mut c).unwrap_or_else(|e| panic!("{}: {e}", conn.name));
    drop(c);
    (server.join().unwrap(), lines)
}

/// The recorded client packets, and whether each is the RSA-encrypted password.
fn recorded_client(conn: &Recorded) -> Vec<(u8, Vec<u8>, bool)> {
    let mut asked_key = false;
    let mut out = Vec::new();
    for p in &conn.packets {
        if p.from != "client" {
            continue;
        }
        let b = unhex(&p.hex);
        let rsa = asked_key;
        asked_key = b == [0x02];
        out.push((p.seq, b, rsa));
    }
    out
}

/// The nonce of the last greeting or auth-switch request before the client's RSA reply.
fn nonce_before_rsa(conn: &Recorded) -> Vec<u8> {
    let mut nonce = Vec::new();
    for p in &conn.packets {
        let b = unhex(&p.hex);
        if p.from == "server" && b.first() == Some(&0x0a) {
            // Greeting: version\0, id(4), part1(8), filler, caps, charset, status, caps, len, 10
            // reserved, part2 (NUL-terminated).
            let v = b.iter().position(|&x| x == 0).unwrap();
            let part1 = &b[v + 5..v + 13];
            let part2 = &b[v + 13 + 1 + 2 + 1 + 2 + 2 + 1 + 10..];
            let end = part2.iter().position(|&x| x == 0).unwrap_or(part2.len());
            nonce = [part1, &part2[..end]].concat();
        } else if p.from == "server" && b.first() == Some(&0xfe) && b.len() > 1 {
            let rest = &b[1..];
            let end = rest.iter().position(|&x| x == 0).unwrap();
            let mut d = rest[end + 1..].to_vec();
            if d.last() == Some(&0) {
                d.pop();
            }
            nonce = d;
        } else if p.from == "client" && b == [0x02] {
            break;
        }
    }
    nonce
}

/// What the server does with the RSA reply: decrypt, XOR with the nonce, strip the NUL.
fn decrypt_password(pem: &str, nonce: &[u8], reply: &[u8]) -> Vec<u8> {
    use rsa::pkcs8::DecodePrivateKey;
    // MySQL writes its key files with a trailing NUL byte.
    let pem = pem.trim_end_matches('\0');
    let key = rsa::RsaPrivateKey::from_pkcs8_pem(pem)
        .or_else(|_| {
            use rsa::pkcs1::DecodeRsaPrivateKey;
            rsa::RsaPrivateKey::from_pkcs1_pem(pem)
        })
        .expect("the recorded server's private key");
    let mut plain = key
        .decrypt(rsa::Oaep::new::<sha1::Sha1>(), reply)
        .expect("the reply decrypts with the server's key");
    for (i, b) in plain.iter_mut().enumerate() {
        *b ^= nonce[i % nonce.len()];
    }
    assert_eq!(plain.pop(), Some(0), "the password ends with a NUL");
    plain
}

/// Replays every connection of a capture; returns the capture and how many RSA replies were
/// checked by decryption.
fn check(file: &str) -> (Capture, usize) {
    let cap = load(file);
    assert!(!cap.connections.is_empty());
    let mut rsa_checked = 0;
    for conn in &cap.connections {
        let (sent, lines) = replay(&cap, conn);
        assert_eq!(
            lines, conn.lines,
            "{}: the session reads as it did live",
            conn.name
        );
        let want = recorded_client(conn);
        assert_eq!(sent.len(), want.len(), "{}: packets sent", conn.name);
        for ((seq, got), (wseq, wbytes, rsa)) in sent.iter().zip(&want) {
            assert_eq!(seq, wseq, "{}: sequence numbers", conn.name);
            if *rsa {
                let pem = cap
                    .private_key
                    .as_deref()
                    .expect("a private key in the capture");
                let pw = decrypt_password(pem, &nonce_before_rsa(conn), got);
                assert_eq!(pw, cap.password.as_bytes(), "{}: the RSA reply", conn.name);
                // The recorded reply, made by the same code live, decrypts the same way.
                let live = decrypt_password(pem, &nonce_before_rsa(conn), wbytes);
                assert_eq!(live, pw);
                rsa_checked += 1;
            } else {
                assert_eq!(got, wbytes, "{}: seq {seq}", conn.name);
            }
        }
    }
    (cap, rsa_checked)
}

#[test]
fn mariadb_10_11_recordings_replay() {
    let (cap, _) = check("mariadb-10.11.18.json");
    assert!(cap.server.contains("MariaDB"), "{}", cap.server);
    // The second connection is a real auth switch (to mysql_native_password).
    let switch = &cap.connections[1].packets[2];
    assert!(
        switch.hex.starts_with("fe6d7973716c5f6e6174697665"),
        "{}",
        switch.hex
    );
}

#[test]
fn mysql_9_7_caching_sha2_full_and_fast_authentication_and_auth_switch_replay() {
    let (cap, rsa_checked) = check("mysql-9.7.2.json");
    assert!(cap.server.starts_with("MySQL 9.7.2"), "{}", cap.server);
    let hex = |c: usize, i: usize| cap.connections[c].packets[i].hex.clone();
    // Full authentication over TCP: "perform full authentication", the client asks for the
    // public key, the server sends it (PEM), the client's encrypted password decrypts right.
    assert_eq!(hex(0, 2), "0104");
    assert_eq!(hex(0, 3), "02");
    assert!(
        unhex(&hex(0, 4)).starts_with(b"\x01-----BEGIN PUBLIC KEY-----"),
        "{}",
        hex(0, 4)
    );
    assert_eq!(rsa_checked, 1);
    // The next login of the same account is answered from the server's cache.
    assert_eq!(hex(1, 2), "0103");
    // A client that answered for another plugin is switched to caching_sha2_password.
    assert!(unhex(&hex(2, 2)).starts_with(b"\xfecaching_sha2_password\0"));
    assert!(cap.connections[0].lines[0].starts_with("version 9.7.2"));
}

#[test]
fn a_server_that_keeps_switching_authentication_is_refused_not_followed_forever() {
    // MariaDB's recorded greeting, then the recorded auth-switch request after every reply.
    let cap = load("mariadb-10.11.18.json");
    let conn = &cap.connections[1];
    let greeting = conn.packets[0].clone();
    let switch = conn.packets[2].clone();
    assert!(switch.hex.starts_with("fe"));
    let mut packets = vec![greeting];
    let mut seq = 2u8;
    for _ in 0..50 {
        packets.push(Packet {
            from: "client".into(),
            seq: 0,
            hex: String::new(),
        });
        packets.push(Packet {
            seq,
            ..switch.clone()
        });
        seq = seq.wrapping_add(2);
    }
    let (port, server) = serve(packets);
    let opts = options(&cap, port);
    let t0 = std::time::Instant::now();
    let e = Conn::connect(&opts).err().expect("refused");
    assert!(e.to_string().contains("more than 8 times"), "{e}");
    assert!(t0.elapsed() < Duration::from_secs(5));
    drop(server);
}
