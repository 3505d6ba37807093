//! Pinning threads to CPUs, so that a client and the server it measures use disjoint CPUs.

/// Restricts the calling thread (or, between fork and exec, the new process) to `cpus`.
/// Async-signal-safe: it only fills a CPU set and makes one system call.
pub fn pin_current(cpus: &[usize]) -> std::io::Result<()> {
    // SAFETY: cpu_set_t is plain data; CPU_SET writes within it; the call only reads it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        for &c in cpus {
            libc::CPU_SET(c, &mut set);
        }
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}
