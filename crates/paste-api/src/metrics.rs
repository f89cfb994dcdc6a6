//! Prometheus-style metrics, recorded through the `metrics` facade (a no-op
//! until the server installs a recorder; `planshare-server` renders them on
//! `/metrics`). Every label has a bounded set of values:
//!
//! | metric | labels |
//! |---|---|
//! | `planshare_http_requests_total` | `route` (the matched path template, or `unmatched`), `method`, `status` |
//! | `planshare_http_request_duration_seconds` (histogram) | `route`, `method`, `status_class` (`2xx` …) |
//! | `planshare_store_*` | see `paste_store::instrument`, the store wrapper that records them |
//! | `planshare_rate_limited_total` | `limiter` (`ip`, `key`, `failed_auth`, `not_found`) |

use std::collections::HashMap;
use std::sync::{PoisonError, RwLock};
use std::time::Duration;

use axum::response::Response;
use http::{Method, StatusCode};

pub use paste_store::instrument::{STORE_DURATION, STORE_ERRORS, STORE_OPERATIONS};

/// Requests served, by route template, method and status.
pub const HTTP_REQUESTS: &str = "planshare_http_requests_total";
/// Request duration in seconds, by route template, method and status class.
pub const HTTP_DURATION: &str = "planshare_http_request_duration_seconds";
/// Requests refused with 429, by limiter.
pub const RATE_LIMITED: &str = "planshare_rate_limited_total";

/// Marks a 429 response whose limiter has already been counted; a 429
/// without it comes from the per-IP limiter (`tower-governor`), whose error
/// handler lives in the router.
#[derive(Clone, Copy, Debug)]
pub(crate) struct RateLimitCounted;

/// Counts a rejection by `limiter` (`key`, `failed_auth`, `not_found`) and
/// marks `response` so that [`HttpMetrics::record`] does not count it again.
pub(crate) fn rate_limited(limiter: &'static str, mut response: Response) -> Response {
    metrics::counter!(RATE_LIMITED, "limiter" => limiter).increment(1);
    response.extensions_mut().insert(RateLimitCounted);
    response
}

/// The HTTP series, recorded for every request by
/// [`crate::edge::EdgeLayer`].
///
/// Building a series' labels and looking it up in the recorder's registry
/// costs more than recording, so the handles are kept here by route, method
/// and status (bounded: route templates × methods × the statuses the API
/// answers) and looked up under a read lock.
#[derive(Default)]
pub(crate) struct HttpMetrics {
    routes: RwLock<HashMap<Box<str>, Vec<HttpSeries>>>,
}

/// The handles of one route, method and status.
#[derive(Clone)]
struct HttpSeries {
    method: &'static str,
    status: StatusCode,
    requests: metrics::Counter,
    duration: metrics::Histogram,
}

impl HttpMetrics {
    /// Counts and times one response (`unmatched` for a request no route
    /// matched), and counts a 429 that no limiter of ours marked as counted
    /// as the per-IP limiter's.
    pub(crate) fn record(
        &self,
        route: &str,
        method: &Method,
        response: &Response,
        elapsed: Duration,
    ) {
        let status = response.status();
        if status == StatusCode::TOO_MANY_REQUESTS
            && response.extensions().get::<RateLimitCounted>().is_none()
        {
            metrics::counter!(RATE_LIMITED, "limiter" => "ip").increment(1);
        }
        let series = self.series(route, method_label(method), status);
        series.requests.increment(1);
        series.duration.record(elapsed.as_secs_f64());
    }

    fn series(&self, route: &str, method: &'static str, status: StatusCode) -> HttpSeries {
        let find = |all: &Vec<HttpSeries>| {
            all.iter()
                .find(|s| s.method == method && s.status == status)
                .cloned()
        };
        let routes = self.routes.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(found) = routes.get(route).and_then(find) {
            return found;
        }
        drop(routes);
        let mut routes = self.routes.write().unwrap_or_else(PoisonError::into_inner);
        let all = routes.entry(route.into()).or_default();
        if let Some(found) = find(all) {
            return found;
        }
        let series = HttpSeries {
            method,
            status,
            requests: metrics::counter!(
                HTTP_REQUESTS,
                "route" => route.to_owned(),
                "method" => method,
                "status" => status.as_str().to_owned(),
            ),
            duration: metrics::histogram!(
                HTTP_DURATION,
                "route" => route.to_owned(),
                "method" => method,
                "status_class" => status_class(status),
            ),
        };
        all.push(series.clone());
        series
    }
}

fn status_class(status: StatusCode) -> &'static str {
    match status.as_u16() / 100 {
        1 => "1xx",
        2 => "2xx",
        3 => "3xx",
        4 => "4xx",
        _ => "5xx",
    }
}

/// Standard methods by name; anything else is `other` (bounded labels).
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::PATCH => "PATCH",
        _ => "other",
    }
}
