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

/// `caching_sha2_password` full authentication without TLS: the password and a NUL, XORed with
/// the nonce (repeated), encrypted with RSA-OAEP (SHA-1) under the server's public key (PEM, as
/// the server sends it on request). `None` when the key does not parse or encrypt.
pub fn rsa_encrypted_password(password: &[u8], nonce: &[u8], pem: &[u8]) -> Option<Vec<u8>> {
    use rsa::pkcs8::DecodePublicKey;
    let pem = std::str::from_utf8(pem).ok()?.trim_end_matches('\0');
    let key = rsa::RsaPublicKey::from_public_key_pem(pem.trim()).ok()?;
    if nonce.is_empty() {
        return None;
    }
    let mut plain: Vec<u8> = password.to_vec();
    plain.push(0);
    for (i, b) in plain.iter_mut().enumerate() {
        *b ^= nonce[i % nonce.len()];
    }
    key.encrypt(&mut rand_core::OsRng, rsa::Oaep::new::<Sha1>(), &plain)
        .ok()
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

#[cfg(test)]
mod rsa_tests {
    use super::*;
    use rsa::pkcs8::{EncodePublicKey, LineEnding};

    #[test]
    fn the_server_recovers_the_password_from_the_rsa_reply() {
        // What the server does: decrypt with its private key, XOR with the nonce, strip the NUL.
        let key = rsa::RsaPrivateKey::new(&mut rand_core::OsRng, 1024).unwrap();
        let pem = rsa::RsaPublicKey::from(&key)
            .to_public_key_pem(LineEnding::LF)
            .unwrap();
        let nonce = b"abcdefghijklmnopqrst";
        let pw = b"a password longer than the twenty-byte nonce";
        let reply = rsa_encrypted_password(pw, nonce, pem.as_bytes()).unwrap();
        assert_eq!(reply.len(), 128, "one RSA block of the key's size");
        let mut plain = key.decrypt(rsa::Oaep::new::<Sha1>(), &reply).unwrap();
        for (i, b) in plain.iter_mut().enumerate() {
            *b ^= nonce[i % nonce.len()];
        }
        assert_eq!(plain.pop(), Some(0));
        assert_eq!(plain, pw);
        assert!(rsa_encrypted_password(pw, nonce, b"not a key").is_none());
    }
}
