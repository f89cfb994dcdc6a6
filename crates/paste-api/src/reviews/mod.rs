//! Live shared reviews, with no HTTP in them: creating a review, finding
//! who a token belongs to, versions, reviewer links, comment sets, the
//! owner's decision, deletion, and the event fan-out ([`hub`]) that streams
//! read.
//!
//! Content never reaches the catalog: each version, comment set and
//! feedback is a blob in the paste store under the tenant's namespace
//! (`PasteKey::review_blob`, which no paste id reaches), written and made
//! durable *before* the catalog transaction that names it. So an
//! acknowledged change is never missing its blob; a crash between the two
//! leaves at worst an unnamed blob, which expires with the review. A blob
//! the catalog stops naming (a replaced comment set, a deleted review) is
//! removed after the commit.
//!
//! [`ReviewService`] answers plain values or a [`ReviewError`]; the handlers
//! map them (`error.rs`).

mod error;
pub(crate) mod hub;
mod ops;
pub(crate) mod stream;
#[cfg(test)]
mod tests;
mod tokens;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use paste_store::{Namespace, PasteId, PasteKey, PasteStore, StoreError};
use tenancy::{Catalog, CatalogError, LazyCatalog, ReviewLimits};

use crate::config::ReviewConfig;

pub(crate) use error::ReviewError;
pub(crate) use ops::{Caller, Decision, NewReviewInput, ReviewRead, presented_digest};

/// Length of review ids, link ids and blob ids (as long as paste ids).
const ID_LEN: usize = 16;
/// Length of reviewer link ids.
const LINK_ID_LEN: usize = 12;
/// Fresh ids tried when the drawn one is taken.
const ID_ATTEMPTS: usize = 5;

/// The review operations over one store and one catalog.
pub(crate) struct ReviewService {
    store: Arc<dyn PasteStore>,
    catalog: Arc<LazyCatalog>,
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

    fn limits(&self) -> ReviewLimits {
        ReviewLimits {
            max_links: i64::from(self.config.max_links),
            max_versions: i64::from(self.config.max_versions),
        }
    }

    /// Bounds a store call by the timeout; a late answer is an outage.
    async fn store_call<T>(
        &self,
        op: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        tokio::time::timeout(self.timeout, op)
            .await
            .unwrap_or(Err(StoreError::Unavailable {
                reason: "store operation timed out",
                retry_after: Some(Duration::from_secs(1)),
                source: None,
            }))
    }

    /// Opens the catalog and runs `op` on it, each step bounded by the timeout.
    pub(crate) async fn catalog_call<T, F, Fut>(&self, op: F) -> Result<T, ReviewError>
    where
        F: FnOnce(Arc<Catalog>) -> Fut,
        Fut: Future<Output = Result<T, CatalogError>>,
    {
        let catalog = tokio::time::timeout(self.timeout, Box::pin(self.catalog.get()))
            .await
            .map_err(|_| ReviewError::CatalogTimeout)?
            .map_err(ReviewError::CatalogOpen)?;
        tokio::time::timeout(self.timeout, Box::pin(op(catalog)))
            .await
            .map_err(|_| ReviewError::CatalogTimeout)?
            .map_err(|e| match e {
                CatalogError::NotFound => ReviewError::NotFound,
                other => ReviewError::Catalog(other),
            })
    }
}

/// The store key of review blob `id` in `namespace`: the only place review
/// blobs are addressed.
fn blob_key(namespace: &Namespace, id: &str) -> Result<PasteKey, ReviewError> {
    let id = PasteId::parse(id).map_err(|_| ReviewError::Damaged {
        reason: format!("the catalog names a blob with an invalid id {id:?}"),
    })?;
    Ok(PasteKey::review_blob(namespace.clone(), id))
}

fn fresh_id(len: usize) -> Result<String, ReviewError> {
    PasteId::generate(len)
        .map(|id| id.as_str().to_owned())
        .map_err(|_| ReviewError::Draw)
}
