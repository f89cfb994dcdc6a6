//! Layers every request passes: CORS and preflights, response headers, load
//! shedding and the one log line per request.

use std::time::Instant;

use axum::body::Body;
use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::{HeaderName, HeaderValue, Method, StatusCode, header};
use serde::Serialize;
use tracing::Instrument;

use crate::error::{ApiError, LoggedError};
use crate::state::AppState;

/// Upstream's JSON content type, byte for byte.
pub(crate) const JSON_CONTENT_TYPE: HeaderValue =
    HeaderValue::from_static("application/json;charset=utf-8");

/// A compact JSON response with upstream's content type.
pub(crate) fn json_response<T: Serialize>(status: StatusCode, body: &T) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => {
            let mut response = Response::new(Body::from(bytes));
            *response.status_mut() = status;
            response
                .headers_mut()
                .insert(header::CONTENT_TYPE, JSON_CONTENT_TYPE);
            response
        }
        // Serialising our own plain structs cannot fail; answer honestly if it does.
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

const CORS_METHODS: HeaderValue = HeaderValue::from_static("GET, POST, OPTIONS");
const CORS_HEADERS: HeaderValue = HeaderValue::from_static("Content-Type");
const CORS_MAX_AGE: HeaderValue = HeaderValue::from_static("86400");

/// `OPTIONS` on any path answers 204; every other response gets CORS headers
/// when the origin is allowed, plus the headers every API response carries.
pub(crate) async fn cors_and_headers(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    let allow_origin = state
        .inner
        .cors
        .allow_origin(request.headers().get(header::ORIGIN));
    let mut response = if request.method() == Method::OPTIONS {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::NO_CONTENT;
        r
    } else {
        next.run(request).await
    };
    let headers = response.headers_mut();
    if let Some(origin) = allow_origin {
        headers.insert(header::ACCESS_CONTROL_ALLOW_METHODS, CORS_METHODS);
        headers.insert(header::ACCESS_CONTROL_ALLOW_HEADERS, CORS_HEADERS);
        headers.insert(header::ACCESS_CONTROL_MAX_AGE, CORS_MAX_AGE);
        headers.insert(header::ACCESS_CONTROL_ALLOW_ORIGIN, origin);
    }
    headers.append(header::VARY, HeaderValue::from_static("Origin"));
    for (name, value) in SECURITY_HEADERS {
        headers.entry(name).or_insert(value);
    }
    response
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
    let span = tracing::info_span!("request", http.method = %method, http.route = %route);
    let response = next.run(request).instrument(span.clone()).await;
    let status = response.status().as_u16();
    let duration_ms = started.elapsed().as_secs_f64() * 1000.0;
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
