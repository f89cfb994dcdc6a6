//! The pieces of the `planshare-loadtest` runner: a closed-loop HTTP/1.1 load
//! generator ([`generator`]), the *floor* reference server every figure is
//! compared with ([`reference`](mod@reference)), child-process handling for
//! the servers under test ([`process`], [`procstat`]: CPU time and resident
//! memory), the store backends planshare is measured with ([`backend`]; the
//! S3 bucket of a run: [`s3`]), bytes on disk of the fs store ([`disk`]),
//! request bodies ([`payload`]), what a run measured ([`phases`]: per phase
//! and summarised across rounds; [`footprint`]: memory and bytes on disk)
//! with the statistics behind it ([`stats`]), the performance targets it is
//! checked against ([`targets`]), and the reports ([`report`]), written with
//! [`text`] and dated with [`clock`]. For live reviews: the event-stream
//! client ([`sse`]) and what `reviews` measured with its report ([`live`]).
//!
//! The modules import one another in one direction only (checked by
//! `scripts/check-layering`): `stats`, `clock` and `text` below everything
//! that reports; `phases` and `footprint` below `targets`; `report` on top.
//!
//! This crate talks to servers over HTTP only (on loopback, plus the S3
//! endpoint a run is given, where it creates and removes its bucket through
//! the AWS SDK); it links none of the planshare server crates, so it
//! measures the built binary exactly as it ships.
//! The command line and the orchestration of a run live in the binary
//! (`src/main.rs`, `src/run.rs`, `src/startup.rs`); start reading there.

pub mod backend;
pub mod client;
pub mod clock;
pub mod disk;
pub mod footprint;
pub mod generator;
pub mod live;
pub mod payload;
pub mod phases;
pub mod process;
pub mod procstat;
pub mod reference;
pub mod report;
pub mod s3;
pub mod sse;
pub mod stats;
pub mod targets;
pub mod text;
