//! The storage backends, one module each. `crate::open` picks one.

pub mod fs;
#[cfg(any(feature = "redis", feature = "s3"))]
pub mod keyed;
pub mod memory;
#[cfg(feature = "redis")]
pub mod redis;
#[cfg(feature = "s3")]
pub mod s3;
