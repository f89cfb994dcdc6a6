//! Tests of the fs backend itself: what SIGKILL leaves behind, damaged
//! paste files, and an unusable data directory.

mod crash;
mod damaged;
mod outage;
