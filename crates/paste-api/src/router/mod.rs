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

use crate::admin::handlers::gate;
use crate::edge::EdgeLayer;
use crate::error::ApiError;
use crate::ratelimit::ClientIpKey;
use crate::routing::{RoutePolicies, route_not_found};
use crate::state::AppState;
use crate::system::metrics::{self, RenderMetrics};
use crate::{admin, pastes, reviews, system};

mod docs;

pub use docs::{openapi, openapi_json};

/// Every family's route rows, as the edge looks them up.
fn policies() -> RoutePolicies {
    RoutePolicies::new(&[
        pastes::routes::ROWS,
        reviews::routes::ROWS,
        admin::routes::ROWS,
        system::routes::ROWS,
        docs::ROWS,
    ])
}

/// The API router with all its layers.
///
/// | route | methods | kind |
/// |---|---|---|
/// | `/api/paste` | `POST` | compat |
/// | `/api/paste/{id}` | `GET` (compat), `DELETE` (new) | |
/// | `/api/v1/pastes` | `GET`, `POST` | new |
/// | `/api/v1/pastes/{id}` | `GET` (and `HEAD`), `DELETE` | new |
/// | `/api/v1/reviews…` | see `reviews/handlers.rs` | new |
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
/// Every path below `/admin` passes [`gate`] first (even for a wrong
/// method or an unknown path): with no admin token configured it answers
/// that same generic 404; otherwise it needs the admin bearer token.
///
/// The paste routes sit behind the per-IP limiter; their handlers resolve
/// the tenant (key, host, per-key limit) with the [`crate::extract::Tenant`]
/// extractor. Every route sits behind [`EdgeLayer`]
/// (metrics, CORS, logging, client IP and penalty limiters, load shedding).
///
/// The documented routes are declared once, in each family's route table
/// (`pastes/routes.rs`, `reviews/routes.rs`, `admin/routes.rs`,
/// `system/routes.rs`) as utoipa-axum `OpenApiRouter`s: the same tables
/// give this router its routes and [`crate::openapi()`] its paths, and
/// their rows give the edge each route's shedding policy.
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
            metrics::route(render, state.inner.catalog.clone()),
        );
        routes = routes.merge(route.route_layer(from_fn_with_state(state.clone(), gate)));
    }
    with_shared_layers(routes, state)
}

/// The router of the separate admin listener (`admin.addr`): `/admin/v1/…`
/// behind [`gate`], the probes, `/metrics` without a token (the
/// listener is internal), and the generic 404 for the rest.
pub fn admin_router(state: AppState, metrics: Option<RenderMetrics>) -> Router {
    let mut routes = admin_routes(&state);
    if let Some(render) = metrics {
        routes = routes.route(
            "/metrics",
            metrics::route(render, state.inner.catalog.clone()),
        );
    }
    with_shared_layers(routes, state)
}

/// `/admin`, gated. The gate wraps the admin router as a whole, outside its
/// method routers, so that with the admin API off not even an `Allow` header
/// (which axum adds to method fallbacks) betrays it.
fn admin_routes(state: &AppState) -> Router<AppState> {
    let admin = from_fn_with_state(state.clone(), gate).layer(admin_router_inner(state.clone()));
    Router::new().nest_service("/admin", admin)
}

/// The paste routes, behind the per-IP limiter.
fn paste_routes(state: &AppState) -> Router<AppState> {
    let (routes, _) = pastes::routes::routes()
        .merge(reviews::routes::routes())
        .merge(system::routes::discovery_routes())
        .split_for_parts();
    routes.layer(option_layer(ip_limiter(state)))
}

/// Probes, the generic 404, and the layers every request passes.
fn with_shared_layers(routes: Router<AppState>, state: AppState) -> Router {
    let (probes, _) = system::routes::probe_routes().split_for_parts();
    routes
        .merge(probes)
        .fallback(route_not_found)
        .layer(EdgeLayer::new(state.clone(), policies()))
        .with_state(state)
}

/// The admin API below `/admin` (the prefix is stripped by the nesting).
fn admin_router_inner(state: AppState) -> Router {
    let (routes, _) = admin::routes::routes().split_for_parts();
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::Path;

    use http::Method;

    use super::*;
    use crate::routing::{Auth, Shedding};

    /// `(METHOD, path) -> security` of every operation of the document.
    fn documented() -> Vec<(String, String, serde_json::Value, String)> {
        let doc: serde_json::Value = serde_json::from_str(&openapi_json()).unwrap();
        let mut out = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                out.push((
                    method.to_uppercase(),
                    path.clone(),
                    op.get("security")
                        .cloned()
                        .unwrap_or(serde_json::Value::Null),
                    op["operationId"].as_str().unwrap().to_owned(),
                ));
            }
        }
        out
    }

    /// `Auth::security` as the document writes it.
    fn as_document(auth: Auth) -> serde_json::Value {
        let alternatives = auth.security();
        if alternatives.is_empty() {
            return serde_json::Value::Null;
        }
        alternatives
            .iter()
            .map(|schemes| {
                schemes
                    .iter()
                    .map(|s| ((*s).to_owned(), serde_json::json!([])))
                    .collect::<serde_json::Map<_, _>>()
                    .into()
            })
            .collect::<Vec<serde_json::Value>>()
            .into()
    }

    #[test]
    fn every_documented_operation_has_one_row_with_its_credential() {
        let policies = policies();
        let rows: Vec<_> = policies.rows().collect();
        for (method, path, security, op) in documented() {
            let matching: Vec<_> = rows
                .iter()
                .filter(|r| r.method == method && r.path == path)
                .collect();
            assert_eq!(
                matching.len(),
                1,
                "{op} ({method} {path}): rows {matching:?}"
            );
            assert_eq!(
                as_document(matching[0].auth),
                security,
                "{op} ({method} {path}): the row's credential is not the document's"
            );
        }
        let documented: BTreeSet<_> = documented()
            .into_iter()
            .map(|(m, p, _, _)| (m, p))
            .collect();
        for row in rows {
            // `/metrics` is served, but not documented.
            if row.path == "/metrics" {
                continue;
            }
            assert!(
                documented.contains(&(row.method.to_owned(), row.path.to_owned())),
                "a row names no documented operation: {row:?}"
            );
        }
    }

    #[test]
    fn rows_shed_as_declared() {
        let p = policies();
        let post = Method::POST;
        let get = Method::GET;
        // Probes, scrapes and streams: never, whatever the method.
        for route in [
            "/healthz",
            "/readyz",
            "/metrics",
            "/api/v1/reviews/{id}/events",
        ] {
            assert_eq!(p.shedding(&get, route), Shedding::Exempt, "{route}");
            assert_eq!(
                p.shedding(&Method::HEAD, route),
                Shedding::Exempt,
                "{route}"
            );
            assert_eq!(
                p.shedding(&Method::DELETE, route),
                Shedding::Exempt,
                "{route}"
            );
        }
        // Large bodies: after the body.
        for (method, route) in [
            (&post, "/api/paste"),
            (&post, "/api/v1/pastes"),
            (&post, "/api/v1/reviews"),
            (&post, "/api/v1/reviews/{id}/versions"),
            (&Method::PUT, "/api/v1/reviews/{id}/comments"),
            (&post, "/api/v1/reviews/{id}/decision"),
        ] {
            assert_eq!(
                p.shedding(method, route),
                Shedding::AfterBody,
                "{method} {route}"
            );
        }
        // Everything else takes a place first, unknown routes included.
        for (method, route) in [
            (&get, "/api/paste/{id}"),
            (&get, "/api/v1/pastes"),
            (&Method::DELETE, "/api/v1/reviews/{id}/comments"),
            (&post, "/api/v1/reviews/{id}/links"),
            (&Method::PATCH, "/api/v1/pastes"),
            (&get, "unmatched"),
        ] {
            assert_eq!(
                p.shedding(method, route),
                Shedding::Applies,
                "{method} {route}"
            );
        }
    }

    /// `createPasteCompat` → `create_paste_compat`.
    fn snake(operation_id: &str) -> String {
        let mut out = String::new();
        for c in operation_id.chars() {
            if c.is_ascii_uppercase() {
                out.push('_');
                out.push(c.to_ascii_lowercase());
            } else {
                out.push(c);
            }
        }
        out
    }

    /// Every `(operationId, handler name)` of the crate's sources: the
    /// `fn` that follows each `#[utoipa::path(… operation_id = "…" …)]`.
    fn handlers_in(dir: &Path, out: &mut Vec<(String, String, String)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                handlers_in(&path, out);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let mut rest = text.as_str();
            while let Some(at) = rest.find("operation_id = \"") {
                rest = &rest[at + "operation_id = \"".len()..];
                let id = &rest[..rest.find('"').unwrap()];
                if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric()) {
                    continue; // not an attribute (this test's own text)
                }
                let after = &rest[rest.find("async fn ").expect("a handler") + 9..];
                let name = &after[..after.find('(').unwrap()];
                out.push((id.to_owned(), name.to_owned(), path.display().to_string()));
            }
        }
    }

    #[test]
    fn every_handler_is_named_after_its_operation() {
        let mut found = Vec::new();
        handlers_in(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut found,
        );
        for (id, name, file) in &found {
            assert_eq!(&snake(id), name, "{file}: the handler of {id}");
        }
        let in_sources: BTreeSet<_> = found.iter().map(|(id, _, _)| id.clone()).collect();
        let in_document: BTreeSet<_> = documented().into_iter().map(|(_, _, _, op)| op).collect();
        assert_eq!(in_sources, in_document);
    }
}
