//! What the service says about itself rather than about a resource: the
//! probes (`health.rs`), discovery (`discovery.rs`) and `/metrics`
//! (`metrics.rs`), with their route table (`routes.rs`). Not a resource
//! family, but laid out like one.

pub(crate) mod discovery;
pub(crate) mod health;
pub(crate) mod metrics;
pub(crate) mod routes;
