//! The paste service's handles on the store and the catalog, with the
//! bounds every call keeps (`crate::within`), and the one place a paste's
//! store key is made.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use paste_store::{PasteId, PasteKey, PasteStore, StoreError};
use tenancy::{Catalog, CatalogError, IndexWriter, LazyCatalog, TenantId};

use super::error::PasteError;
use crate::context::TenantCtx;
use crate::within::{catalog_within, store_within};

impl TenantCtx {
    /// The store key of paste `id` of this tenant: the only way a request
    /// reaches the store.
    pub(crate) fn key(&self, id: PasteId) -> PasteKey {
        #[expect(
            clippy::disallowed_methods,
            reason = "the one place a paste's store key is made"
        )]
        PasteKey::new(self.tenant.namespace.clone(), id)
    }
}

/// The paste operations over one store and one tenant catalog.
pub(crate) struct PasteService {
    pub(super) store: Arc<dyn PasteStore>,
    pub(super) catalog: Arc<LazyCatalog>,
    /// Paste-index writes, committed in groups.
    pub(super) index: IndexWriter,
    /// The bound of each store and catalog call.
    pub(super) timeout: Duration,
}

impl PasteService {
    pub(crate) fn new(
        store: Arc<dyn PasteStore>,
        catalog: Arc<LazyCatalog>,
        timeout: Duration,
    ) -> Self {
        PasteService {
            index: IndexWriter::new(catalog.clone()),
            store,
            catalog,
            timeout,
        }
    }

    /// Bounds a store call by the timeout; a late answer is an outage.
    pub(super) async fn store_call<T>(
        &self,
        op: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        store_within(self.timeout, op).await
    }

    /// Opens the catalog and runs `op` on it, each step bounded by the
    /// timeout.
    pub(super) async fn catalog_call<T, F, Fut>(&self, op: F) -> Result<T, PasteError>
    where
        F: FnOnce(Arc<Catalog>) -> Fut,
        Fut: Future<Output = Result<T, CatalogError>>,
    {
        Ok(catalog_within(&self.catalog, self.timeout, op).await?)
    }

    /// Gives back the index entry (and quota) of paste `id` of `tenant_id`,
    /// a no-op when it was never indexed. A catalog failure only delays it:
    /// expired entries are swept.
    pub(super) async fn unindex(&self, tenant_id: &TenantId, id: &str) {
        let tenant_id = tenant_id.clone();
        let id = id.to_owned();
        let result = self
            .catalog_call(|c| async move { c.forget_paste(&tenant_id, &id).await })
            .await;
        if let Err(error) = result {
            tracing::warn!(%error, "cannot release a paste's index entry; the sweep will");
        }
    }
}
