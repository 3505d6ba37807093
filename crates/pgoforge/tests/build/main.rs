//! The build tier: real compilers (gcc 12, clang 16 and 22), BOLT and CMake on the fixture projects
//! — builds, profiles, BOLT, packages, the whole pipeline on the stand-in server, SIGKILL at each
//! stage, a full disk; and, where PGOFORGE_TEST_MYSQLD names a MySQL build, MySQL (NOT RUN
//! otherwise). `cargo test --workspace --test build`.

#[path = "../common/mod.rs"]
mod common;

mod build;
mod disk_full;
mod kill9;
mod mysql;
mod package;
mod pipeline;
mod profile;
