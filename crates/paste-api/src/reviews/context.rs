//! The review service's handles on the store and the catalog, the bounds
//! every call keeps, and the one place review blobs are addressed.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use paste_store::{Namespace, PasteId, PasteKey, PasteStore, StoreError};
use tenancy::{Catalog, CatalogError, LazyCatalog};

use super::error::ReviewError;
use super::hub;
use crate::config::ReviewConfig;
use crate::service::{CatalogStep, catalog_within, store_within};

/// Length of review ids, link ids and blob ids (as long as paste ids).
pub(super) const ID_LEN: usize = 16;
/// Length of reviewer link ids.
pub(super) const LINK_ID_LEN: usize = 12;
/// Fresh ids tried when the drawn one is taken.
pub(super) const ID_ATTEMPTS: usize = 5;

/// The review operations over one store and one catalog.
pub(crate) struct ReviewService {
    pub(super) store: Arc<dyn PasteStore>,
    pub(super) catalog: Arc<LazyCatalog>,
    timeout: Duration,
    config: ReviewConfig,
    /// Where committed events go out to the streams of this process.
    pub(crate) hub: Arc<hub::Hub>,
}

impl ReviewService {
    pub(crate) fn new(
        store: Arc<dyn PasteStore>,
        catalog: Arc<LazyCatalog>,
        timeout: Duration,
        config: ReviewConfig,
    ) -> Self {
        ReviewService {
            hub: hub::Hub::new(catalog.clone(), &config),
            store,
            catalog,
            timeout,
            config,
        }
    }

    /// The settings the service runs with.
    pub(crate) fn config(&self) -> &ReviewConfig {
        &self.config
    }

    /// Bounds a store call by the timeout; a late answer is an outage.
    pub(super) async fn store_call<T>(
        &self,
        op: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        store_within(self.timeout, op).await
    }

    /// Opens the catalog and runs `op` on it, each step bounded by the
    /// timeout; the catalog's `NotFound` is the review's.
    pub(crate) async fn catalog_call<T, F, Fut>(&self, op: F) -> Result<T, ReviewError>
    where
        F: FnOnce(Arc<Catalog>) -> Fut,
        Fut: Future<Output = Result<T, CatalogError>>,
    {
        catalog_within(&self.catalog, self.timeout, op)
            .await
            .map_err(|e| match e {
                CatalogStep::Timeout => ReviewError::CatalogTimeout,
                CatalogStep::Open(e) => ReviewError::CatalogOpen(e),
                CatalogStep::Failed(CatalogError::NotFound) => ReviewError::NotFound,
                CatalogStep::Failed(e) => ReviewError::Catalog(e),
            })
    }
}

/// The store key of review blob `id` in `namespace`: the only place review
/// blobs are addressed.
pub(super) fn blob_key(namespace: &Namespace, id: &str) -> Result<PasteKey, ReviewError> {
    let id = PasteId::parse(id).map_err(|_| ReviewError::Damaged {
        reason: format!("the catalog names a blob with an invalid id {id:?}"),
    })?;
    Ok(PasteKey::review_blob(namespace.clone(), id))
}

pub(super) fn fresh_id(len: usize) -> Result<String, ReviewError> {
    PasteId::generate(len)
        .map(|id| id.as_str().to_owned())
        .map_err(|_| ReviewError::Draw)
}
