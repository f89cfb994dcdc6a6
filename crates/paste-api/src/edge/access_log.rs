//! The one span and log line per request.

use std::future::Future;
use std::time::Instant;

use axum::extract::Request;
use axum::response::Response;
use tracing::Instrument;

use crate::error::LoggedError;
use crate::extract::TenantSlot;

/// The target of the request span and the per-request line, so that a log
/// filter can turn them off alone (`info,planshare::access=warn`) and keep
/// everything else, failures included.
const ACCESS_LOG_TARGET: &str = "planshare::access";

/// One span and one log line per request: low-cardinality route, status,
/// duration. Failures are logged here once (5xx at error, 4xx at debug) with
/// the error detail the response carried; bodies, paths with ids and headers
/// (tokens) are never logged.
pub(super) async fn log_requests<F, Fut>(
    route: &str,
    resolved: &TenantSlot,
    request: Request,
    next: F,
) -> Response
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
