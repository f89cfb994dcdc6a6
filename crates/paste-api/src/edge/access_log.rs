//! The one log line per request, and the request span when one is wanted.
//!
//! A span per request is what exported traces (OTLP) are made of, and it
//! puts the request's method and route on every line logged while it is
//! served. But a span costs more than the line itself: it is created and
//! registered, its fields are formatted when it opens and again on every
//! `record`, it is entered and left on every poll, and the line repeats its
//! fields as context. So the span is made only when traces are exported
//! (`HttpConfig::request_spans`) or when the access log is at `debug`
//! (someone is looking at single requests). Otherwise the request is one
//! flat event with the same fields — method, route, tenant, status,
//! duration — and a failure's line carries them too.

use std::future::Future;
use std::time::Instant;

use axum::extract::Request;
use axum::response::Response;
use http::Method;
use tracing::{Instrument, Level};

use crate::error::LoggedError;
use crate::extract::TenantSlot;

/// The target of the request span and the per-request line, so that a log
/// filter can turn them off alone (`info,planshare::access=warn`) and keep
/// everything else, failures included.
const ACCESS_LOG_TARGET: &str = "planshare::access";

/// One log line per request: low-cardinality route, status, duration.
/// Failures are logged here once (5xx at error, 4xx at debug) with the
/// error detail the response carried; bodies, paths with ids and headers
/// (tokens) are never logged.
pub(super) async fn log_requests<F, Fut>(
    route: &str,
    resolved: &TenantSlot,
    spans: bool,
    request: Request,
    next: F,
) -> Response
where
    F: FnOnce(Request) -> Fut,
    Fut: Future<Output = Response>,
{
    if spans || tracing::enabled!(target: ACCESS_LOG_TARGET, Level::DEBUG) {
        return in_span(route, resolved, request, next).await;
    }
    let started = Instant::now();
    let method = request.method().clone();
    let response = next(request).await;
    let line = Line {
        method: &method,
        route,
        tenant: resolved.get().map(|ctx| ctx.tenant.id.as_str()),
        status: response.status().as_u16(),
        duration_ms: duration_ms(started),
    };
    line.write(response.extensions().get::<LoggedError>());
    response
}

/// What the flat line says about a request.
struct Line<'a> {
    method: &'a Method,
    route: &'a str,
    tenant: Option<&'a str>,
    status: u16,
    duration_ms: f64,
}

impl Line<'_> {
    fn write(&self, failure: Option<&LoggedError>) {
        let Line {
            method,
            route,
            tenant,
            status,
            duration_ms,
        } = *self;
        match failure {
            Some(LoggedError(err)) if status >= 500 => tracing::error!(
                status,
                duration_ms,
                http.method = %method,
                http.route = %route,
                tenant.id = tenant,
                error = %err,
                detail = ?err,
                "request failed"
            ),
            Some(LoggedError(err)) => tracing::debug!(
                status,
                duration_ms,
                http.method = %method,
                http.route = %route,
                tenant.id = tenant,
                error = %err,
                "request rejected"
            ),
            None if is_probe(route) => tracing::debug!(
                target: ACCESS_LOG_TARGET,
                status,
                duration_ms,
                http.method = %method,
                http.route = %route,
                "probe"
            ),
            None => tracing::info!(
                target: ACCESS_LOG_TARGET,
                status,
                duration_ms,
                http.method = %method,
                http.route = %route,
                tenant.id = tenant,
                "request"
            ),
        }
    }
}

/// The request in a span of its own (traces, or a debugging log level):
/// method, route and tenant on the span, status and duration on the line
/// and, for exported traces, recorded on the span after it.
async fn in_span<F, Fut>(route: &str, resolved: &TenantSlot, request: Request, next: F) -> Response
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
    if let Some(ctx) = resolved.get() {
        span.record("tenant.id", ctx.tenant.id.as_str());
    }
    let duration_ms = duration_ms(started);
    {
        let _enter = span.enter();
        match response.extensions().get::<LoggedError>() {
            Some(LoggedError(err)) if status >= 500 => {
                tracing::error!(status, duration_ms, error = %err, detail = ?err, "request failed");
            }
            Some(LoggedError(err)) => {
                tracing::debug!(status, duration_ms, error = %err, "request rejected")
            }
            None if is_probe(route) => {
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

fn is_probe(route: &str) -> bool {
    route == "/healthz" || route == "/readyz"
}

/// Milliseconds to the microsecond: "0.146", not "0.14602700000000001".
fn duration_ms(started: Instant) -> f64 {
    let micros = u32::try_from(started.elapsed().as_micros()).unwrap_or(u32::MAX);
    f64::from(micros) / 1000.0
}
