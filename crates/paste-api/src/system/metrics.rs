//! `GET /metrics`: the process's metrics in the Prometheus text format,
//! and the tenant usage gauges, brought up to date on each scrape with one
//! catalog query.

use std::sync::Arc;
use std::time::Duration;

use axum::response::IntoResponse as _;
use axum::routing::{MethodRouter, get};
use http::{HeaderValue, header};
use tenancy::LazyCatalog;

use crate::error::ApiError;
use crate::state::AppState;

/// Renders the process's metrics in the Prometheus text format. The server
/// installs the recorder (and may count more on each render); this crate
/// serves what it renders.
pub type RenderMetrics = Arc<dyn Fn() -> String + Send + Sync>;

/// Most tenants that get per-tenant usage gauges; with more, only the
/// tenant count is exported (label cardinality stays bounded).
const MAX_TENANT_GAUGES: usize = 100;

/// `GET /metrics`: the Prometheus text format that `render` gives, after
/// the tenant usage gauges are brought up to date. Served behind the API's
/// shared layers (security headers, `OPTIONS`), never shed; on the public
/// listener also behind the admin gate (see the router).
pub(crate) fn route(render: RenderMetrics, catalog: Arc<LazyCatalog>) -> MethodRouter<AppState> {
    let get_metrics = get(move || async move {
        record_tenant_usage(&catalog).await;
        let mut response = render().into_response();
        response.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
        );
        response
            .headers_mut()
            .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response
    });
    get_metrics.fallback(|| async { ApiError::MethodNotAllowed { allow: "GET, HEAD" } })
}

/// Sets `planshare_tenants` and, for at most [`MAX_TENANT_GAUGES`] tenants,
/// `planshare_tenant_stored_pastes` / `planshare_tenant_stored_bytes` by
/// tenant id, from the catalog's usage (indexed pastes). Skipped when the
/// catalog does not answer within two seconds.
async fn record_tenant_usage(catalog: &LazyCatalog) {
    let read = async {
        let catalog = catalog.get().await.ok()?;
        let (count, usage) = catalog.usage_of_tenants(MAX_TENANT_GAUGES).await.ok()?;
        let usage: Vec<_> = usage
            .unwrap_or_default()
            .into_iter()
            .map(|(id, u)| (id.as_str().to_owned(), u))
            .collect();
        Some((count, usage))
    };
    let Ok(Some((count, usage))) = tokio::time::timeout(Duration::from_secs(2), read).await else {
        return;
    };
    #[expect(clippy::cast_precision_loss, reason = "a gauge")]
    metrics::gauge!("planshare_tenants").set(count as f64);
    for (tenant, usage) in usage {
        #[expect(clippy::cast_precision_loss, reason = "a gauge")]
        {
            metrics::gauge!("planshare_tenant_stored_pastes", "tenant" => tenant.clone())
                .set(usage.pastes as f64);
            metrics::gauge!("planshare_tenant_stored_bytes", "tenant" => tenant)
                .set(usage.bytes as f64);
        }
    }
}
