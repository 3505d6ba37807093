//! The driver against a misbehaving server: every server packet of every recorded conversation
//! (greeting, authentication, OK/ERR, column definitions, rows, prepared-statement replies — MariaDB
//! 10.11.18's and MySQL 9.7.2's own bytes, tests/captures/) is in turn withheld, cut short, announced
//! with a length it does not have, replaced by noise or corrupted, or the connection is closed or left
//! silent in its place. Whatever happens, the client must come back with an error (or, for noise it
//! can read, a result) within its timeouts: never a panic, never a hang. Random greetings are tried
//! too. Every fault runs the same scripted session the replay tests run.

use crate::mysql_session;
use crate::support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use oltp::proto::{Conn, ConnectOptions, DbError, Endpoint};
use oltp::rng::SbRng;
use support::{frame, load, read_packet, unhex, Packet, CAPTURES};

/// Short limits so that a thousand faults finish in seconds; the error must name them.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(400);
const READ_TIMEOUT: Duration = Duration::from_millis(400);
/// Far beyond any legitimate wait here (a few timeouts): past this the client hung.
const HANG: Duration = Duration::from_secs(20);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// The connection is closed where the packet would be.
    Close,
    /// Nothing more is sent; the socket stays open.
    Stall,
    /// The header announces the whole payload; half of it arrives, then silence.
    TruncateStall,
    /// Half the payload, then the connection is closed.
    TruncateClose,
    /// The header announces the protocol's largest length (a 16 MiB packet).
    Oversize,
    /// The header announces more than is sent, then the connection closes.
    LongerThanSent,
    /// The payload is replaced by random bytes of the same length.
    Noise,
    /// One byte of the payload is changed.
    Corrupt,
    /// An empty payload.
    Empty,
}

const FAULTS: [Fault; 9] = [
    Fault::Close,
    Fault::Stall,
    Fault::TruncateStall,
    Fault::TruncateClose,
    Fault::Oversize,
    Fault::LongerThanSent,
    Fault::Noise,
    Fault::Corrupt,
    Fault::Empty,
];

impl Fault {
    /// Whether the session cannot complete: the packet it needs never arrives whole.
    fn must_fail(self) -> bool {
        !matches!(self, Fault::Noise | Fault::Corrupt | Fault::Empty)
    }
}

/// The engine's own seeded generator, so a failure names a case that replays.
struct Rng(SbRng);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(SbRng::new(seed, 0))
    }
    fn next(&mut self) -> u64 {
        self.0.next_u64()
    }
    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

/// What the fake server does in place of server packet `at`.
#[derive(Clone)]
struct Case {
    label: String,
    packets: Vec<Packet>,
    at: usize,
    fault: Fault,
    seed: u64,
    user: String,
    password: String,
    /// What the session printed against the real server.
    lines: Vec<String>,
}

/// Serves the conversation up to the faulty packet, then misbehaves; keeps a silent socket open
/// until the client gives up (EOF) or `HANG` passes.
fn serve(l: TcpListener, case: Case) {
    let Ok((mut s, _)) = l.accept() else { return };
    s.set_read_timeout(Some(HANG)).unwrap();
    let mut rng = Rng::new(case.seed);
    let mut server_index = 0;
    for p in &case.packets {
        if p.from != "server" {
            if read_packet(&mut s).is_err() {
                return;
            }
            continue;
        }
        let payload = unhex(&p.hex);
        if server_index != case.at {
            if s.write_all(&frame(p.seq, &payload)).is_err() {
                return;
            }
            server_index += 1;
            continue;
        }
        let half = &payload[..payload.len() / 2];
        let header = |n: usize| vec![n as u8, (n >> 8) as u8, (n >> 16) as u8, p.seq];
        let (bytes, then_close) = match case.fault {
            Fault::Close => (Vec::new(), true),
            Fault::Stall => (Vec::new(), false),
            Fault::TruncateStall => ([header(payload.len()), half.to_vec()].concat(), false),
            Fault::TruncateClose => ([header(payload.len()), half.to_vec()].concat(), true),
            Fault::Oversize => ([header(0xFF_FFFF), payload.clone()].concat(), false),
            Fault::LongerThanSent => (
                [header(payload.len() + 1000), payload.clone()].concat(),
                true,
            ),
            Fault::Noise => (frame(p.seq, &rng.bytes(payload.len())), false),
            Fault::Corrupt => {
                let mut b = payload.clone();
                if !b.is_empty() {
                    let i = rng.next() as usize % b.len();
                    b[i] ^= 1 + (rng.next() % 255) as u8;
                }
                (frame(p.seq, &b), false)
            }
            Fault::Empty => (frame(p.seq, &[]), false),
        };
        let _ = s.write_all(&bytes);
        if then_close {
            return;
        }
        if case.fault.must_fail() {
            // Silence: wait for the client to hang up.
            let mut sink = [0u8; 4096];
            while matches!(s.read(&mut sink), Ok(n) if n > 0) {}
            return;
        }
        server_index += 1;
    }
    // The conversation ran to its end (a tolerated fault): let the client finish.
    let mut sink = [0u8; 4096];
    while matches!(s.read(&mut sink), Ok(n) if n > 0) {}
}

/// How one case ended.
enum End {
    Done(Vec<String>),
    Failed(DbError),
    Panicked(String),
}

fn run_client(port: u16, user: &str, password: &str) -> End {
    let opts = ConnectOptions {
        endpoint: Endpoint::Tcp {
            host: "127.0.0.1".into(),
            port,
        },
        user: user.into(),
        password: password.into(),
        database: None,
        connect_timeout: CONNECT_TIMEOUT,
        read_timeout: READ_TIMEOUT,
    };
    let r = std::panic::catch_unwind(|| {
        let mut c = Conn::connect(&opts)?;
        mysql_session::session(&mut c)
    });
    match r {
        Ok(Ok(lines)) => End::Done(lines),
        Ok(Err(e)) => End::Failed(e),
        Err(p) => End::Panicked(
            p.downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default(),
        ),
    }
}

/// Runs one case; `Err` describes what went wrong with the client.
fn check(case: Case) -> Result<Option<String>, String> {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let fault = case.fault;
    let label = case.label.clone();
    let (user, password) = (case.user.clone(), case.password.clone());
    let recorded = case.lines.clone();
    let server = std::thread::spawn(move || serve(l, case));
    let (tx, rx) = mpsc::channel();
    let t0 = Instant::now();
    std::thread::spawn(move || {
        let _ = tx.send(run_client(port, &user, &password));
    });
    let end = match rx.recv_timeout(HANG) {
        Ok(e) => e,
        Err(_) => return Err(format!("{label}: the client hung for {HANG:?}")),
    };
    let took = t0.elapsed();
    let _ = server.join();
    match end {
        End::Panicked(m) => Err(format!("{label}: the client panicked: {m}")),
        // The session turns the last reply's failure into a line of its own ("expected an
        // error, got …"): what it printed must then differ from the real server's session.
        End::Done(lines) if fault.must_fail() && lines == recorded => Err(format!(
            "{label}: the session completed although a reply never arrived whole"
        )),
        End::Done(lines) if fault.must_fail() => Ok(Some(lines.join("\n"))),
        End::Done(_) => Ok(None),
        End::Failed(e) => {
            let msg = e.to_string();
            if msg.trim().is_empty() {
                return Err(format!("{label}: an error without a message ({e:?})"));
            }
            let stalled = matches!(fault, Fault::Stall | Fault::TruncateStall);
            if stalled {
                // A silent server is reported as such, naming the limit that expired.
                let named = msg.contains("stalled")
                    && msg.contains("400ms")
                    && (msg.contains("--mysql-read-timeout")
                        || msg.contains("--mysql-connect-timeout"));
                if !named {
                    return Err(format!(
                        "{label}: a silent server must give a timeout error naming its limit: {msg}"
                    ));
                }
                if took > 4 * READ_TIMEOUT + Duration::from_secs(2) {
                    return Err(format!("{label}: timed out only after {took:?}"));
                }
            }
            if fault == Fault::Oversize && !msg.contains("16 MiB") && !stalled {
                return Err(format!(
                    "{label}: an oversized packet must be named as such: {msg}"
                ));
            }
            Ok(Some(msg))
        }
    }
}

fn all_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let mut seed = 0x5eed_u64;
    for file in CAPTURES {
        let cap = load(file);
        for conn in &cap.connections {
            let n = conn.packets.iter().filter(|p| p.from == "server").count();
            for at in 0..n {
                for fault in FAULTS {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                    cases.push(Case {
                        label: format!(
                            "{file} / {} / server packet {at} / {fault:?} (seed {seed})",
                            conn.name
                        ),
                        packets: conn.packets.clone(),
                        at,
                        fault,
                        seed,
                        user: cap.user.clone(),
                        password: cap.password.clone(),
                        lines: conn.lines.clone(),
                    });
                }
            }
        }
    }
    cases
}

/// Runs cases on a few threads at once: most of the time is spent waiting for timeouts.
fn run_all(cases: Vec<Case>) -> (Vec<String>, Vec<String>) {
    let queue = std::sync::Mutex::new(cases);
    let problems = std::sync::Mutex::new(Vec::new());
    let errors = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|sc| {
        for _ in 0..24 {
            sc.spawn(|| loop {
                let Some(case) = queue.lock().unwrap().pop() else {
                    return;
                };
                match check(case) {
                    Ok(Some(msg)) => errors.lock().unwrap().push(msg),
                    Ok(None) => {}
                    Err(p) => problems.lock().unwrap().push(p),
                }
            });
        }
    });
    (problems.into_inner().unwrap(), errors.into_inner().unwrap())
}

#[test]
fn every_fault_at_every_server_packet_ends_in_an_error_within_the_timeouts() {
    let cases = all_cases();
    let total = cases.len();
    // 5 conversations of 35-37 server packets, 9 faults each.
    assert!(total > 1500, "{total} cases");
    let (problems, errors) = run_all(cases);
    assert!(
        problems.is_empty(),
        "{} of {total} cases misbehaved:\n{}",
        problems.len(),
        problems.join("\n")
    );
    // The faults that withhold a reply were all seen as errors (checked per case), and the error
    // kinds are the named ones.
    for kind in ["stalled", "closed the connection", "16 MiB"] {
        assert!(
            errors.iter().any(|m| m.contains(kind)),
            "no error mentions '{kind}'"
        );
    }
    eprintln!("{total} faults: {} errors, no panic, no hang", errors.len());
}

#[test]
fn random_greetings_are_refused_cleanly() {
    let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
    let cap = load("mariadb-10.11.18.json");
    let greeting = unhex(&cap.connections[0].packets[0].hex);
    let mut cases = Vec::new();
    for i in 0..200 {
        // Half pure noise, half a real greeting with its tail replaced by noise.
        let payload = if i % 2 == 0 {
            let n = (rng.next() % 120) as usize;
            rng.bytes(n)
        } else {
            let keep = (rng.next() as usize) % greeting.len();
            let extra = (rng.next() % 40) as usize;
            [&greeting[..keep], &rng.bytes(extra)[..]].concat()
        };
        let mut hex = String::new();
        for b in &payload {
            hex.push_str(&format!("{b:02x}"));
        }
        cases.push(Case {
            label: format!("random greeting {i}: {hex}"),
            packets: vec![Packet {
                from: "server".into(),
                seq: 0,
                hex,
            }],
            at: usize::MAX,
            fault: Fault::Noise,
            seed: rng.next(),
            user: "u".into(),
            password: "p".into(),
            lines: Vec::new(),
        });
    }
    let (problems, errors) = run_all(cases);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // No random greeting leads to a usable session: the server never answers the login.
    assert_eq!(errors.len(), 200);
}
