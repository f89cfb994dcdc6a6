//! The paste family's route table: the routes with their documentation
//! (utoipa-axum), and each route's row (shedding, credential).

use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::handlers;
use crate::routing::{
    Auth, RouteRow, Shedding, map_method_router, route_not_found, row, with_method_fallback,
};
use crate::state::AppState;

/// Each route's shedding and credential.
pub(crate) const ROWS: &[RouteRow] = &[
    row(
        "POST",
        "/api/paste",
        Shedding::AfterBody,
        Auth::KeyOrAnonymous,
    ),
    row(
        "GET",
        "/api/paste/{id}",
        Shedding::Applies,
        Auth::KeyOrAnonymous,
    ),
    row(
        "DELETE",
        "/api/paste/{id}",
        Shedding::Applies,
        Auth::KeyOrDeleteToken,
    ),
    row(
        "POST",
        "/api/v1/pastes",
        Shedding::AfterBody,
        Auth::KeyOrAnonymous,
    ),
    row("GET", "/api/v1/pastes", Shedding::Applies, Auth::Key),
    row(
        "GET",
        "/api/v1/pastes/{id}",
        Shedding::Applies,
        Auth::KeyOrAnonymous,
    ),
    row(
        "DELETE",
        "/api/v1/pastes/{id}",
        Shedding::Applies,
        Auth::KeyOrDeleteToken,
    ),
];

/// The paste routes and their documentation, without layers. Upstream's
/// routes answer any other method (and `HEAD` on a read) with upstream's
/// generic 404; the v1 routes with 405 and `Allow`.
pub(crate) fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(map_method_router(
            routes!(handlers::create_paste_compat),
            |m| m.fallback(route_not_found),
        ))
        .routes(map_method_router(
            routes!(handlers::get_paste_compat, handlers::delete_paste_compat),
            |m| m.head(route_not_found).fallback(route_not_found),
        ))
        .routes(with_method_fallback(
            routes!(handlers::list_pastes, handlers::create_paste),
            "GET, HEAD, POST",
        ))
        .routes(with_method_fallback(
            routes!(handlers::get_paste, handlers::delete_paste),
            "GET, HEAD, DELETE",
        ))
}
