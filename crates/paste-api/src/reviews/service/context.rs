//! The review service's handles on the store and the catalog, the bounds
//! every call keeps, and the one place review blobs are addressed.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use paste_store::{Namespace, PasteId, PasteKey, PasteStore, StoreError};
use tenancy::{Catalog, CatalogError, LazyCatalog};

use super::error::ReviewError;
use super::hub;
use crate::config::ReviewConfig;
use crate::within::{catalog_within, store_within};

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
    /// Blobs whose removal failed, tried again in the background.
    pub(super) removals: Removals,
    /// Rung after each committed change: the notification deliverer's
    /// wake-up (the change may have queued notifications).
    pub(super) notices: Arc<tokio::sync::Notify>,
}

impl ReviewService {
    pub(crate) fn new(
        store: Arc<dyn PasteStore>,
        catalog: Arc<LazyCatalog>,
        timeout: Duration,
        config: ReviewConfig,
        notices: Arc<tokio::sync::Notify>,
    ) -> Self {
        ReviewService {
            hub: hub::Hub::new(catalog.clone(), &config),
            notices,
            store,
            catalog,
            timeout,
            config,
            removals: Removals::default(),
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
        Ok(catalog_within(&self.catalog, self.timeout, op).await?)
    }
}

/// The store key of review blob `id` in `namespace`: the only place review
/// blobs are addressed.
pub(super) fn blob_key(namespace: &Namespace, id: &str) -> Result<PasteKey, ReviewError> {
    let id = PasteId::parse(id).map_err(|_| ReviewError::Damaged {
        reason: format!("the catalog names a blob with an invalid id {id:?}"),
    })?;
    #[expect(
        clippy::disallowed_methods,
        reason = "the one place a review blob's key is made"
    )]
    Ok(PasteKey::review_blob(namespace.clone(), id))
}

pub(super) fn fresh_id(len: usize) -> Result<String, ReviewError> {
    PasteId::generate(len)
        .map(|id| id.as_str().to_owned())
        .map_err(|_| ReviewError::Draw)
}

/// Removals tried again for at most this long; a blob still there then
/// expires with its review (or `doctor` finds it: no row names it).
const REMOVAL_HORIZON: Duration = Duration::from_secs(24 * 3600);
/// The first wait before a failed removal is tried again; it doubles per
/// failure, up to [`REMOVAL_WAIT_MAX`].
const REMOVAL_WAIT: Duration = Duration::from_secs(5);
const REMOVAL_WAIT_MAX: Duration = Duration::from_secs(600);
/// How long a replaced or withdrawn comment set's blob stays in the store
/// after the commit that freed it: a reader that took the catalog's
/// snapshot just before still finds it. (A reader slower than this reads
/// again from a fresh snapshot: `ReviewService::read`.)
pub(super) const FREED_GRACE: Duration = Duration::from_secs(30);
/// Failed removals kept at once; past this the oldest are dropped (to
/// expire with their reviews).
const REMOVALS_KEPT: usize = 100_000;

/// A blob whose removal failed.
pub(super) struct PendingRemoval {
    pub(super) key: PasteKey,
    failures: u32,
    due: tokio::time::Instant,
    give_up: tokio::time::Instant,
}

/// The blobs whose removal failed, oldest first (see
/// `ReviewService::retry_removals`). They are kept in memory: after a
/// restart, what was left expires with its review.
#[derive(Default)]
pub(super) struct Removals(Mutex<VecDeque<PendingRemoval>>);

impl Removals {
    fn queue(&self) -> std::sync::MutexGuard<'_, VecDeque<PendingRemoval>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `key`, to be tried again after the first wait.
    pub(super) fn push(&self, key: PasteKey) {
        self.push_after(key, REMOVAL_WAIT);
    }

    /// Queues `key`, to be removed once `delay` has passed.
    pub(super) fn push_after(&self, key: PasteKey, delay: Duration) {
        let now = tokio::time::Instant::now();
        let mut queue = self.queue();
        if queue.len() >= REMOVALS_KEPT {
            queue.pop_front();
            tracing::warn!(
                "too many review blobs wait for removal; the oldest is left to expire with its review"
            );
        }
        queue.push_back(PendingRemoval {
            key,
            failures: 1,
            due: now + delay,
            give_up: now + delay + REMOVAL_HORIZON,
        });
    }

    /// The first removal that is due, taken out of the queue; those past
    /// the horizon are dropped on the way.
    pub(super) fn next_due(&self) -> Option<PendingRemoval> {
        let now = tokio::time::Instant::now();
        let mut queue = self.queue();
        queue.retain(|p| p.give_up > now);
        let at = queue.iter().position(|p| p.due <= now)?;
        queue.remove(at)
    }

    /// Puts back a removal that failed again, due after a longer wait.
    pub(super) fn put_back(&self, mut pending: PendingRemoval) {
        pending.failures = pending.failures.saturating_add(1);
        let wait = REMOVAL_WAIT
            .saturating_mul(1 << pending.failures.min(8))
            .min(REMOVAL_WAIT_MAX);
        pending.due = tokio::time::Instant::now() + wait;
        self.queue().push_back(pending);
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.queue().len()
    }

    /// Makes every queued removal due now (tests).
    #[cfg(test)]
    pub(super) fn make_all_due(&self) {
        let now = tokio::time::Instant::now();
        for pending in self.queue().iter_mut() {
            pending.due = now;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn failed_removals_wait_longer_each_time_and_give_up_after_a_day() {
        let removals = Removals::default();
        let namespace = Namespace::parse("ns").unwrap();
        removals.push(blob_key(&namespace, "AAAAAAAAAAAAAAAA").unwrap());
        assert!(removals.next_due().is_none(), "not at once");
        tokio::time::advance(REMOVAL_WAIT).await;
        let due = removals.next_due().unwrap();
        assert_eq!(removals.len(), 0, "taken out while tried");
        removals.put_back(due);
        let mut waits = Vec::new();
        for _ in 0..10 {
            let mut waited = Duration::ZERO;
            let due = loop {
                if let Some(due) = removals.next_due() {
                    break due;
                }
                tokio::time::advance(Duration::from_secs(1)).await;
                waited += Duration::from_secs(1);
            };
            waits.push(waited.as_secs());
            removals.put_back(due);
        }
        assert_eq!(waits, [20, 40, 80, 160, 320, 600, 600, 600, 600, 600]);
        tokio::time::advance(REMOVAL_HORIZON).await;
        assert!(removals.next_due().is_none());
        assert_eq!(removals.len(), 0, "dropped past the horizon");
    }
}
