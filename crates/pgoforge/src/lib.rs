//! pgoforge's pipeline stages, one module each. The CLI (src/main.rs, src/cli/) composes them.

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
