//! Removing a deleted tenant's pastes from the paste store.
//!
//! Deleting a tenant ([`tenancy::Catalog::delete_tenant`]) makes its pastes
//! unreachable at once (no key or host leads to its namespace any more) and
//! records the namespace in the catalog as to be purged. The pastes are then
//! removed here: right away by the `DELETE` that deleted the tenant, and
//! again on every upkeep round of every replica until a purge has succeeded
//! at least [`tenancy::PURGE_SETTLE_MS`] after the deletion (a create that
//! was under way at the deletion may land after the first purge). Only then
//! is the catalog's record removed and may a new tenant take the namespace,
//! so a namespace never inherits another tenant's pastes.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use paste_store::{Namespace, PasteStore};
use tenancy::{Catalog, NamespacePurge};

/// Runs purges one round at a time (rounds that come while one runs are
/// skipped: the next upkeep round catches up).
#[derive(Default)]
pub(crate) struct Purger {
    running: AtomicBool,
}

impl Purger {
    /// One upkeep round: purges every namespace the catalog lists, each
    /// once, and finishes those whose purge counts. `None` when a round was
    /// already running.
    pub(crate) async fn round(
        self: &Arc<Self>,
        store: &dyn PasteStore,
        catalog: &Catalog,
    ) -> Option<u64> {
        if self.running.swap(true, Ordering::AcqRel) {
            return None;
        }
        let _done = Release(self.clone());
        Some(purge_listed(store, catalog, None).await)
    }
}

/// Purges the namespaces the catalog lists (only `only`, when given);
/// returns the number of pastes removed. Purges are idempotent, so a round
/// and a deletion's own purge may overlap.
pub(crate) async fn purge_listed(
    store: &dyn PasteStore,
    catalog: &Catalog,
    only: Option<&str>,
) -> u64 {
    let purges = match catalog.namespace_purges().await {
        Ok(purges) => purges,
        Err(error) => {
            tracing::warn!(%error, "cannot list the namespaces to purge");
            return 0;
        }
    };
    let mut removed = 0;
    for purge in purges
        .iter()
        .filter(|p| only.is_none_or(|ns| p.namespace == ns))
    {
        removed += purge_one(store, catalog, purge).await;
    }
    removed
}

/// Lets the next round run.
struct Release(Arc<Purger>);

impl Drop for Release {
    fn drop(&mut self) {
        self.0.running.store(false, Ordering::Release);
    }
}

async fn purge_one(store: &dyn PasteStore, catalog: &Catalog, purge: &NamespacePurge) -> u64 {
    let Ok(namespace) = Namespace::parse(&purge.namespace) else {
        // The catalog validates namespaces; a bad one cannot name stored pastes.
        tracing::warn!(tenant.id = %purge.tenant_id, "a namespace to purge is not valid; skipped");
        return 0;
    };
    let started = tenancy::now_ms();
    match store.purge_namespace(&namespace).await {
        Ok(removed) => {
            if removed > 0 {
                tracing::info!(tenant.id = %purge.tenant_id, removed, "a deleted tenant's pastes removed");
            }
            if let Err(error) = catalog.finish_namespace_purge(purge, started).await {
                tracing::warn!(%error, tenant.id = %purge.tenant_id, "cannot record a finished purge");
            }
            removed
        }
        Err(error) => {
            tracing::warn!(%error, tenant.id = %purge.tenant_id, "cannot purge a deleted tenant's pastes yet; retried on the next round");
            0
        }
    }
}
