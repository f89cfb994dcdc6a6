//! What every request passes, as one layer ([`Edge`]): request metrics,
//! CORS and preflights, response headers, the one log line per request, the
//! client limiters and load shedding.
//!
//! One hand-written layer rather than one `axum::middleware::from_fn` per
//! concern: each `from_fn` layer clones and boxes the service it wraps and
//! boxes its future on every request, and five of them were about a quarter of
//! the CPU of a small paste read (`loadtests/README.md`, issue 8, third pass).
//! The concerns stay separate functions, called in the order the layers had
//! (outermost first): metrics → CORS → logging → client limiters → shedding.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::Body;
use axum::extract::{MatchedPath, Request};
use axum::response::{IntoResponse, Response};
use http::{HeaderName, HeaderValue, Method, StatusCode, header};
use serde::Serialize;
use tower::{Layer, Service};
use tracing::Instrument;

use crate::config::HeadLimits;
use crate::error::{ApiError, LoggedError};
use crate::resolve::{Resolved, limit_clients};
use crate::state::AppState;

/// The layer of [`Edge`]. Apply with `Router::layer` after every route is
/// defined, so that [`MatchedPath`] is known.
#[derive(Clone)]
pub(crate) struct EdgeLayer {
    state: AppState,
}

impl EdgeLayer {
    pub(crate) fn new(state: AppState) -> Self {
        EdgeLayer { state }
    }
}

impl<S> Layer<S> for EdgeLayer {
    type Service = Edge<S>;

    fn layer(&self, inner: S) -> Edge<S> {
        Edge {
            inner,
            state: self.state.clone(),
        }
    }
}

/// What every route passes: see the module documentation. What
/// `axum::middleware::from_fn_with_state` would do, without wrapping the
/// inner service in a new box and a `Next` on every request: one boxed
/// future per request.
#[derive(Clone)]
pub(crate) struct Edge<S> {
    inner: S,
    state: AppState,
}

impl<S> Service<Request> for Edge<S>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send + 'static>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        // The instance that was polled ready serves this request; the clone
        // stays for the next one.
        let clone = self.inner.clone();
        let inner = std::mem::replace(&mut self.inner, clone);
        let state = self.state.clone();
        Box::pin(async move { Ok(edge(state, request, inner).await) })
    }
}

/// Calls the service inside the layer: axum's routes never fail.
async fn call_inner<S>(mut inner: S, request: Request) -> Response
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    match inner.call(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    }
}

/// Every request: counted and timed ([`crate::metrics::HttpMetrics`]); an
/// `OPTIONS` answered here (204); anything else logged, passed through the
/// client limiters and the load shedder to `inner`, and given the CORS and
/// security headers on the way out.
async fn edge<S>(state: AppState, mut request: Request, inner: S) -> Response
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    let started = Instant::now();
    let head = check_head(&mut request, state.inner.head);
    let method = request.method().clone();
    let route = request.extensions().get::<MatchedPath>().cloned();
    let route = route.as_ref().map_or("unmatched", MatchedPath::as_str);
    // Probes and scrapes are never shed: an overloaded instance must still
    // say so, and not be restarted for it.
    let shed = if NEVER_SHED.contains(&route) {
        Shedding::Exempt
    } else if method == Method::POST && BODY_FIRST.contains(&route) {
        Shedding::AfterBody
    } else {
        Shedding::Applies
    };
    let state = &state;
    let response = cors_and_headers(state, request, |request| {
        log_requests(route, request, |request| async move {
            match head {
                Ok(()) => limit_clients(state, request, inner, shed).await,
                Err(error) => error.into_response(),
            }
        })
    })
    .await;
    state
        .inner
        .http_metrics
        .record(route, &method, &response, started.elapsed());
    response
}

/// What RFC 9112 asks of a server about the request head that hyper leaves
/// to it: more than one `Host` is a 400 (the `Host` headers are dropped, so
/// no tenant is picked by the first); a transfer coding other than
/// `chunked` alone is a 501, not read as plain chunked; and a request in
/// absolute form (`GET http://host/path`) is for the target's host, whatever
/// `Host` says (§3.2.2), so its `Host` is replaced by the target's. A head
/// over `limits` is a 431 answered here, so that it carries CORS headers
/// like every other answer (hyper's own 431, past twice the limits, cannot).
fn check_head(request: &mut Request, limits: HeadLimits) -> Result<(), ApiError> {
    if head_size(request) > limits.max_bytes || request.headers().len() > limits.max_headers {
        return Err(ApiError::HeadTooLarge);
    }
    let headers = request.headers_mut();
    if headers.get_all(header::HOST).iter().nth(1).is_some() {
        headers.remove(header::HOST);
        return Err(ApiError::MalformedHead(
            "more than one Host header: send exactly one",
        ));
    }
    let mut codings = 0;
    for value in headers.get_all(header::TRANSFER_ENCODING) {
        let value = value
            .to_str()
            .map_err(|_| ApiError::UnsupportedTransferCoding)?;
        for coding in value.split(',').map(str::trim).filter(|c| !c.is_empty()) {
            codings += 1;
            if codings > 1 || !coding.eq_ignore_ascii_case("chunked") {
                return Err(ApiError::UnsupportedTransferCoding);
            }
        }
    }
    if let Some(authority) = request.uri().authority() {
        let host = match authority.port() {
            Some(port) => format!("{}:{port}", authority.host()),
            None => authority.host().to_owned(),
        };
        let host = HeaderValue::try_from(host)
            .map_err(|_| ApiError::MalformedHead("the request target's host is not valid"))?;
        request.headers_mut().insert(header::HOST, host);
    }
    Ok(())
}

/// About the bytes of `request`'s head on the wire: the request line, each
/// field as `name: value\r\n`, and the blank line.
fn head_size(request: &Request) -> usize {
    let uri = request.uri();
    let target = uri.path_and_query().map_or(1, |p| p.as_str().len())
        + uri.authority().map_or(0, |a| a.as_str().len());
    let line = request.method().as_str().len() + 1 + target + " HTTP/1.1\r\n".len();
    let fields: usize = request
        .headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum();
    line + fields + 2
}

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
async fn cors_and_headers<F, Fut>(state: &AppState, request: Request, next: F) -> Response
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
        let tenant = match response.extensions().get::<Arc<Resolved>>() {
            Some(resolved) => resolved.tenant.clone(),
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

/// Routes answered however loaded the instance is.
const NEVER_SHED: [&str; 3] = ["/healthz", "/readyz", "/metrics"];

/// Routes whose `POST` bodies may be large: they take their place once the
/// body has arrived ([`Shedding::AfterBody`]).
const BODY_FIRST: [&str; 2] = ["/api/paste", "/api/v1/pastes"];

/// Whether a request counts against `http.max_in_flight`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shedding {
    /// It takes a place, or is shed when there is none.
    Applies,
    /// Probes and scrapes: served without a place.
    Exempt,
    /// Creates: the handler takes a place once the body has arrived, so
    /// that bodies trickling in do not hold the places of requests that
    /// are ready to be served. Bodies under way are bounded on their own
    /// (per client, by rate and by memory).
    AfterBody,
}

/// Marks a request whose handler must take its place of
/// `http.max_in_flight` itself, once its body has arrived
/// ([`crate::handlers::paste::read_body`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct PlaceAfterBody;

/// Sheds requests beyond `http.max_in_flight` with 503 + `Retry-After`
/// instead of queueing them without bound.
pub(crate) async fn shed_load<S>(
    state: &AppState,
    mut request: Request,
    inner: S,
    shedding: Shedding,
) -> Response
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    match shedding {
        Shedding::Exempt => call_inner(inner, request).await,
        Shedding::AfterBody => {
            request.extensions_mut().insert(PlaceAfterBody);
            call_inner(inner, request).await
        }
        Shedding::Applies => match state.inner.in_flight.try_acquire() {
            Ok(_permit) => call_inner(inner, request).await,
            Err(_) => ApiError::Overloaded.into_response(),
        },
    }
}

/// The target of the request span and the per-request line, so that a log
/// filter can turn them off alone (`info,planshare::access=warn`) and keep
/// everything else, failures included.
pub(crate) const ACCESS_LOG_TARGET: &str = "planshare::access";

/// One span and one log line per request: low-cardinality route, status,
/// duration. Failures are logged here once (5xx at error, 4xx at debug) with
/// the error detail the response carried; bodies, paths with ids and headers
/// (tokens) are never logged.
async fn log_requests<F, Fut>(route: &str, request: Request, next: F) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    let started = Instant::now();
    let span = tracing::info_span!(
        target: ACCESS_LOG_TARGET,
        "request",
        http.method = %request.method(),
        http.route = %route,
        tenant.id = tracing::field::Empty,
        http.response.status_code = tracing::field::Empty,
        duration_ms = tracing::field::Empty,
    );
    let response = next(request).instrument(span.clone()).await;
    let status = response.status().as_u16();
    if let Some(resolved) = response.extensions().get::<Arc<Resolved>>() {
        span.record("tenant.id", resolved.tenant.id.as_str());
    }
    // Milliseconds to the microsecond: "0.146", not "0.14602700000000001".
    let micros = u32::try_from(started.elapsed().as_micros()).unwrap_or(u32::MAX);
    let duration_ms = f64::from(micros) / 1000.0;
    {
        let _enter = span.enter();
        match response.extensions().get::<LoggedError>() {
            Some(LoggedError(err)) if status >= 500 => {
                tracing::error!(status, duration_ms, error = %err, detail = ?err, "request failed");
            }
            Some(LoggedError(err)) => {
                tracing::debug!(status, duration_ms, error = %err, "request rejected")
            }
            None if route == "/healthz" || route == "/readyz" => {
                tracing::debug!(target: ACCESS_LOG_TARGET, status, duration_ms, "probe");
            }
            None => tracing::info!(target: ACCESS_LOG_TARGET, status, duration_ms, "request"),
        }
    }
    // On the span too, for exported traces (OTLP); recorded after the line,
    // which carries them already, so that it does not show them twice.
    span.record("http.response.status_code", status);
    span.record("duration_ms", duration_ms);
    response
}
