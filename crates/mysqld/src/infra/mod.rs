//! The infrastructure layer: what every stage needs and no stage owns — files written atomically,
//! trees copied and hashed, time, external commands run with typed errors (and stopped with
//! pgoforge), and the tools this machine has (found once).
//!
//! Nothing here knows about servers, builds or benchmarks; every other module may use it.

pub mod exit;
pub mod fs;
pub mod interrupt;
pub mod lock;
pub mod runner;
pub mod ssh;
pub mod time;
pub mod tools;

/// Whether pgoforge runs as root (installs need no sudo, servers run with `user=root`).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Whether `pid` is a live process (not a zombie: this sandbox's PID 1 does not reap).
pub fn pid_alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .map(str::trim_start)
            .is_some_and(|s| !s.starts_with('Z')),
        Err(_) => false,
    }
}

/// `N` bytes from the kernel's random source (passwords, benchmark seeds).
pub fn random_bytes<const N: usize>() -> std::io::Result<[u8; N]> {
    use std::io::Read;
    let mut b = [0u8; N];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(b)
}
