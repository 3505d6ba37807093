//! The run's optimized builds shared between this host and the build hosts (`--build-host`).
//!
//! This host goes through the builds in the plan's order, as without build hosts; each build host
//! takes the last build nobody has taken yet, so the two ends meet in the middle and no build waits
//! for a slot while a host is idle. A build a host finished is found by this host's build stage
//! as a finished build (same key, same directory); a build a host could not make — unreachable,
//! another toolchain, the connection lost mid-build — is reported and built here instead.

use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

#[derive(Debug)]
enum Slot {
    Queued,
    Taken(String),
    Done {
        host: String,
        result: Result<(), String>,
    },
}

/// What this host finds when it reaches a build.
#[derive(Debug, PartialEq)]
pub(super) enum Claim {
    /// Nobody took it: it is this host's to build.
    Here,
    /// A build host built it.
    Built(String),
    /// A build host tried and failed: this host builds it.
    Failed { host: String, error: String },
}

/// Who builds what, shared by this host and the build hosts' threads.
pub(super) struct Board {
    slots: Mutex<(Vec<Slot>, bool)>,
    changed: Condvar,
}

impl Board {
    pub fn new(builds: usize) -> Board {
        Board {
            slots: Mutex::new(((0..builds).map(|_| Slot::Queued).collect(), false)),
            changed: Condvar::new(),
        }
    }

    /// A build host's next build: the last one still queued; None when none is left or the
    /// board is closed.
    pub fn next_for(&self, host: &str) -> Option<usize> {
        let mut g = self.slots.lock().ok()?;
        if g.1 {
            return None;
        }
        let i = g.0.iter().rposition(|s| matches!(s, Slot::Queued))?;
        g.0[i] = Slot::Taken(host.to_string());
        Some(i)
    }

    /// A build host is done with build `i`.
    pub fn done(&self, i: usize, host: &str, result: Result<(), String>) {
        if let Ok(mut g) = self.slots.lock() {
            g.0[i] = Slot::Done {
                host: host.to_string(),
                result,
            };
        }
        self.changed.notify_all();
    }

    /// No more builds for the build hosts (this host has passed every one, or stopped).
    pub fn close(&self) {
        if let Ok(mut g) = self.slots.lock() {
            g.1 = true;
        }
        self.changed.notify_all();
    }

    /// This host reaches build `i`: its own if still queued, else what the host made of it,
    /// waiting while a host is still at it (`waiting` is told the host and the time waited,
    /// about once a minute).
    pub fn claim(&self, i: usize, waiting: &dyn Fn(&str, Duration)) -> Claim {
        let t0 = Instant::now();
        let mut last_word = Instant::now();
        let Ok(mut g) = self.slots.lock() else {
            return Claim::Here;
        };
        loop {
            match &g.0[i] {
                Slot::Queued => {
                    g.0[i] = Slot::Taken("here".into());
                    return Claim::Here;
                }
                Slot::Done { host, result } => {
                    return match result {
                        Ok(()) => Claim::Built(host.clone()),
                        Err(e) => Claim::Failed {
                            host: host.clone(),
                            error: e.clone(),
                        },
                    }
                }
                Slot::Taken(host) => {
                    if last_word.elapsed() >= Duration::from_secs(60) {
                        last_word = Instant::now();
                        let host = host.clone();
                        drop(g);
                        waiting(&host, t0.elapsed());
                        g = match self.slots.lock() {
                            Ok(g) => g,
                            Err(_) => return Claim::Here,
                        };
                        continue;
                    }
                    g = match self.changed.wait_timeout(g, Duration::from_secs(5)) {
                        Ok((g, _)) => g,
                        Err(_) => return Claim::Here,
                    };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_host_takes_from_the_front_build_hosts_from_the_back() {
        let b = Board::new(4);
        assert_eq!(b.next_for("h1"), Some(3));
        assert_eq!(b.claim(0, &|_, _| {}), Claim::Here);
        assert_eq!(b.next_for("h2"), Some(2));
        assert_eq!(b.claim(1, &|_, _| {}), Claim::Here);
        // Everything is taken now.
        assert_eq!(b.next_for("h1"), None);
        b.done(2, "h2", Err("lost".into()));
        assert_eq!(
            b.claim(2, &|_, _| {}),
            Claim::Failed {
                host: "h2".into(),
                error: "lost".into()
            }
        );
        // This host waits for a build a host is still making.
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(50));
                b.done(3, "h1", Ok(()));
            });
            assert_eq!(b.claim(3, &|_, _| {}), Claim::Built("h1".into()));
        });
    }

    #[test]
    fn a_closed_board_gives_the_hosts_nothing() {
        let b = Board::new(2);
        b.close();
        assert_eq!(b.next_for("h"), None);
        assert_eq!(b.claim(1, &|_, _| {}), Claim::Here);
    }
}
