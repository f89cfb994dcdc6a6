//! The storage backends, one module each. `crate::open` picks one.

pub mod fs;
pub mod memory;
