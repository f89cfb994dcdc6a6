//! The pieces of the `planshare-loadtest` runner: a closed-loop HTTP/1.1 load
//! generator ([`generator`]), the *floor* reference server every figure is
//! compared with ([`reference`]), child-process handling for the servers under
//! test ([`process`], [`procstat`]: CPU time and resident memory), the store
//! backends planshare is measured with ([`backend`]), bytes on disk of the fs
//! store ([`disk`]), request bodies ([`payload`]), the statistics and reports
//! ([`stats`]) and the performance targets they are checked against
//! ([`targets`]).
//!
//! This crate talks to servers over HTTP only (on loopback, plus the S3
//! endpoint a run is given, to create its bucket); it links none of the
//! planshare server crates, so it measures the built binary exactly as it ships.
//! The command line and the orchestration of a run live in the binary
//! (`src/main.rs`, `src/run.rs`, `src/startup.rs`); start reading there.

pub mod backend;
pub mod client;
pub mod disk;
pub mod generator;
pub mod payload;
pub mod process;
pub mod procstat;
pub mod reference;
pub mod stats;
pub mod targets;
