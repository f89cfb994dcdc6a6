//! Prometheus-style metrics, recorded through the `metrics` facade (a no-op
//! until the server installs a recorder; `planshare-server` renders them on
//! `/metrics`). Every label has a bounded set of values:
//!
//! | metric | labels |
//! |---|---|
//! | `planshare_http_requests_total` | `route` (the matched path template, or `unmatched`), `method`, `status` |
//! | `planshare_http_request_duration_seconds` (histogram) | `route`, `method`, `status_class` (`2xx` …) |
//! | `planshare_store_operations_total` | `backend`, `operation`, `outcome` (`ok`, `not_found`, `already_exists`, `unavailable`, `internal`, `damaged`) |
//! | `planshare_store_operation_duration_seconds` (histogram) | `backend`, `operation` |
//! | `planshare_store_errors_total` | `backend`, `operation`, `kind` (`unavailable`, `internal`, `damaged`) |
//! | `planshare_rate_limited_total` | `limiter` (`ip`, `key`, `failed_auth`, `not_found`) |

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use axum::response::Response;
use http::{Method, StatusCode};
use paste_store::{Namespace, PasteKey, PasteStore, StoreError, StoredPaste};

/// Requests served, by route template, method and status.
pub const HTTP_REQUESTS: &str = "planshare_http_requests_total";
/// Request duration in seconds, by route template, method and status class.
pub const HTTP_DURATION: &str = "planshare_http_request_duration_seconds";
/// Store operations, by backend, operation and outcome.
pub const STORE_OPERATIONS: &str = "planshare_store_operations_total";
/// Store operation duration in seconds, by backend and operation.
pub const STORE_DURATION: &str = "planshare_store_operation_duration_seconds";
/// Store operations that failed (not-found and already-exists are answers,
/// not failures), by backend, operation and kind.
pub const STORE_ERRORS: &str = "planshare_store_errors_total";
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

/// A [`PasteStore`] that records the latency and outcome of every operation
/// of the store it wraps.
///
/// The label sets are fixed (backend, operation, outcome), so every series is
/// registered once, when the store is wrapped, and recording is an atomic
/// update instead of a registry lookup per request. The process's recorder
/// must be installed before that (the server does); every series therefore
/// shows from start-up, at zero until something happens.
pub(crate) struct InstrumentedStore {
    inner: Arc<dyn PasteStore>,
    /// Indexed by [`Operation`].
    operations: [OperationMetrics; 5],
}

impl std::fmt::Debug for InstrumentedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InstrumentedStore")
            .field("inner", &self.inner)
            .finish_non_exhaustive()
    }
}

/// The store operations, as the `operation` label names them.
#[derive(Clone, Copy)]
enum Operation {
    Put,
    Get,
    Delete,
    Health,
    Purge,
}

const OPERATIONS: [Operation; 5] = [
    Operation::Put,
    Operation::Get,
    Operation::Delete,
    Operation::Health,
    Operation::Purge,
];

impl Operation {
    fn label(self) -> &'static str {
        match self {
            Operation::Put => "put",
            Operation::Get => "get",
            Operation::Delete => "delete",
            Operation::Health => "health",
            Operation::Purge => "purge",
        }
    }
}
const OUTCOMES: [&str; 6] = [
    "ok",
    "not_found",
    "already_exists",
    "unavailable",
    "internal",
    "damaged",
];

/// The series of one store operation.
struct OperationMetrics {
    duration: metrics::Histogram,
    /// By outcome, in the order of [`OUTCOMES`].
    outcomes: [metrics::Counter; 6],
    /// For the outcomes `unavailable`, `internal` and `damaged`.
    errors: [metrics::Counter; 3],
}

impl OperationMetrics {
    fn register(backend: &'static str, operation: Operation) -> Self {
        let operation = operation.label();
        let outcome = |outcome: &'static str| {
            metrics::counter!(
                STORE_OPERATIONS,
                "backend" => backend,
                "operation" => operation,
                "outcome" => outcome,
            )
        };
        let error = |kind: &'static str| {
            metrics::counter!(
                STORE_ERRORS,
                "backend" => backend,
                "operation" => operation,
                "kind" => kind,
            )
        };
        OperationMetrics {
            duration: metrics::histogram!(
                STORE_DURATION,
                "backend" => backend,
                "operation" => operation
            ),
            outcomes: OUTCOMES.map(outcome),
            errors: [error("unavailable"), error("internal"), error("damaged")],
        }
    }
}

impl InstrumentedStore {
    /// Wraps `store`.
    pub(crate) fn wrap(store: Arc<dyn PasteStore>) -> Arc<dyn PasteStore> {
        let backend = store.backend();
        Arc::new(InstrumentedStore {
            inner: store,
            operations: OPERATIONS.map(|operation| OperationMetrics::register(backend, operation)),
        })
    }

    fn record<T>(&self, operation: Operation, started: Instant, result: &Result<T, StoreError>) {
        let series = &self.operations[operation as usize];
        let outcome = match result {
            Ok(_) => 0,
            Err(StoreError::NotFound) => 1,
            Err(StoreError::AlreadyExists) => 2,
            Err(StoreError::Unavailable { .. }) => 3,
            Err(StoreError::Internal { .. }) => 4,
            Err(StoreError::Damaged { .. }) => 5,
        };
        series.duration.record(started.elapsed().as_secs_f64());
        series.outcomes[outcome].increment(1);
        if outcome >= 3 {
            series.errors[outcome - 3].increment(1);
        }
    }
}

#[async_trait::async_trait]
impl PasteStore for InstrumentedStore {
    fn backend(&self) -> &'static str {
        self.inner.backend()
    }

    async fn put_if_absent(&self, key: &PasteKey, paste: StoredPaste) -> Result<(), StoreError> {
        let started = Instant::now();
        let result = self.inner.put_if_absent(key, paste).await;
        self.record(Operation::Put, started, &result);
        result
    }

    async fn get(&self, key: &PasteKey) -> Result<StoredPaste, StoreError> {
        let started = Instant::now();
        let result = self.inner.get(key).await;
        self.record(Operation::Get, started, &result);
        if let Err(StoreError::Damaged { reason, .. }) = &result {
            // The one log line of a damaged read (backends do not log it):
            // where it is and what is wrong, never its bytes.
            tracing::warn!(
                backend = self.inner.backend(),
                namespace = %key.namespace(),
                paste.id = %key.id(),
                damage = %reason,
                "damaged paste: it answers 410 until it is deleted"
            );
        }
        result
    }

    async fn delete(&self, key: &PasteKey) -> Result<(), StoreError> {
        let started = Instant::now();
        let result = self.inner.delete(key).await;
        self.record(Operation::Delete, started, &result);
        result
    }

    async fn health(&self) -> Result<(), StoreError> {
        let started = Instant::now();
        let result = self.inner.health().await;
        self.record(Operation::Health, started, &result);
        result
    }

    async fn purge_namespace(&self, namespace: &Namespace) -> Result<u64, StoreError> {
        let started = Instant::now();
        let result = self.inner.purge_namespace(namespace).await;
        self.record(Operation::Purge, started, &result);
        result
    }
}
