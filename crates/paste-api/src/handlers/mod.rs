//! Request handlers, one module per resource.

pub(crate) mod admin;
pub(crate) mod discovery;
pub(crate) mod health;
pub(crate) mod metrics;
pub(crate) mod paste;
pub(crate) mod pastes;
pub(crate) mod review_events;
pub(crate) mod reviews;

use std::future::Future;
use std::time::Duration;

use tenancy::{Catalog, CatalogError};

use crate::error::ApiError;
use crate::state::AppState;

/// Opens the catalog and runs `op` on it, bounded by `http.store_timeout_secs`
/// (a late answer is an outage, 503).
pub(crate) async fn catalog_call<T, F, Fut>(state: &AppState, op: F) -> Result<T, ApiError>
where
    F: FnOnce(std::sync::Arc<Catalog>) -> Fut,
    Fut: Future<Output = Result<T, CatalogError>>,
{
    let timed_out = || ApiError::CatalogUnavailable {
        retry_after: Duration::from_secs(1),
        source: None,
    };
    let timeout = state.store_timeout();
    // Both futures are boxed: database futures are kilobytes, and inline they
    // would make every handler's future as large, which axum then moves into
    // a box on every request, catalog call or not (a read's largest memcpy).
    let catalog = tokio::time::timeout(timeout, Box::pin(state.inner.catalog.get()))
        .await
        .map_err(|_| timed_out())?
        .map_err(ApiError::from_catalog_open)?;
    tokio::time::timeout(timeout, Box::pin(op(catalog)))
        .await
        .map_err(|_| timed_out())?
        .map_err(ApiError::from_catalog)
}
