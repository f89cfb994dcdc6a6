//! [`AdminService`]: the operator's operations on tenants, their API keys
//! and their usage, with no HTTP in them. Every catalog call is bounded by
//! the store timeout (`crate::within`); a failure is the bounded call's
//! [`CatalogStep`], which `error.rs` maps like any other catalog failure.

use std::sync::Arc;
use std::time::Duration;

use paste_store::PasteStore;
use tenancy::{
    Catalog, CatalogError, CreatedKey, KeyId, KeyInfo, LazyCatalog, NewTenant, Tenant, TenantId,
    TenantUpdate, Usage,
};

use crate::tenants::Directory;
use crate::within::{CatalogStep, catalog_within};

/// The admin operations over one catalog (and, for a deleted tenant's
/// pastes, the store).
pub(crate) struct AdminService {
    catalog: Arc<LazyCatalog>,
    store: Arc<dyn PasteStore>,
    directory: Arc<Directory>,
    /// The bound of each store and catalog call.
    timeout: Duration,
}

impl AdminService {
    pub(crate) fn new(
        catalog: Arc<LazyCatalog>,
        store: Arc<dyn PasteStore>,
        directory: Arc<Directory>,
        timeout: Duration,
    ) -> Self {
        AdminService {
            catalog,
            store,
            directory,
            timeout,
        }
    }

    async fn call<T, F, Fut>(&self, op: F) -> Result<T, CatalogStep>
    where
        F: FnOnce(Arc<Catalog>) -> Fut,
        Fut: Future<Output = Result<T, CatalogError>>,
    {
        catalog_within(&self.catalog, self.timeout, op).await
    }

    pub(crate) async fn create_tenant(&self, new: NewTenant) -> Result<Tenant, CatalogStep> {
        self.call(|c| async move { c.create_tenant(&new).await })
            .await
    }

    /// Every tenant, oldest first.
    pub(crate) async fn list_tenants(&self) -> Result<Vec<Tenant>, CatalogStep> {
        self.call(|c| async move { c.list_tenants().await }).await
    }

    pub(crate) async fn tenant(&self, id: TenantId) -> Result<Tenant, CatalogStep> {
        self.call(|c| async move { c.tenant(&id).await }).await
    }

    /// Changes the fields `update` sets; the tenant as stored.
    pub(crate) async fn update_tenant(
        &self,
        id: TenantId,
        update: TenantUpdate,
    ) -> Result<Tenant, CatalogStep> {
        self.call(|c| async move { c.update_tenant(&id, &update).await })
            .await
    }

    /// Turns a tenant off (`enabled: false`) or on again; the tenant as stored.
    pub(crate) async fn set_enabled(
        &self,
        id: TenantId,
        enabled: bool,
    ) -> Result<Tenant, CatalogStep> {
        self.call(|c| async move {
            if enabled {
                c.enable_tenant(&id).await?;
            } else {
                c.disable_tenant(&id).await?;
            }
            c.tenant(&id).await
        })
        .await
    }

    /// Deletes a tenant: its pastes are unreachable at once, and removed
    /// from the store by a task of their own that outlives the request if
    /// the store is slow (the upkeep rounds finish what it cannot; see
    /// `crate::purge`). Its namespace can be taken again only once they are.
    pub(crate) async fn delete_tenant(&self, id: TenantId) -> Result<(), CatalogStep> {
        let namespace = self
            .call(|c| async move { c.delete_tenant(&id).await })
            .await?;
        let (store, catalog) = (self.store.clone(), self.catalog.clone());
        let purge = tokio::spawn(async move {
            if let Ok(catalog) = catalog.get().await {
                crate::purge::purge_listed(store.as_ref(), &catalog, Some(&namespace)).await;
            }
        });
        let _ = tokio::time::timeout(self.timeout, purge).await;
        Ok(())
    }

    /// The tenant's usage, with this process's request counts flushed
    /// first (other replicas add theirs every 10 s).
    pub(crate) async fn usage(&self, id: TenantId) -> Result<Usage, CatalogStep> {
        self.directory.flush_requests().await;
        self.call(|c| async move { c.usage(&id).await }).await
    }

    /// A new API key; the only place its plaintext appears.
    pub(crate) async fn create_key(
        &self,
        id: TenantId,
        name: String,
    ) -> Result<CreatedKey, CatalogStep> {
        self.call(|c| async move {
            // The catalog would answer a missing tenant as a foreign-key
            // failure; check first so the answer is a plain 404.
            c.tenant(&id).await?;
            c.create_key(&id, &name).await
        })
        .await
    }

    /// The tenant's keys, never a secret.
    pub(crate) async fn list_keys(&self, id: TenantId) -> Result<Vec<KeyInfo>, CatalogStep> {
        self.call(|c| async move { c.list_keys(&id).await }).await
    }

    /// Revokes a key of the tenant (a key of another tenant: not found).
    pub(crate) async fn revoke_key(&self, tenant: TenantId, key: KeyId) -> Result<(), CatalogStep> {
        self.call(|c| async move { c.revoke_key(&tenant, &key).await })
            .await
    }
}
