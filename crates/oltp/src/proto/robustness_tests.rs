//! Random bytes into every parser of server data: each must return a value or an error, never
//! panic, never loop. Seeded, so a failure replays; the misbehaving-server tests
//! (tests/fast/hostile_server.rs) cover the same parsers through a socket, with real replies.

use super::auth;
use super::error::ServerError;
use super::packet::{get_lenenc, ReadBuf};
use super::response::{Expect, ResponseParser};

/// The engine's own generator, seeded: a failing input replays.
struct Rng(crate::rng::SbRng);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    /// Bytes biased towards the values the protocol gives meaning to.
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        const SPECIAL: [u8; 8] = [0x00, 0xFB, 0xFC, 0xFD, 0xFE, 0xFF, 0x01, 0x0A];
        (0..n)
            .map(|_| {
                if self.below(4) == 0 {
                    SPECIAL[self.below(8) as usize]
                } else {
                    self.next() as u8
                }
            })
            .collect()
    }
}

fn buf_with(bytes: &[u8]) -> ReadBuf {
    let mut rb = ReadBuf::with_capacity(16);
    let mut off = 0;
    while off < bytes.len() {
        let spare = rb.spare();
        let n = spare.len().min(bytes.len() - off);
        spare[..n].copy_from_slice(&bytes[off..off + n]);
        rb.filled(n);
        off += n;
    }
    rb
}

/// Well-framed packets with random payloads: what a confused or hostile server would send.
fn framed(rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    for seq in 0..rng.below(12) as u8 {
        let n = rng.below(40) as usize;
        let payload = rng.bytes(n);
        out.extend_from_slice(&[n as u8, 0, 0, seq]);
        out.extend_from_slice(&payload);
    }
    out
}

#[test]
fn random_bytes_never_panic_any_parser() {
    let mut rng = Rng(crate::rng::SbRng::new(0x0123_4567, 0));
    let mut outcomes = [0usize; 3]; // reply, error, needs more
    for i in 0..20_000 {
        let bytes = if i % 2 == 0 {
            framed(&mut rng)
        } else {
            let n = rng.below(200) as usize;
            rng.bytes(n)
        };

        // Framing: every packet is taken at most once, then the buffer runs dry or errors.
        let mut rb = buf_with(&bytes);
        let mut packets = 0;
        while let Ok(Some(_)) = rb.next_packet() {
            packets += 1;
            assert!(packets <= bytes.len() / 4 + 1);
        }

        // Replies, in every mode the driver uses.
        for expect in [Expect::Result, Expect::Prepare] {
            for (capture, metadata) in [(false, false), (true, false), (true, true)] {
                let mut p = ResponseParser::new(expect);
                p.capture_rows(capture);
                p.set_metadata_flag(metadata);
                let mut rb = buf_with(&bytes);
                match p.feed(&mut rb) {
                    Ok(Some(_)) => outcomes[0] += 1,
                    Err(e) => {
                        assert!(!e.to_string().is_empty());
                        outcomes[1] += 1
                    }
                    Ok(None) => outcomes[2] += 1,
                }
                let _ = p.take_rows();
            }
        }

        // Single fields.
        let _ = ServerError::parse(&bytes);
        let mut pos = 0;
        while pos < bytes.len() {
            let before = pos;
            if get_lenenc(&bytes, &mut pos).is_none() {
                break;
            }
            assert!(pos > before);
        }
        if i % 50 == 0 {
            // The RSA key the server sends on request: noise, or a PEM frame around noise.
            let pem = if i % 100 == 0 {
                bytes.clone()
            } else {
                let mut v = b"-----BEGIN PUBLIC KEY-----\n".to_vec();
                v.extend_from_slice(&bytes);
                v.extend_from_slice(b"\n-----END PUBLIC KEY-----\n\0");
                v
            };
            assert!(auth::rsa_encrypted_password(b"pw", &bytes, &pem).is_none());
        }
    }
    // The inputs reach every outcome, so the parsers were really exercised past the first byte.
    assert!(outcomes.iter().all(|&n| n > 1000), "{outcomes:?}");
}
