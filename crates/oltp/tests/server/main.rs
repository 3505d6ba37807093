//! The server tier of the driver: every workload, the protocol and its faults against Debian's
//! MariaDB on a private datadir.

mod faults;
mod protocol;
mod ring;
mod workloads;

/// Held by every test that runs the io_uring loop, so that the ring tests can count the rings
/// this process has open.
pub static RING_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub fn ring_tests() -> std::sync::MutexGuard<'static, ()> {
    RING_TESTS.lock().unwrap_or_else(|e| e.into_inner())
}
