//! pgoforge's pipeline stages, one module each. The CLI (src/main.rs, src/cli/) composes them.

pub mod server;
