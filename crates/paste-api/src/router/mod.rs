//! Every route of the API, in one place.

use axum::Router;
use axum::middleware::from_fn_with_state;
use axum::response::IntoResponse as _;
use governor::middleware::NoOpMiddleware;
use tower::Layer as _;
use tower::util::option_layer;
use tower_governor::GovernorError;
use tower_governor::GovernorLayer;
use tower_governor::governor::GovernorConfigBuilder;

use crate::edge::EdgeLayer;
use crate::error::ApiError;
use crate::handlers::metrics::RenderMetrics;
use crate::handlers::{self, admin};
use crate::ratelimit::ClientIpKey;
use crate::state::AppState;

mod docs;
mod tables;

pub use docs::{openapi, openapi_json};

use tables::{admin_api, discovery_api, paste_api, probe_api, review_api, route_not_found};

/// The API router with all its layers.
///
/// | route | methods | kind |
/// |---|---|---|
/// | `/api/paste` | `POST` | compat |
/// | `/api/paste/{id}` | `GET` (compat), `DELETE` (new) | |
/// | `/api/v1/pastes` | `GET`, `POST` | new |
/// | `/api/v1/pastes/{id}` | `GET` (and `HEAD`), `DELETE` | new |
/// | `/api/v1/reviews…` | see `handlers/reviews.rs` | new |
/// | `/api/v1/discovery`, `/.well-known/planshare` | `GET` (and `HEAD`) | new, unauthenticated, cacheable |
/// | `/healthz`, `/readyz` | `GET` (and `HEAD`) | new |
/// | `/api/openapi.json`, `/api/docs/…` | `GET` | new, main listener only |
/// | `/admin/v1/tenants` | `GET`, `POST` | new, admin |
/// | `/admin/v1/tenants/{id}` | `GET`, `PATCH`, `DELETE` | new, admin |
/// | `/admin/v1/tenants/{id}/disable`, `…/enable` | `POST` | new, admin |
/// | `/admin/v1/tenants/{id}/keys` | `GET`, `POST` | new, admin |
/// | `/admin/v1/tenants/{id}/keys/{key_id}` | `DELETE` | new, admin |
/// | `/admin/v1/tenants/{id}/usage` | `GET` | new, admin |
/// | `/metrics` | `GET` | new, with `metrics`: on the admin listener when there is one (no token), else here behind the admin gate (only with an admin token) |
/// | any path | `OPTIONS` → 204 | compat |
///
/// Another method on a new route answers `405` with `Allow`; anything else
/// (another path, another method on a compat route, `HEAD` on
/// `/api/paste/{id}` included) answers upstream's generic 404.
/// Every path below `/admin` passes [`admin::gate`] first (even for a wrong
/// method or an unknown path): with no admin token configured it answers
/// that same generic 404; otherwise it needs the admin bearer token.
///
/// The paste routes sit behind the per-IP limiter; their handlers resolve
/// the tenant (key, host, per-key limit) with the [`crate::extract::Tenant`]
/// extractor. Every route sits behind [`EdgeLayer`]
/// (metrics, CORS, logging, client IP and penalty limiters, load shedding).
///
/// The documented routes are declared once, as utoipa-axum
/// `OpenApiRouter`s ([`paste_api`], [`review_api`], [`discovery_api`],
/// [`admin_api`], [`probe_api`]): the same
/// tables give this router its routes and [`crate::openapi()`] its paths.
pub fn router(state: AppState, metrics: Option<RenderMetrics>) -> Router {
    let separate_admin = !state.inner.admin.addr.trim().is_empty();
    let routes = if separate_admin {
        // The admin API lives on its own listener ([`admin_router`]).
        Router::new()
    } else {
        admin_routes(&state)
    };
    let mut routes = routes
        .merge(paste_routes(&state))
        .merge(docs::docs_routes());
    // `/metrics` on the public listener: only when there is no internal
    // listener to serve it, and then only to the admin token, checked by
    // the admin API's own gate (without a token it is not served here).
    let admin_token_set = !state.inner.admin.token.trim().is_empty();
    if let Some(render) = metrics
        && !separate_admin
        && admin_token_set
    {
        let route = Router::new().route(
            "/metrics",
            handlers::metrics::route(render, state.inner.catalog.clone()),
        );
        routes = routes.merge(route.route_layer(from_fn_with_state(state.clone(), admin::gate)));
    }
    with_shared_layers(routes, state)
}

/// The router of the separate admin listener (`admin.addr`): `/admin/v1/…`
/// behind [`admin::gate`], the probes, `/metrics` without a token (the
/// listener is internal), and the generic 404 for the rest.
pub fn admin_router(state: AppState, metrics: Option<RenderMetrics>) -> Router {
    let mut routes = admin_routes(&state);
    if let Some(render) = metrics {
        routes = routes.route(
            "/metrics",
            handlers::metrics::route(render, state.inner.catalog.clone()),
        );
    }
    with_shared_layers(routes, state)
}

/// `/admin`, gated. The gate wraps the admin router as a whole, outside its
/// method routers, so that with the admin API off not even an `Allow` header
/// (which axum adds to method fallbacks) betrays it.
fn admin_routes(state: &AppState) -> Router<AppState> {
    let admin =
        from_fn_with_state(state.clone(), admin::gate).layer(admin_router_inner(state.clone()));
    Router::new().nest_service("/admin", admin)
}

/// The paste routes, behind the per-IP limiter.
fn paste_routes(state: &AppState) -> Router<AppState> {
    let (routes, _) = paste_api()
        .merge(review_api())
        .merge(discovery_api())
        .split_for_parts();
    routes.layer(option_layer(ip_limiter(state)))
}

/// Probes, the generic 404, and the layers every request passes.
fn with_shared_layers(routes: Router<AppState>, state: AppState) -> Router {
    let (probes, _) = probe_api().split_for_parts();
    routes
        .merge(probes)
        .fallback(route_not_found)
        .layer(EdgeLayer::new(state.clone()))
        .with_state(state)
}

/// The admin API below `/admin` (the prefix is stripped by the nesting).
fn admin_router_inner(state: AppState) -> Router {
    let (routes, _) = admin_api().split_for_parts();
    routes.fallback(route_not_found).with_state(state)
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
