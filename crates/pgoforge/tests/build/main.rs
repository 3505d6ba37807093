//! The build tier: real compilers (gcc 12, clang 16 and 22), BOLT and CMake on the fixture projects
//! — builds, profiles, BOLT, packages, the whole pipeline on the stand-in server, SIGKILL at each
//! stage, a full disk; and, where PGOFORGE_TEST_MYSQLD names a MySQL build, MySQL (NOT RUN
//! otherwise). `cargo test --workspace --test build`.

#[path = "../common/mod.rs"]
mod common;

mod build;
mod build_host;
mod cluster;
mod disk_full;
mod kill9;
mod mysql;
mod package;
mod pch;
mod pipeline;
mod profile;
mod rebuild;

/// The two tests whose benchmark must find the stand-in's known gain take turns, so that one's
/// servers never share a CPU with the other's: the gain they look for should be the stand-in's
/// duty cycle (tests/fixtures/standin), not luck in the scheduling.
pub fn measured_win_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}
