//! [`LazyCatalog`]: a catalog opened on first use and retried until it
//! opens, so a server can start (and report itself not ready) while its
//! database is still down.

use std::sync::Arc;

use tokio::sync::OnceCell;

use crate::{Catalog, CatalogConfig, CatalogError, TenantId, TenantUpdate};

/// A [`Catalog`] that is opened — migrations applied, the default tenant's
/// settings brought in line with the server's configuration — the first time
/// it is needed. A failed open is not cached: the next call tries again.
/// Concurrent callers share one attempt.
pub struct LazyCatalog {
    config: CatalogConfig,
    default_tenant: TenantUpdate,
    cell: OnceCell<Arc<Catalog>>,
}

impl LazyCatalog {
    /// A catalog for `config` whose default tenant gets `default_tenant`'s
    /// settings applied at open.
    pub fn new(config: CatalogConfig, default_tenant: TenantUpdate) -> Self {
        LazyCatalog {
            config,
            default_tenant,
            cell: OnceCell::new(),
        }
    }

    /// The open catalog, opening it now if needed.
    ///
    /// # Errors
    /// Whatever [`Catalog::open`] or the default tenant's update returns;
    /// a database that cannot be reached is [`CatalogError::Unavailable`].
    pub async fn get(&self) -> Result<Arc<Catalog>, CatalogError> {
        self.cell
            .get_or_try_init(|| async {
                let catalog = Catalog::open(&self.config).await?;
                catalog
                    .update_tenant(&TenantId::default_tenant(), &self.default_tenant)
                    .await?;
                Ok(Arc::new(catalog))
            })
            .await
            .cloned()
    }

    /// Whether the catalog is open and answers.
    ///
    /// # Errors
    /// As [`LazyCatalog::get`], then [`Catalog::health`].
    pub async fn health(&self) -> Result<(), CatalogError> {
        self.get().await?.health().await
    }

    /// The configuration (URL redacted when printed).
    pub fn config(&self) -> &CatalogConfig {
        &self.config
    }
}

impl std::fmt::Debug for LazyCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyCatalog")
            .field("url", &self.config.redacted_url())
            .field("open", &self.cell.initialized())
            .finish_non_exhaustive()
    }
}
