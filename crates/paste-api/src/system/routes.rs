//! The probes', discovery's and `/metrics`'s route table.

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::{discovery, health};
use crate::routing::{Auth, RouteRow, Shedding, row, with_method_fallback};
use crate::state::AppState;

/// Each route's shedding and credential. Probes and scrapes are never
/// shed: an overloaded instance must still say so, and not be restarted
/// for it. (`/metrics` is not in the document: on the public listener it
/// sits behind the admin gate.)
pub(crate) const ROWS: &[RouteRow] = &[
    row("GET", "/healthz", Shedding::Exempt, Auth::Anyone),
    row("GET", "/readyz", Shedding::Exempt, Auth::Anyone),
    row("GET", "/metrics", Shedding::Exempt, Auth::AdminToken),
    row("GET", "/api/v1/discovery", Shedding::Applies, Auth::Anyone),
    row(
        "GET",
        "/.well-known/planshare",
        Shedding::Applies,
        Auth::Anyone,
    ),
];

/// Discovery (`/api/v1/discovery`, `/.well-known/planshare`) and its
/// documentation.
pub(crate) fn discovery_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(with_method_fallback(
            routes!(discovery::discovery),
            "GET, HEAD",
        ))
        .routes(with_method_fallback(
            routes!(discovery::discovery_well_known),
            "GET, HEAD",
        ))
}

/// The probes and their documentation.
pub(crate) fn probe_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(with_method_fallback(routes!(health::healthz), "GET, HEAD"))
        .routes(with_method_fallback(routes!(health::readyz), "GET, HEAD"))
}
