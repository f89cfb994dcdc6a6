//! Every route of the API, in one place.

use axum::Router;
use axum::middleware::from_fn;
use axum::middleware::from_fn_with_state;
use axum::response::IntoResponse as _;
use axum::routing::{MethodRouter, delete, get, post};
use governor::middleware::NoOpMiddleware;
use tower::Layer as _;
use tower::util::option_layer;
use tower_governor::GovernorError;
use tower_governor::GovernorLayer;
use tower_governor::governor::GovernorConfigBuilder;

use crate::error::ApiError;
use crate::handlers::{admin, health, paste, pastes};
use crate::ratelimit::ClientIpKey;
use crate::state::AppState;
use crate::{middleware, resolve};

/// The API router with all its layers.
///
/// | route | methods | kind |
/// |---|---|---|
/// | `/api/paste` | `POST` | compat |
/// | `/api/paste/{id}` | `GET` (compat), `DELETE` (new) | |
/// | `/api/v1/pastes` | `GET`, `POST` | new |
/// | `/api/v1/pastes/{id}` | `GET`, `DELETE` | new |
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
///
/// The paste routes sit behind the per-IP limiter and [`resolve::resolve`]
/// (tenant, key, per-key limit); every route sits behind
/// [`resolve::limit_clients`] (client IP, penalty limiters).
pub fn router(state: AppState) -> Router {
    let separate_admin = !state.inner.admin.addr.trim().is_empty();
    let routes = if separate_admin {
        // The admin API lives on its own listener ([`admin_router`]).
        Router::new()
    } else {
        admin_routes(&state)
    };
    with_shared_layers(routes.merge(paste_routes(&state)), state)
}

/// The router of the separate admin listener (`admin.addr`): `/admin/v1/…`
/// behind [`admin::gate`], the probes, and the generic 404 for the rest.
pub fn admin_router(state: AppState) -> Router {
    with_shared_layers(admin_routes(&state), state)
}

/// `/admin`, gated. The gate wraps the admin router as a whole, outside its
/// method routers, so that with the admin API off not even an `Allow` header
/// (which axum adds to method fallbacks) betrays it.
fn admin_routes(state: &AppState) -> Router<AppState> {
    let admin =
        from_fn_with_state(state.clone(), admin::gate).layer(admin_router_inner(state.clone()));
    Router::new().nest_service("/admin", admin)
}

/// The paste routes, behind the per-IP limiter and tenant resolution.
fn paste_routes(state: &AppState) -> Router<AppState> {
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
        .route(
            "/api/v1/pastes",
            get(pastes::list).post(pastes::create).fallback(|| async {
                ApiError::MethodNotAllowed {
                    allow: "GET, HEAD, POST",
                }
            }),
        )
        .route(
            "/api/v1/pastes/{id}",
            get(pastes::get).delete(pastes::delete).fallback(|| async {
                ApiError::MethodNotAllowed {
                    allow: "GET, HEAD, DELETE",
                }
            }),
        )
        .layer(from_fn_with_state(state.clone(), resolve::resolve))
        .layer(option_layer(ip_limiter(state)))
}

/// Probes, the generic 404, and the layers every request passes.
fn with_shared_layers(routes: Router<AppState>, state: AppState) -> Router {
    routes
        .route("/healthz", probe(get(health::healthz)))
        .route("/readyz", probe(get(health::readyz)))
        .fallback(route_not_found)
        .layer(from_fn_with_state(state.clone(), middleware::shed_load))
        .layer(from_fn_with_state(state.clone(), resolve::limit_clients))
        .layer(from_fn(middleware::log_requests))
        .layer(from_fn_with_state(
            state.clone(),
            middleware::cors_and_headers,
        ))
        .with_state(state)
}

/// The admin API below `/admin` (the prefix is stripped by the nesting).
fn admin_router_inner(state: AppState) -> Router {
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

/// The per-client-IP limiter (`tower-governor`), when `[limits] ip_per_sec`
/// is set; its limiter is handed to the state for cleaning.
fn ip_limiter(
    state: &AppState,
) -> Option<GovernorLayer<ClientIpKey, NoOpMiddleware, axum::body::Body>> {
    let limits = &state.inner.limits;
    let per_sec = u64::from(limits.ip_per_sec);
    if per_sec == 0 || limits.ip_burst == 0 {
        return None;
    }
    let config = GovernorConfigBuilder::default()
        .key_extractor(ClientIpKey)
        // `period` is the time one token takes to come back.
        .period(std::time::Duration::from_nanos(
            1_000_000_000 / per_sec.max(1),
        ))
        .burst_size(limits.ip_burst)
        .finish()?;
    state
        .inner
        .limiters
        .set_ip_limiter(config.limiter().clone());
    Some(GovernorLayer::new(config).error_handler(|error| {
        let retry_after = match error {
            GovernorError::TooManyRequests { wait_time, .. } => {
                std::time::Duration::from_secs(wait_time)
            }
            _ => std::time::Duration::from_secs(1),
        };
        ApiError::TooManyRequests { retry_after }.into_response()
    }))
}

fn probe(route: MethodRouter<AppState>) -> MethodRouter<AppState> {
    route.fallback(|| async { ApiError::MethodNotAllowed { allow: "GET, HEAD" } })
}

async fn route_not_found() -> ApiError {
    ApiError::RouteNotFound
}
