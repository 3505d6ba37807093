//! pgoforge's library, in layers (docs/ARCHITECTURE.md; `scripts/import-cycles.py` checks that no
//! module imports one above it): `pipeline` (`pgoforge run`: plan, stages, state) over the engines
//! `bench`, `profile`, `gate` and `package`, over `builder`, `server` and `source`, over
//! `toolchain`, `recipe` and `events`, over `infra`. The command line (src/main.rs, src/cli/) drives
//! it.

pub mod bench;
pub mod builder;
pub mod events;
pub mod gate;
pub mod infra;
pub mod package;
pub mod pipeline;
pub mod profile;
pub mod recipe;
pub mod server;
pub mod source;
pub mod toolchain;
