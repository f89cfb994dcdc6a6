//! The planshare HTTP API: every route (`router/`), the resource families
//! (`pastes/`, `reviews/`, `admin/`, each its service with no HTTP in it,
//! its handlers and its route table), CORS,
//! body limits, load shedding (`edge/`), readiness, and the one mapping from
//! errors to status codes (`error.rs`).
//!
//! The two upstream routes, `POST /api/paste` and `GET /api/paste/{id}` (plus
//! `OPTIONS` anywhere), are *compat routes*: they answer byte for byte as the
//! upstream Plannotator paste service does, except where the README's list
//! "Where planshare deliberately differs from upstream" says otherwise. Everything else is a new route with
//! `{"error", "code"}` bodies.
//!
//! This crate wires `paste-store` to HTTP. It must not listen on sockets or
//! read configuration files or the environment (the `services/` binaries
//! do), and no other crate may map errors to status codes. The one
//! connection it opens itself is a notification's delivery
//! (`notify/deliver.rs`, through the target policy of `notify/target.rs`).
//! Start at [`router`].

// Shared by every family, bottom to top (ARCHITECTURE.md lists the levels;
// `scripts/module_graph.py` enforces them).
mod answer;
mod body;
mod config;
mod connection;
mod context;
mod cors;
mod edge;
mod error;
mod extract;
pub mod metrics;
mod notify;
mod openapi;
mod purge;
mod ratelimit;
mod response;
mod routing;
mod shared_limit;
mod state;
mod tenants;
mod within;

// The resource families: one folder each (service, handlers, routes),
// none importing another.
mod admin;
mod pastes;
mod reviews;
mod system;

mod router;

pub use config::PortalBase;
pub use config::{AdminConfig, HeadLimits, HttpConfig, PasteConfig, ReviewConfig, split_origins};
pub use connection::{ClientGone, GoneFuture};
pub use error::ApiError;
pub use notify::NotifyConfig;
pub use ratelimit::LimitsConfig;
pub use router::{admin_router, router};
pub use router::{openapi, openapi_json};
pub use state::{AppState, Readiness};
pub use system::metrics::RenderMetrics;
pub use tenants::CACHE_TTL;
