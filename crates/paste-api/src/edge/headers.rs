//! CORS (preflights and the answer headers, per tenant) and the headers
//! every API answer carries.

use std::future::Future;

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use http::{HeaderName, HeaderValue, Method, StatusCode, header};

use crate::extract::TenantSlot;
use crate::state::AppState;

/// Upstream's values, sent unless a preflight asks for more.
const CORS_METHODS: HeaderValue = HeaderValue::from_static("GET, POST, OPTIONS");
const CORS_HEADERS: HeaderValue = HeaderValue::from_static("Content-Type");
/// What the new routes need (keys, idempotency, delete), sent to a preflight
/// that asks for any of it.
const CORS_METHODS_FULL: HeaderValue = HeaderValue::from_static("GET, POST, PUT, DELETE, OPTIONS");
const CORS_HEADERS_FULL: HeaderValue =
    HeaderValue::from_static("Content-Type, Authorization, Idempotency-Key, Last-Event-ID");
const CORS_MAX_AGE: HeaderValue = HeaderValue::from_static("86400");

/// `OPTIONS` on any path answers 204; every other response gets CORS headers
/// when the origin is allowed, plus the headers every API response carries.
///
/// CORS follows the tenant the request was for: the API key's tenant when
/// the request was resolved with one, else the tenant of the `Host` (which
/// is all a preflight, carrying no credentials, can be judged by).
pub(super) async fn cors_and_headers<F, Fut>(
    state: &AppState,
    resolved: &TenantSlot,
    request: Request,
    next: F,
) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    let origin = request.headers().get(header::ORIGIN).cloned();
    let host = request.headers().get(header::HOST).cloned();
    let host_tenant = || {
        state
            .inner
            .directory
            .by_host(host.as_ref().and_then(|h| h.to_str().ok()))
    };
    let preflight = request.method() == Method::OPTIONS;
    let wants_more = preflight && asks_beyond_upstream(request.headers());
    let (mut response, tenant) = if preflight {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::NO_CONTENT;
        (r, host_tenant())
    } else {
        let response = next(request).await;
        let tenant = match resolved.get() {
            Some(ctx) => ctx.tenant.clone(),
            None => host_tenant(),
        };
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
/// does not list (`PUT`, `DELETE`, `Authorization`, `Idempotency-Key`,
/// `Last-Event-ID`: the paste API's and the review API's).
fn asks_beyond_upstream(headers: &http::HeaderMap) -> bool {
    let method = headers
        .get(header::ACCESS_CONTROL_REQUEST_METHOD)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|m| m.eq_ignore_ascii_case("DELETE") || m.eq_ignore_ascii_case("PUT"));
    let extra_header = headers
        .get_all(header::ACCESS_CONTROL_REQUEST_HEADERS)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|h| {
            let h = h.trim();
            h.eq_ignore_ascii_case("authorization")
                || h.eq_ignore_ascii_case("idempotency-key")
                || h.eq_ignore_ascii_case("last-event-id")
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
