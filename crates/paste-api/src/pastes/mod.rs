//! The paste family: upstream's compat routes and `/api/v1/pastes`.
//!
//! - `service/` — [`PasteService`](service::PasteService), the paste rules
//!   with no HTTP in them (create with idempotency, quota, index and undo;
//!   read with burn-after-read; delete by key or token; list).
//! - `handlers.rs` — one handler per operation, named after its
//!   operationId; `steps.rs` — the HTTP steps the compat and v1 routes
//!   share; `errors.rs` — the service's errors as API errors.
//! - `routes.rs` — the route table.
//!
//! Like every family, it imports no other family; what families share is
//! below them (`context`, `within`, `extract`, `body`, `answer`, `error`).

mod errors;
pub(crate) mod handlers;
pub(crate) mod routes;
pub(crate) mod service;
mod steps;
