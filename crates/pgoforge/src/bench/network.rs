//! The path between the benchmark client and the server: how the client connects (the server's
//! Unix socket, as always, or TCP — what a client on another host has to use, so local runs
//! compared with such runs take it too), and the round-trip time over it, measured before each
//! server's runs. With `threads` connections each waiting a round trip per statement, a client
//! cannot exceed `threads / RTT` statements per second whatever the server does: when a cell's
//! measured rate comes near that, the report says the network, not the server, may be what it
//! measured.

use std::time::Instant;

use oltp::settings::ConnSettings;
use serde::{Deserialize, Serialize};

/// How the benchmark client reaches the servers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// The server's Unix socket (the default: no network stack in the path).
    #[default]
    Socket,
    /// TCP to the server's address.
    Tcp,
}

impl Transport {
    pub fn is_socket(&self) -> bool {
        *self == Transport::Socket
    }
}

impl std::str::FromStr for Transport {
    type Err = String;
    fn from_str(s: &str) -> Result<Transport, String> {
        match s {
            "socket" => Ok(Transport::Socket),
            "tcp" => Ok(Transport::Tcp),
            _ => Err(format!("transport '{s}': socket or tcp")),
        }
    }
}

/// Round trips timed by the probe (after a few untimed ones).
const PROBES: usize = 200;

/// The median round trip of `SELECT 1` over one connection, in microseconds (None: could not
/// connect or query; the benchmark itself will say why).
pub fn round_trip_us(conn: &ConnSettings) -> Option<f64> {
    let mut c = oltp::proto::conn::Conn::connect(&conn.for_connection(0)).ok()?;
    for _ in 0..10 {
        c.query("SELECT 1").ok()?;
    }
    let mut t: Vec<f64> = Vec::with_capacity(PROBES);
    for _ in 0..PROBES {
        let t0 = Instant::now();
        c.query("SELECT 1").ok()?;
        t.push(t0.elapsed().as_secs_f64() * 1e6);
    }
    Some(super::stats::median(&t))
}

/// The share of its round-trip bound (`threads / RTT`) a rate of `qps` statements per second
/// reaches.
pub fn share_of_bound(qps: f64, threads: u32, rtt_us: f64) -> f64 {
    if rtt_us <= 0.0 || threads == 0 {
        return 0.0;
    }
    qps / (threads as f64 / (rtt_us * 1e-6))
}

/// From this share of the bound on, the report warns (half of each statement's time is the
/// round trip itself).
pub const BOUND_SHARE: f64 = 0.5;

/// The warning for a cell whose rate comes near its round-trip bound, if it does.
pub fn bound_warning(qps: f64, threads: u32, rtt_us: f64) -> Option<String> {
    let share = share_of_bound(qps, threads, rtt_us);
    (share >= BOUND_SHARE).then(|| {
        format!(
            "{qps:.0} statements/s is {:.0}% of what {threads} connections can send at a \
             {rtt_us:.0} µs round trip ({:.0}/s): the network, not the server, may bound this cell",
            share * 100.0,
            threads as f64 / (rtt_us * 1e-6)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_round_trip_bound_is_threads_over_rtt() {
        // 4 connections at 100 µs: at most 40 000 statements/s.
        assert!((share_of_bound(20_000.0, 4, 100.0) - 0.5).abs() < 1e-9);
        assert!(bound_warning(19_000.0, 4, 100.0).is_none());
        let w = bound_warning(36_000.0, 4, 100.0).unwrap();
        assert!(
            w.contains("90% of what 4 connections can send at a 100 µs round trip (40000/s)"),
            "{w}"
        );
        assert_eq!(share_of_bound(1.0, 0, 100.0), 0.0);
        assert_eq!("tcp".parse::<Transport>(), Ok(Transport::Tcp));
        assert!("udp".parse::<Transport>().is_err());
    }
}
