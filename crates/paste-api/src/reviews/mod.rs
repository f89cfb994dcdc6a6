//! The review family: live shared reviews on `/api/v1/reviews`.
//!
//! - `service/` — [`ReviewService`](service::ReviewService), the review
//!   rules with no HTTP in them, and the event fan-out (`hub.rs`) and
//!   followers (`stream.rs`).
//! - `caller.rs` — [`ReviewCaller`](caller::ReviewCaller), who a request
//!   comes from (the holder of one of the review's tokens).
//! - `handlers.rs` — one handler per operation, named after its
//!   operationId; `events.rs` — the event stream and long poll; `view.rs`
//!   — the wire views and field checks the handlers share; `errors.rs` —
//!   the service's errors as API errors; `subscriptions.rs` — a review's
//!   notification subscriptions (kept and delivered by the shared
//!   `notify` module below the families).
//! - `routes.rs` — the route table.
//!
//! Like every family, it imports no other family.

pub(crate) mod caller;
mod errors;
pub(crate) mod events;
pub(crate) mod handlers;
pub(crate) mod routes;
pub(crate) mod service;
pub(crate) mod subscriptions;
mod view;
