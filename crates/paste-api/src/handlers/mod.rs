//! Request handlers, one module per resource.

pub(crate) mod admin;
pub(crate) mod health;
pub(crate) mod paste;
