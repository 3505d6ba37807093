//! The bottom two layers of pgoforge, a crate of their own so that what needs only a running
//! server (the oltp crate's tests, through testsupport) does not build the build and benchmark
//! pipeline: `infra` (files written atomically, trees, hashes, external commands with typed errors,
//! signals and children that die with their parent, what this machine has, exit statuses) and
//! `server` (initialize, configure, start and stop MySQL-family servers on private datadirs). The
//! crate boundary is the layer rule: nothing here can import pgoforge. pgoforge re-exports both
//! modules, so its own paths (`crate::infra`, `crate::server`) are unchanged.

pub mod infra;
pub mod server;
