//! HTTP tests of planshare-server, one test binary (faster to link) with a
//! module per concern. Every test starts its own server on a free port with
//! its own temporary data directory.
//!
//! The suite runs once per store backend: `PLANSHARE_TEST_STORE` (fs, the
//! default; redis; s3; memory) picks it, as `scripts/test` does. Tests that
//! are about the fs backend itself live in `fs_only` and are skipped for the
//! others (`-- --skip fs_only`).

// Helpers outside `#[test]` functions unwrap too: a failed step is a failed test.
#![allow(clippy::unwrap_used)]

mod admin;
mod attack;
mod bad_input;
mod connections;
mod delete;
mod discovery;
mod early_errors;
mod fs_only;
mod lifecycle;
mod limits;
mod pastes;
mod portal;
mod review_attack;
mod reviews;
mod tenancy_isolation;
mod tenants_support;
mod vectors;
