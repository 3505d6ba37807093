//! Password scrambles of the authentication plugins the driver speaks.

use sha1::{Digest, Sha1};
use sha2::Sha256;

/// `mysql_native_password`: SHA1(pw) XOR SHA1(nonce + SHA1(SHA1(pw))).
pub fn native_password(password: &[u8], nonce: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let h1 = Sha1::digest(password);
    let h2 = Sha1::digest(h1);
    let mut h = Sha1::new();
    h.update(nonce);
    h.update(h2);
    let h3 = h.finalize();
    h1.iter().zip(h3.iter()).map(|(a, b)| a ^ b).collect()
}

/// `caching_sha2_password` fast path: SHA256(pw) XOR SHA256(SHA256(SHA256(pw)) + nonce).
pub fn caching_sha2(password: &[u8], nonce: &[u8]) -> Vec<u8> {
    if password.is_empty() {
        return Vec::new();
    }
    let h1 = Sha256::digest(password);
    let h2 = Sha256::digest(h1);
    let mut h = Sha256::new();
    h.update(h2);
    h.update(nonce);
    let h3 = h.finalize();
    h1.iter().zip(h3.iter()).map(|(a, b)| a ^ b).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_password_matches_the_servers_check() {
        // The server stores SHA1(SHA1(pw)) and checks SHA1(reply XOR SHA1(nonce + stored)) == stored.
        let pw = b"secret";
        let nonce = b"12345678901234567890";
        let reply = native_password(pw, nonce);
        let stored = Sha1::digest(Sha1::digest(pw));
        let mut h = Sha1::new();
        h.update(nonce);
        h.update(stored);
        let mask = h.finalize();
        let h1: Vec<u8> = reply.iter().zip(mask.iter()).map(|(a, b)| a ^ b).collect();
        assert_eq!(Sha1::digest(&h1).as_slice(), stored.as_slice());
        assert!(native_password(b"", nonce).is_empty());
    }
}
