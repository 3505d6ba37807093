//! The infrastructure layer: what every stage needs and no stage owns — files written atomically,
//! trees copied and hashed, time, external commands run with typed errors (and stopped with
//! pgoforge), and the tools this machine has (found once).
//!
//! Nothing here knows about servers, builds or benchmarks; every other module may use it.

pub mod fs;
pub mod interrupt;
pub mod lock;
pub mod runner;
pub mod time;
pub mod tools;

/// Whether pgoforge runs as root (installs need no sudo, servers run with `user=root`).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// `N` bytes from the kernel's random source (passwords, benchmark seeds).
pub fn random_bytes<const N: usize>() -> std::io::Result<[u8; N]> {
    use std::io::Read;
    let mut b = [0u8; N];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut b)?;
    Ok(b)
}
