//! Every route of the API, in one place.

use axum::Router;
use axum::middleware::from_fn;
use axum::middleware::from_fn_with_state;
use axum::routing::{MethodRouter, get, post};

use crate::error::ApiError;
use crate::handlers::{health, paste};
use crate::middleware;
use crate::state::AppState;

/// The API router with all its layers.
///
/// | route | methods | kind |
/// |---|---|---|
/// | `/api/paste` | `POST` | compat |
/// | `/api/paste/{id}` | `GET` (compat), `DELETE` (new) | |
/// | `/healthz`, `/readyz` | `GET` | new |
/// | any path | `OPTIONS` → 204 | compat |
///
/// Anything else (including `HEAD` on a paste) answers upstream's generic 404.
pub fn router(state: AppState) -> Router {
    Router::new()
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

fn probe(route: MethodRouter<AppState>) -> MethodRouter<AppState> {
    route.fallback(|| async { ApiError::MethodNotAllowed { allow: "GET, HEAD" } })
}

async fn route_not_found() -> ApiError {
    ApiError::RouteNotFound
}
