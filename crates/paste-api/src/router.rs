//! Every route of the API, in one place.

use axum::Router;
use axum::middleware::from_fn;
use axum::middleware::from_fn_with_state;
use axum::routing::{MethodRouter, delete, get, post};
use tower::Layer as _;

use crate::error::ApiError;
use crate::handlers::{admin, health, paste};
use crate::middleware;
use crate::state::AppState;

/// The API router with all its layers.
///
/// | route | methods | kind |
/// |---|---|---|
/// | `/api/paste` | `POST` | compat |
/// | `/api/paste/{id}` | `GET` (compat), `DELETE` (new) | |
/// | `/healthz`, `/readyz` | `GET` | new |
/// | `/admin/v1/tenants` | `GET`, `POST` | new, admin |
/// | `/admin/v1/tenants/{id}` | `GET`, `PATCH`, `DELETE` | new, admin |
/// | `/admin/v1/tenants/{id}/disable`, `…/enable` | `POST` | new, admin |
/// | `/admin/v1/tenants/{id}/keys` | `GET`, `POST` | new, admin |
/// | `/admin/v1/tenants/{id}/keys/{key_id}` | `DELETE` | new, admin |
/// | `/admin/v1/tenants/{id}/usage` | `GET` | new, admin |
/// | any path | `OPTIONS` → 204 | compat |
///
/// Anything else (including `HEAD` on a paste) answers upstream's generic 404.
/// Every path below `/admin` passes [`admin::gate`] first (even for a wrong
/// method or an unknown path): with no admin token configured it answers
/// that same generic 404; otherwise it needs the admin bearer token.
pub fn router(state: AppState) -> Router {
    // The gate wraps the admin router as a whole, outside its method
    // routers, so that with the admin API off not even an `Allow` header
    // (which axum adds to method fallbacks) betrays it.
    let admin = from_fn_with_state(state.clone(), admin::gate).layer(admin_router(state.clone()));
    Router::new()
        .nest_service("/admin", admin)
        .route(
            "/api/paste",
            post(paste::create_paste).fallback(route_not_found),
        )
        .route(
            "/api/paste/{id}",
            get(paste::get_paste)
                .head(route_not_found)
                .delete(paste::delete_paste)
                .fallback(route_not_found),
        )
        .route("/healthz", probe(get(health::healthz)))
        .route("/readyz", probe(get(health::readyz)))
        .fallback(route_not_found)
        .layer(from_fn_with_state(state.clone(), middleware::shed_load))
        .layer(from_fn(middleware::log_requests))
        .layer(from_fn_with_state(
            state.clone(),
            middleware::cors_and_headers,
        ))
        .with_state(state)
}

/// The admin API below `/admin` (the prefix is stripped by the nesting).
fn admin_router(state: AppState) -> Router {
    let with_allow = |route: MethodRouter<AppState>, allow: &'static str| {
        route.fallback(move || async move { ApiError::MethodNotAllowed { allow } })
    };
    Router::new()
        .route(
            "/v1/tenants",
            with_allow(
                get(admin::list_tenants).post(admin::create_tenant),
                "GET, HEAD, POST",
            ),
        )
        .route(
            "/v1/tenants/{id}",
            with_allow(
                get(admin::get_tenant)
                    .patch(admin::update_tenant)
                    .delete(admin::delete_tenant),
                "GET, HEAD, PATCH, DELETE",
            ),
        )
        .route(
            "/v1/tenants/{id}/disable",
            with_allow(post(admin::disable_tenant), "POST"),
        )
        .route(
            "/v1/tenants/{id}/enable",
            with_allow(post(admin::enable_tenant), "POST"),
        )
        .route(
            "/v1/tenants/{id}/keys",
            with_allow(
                get(admin::list_keys).post(admin::create_key),
                "GET, HEAD, POST",
            ),
        )
        .route(
            "/v1/tenants/{id}/keys/{key_id}",
            with_allow(delete(admin::revoke_key), "DELETE"),
        )
        .route(
            "/v1/tenants/{id}/usage",
            with_allow(get(admin::usage), "GET, HEAD"),
        )
        .fallback(route_not_found)
        .with_state(state)
}

fn probe(route: MethodRouter<AppState>) -> MethodRouter<AppState> {
    route.fallback(|| async { ApiError::MethodNotAllowed { allow: "GET, HEAD" } })
}

async fn route_not_found() -> ApiError {
    ApiError::RouteNotFound
}
