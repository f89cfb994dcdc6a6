//! Who a request is for, and the service's handles on the store and the
//! catalog with the bounds every call keeps.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use paste_store::{PasteId, PasteKey, PasteStore, StoreError};
use tenancy::{Catalog, CatalogError, IndexWriter, KeyId, LazyCatalog, TenantId};

use super::error::PasteError;
use crate::tenants::{KeyOwner, TenantView};

/// Who a paste request is for: the tenant, and the API key it
/// authenticated with (none for an anonymous request, which is the
/// tenant of its host or the default tenant).
#[derive(Debug)]
pub(crate) struct TenantCtx {
    pub(crate) tenant: Arc<TenantView>,
    pub(crate) key: Option<Arc<KeyOwner>>,
}

impl TenantCtx {
    /// The store key of paste `id` of this tenant: the only way a request
    /// reaches the store.
    pub(crate) fn key(&self, id: PasteId) -> PasteKey {
        PasteKey::new(self.tenant.namespace.clone(), id)
    }

    /// Anonymous creates need a tenant that allows them.
    pub(crate) fn may_create(&self) -> Result<(), PasteError> {
        if self.key.is_none() && !self.tenant.allow_anonymous {
            return Err(PasteError::CredentialRequired);
        }
        Ok(())
    }

    /// Acting on a tenant's pastes as a whole (listing) needs its key.
    pub(crate) fn require_key(&self) -> Result<&KeyId, PasteError> {
        self.key
            .as_ref()
            .map(|owner| &owner.key)
            .ok_or(PasteError::CredentialRequired)
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
        catalog_within(&self.catalog, self.timeout, op)
            .await
            .map_err(|e| match e {
                CatalogStep::Timeout => PasteError::CatalogTimeout,
                CatalogStep::Open(e) => PasteError::CatalogOpen(e),
                CatalogStep::Failed(e) => PasteError::Catalog(e),
            })
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

/// Bounds a store call by `timeout`; a late answer is an outage. Shared by
/// the paste and review services.
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
pub(crate) enum CatalogStep {
    /// Opening or the call itself took longer than the bound.
    Timeout,
    /// The catalog could not be opened.
    Open(CatalogError),
    /// The call answered an error.
    Failed(CatalogError),
}

/// Opens the catalog and runs `op` on it, each step bounded by `timeout`.
/// Shared by the paste and review services, which map the step to their
/// own errors.
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

pub(crate) fn now_ms_i64() -> i64 {
    i64::try_from(paste_store::now_ms()).unwrap_or(i64::MAX)
}
