//! HTTP tests of planshare-server, one test binary (faster to link) with a
//! module per concern. Every test starts its own server on a free port with
//! its own temporary data directory.

// Helpers outside `#[test]` functions unwrap too: a failed step is a failed test.
#![allow(clippy::unwrap_used)]

mod bad_input;
mod connections;
mod crash;
mod delete;
mod lifecycle;
mod outage;
mod pastes;
mod vectors;
