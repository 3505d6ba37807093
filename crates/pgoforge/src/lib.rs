//! pgoforge's library, in layers (docs/ARCHITECTURE.md; `scripts/import-cycles.py` checks that no
//! module imports one above it): `pipeline` (`pgoforge run`: plan, stages, state) over the engines
//! `bench`, `profile`, `gate` and `package`, over `builder`, `server` and `source`, over
//! `toolchain`, `recipe` and `events`, over `infra`. The command line (src/main.rs, src/cli/) drives
//! it.

pub mod bench;
pub mod builder;
pub mod events;
pub mod follow;
pub mod gate;
pub mod package;
pub mod pipeline;
pub mod profile;
pub mod recipe;
pub mod repository;
pub mod source;
pub mod toolchain;

// The two bottom layers live in the mysqld crate (see its lib.rs); re-exported so that every
// path in this crate (`crate::infra::...`, `crate::server::...`) and its users' stay as they were.
pub use mysqld::{infra, server, usage};
