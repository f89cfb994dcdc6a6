//! The route tables: every documented route, declared once as utoipa-axum
//! `OpenApiRouter`s, so that the same tables give the router its routes and
//! the OpenAPI document its paths.

use axum::routing::MethodRouter;
use utoipa_axum::router::{OpenApiRouter, UtoipaMethodRouter};
use utoipa_axum::routes;

use crate::error::ApiError;
use crate::handlers::{admin, discovery, health, paste, pastes, review_events, reviews};
use crate::state::AppState;

/// The paste routes and their documentation, without layers.
pub(crate) fn paste_api() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(map_method_router(routes!(paste::create_paste), |m| {
            m.fallback(route_not_found)
        }))
        .routes(map_method_router(
            routes!(paste::get_paste, paste::delete_paste),
            |m| m.head(route_not_found).fallback(route_not_found),
        ))
        .routes(with_method_fallback(
            routes!(pastes::list, pastes::create),
            "GET, HEAD, POST",
        ))
        .routes(with_method_fallback(
            routes!(pastes::get, pastes::delete),
            "GET, HEAD, DELETE",
        ))
}

/// The review routes and their documentation, without layers.
pub(crate) fn review_api() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(with_method_fallback(routes!(reviews::create), "POST"))
        .routes(with_method_fallback(
            routes!(reviews::get, reviews::delete),
            "GET, HEAD, DELETE",
        ))
        .routes(with_method_fallback(routes!(reviews::push), "POST"))
        .routes(with_method_fallback(routes!(reviews::version), "GET, HEAD"))
        .routes(with_method_fallback(routes!(reviews::add_link), "POST"))
        .routes(with_method_fallback(
            routes!(reviews::revoke_link),
            "DELETE",
        ))
        .routes(with_method_fallback(
            routes!(reviews::put_comments, reviews::delete_comments),
            "PUT, DELETE",
        ))
        .routes(with_method_fallback(routes!(reviews::decide), "POST"))
        .routes(with_method_fallback(
            routes!(review_events::events),
            "GET, HEAD",
        ))
}

/// Discovery (`/api/v1/discovery`, `/.well-known/planshare`) and its
/// documentation.
pub(crate) fn discovery_api() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(with_method_fallback(
            routes!(discovery::discovery),
            "GET, HEAD",
        ))
        .routes(with_method_fallback(
            routes!(discovery::well_known),
            "GET, HEAD",
        ))
}

/// The probes and their documentation.
pub(crate) fn probe_api() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(with_method_fallback(routes!(health::healthz), "GET, HEAD"))
        .routes(with_method_fallback(routes!(health::readyz), "GET, HEAD"))
}

/// Changes the axum side of a documented route.
fn map_method_router(
    (schemas, paths, method_router): UtoipaMethodRouter<AppState>,
    map: impl FnOnce(MethodRouter<AppState>) -> MethodRouter<AppState>,
) -> UtoipaMethodRouter<AppState> {
    (schemas, paths, map(method_router))
}

/// A documented route whose other methods answer 405 with `Allow`.
pub(crate) fn with_method_fallback(
    route: UtoipaMethodRouter<AppState>,
    allow: &'static str,
) -> UtoipaMethodRouter<AppState> {
    map_method_router(route, |m| {
        m.fallback(move || async move { ApiError::MethodNotAllowed { allow } })
    })
}

/// The admin routes (below `/admin`) and their documentation.
pub(crate) fn admin_api() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(with_method_fallback(
            routes!(admin::list_tenants, admin::create_tenant),
            "GET, HEAD, POST",
        ))
        .routes(with_method_fallback(
            routes!(
                admin::get_tenant,
                admin::update_tenant,
                admin::delete_tenant
            ),
            "GET, HEAD, PATCH, DELETE",
        ))
        .routes(with_method_fallback(routes!(admin::disable_tenant), "POST"))
        .routes(with_method_fallback(routes!(admin::enable_tenant), "POST"))
        .routes(with_method_fallback(
            routes!(admin::list_keys, admin::create_key),
            "GET, HEAD, POST",
        ))
        .routes(with_method_fallback(routes!(admin::revoke_key), "DELETE"))
        .routes(with_method_fallback(routes!(admin::usage), "GET, HEAD"))
}

/// Upstream's generic 404, for any path or method not served.
pub(crate) async fn route_not_found() -> ApiError {
    ApiError::RouteNotFound
}
