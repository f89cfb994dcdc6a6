//! The one bound every store and catalog call keeps: `http.store_timeout_secs`.
//! A late answer is an outage (503 with `Retry-After`), never a hang. Every
//! family's service calls through here and maps [`CatalogStep`] to its own
//! error.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use paste_store::StoreError;
use tenancy::{Catalog, CatalogError, LazyCatalog};

/// Bounds a store call by `timeout`; a late answer is an outage.
pub(crate) async fn store_within<T>(
    timeout: Duration,
    op: impl Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    tokio::time::timeout(timeout, op)
        .await
        .unwrap_or(Err(StoreError::Unavailable {
            reason: "store operation timed out",
            retry_after: Some(Duration::from_secs(1)),
            source: None,
        }))
}

/// Which step of a bounded catalog call failed.
#[derive(Debug)]
pub(crate) enum CatalogStep {
    /// Opening or the call itself took longer than the bound.
    Timeout,
    /// The catalog could not be opened.
    Open(CatalogError),
    /// The call answered an error.
    Failed(CatalogError),
}

/// Opens the catalog and runs `op` on it, each step bounded by `timeout`.
pub(crate) async fn catalog_within<T, F, Fut>(
    catalog: &LazyCatalog,
    timeout: Duration,
    op: F,
) -> Result<T, CatalogStep>
where
    F: FnOnce(Arc<Catalog>) -> Fut,
    Fut: Future<Output = Result<T, CatalogError>>,
{
    // Both futures are boxed: database futures are kilobytes, and inline
    // they would make every caller's future as large, which axum then
    // moves into a box on every request, catalog call or not.
    let catalog = tokio::time::timeout(timeout, Box::pin(catalog.get()))
        .await
        .map_err(|_| CatalogStep::Timeout)?
        .map_err(CatalogStep::Open)?;
    tokio::time::timeout(timeout, Box::pin(op(catalog)))
        .await
        .map_err(|_| CatalogStep::Timeout)?
        .map_err(CatalogStep::Failed)
}

/// Now, in the catalog's milliseconds.
pub(crate) fn now_ms_i64() -> i64 {
    i64::try_from(paste_store::now_ms()).unwrap_or(i64::MAX)
}
