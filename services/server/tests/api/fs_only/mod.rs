//! Tests of the fs backend itself: what SIGKILL leaves behind, and an
//! unusable data directory.

mod crash;
mod outage;
