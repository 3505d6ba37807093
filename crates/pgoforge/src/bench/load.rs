//! The machine's load around each measured run: how much CPU everything other than the server
//! and the client used (a build, a test suite, another benchmark), and how much the hypervisor
//! stole. A benchmark refuses to start, or waits, while the machine is busy; a run disturbed
//! part-way is recorded as such and the report says so.
//!
//! Everything comes from /proc: the machine's `cpu` line of /proc/stat (with steal) and the
//! server's and the client's own utime+stime from /proc/PID/stat, read before and after a run.

use std::fs;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::infra::exit::Stop;

/// Share of the machine's CPU (0..1, all CPUs together) others may use before a run counts as
/// disturbed: an idle VM here shows 0.5–2 %; a `make -j2` or a test suite 40–100 %.
pub const BUSY_SHARE: f64 = 0.10;

/// Clock ticks (USER_HZ) of the machine's CPUs, from the `cpu` line of /proc/stat.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MachineTicks {
    /// Everything not idle and not iowait, steal excluded.
    pub busy: u64,
    /// Idle, iowait included.
    pub idle: u64,
    /// The part of `idle` a CPU spent with a read or write of its own outstanding.
    pub iowait: u64,
    pub steal: u64,
}

impl MachineTicks {
    pub fn parse(stat: &str) -> Option<MachineTicks> {
        let line = stat.lines().find(|l| l.starts_with("cpu "))?;
        let v: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .map(|x| x.parse().ok())
            .collect::<Option<_>>()?;
        // user nice system idle iowait irq softirq steal (guest time is inside user already)
        let at = |i: usize| v.get(i).copied().unwrap_or(0);
        Some(MachineTicks {
            busy: at(0) + at(1) + at(2) + at(5) + at(6),
            idle: at(3) + at(4),
            iowait: at(4),
            steal: at(7),
        })
    }

    pub fn read() -> Option<MachineTicks> {
        MachineTicks::parse(&fs::read_to_string("/proc/stat").ok()?)
    }

    fn total(&self) -> u64 {
        self.busy + self.idle + self.steal
    }
}

/// utime + stime of a process (all its threads), in clock ticks; `None` once it is gone.
pub fn process_ticks(pid: u32) -> Option<u64> {
    process_times(pid).map(|(u, s)| u + s)
}

/// (utime, stime) of a process (all its threads, those that exited included), in clock ticks.
pub fn process_times(pid: u32) -> Option<(u64, u64)> {
    parse_process_times(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

#[cfg(test)]
fn parse_process_ticks(stat: &str) -> Option<u64> {
    parse_process_times(stat).map(|(u, s)| u + s)
}

fn parse_process_times(stat: &str) -> Option<(u64, u64)> {
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // rest[0] is field 3 (state); utime and stime are fields 14 and 15.
    let utime: u64 = f.get(11)?.parse().ok()?;
    let stime: u64 = f.get(12)?.parse().ok()?;
    Some((utime, stime))
}

/// Bytes a process (all its threads) had the storage layer read for it, from /proc/PID/io:
/// reads served by the page cache are not counted, O_DIRECT reads are (`None` where the kernel
/// keeps no I/O accounting or the file cannot be read).
pub fn process_read_bytes(pid: u32) -> Option<u64> {
    parse_read_bytes(&fs::read_to_string(format!("/proc/{pid}/io")).ok()?)
}

fn parse_read_bytes(io: &str) -> Option<u64> {
    io.lines()
        .find_map(|l| l.strip_prefix("read_bytes:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The context switches of a process's live threads, (voluntary, involuntary), summed over
/// /proc/PID/task/*/status: voluntary when a thread waited (for the client, a lock, the disk),
/// involuntary when it was preempted. A thread that exits takes its counts with it, so over an
/// interval the figures are those of the threads that lived through it.
pub fn process_switches(pid: u32) -> Option<(u64, u64)> {
    let mut sum = (0, 0);
    for e in fs::read_dir(format!("/proc/{pid}/task")).ok()?.flatten() {
        let Ok(text) = fs::read_to_string(e.path().join("status")) else {
            continue; // exited between the listing and the read
        };
        let (v, n) = parse_switches(&text)?;
        sum = (sum.0 + v, sum.1 + n);
    }
    Some(sum)
}

fn parse_switches(status: &str) -> Option<(u64, u64)> {
    let field = |name: &str| -> Option<u64> {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
    };
    Some((
        field("voluntary_ctxt_switches:")?,
        field("nonvoluntary_ctxt_switches:")?,
    ))
}

fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

/// What the machine did during one measured run.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Load {
    /// CPU seconds the server used.
    pub server_cpu_s: f64,
    /// CPU seconds the client (pgoforge, the driver threads) used.
    pub client_cpu_s: f64,
    /// Share of all the machine's CPU time used by everything else (0..1).
    pub other_share: f64,
    /// Share of all the machine's CPU time stolen by the hypervisor (0..1).
    pub steal_share: f64,
    /// `server_cpu_s` split: user-mode and kernel-mode seconds (absent from runs recorded before
    /// 2026-12-04). A compiler shortens only the first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_user_s: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_sys_s: Option<f64>,
    /// The server threads' context switches over the run, (voluntary, involuntary) (absent
    /// before 2026-12-04, or when /proc/PID/task could not be read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_switches: Option<(u64, u64)>,
    /// Seconds the run's interval lasted by this meter (absent before 2026-12-04): with the CPU
    /// seconds, how busy each side's vCPU was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_s: Option<f64>,
    /// The vCPUs the server and the client could run on (pinned apart, or the whole machine);
    /// the client's absent when it runs on another host (absent before 2026-12-04).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_vcpus: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_vcpus: Option<u32>,
    /// Share of all the machine's CPU time idle with I/O outstanding (0..1; absent before
    /// 2026-12-06): a server waiting for its reads shows here, not in its CPU seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iowait_share: Option<f64>,
    /// Bytes the server had read from storage over the run (/proc/PID/io; absent before
    /// 2026-12-06): with the transactions, the reads per transaction an I/O-bound cell pays.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_read_bytes: Option<u64>,
}

/// A side counts as saturated from this busy share of its vCPUs.
pub const SATURATED: f64 = 0.95;

impl Load {
    pub fn disturbed(&self) -> bool {
        self.other_share > BUSY_SHARE
    }

    /// How busy the server's vCPUs were: its CPU seconds per second over its vCPUs (absent
    /// before the split was recorded).
    pub fn server_share(&self) -> Option<f64> {
        let (u, s, w) = (self.server_user_s?, self.server_sys_s?, self.wall_s?);
        let n = self.server_vcpus.filter(|n| *n > 0)?;
        (w > 0.0).then(|| (u + s) / w / n as f64)
    }

    /// The same for the client's vCPUs (absent for a client on another host).
    pub fn client_share(&self) -> Option<f64> {
        let w = self.wall_s.filter(|w| *w > 0.0)?;
        let n = self.client_vcpus.filter(|n| *n > 0)?;
        Some(self.client_cpu_s / w / n as f64)
    }
}

/// Readings at the start of a run.
pub struct Meter {
    machine: MachineTicks,
    server: (u64, u64),
    switches: Option<(u64, u64)>,
    read_bytes: Option<u64>,
    client: u64,
    server_pid: u32,
    at: Instant,
}

impl Meter {
    pub fn start(server_pid: u32) -> Option<Meter> {
        Some(Meter {
            machine: MachineTicks::read()?,
            server: process_times(server_pid)?,
            switches: process_switches(server_pid),
            read_bytes: process_read_bytes(server_pid),
            client: process_ticks(std::process::id())?,
            server_pid,
            at: Instant::now(),
        })
    }

    /// The load since [`Meter::start`]; `None` if /proc could not be read (then nothing is
    /// claimed either way).
    pub fn stop(&self) -> Option<Load> {
        let m = MachineTicks::read()?;
        let (u, s) = process_times(self.server_pid)?;
        let (u, s) = (
            u.saturating_sub(self.server.0),
            s.saturating_sub(self.server.1),
        );
        let client = process_ticks(std::process::id())?.saturating_sub(self.client);
        let hz = ticks_per_second();
        let switches = self
            .switches
            .zip(process_switches(self.server_pid))
            .map(|(a, b)| (b.0.saturating_sub(a.0), b.1.saturating_sub(a.1)));
        let read = self
            .read_bytes
            .zip(process_read_bytes(self.server_pid))
            .map(|(a, b)| b.saturating_sub(a));
        let total = m.total().saturating_sub(self.machine.total()).max(1) as f64;
        Some(Load {
            server_user_s: Some(u as f64 / hz),
            server_sys_s: Some(s as f64 / hz),
            server_switches: switches,
            wall_s: Some(self.at.elapsed().as_secs_f64()),
            iowait_share: Some(m.iowait.saturating_sub(self.machine.iowait) as f64 / total),
            server_read_bytes: read,
            ..load_between(&self.machine, &m, u + s, client)
        })
    }
}

fn load_between(a: &MachineTicks, b: &MachineTicks, server: u64, client: u64) -> Load {
    let hz = ticks_per_second();
    let total = b.total().saturating_sub(a.total()).max(1) as f64;
    let busy = b.busy.saturating_sub(a.busy);
    let other = busy.saturating_sub(server + client) as f64;
    Load {
        server_cpu_s: server as f64 / hz,
        client_cpu_s: client as f64 / hz,
        other_share: other / total,
        steal_share: b.steal.saturating_sub(a.steal) as f64 / total,
        ..Load::default()
    }
}

/// The share of the machine's CPU used by all processes but this one, over `window`.
pub fn others_share(window: Duration) -> Option<f64> {
    let a = MachineTicks::read()?;
    let me = process_ticks(std::process::id())?;
    std::thread::sleep(window);
    let b = MachineTicks::read()?;
    let me2 = process_ticks(std::process::id())?;
    Some(load_between(&a, &b, 0, me2.saturating_sub(me)).other_share)
}

/// Waits until the machine is quiet (others below [`BUSY_SHARE`] over a few seconds), up to
/// `patience`; then fails naming what it saw. With `allow_busy` it returns at once (`None`)
/// instead of sampling the machine for 3 s before every round.
pub fn wait_until_quiet(
    patience: Duration,
    allow_busy: bool,
    log: &dyn Fn(&str),
) -> Result<Option<f64>> {
    if allow_busy {
        // Nothing to wait for, and nothing to measure: each run records its own load.
        return Ok(None);
    }
    let start = Instant::now();
    let mut said = false;
    loop {
        let Some(share) = others_share(Duration::from_secs(3)) else {
            return Ok(None);
        };
        if share <= BUSY_SHARE {
            return Ok(Some(share));
        }
        if start.elapsed() >= patience {
            return Err(Stop::Busy {
                share,
                message: format!(
                    "the machine is busy: other processes use {:.0}% of its CPU (more than {:.0}%), \
                     which distorts a benchmark (a build or a test suite alongside halves \
                     throughput here); stop them and rerun (--resume continues a benchmark), or \
                     pass --allow-busy to measure anyway",
                    share * 100.0,
                    BUSY_SHARE * 100.0
                ),
            }
            .into());
        }
        if !said {
            log(&format!(
                "machine busy (others use {:.0}% of the CPU); waiting up to {} s for it to calm down",
                share * 100.0,
                patience.as_secs()
            ));
            said = true;
        }
        std::thread::sleep(Duration::from_secs(7));
    }
}

/// What the benchmark does when the machine is busy.
#[derive(Clone, Copy, Debug)]
pub struct Guard {
    /// Measure anyway (the report still flags disturbed runs).
    pub allow_busy: bool,
    /// Measure on a host whose per-second throughput is erratic (the report says so).
    pub allow_noisy: bool,
    /// How long to wait for a busy machine to calm down before giving up.
    pub patience: std::time::Duration,
}

impl Guard {
    /// Wait up to 10 minutes for quiet, then refuse.
    pub fn strict() -> Guard {
        Guard {
            allow_busy: false,
            allow_noisy: false,
            patience: std::time::Duration::from_secs(600),
        }
    }

    /// Measure whatever else runs (tests, which share the machine with other tests).
    pub fn allow_busy() -> Guard {
        Guard {
            allow_busy: true,
            allow_noisy: true,
            patience: std::time::Duration::ZERO,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_stat_lines_parse() {
        let t =
            MachineTicks::parse("cpu  100 5 50 1000 20 1 2 7 0 0\ncpu0 50 2 25 500 10 0 1 3 0 0\n")
                .unwrap();
        assert_eq!(
            t,
            MachineTicks {
                busy: 158,
                idle: 1020,
                iowait: 20,
                steal: 7
            }
        );
        // A process named with spaces and parentheses.
        let s = "1234 (my (odd) name) S 1 2 3 4 5 6 7 8 9 10 111 222 0 0 20 0";
        assert_eq!(parse_process_ticks(s), Some(333));
        assert_eq!(parse_process_times(s), Some((111, 222)));
        let status =
            "Name:\tmariadbd\nvoluntary_ctxt_switches:\t1200\nnonvoluntary_ctxt_switches:\t35\n";
        assert_eq!(parse_switches(status), Some((1200, 35)));
        assert_eq!(parse_switches("Name:\tx\n"), None);
        // This process's own threads, read for real: it has at least one, and it has waited.
        let (v, _) = process_switches(std::process::id()).unwrap();
        assert!(v > 0);
        let a = MachineTicks::default();
        let b = MachineTicks {
            busy: 150,
            idle: 40,
            iowait: 0,
            steal: 10,
        };
        let l = load_between(&a, &b, 100, 20);
        assert!((l.other_share - 0.15).abs() < 1e-9, "{l:?}");
        assert!((l.steal_share - 0.05).abs() < 1e-9);
        assert!(l.disturbed(), "15% > {BUSY_SHARE}");
        assert!(!load_between(&a, &b, 130, 10).disturbed());
    }

    /// The server's storage reads come from /proc/PID/io (this process's own read for real:
    /// the kernel keeps the accounting here).
    #[test]
    fn storage_reads_are_read_from_proc_pid_io() {
        let io = "rchar: 1000\nwchar: 20\nsyscr: 3\nsyscw: 1\nread_bytes: 8192\nwrite_bytes: 0\n";
        assert_eq!(parse_read_bytes(io), Some(8192));
        assert_eq!(parse_read_bytes("rchar: 1\n"), None);
        let me = process_read_bytes(std::process::id());
        assert!(me.is_some(), "/proc/self/io readable");
    }

    /// Real /proc, real work: a thread spinning in this process is "client" CPU, not "others";
    /// a separate busy process is "others".
    #[test]
    fn a_busy_process_beside_the_benchmark_is_seen() {
        let mut child = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        let share = others_share(Duration::from_millis(1500));
        let _ = child.kill();
        let _ = child.wait();
        let share = share.expect("/proc readable");
        let cpus = crate::server::cpu::online().max(1) as f64;
        // One spinning process is one CPU's worth: 1/cpus of the machine (less what others
        // on a shared machine take from it).
        assert!(share > 0.5 / cpus, "share {share}");
    }
}
