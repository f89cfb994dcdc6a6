//! The admin family: tenants, their API keys and their usage, for
//! operators, below `/admin`.
//!
//! - `service.rs` — [`AdminService`](service::AdminService), the
//!   operations with no HTTP in them.
//! - `handlers.rs` — the gate every admin request passes, and one handler
//!   per operation, named after its operationId; `wire.rs` — the bodies
//!   (`api_types`) to and from the catalog's records.
//! - `routes.rs` — the route table.
//!
//! Like every family, it imports no other family.

pub(crate) mod handlers;
pub(crate) mod routes;
pub(crate) mod service;
mod wire;
