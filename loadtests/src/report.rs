//! The reports of a `run`, in Markdown and JSON, from what it measured
//! ([`crate::phases`], [`crate::footprint`]) and the targets it was checked
//! against ([`crate::targets`]). Pure functions: the binary decides where
//! the text goes.

mod info;
mod json;
mod markdown;

pub use info::{RunInfo, StoreInfo};
pub use json::json_report;
pub use markdown::markdown;
