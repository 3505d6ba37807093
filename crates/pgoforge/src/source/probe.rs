//! Whether a mirror serves a file, asked the cheap way: a one-byte ranged GET (a mirror's index can
//! list a release whose files its pool no longer holds, or does not hold yet). The answer decides
//! which release a run builds before anything is downloaded; the download itself checks again.

use std::process::Command;
use std::time::Duration;

/// What the mirror said of one file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    Served,
    /// It answered, and not with the file (404, 403, 410 …): the status and its reason.
    Missing(String),
    /// It did not answer (timeout, refused, no such host): can't tell.
    Unreachable(String),
    /// A URI scheme this check does not speak (apt's own methods fetch it): can't tell.
    Unknown(String),
}

/// Asks mirrors with the proxy and timeout apt is configured with.
pub struct Prober {
    agent: ureq::Agent,
}

impl Prober {
    pub fn new() -> Prober {
        let timeout = apt_value("Acquire::http::Timeout")
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(30)
            .clamp(1, 30);
        let mut b = ureq::AgentBuilder::new()
            .timeout_connect(Duration::from_secs(timeout))
            .timeout_read(Duration::from_secs(timeout))
            .redirects(5)
            .try_proxy_from_env(true);
        if let Some(p) = apt_value("Acquire::http::Proxy").filter(|p| p.contains("://")) {
            if let Ok(p) = ureq::Proxy::new(p) {
                b = b.proxy(p);
            }
        }
        Prober { agent: b.build() }
    }

    pub fn ask(&self, uri: &str) -> Answer {
        if let Some(path) = uri.strip_prefix("file:") {
            let path = path.trim_start_matches("//");
            let path = percent_decode(path);
            return match std::fs::metadata(&path) {
                Ok(m) if m.is_file() => Answer::Served,
                Ok(_) => Answer::Missing("not a file".into()),
                Err(e) => Answer::Missing(e.to_string()),
            };
        }
        if !(uri.starts_with("http://") || uri.starts_with("https://")) {
            return Answer::Unknown(format!(
                "{} URIs are not checked before the download",
                uri.split(':').next().unwrap_or("")
            ));
        }
        match self.agent.get(uri).set("Range", "bytes=0-0").call() {
            Ok(r) => {
                // Read the one byte (or whatever a server ignoring Range starts sending) and
                // drop the connection: only the status matters.
                let _ = std::io::Read::read(&mut r.into_reader(), &mut [0u8; 1]);
                Answer::Served
            }
            Err(ureq::Error::Status(code, r)) => {
                Answer::Missing(format!("{code} {}", r.status_text()))
            }
            Err(ureq::Error::Transport(t)) => Answer::Unreachable(t.to_string()),
        }
    }
}

impl Default for Prober {
    fn default() -> Self {
        Prober::new()
    }
}

/// One of apt's configuration values (`apt-config` honours `APT_CONFIG`).
fn apt_value(name: &str) -> Option<String> {
    let out = Command::new("apt-config")
        .args(["shell", "V", name])
        .output()
        .ok()?;
    let text = String::from_utf8_lossy(&out.stdout);
    let v = text.lines().find_map(|l| l.strip_prefix("V="))?;
    let v = v.trim_matches('\'').trim();
    (!v.is_empty()).then(|| v.to_string())
}

/// `%2b` → `+` (apt quotes a file name's special characters in its URIs).
pub fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("");
            if let Ok(v) = u8::from_str_radix(hex, 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoted_names_decode_and_broken_quotes_stay() {
        assert_eq!(percent_decode("a_1-0%2bdeb12u1.dsc"), "a_1-0+deb12u1.dsc");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%2"), "%zz%2");
    }

    #[test]
    fn a_local_file_is_served_a_missing_one_is_not_and_odd_schemes_are_unknown() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("x.dsc");
        std::fs::write(&f, "x").unwrap();
        let p = Prober::new();
        assert_eq!(p.ask(&format!("file://{}", f.display())), Answer::Served);
        assert!(matches!(
            p.ask(&format!("file://{}/gone", t.path().display())),
            Answer::Missing(_)
        ));
        assert!(matches!(p.ask("cdrom:[x]/pool/a"), Answer::Unknown(_)));
    }
}
