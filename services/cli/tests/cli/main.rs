//! End-to-end tests of the `planshare` binary: against the real server
//! (started in-process on a free port) and against scripted stub servers
//! that record every request.

// Helpers outside `#[test]` functions unwrap too: a failed step is a failed test.
#![allow(clippy::unwrap_used)]

mod admin;
mod discovery;
mod hook;
mod mcp;
mod notify;
mod paste;
mod portal;
mod review;
mod share_open;
mod support;
mod tls;
