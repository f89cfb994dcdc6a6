//! What every request passes, as one layer ([`Edge`]): request metrics,
//! CORS and preflights, response headers, the one log line per request, the
//! client limiters and load shedding.
//!
//! One hand-written layer rather than one `axum::middleware::from_fn` per
//! concern: each `from_fn` layer clones and boxes the service it wraps and
//! boxes its future on every request, and five of them were about a quarter of
//! the CPU of a small paste read (`loadtests/JOURNAL.md`, issue 8, third pass).
//! The concerns stay separate functions, called in the order the layers had
//! (outermost first): metrics → CORS → logging → client limiters → shedding,
//! one module each below.

mod access_log;
mod clients;
mod head;
mod headers;
mod shed;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::extract::{MatchedPath, Request};
use axum::response::{IntoResponse, Response};
use tower::{Layer, Service};

use crate::extract::TenantSlot;
use crate::routing::RoutePolicies;
use crate::state::AppState;

use access_log::log_requests;
use clients::limit_clients;
use head::check_head;
use headers::cors_and_headers;

/// The layer of [`Edge`]. Apply with `Router::layer` after every route is
/// defined, so that [`MatchedPath`] is known.
#[derive(Clone)]
pub(crate) struct EdgeLayer {
    state: AppState,
    policies: Arc<RoutePolicies>,
}

impl EdgeLayer {
    /// `policies`: every route table's rows (how each route is shed).
    pub(crate) fn new(state: AppState, policies: RoutePolicies) -> Self {
        EdgeLayer {
            state,
            policies: Arc::new(policies),
        }
    }
}

impl<S> Layer<S> for EdgeLayer {
    type Service = Edge<S>;

    fn layer(&self, inner: S) -> Edge<S> {
        Edge {
            inner,
            state: self.state.clone(),
            policies: self.policies.clone(),
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
    policies: Arc<RoutePolicies>,
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
        let policies = self.policies.clone();
        Box::pin(async move { Ok(edge(state, &policies, request, inner).await) })
    }
}

/// Every request: counted and timed ([`crate::metrics::HttpMetrics`]); an
/// `OPTIONS` answered here (204); anything else logged, passed through the
/// client limiters and the load shedder to `inner`, and given the CORS and
/// security headers on the way out.
async fn edge<S>(
    state: AppState,
    policies: &RoutePolicies,
    mut request: Request,
    inner: S,
) -> Response
where
    S: Service<Request, Response = Response, Error = Infallible>,
{
    let started = Instant::now();
    let head = check_head(&mut request, state.inner.head);
    let method = request.method().clone();
    let route = request.extensions().get::<MatchedPath>().cloned();
    let route = route.as_ref().map_or("unmatched", MatchedPath::as_str);
    // The route's row says how it is shed (`crate::routing`).
    let shed = policies.shedding(&method, route);
    // Filled by the `Tenant` extractor of the paste routes.
    let tenant = TenantSlot::default();
    request.extensions_mut().insert(tenant.clone());
    let spans = state.inner.http.request_spans;
    let state = &state;
    let tenant = &tenant;
    let response = cors_and_headers(state, tenant, request, |request| {
        log_requests(route, tenant, spans, request, |request| async move {
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
