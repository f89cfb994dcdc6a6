//! The share portal in real headless Chromium, against this server (one
//! module per capability). The page makes no request to another origin and
//! none carries the fragment's key.
//!
//! Needs Chromium (`PLANSHARE_TEST_CHROMIUM`, default `/usr/bin/chromium`)
//! and `npm ci` in `crates/portal/browser-tests` (scripts/test does both).
//! Without them the tests say so and skip — except under CI, where they
//! fail.

#![allow(clippy::unwrap_used)]

mod accessibility;
mod anchor;
mod callbacks;
mod day_one;
mod delete_links;
mod feedback;
mod frames;
mod links;
mod reading;
mod reviews;
mod roundtrip;
mod xss;

pub use testkit::browser::{harness, run_harness};
