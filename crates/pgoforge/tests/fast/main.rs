//! The fast tier: no server, no compiler, no apt package — the committed reports rendered again
//! byte for byte, and the architecture's rules. `cargo test --workspace --lib --test fast`.

mod architecture;
mod claims;
mod defaults;
mod formats;
mod pool;
mod power;
mod readme;
mod reports;
