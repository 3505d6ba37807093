//! The server tier of the driver: every workload, the protocol and its faults against Debian's
//! MariaDB on a private datadir.

mod faults;
mod protocol;
mod workloads;
