//! Layers every request passes: CORS and preflights, response headers, load
//! shedding and the one log line per request.

use std::sync::Arc;
use std::time::Instant;

use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderName, HeaderValue, Method, StatusCode, header};
use serde::Serialize;
use tracing::Instrument;

use crate::error::{ApiError, LoggedError};
use crate::resolve::Resolved;
use crate::state::AppState;

/// Upstream's JSON content type, byte for byte.
pub(crate) const JSON_CONTENT_TYPE: HeaderValue =
    HeaderValue::from_static("application/json;charset=utf-8");

/// A compact JSON response with upstream's content type.
pub(crate) fn json_response<T: Serialize>(status: StatusCode, body: &T) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => json_bytes_response(status, bytes),
        // Serialising our own plain structs cannot fail; answer honestly if it does.
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// A response whose body is JSON already built, with upstream's content type.
pub(crate) fn json_bytes_response(status: StatusCode, json: Vec<u8>) -> Response {
    let mut response = Response::new(Body::from(json));
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, JSON_CONTENT_TYPE);
    response
}

/// Upstream's values, sent unless a preflight asks for more.
const CORS_METHODS: HeaderValue = HeaderValue::from_static("GET, POST, OPTIONS");
const CORS_HEADERS: HeaderValue = HeaderValue::from_static("Content-Type");
/// What the new routes need (keys, idempotency, delete), sent to a preflight
/// that asks for any of it.
const CORS_METHODS_FULL: HeaderValue = HeaderValue::from_static("GET, POST, DELETE, OPTIONS");
const CORS_HEADERS_FULL: HeaderValue =
    HeaderValue::from_static("Content-Type, Authorization, Idempotency-Key");
const CORS_MAX_AGE: HeaderValue = HeaderValue::from_static("86400");

/// `OPTIONS` on any path answers 204; every other response gets CORS headers
/// when the origin is allowed, plus the headers every API response carries.
///
/// CORS follows the tenant the request was for: the API key's tenant when
/// the request was resolved with one, else the tenant of the `Host` (which
/// is all a preflight, carrying no credentials, can be judged by).
pub(crate) async fn cors_and_headers(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let origin = request.headers().get(header::ORIGIN).cloned();
    let wants_more = request.method() == Method::OPTIONS && asks_beyond_upstream(request.headers());
    let host_tenant = state.inner.directory.by_host(
        request
            .headers()
            .get(header::HOST)
            .and_then(|h| h.to_str().ok()),
    );
    let (mut response, tenant) = if request.method() == Method::OPTIONS {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::NO_CONTENT;
        (r, host_tenant)
    } else {
        let response = next.run(request).await;
        let tenant = response
            .extensions()
            .get::<Arc<Resolved>>()
            .map_or(host_tenant, |r| r.tenant.clone());
        (response, tenant)
    };
    let allow_origin = tenant.cors.allow_origin(origin.as_ref());
    let headers = response.headers_mut();
    if let Some(origin) = allow_origin {
        let (methods, allowed_headers) = if wants_more {
            (CORS_METHODS_FULL, CORS_HEADERS_FULL)
        } else {
            (CORS_METHODS, CORS_HEADERS)
        };
        headers.insert(header::ACCESS_CONTROL_ALLOW_METHODS, methods);
        headers.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, allowed_headers);
        headers.insert(header::ACCESS_CONTROL_MAX_AGE, CORS_MAX_AGE);
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    }
    headers.append(header::VARY, HeaderValue::from_static("Origin"));
    for (name, value) in SECURITY_HEADERS {
        headers.entry(name).or_insert(value);
    }
    response
}

/// Whether a preflight asks for a method or header upstream's CORS answer
/// does not list (`DELETE`, `Authorization`, `Idempotency-Key`).
fn asks_beyond_upstream(headers: &http::HeaderMap) -> bool {
    let method = headers
        .get(header::ACCESS_CONTROL_REQUEST_METHOD)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|m| m.eq_ignore_ascii_case("DELETE"));
    let extra_header = headers
        .get_all(header::ACCESS_CONTROL_REQUEST_HEADERS)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|h| {
            let h = h.trim();
            h.eq_ignore_ascii_case("authorization") || h.eq_ignore_ascii_case("idempotency-key")
        });
    method || extra_header
}

/// Sent on every API response: API bodies are data, never documents.
const SECURITY_HEADERS: [(HeaderName, HeaderValue); 3] = [
    (
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    ),
    (
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    ),
    (
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; frame-ancestors 'none'; sandbox"),
    ),
];

/// Sheds requests beyond `http.max_in_flight` with 503 + `Retry-After`
/// instead of queueing them without bound.
pub(crate) async fn shed_load(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    match state.inner.in_flight.clone().try_acquire_owned() {
        Ok(_permit) => next.run(request).await,
        Err(_) => ApiError::Overloaded.into_response(),
    }
}

/// One span and one log line per request: low-cardinality route, status,
/// duration. Failures are logged here once (5xx at error, 4xx at debug) with
/// the error detail the response carried; bodies, paths with ids and headers
/// (tokens) are never logged.
pub(crate) async fn log_requests(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", |p| p.as_str())
        .to_owned();
    let span = tracing::info_span!(
        "request",
        http.method = %method,
        http.route = %route,
        tenant.id = tracing::field::Empty,
        http.response.status_code = tracing::field::Empty,
        duration_ms = tracing::field::Empty,
    );
    let response = next.run(request).instrument(span.clone()).await;
    let status = response.status().as_u16();
    if let Some(resolved) = response.extensions().get::<Arc<Resolved>>() {
        span.record("tenant.id", resolved.tenant.id.as_str());
    }
    let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
    // On the span too, so that exported traces (OTLP) carry them.
    span.record("http.response.status_code", status);
    span.record("duration_ms", duration_ms);
    let _enter = span.enter();
    match response.extensions().get::<LoggedError>() {
        Some(LoggedError(err)) if status >= 500 => {
            tracing::error!(status, duration_ms, error = %err, detail = ?err, "request failed");
        }
        Some(LoggedError(err)) => {
            tracing::debug!(status, duration_ms, error = %err, "request rejected")
        }
        None if route == "/healthz" || route == "/readyz" => {
            tracing::debug!(status, duration_ms, "probe");
        }
        None => tracing::info!(status, duration_ms, "request"),
    }
    response
}
