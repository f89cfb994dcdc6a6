//! What can go wrong with a paste operation, in the service's terms.

use std::time::Duration;

use paste_store::StoreError;
use tenancy::CatalogError;

/// A paste operation's failure. The store's and the catalog's errors are
/// kept whole (with their sources, for the log).
#[derive(Debug, thiserror::Error)]
pub(crate) enum PasteError {
    /// No live paste under this id, or the caller may not act on it (one
    /// answer for every cause).
    #[error("paste not found")]
    NotFound,
    /// The paste's stored data is damaged and cannot be served.
    #[error("paste damaged: {reason}")]
    Damaged {
        /// What is wrong with it, for the log only.
        reason: String,
    },
    /// The operation needs a credential the request does not carry (an API
    /// key, or a delete token).
    #[error("a credential is required")]
    CredentialRequired,
    /// The tenant's storage quota (bytes or pastes) is used up.
    #[error("quota exceeded")]
    QuotaExceeded,
    /// A create with this idempotency key is still running.
    #[error("idempotent request in progress")]
    IdempotencyInProgress {
        /// Until that create's lease runs out.
        retry_after: Duration,
    },
    /// The idempotency key was used with a different body.
    #[error("idempotency key reused with another body")]
    IdempotencyMismatch,
    /// The store failed (unavailable, timed out, or a bug).
    #[error("store: {0}")]
    Store(#[source] StoreError),
    /// The catalog could not be opened.
    #[error("tenant catalog cannot be opened: {0}")]
    CatalogOpen(#[source] CatalogError),
    /// A catalog operation failed.
    #[error("tenant catalog: {0}")]
    Catalog(#[source] CatalogError),
    /// The catalog did not answer in time.
    #[error("tenant catalog timed out")]
    CatalogTimeout,
    /// A fresh id or delete token could not be drawn (the system's random
    /// source failed, or the tenant's id length is out of range).
    #[error("cannot draw a fresh id or token: {0}")]
    Draw(#[source] paste_store::KeyError),
    /// Every fresh id drawn was taken (an exhausted invariant).
    #[error("{0} id collisions in a row")]
    IdsExhausted(usize),
}

impl PasteError {
    /// A store failure of a read or delete: absent and damaged pastes are
    /// their own answers, the rest a store failure.
    pub(crate) fn from_store(error: StoreError) -> Self {
        match error {
            StoreError::NotFound => PasteError::NotFound,
            StoreError::Damaged { reason, .. } => PasteError::Damaged { reason },
            other => PasteError::Store(other),
        }
    }
}

impl From<crate::context::CredentialRequired> for PasteError {
    fn from(_: crate::context::CredentialRequired) -> Self {
        PasteError::CredentialRequired
    }
}

impl From<crate::within::CatalogStep> for PasteError {
    fn from(step: crate::within::CatalogStep) -> Self {
        use crate::within::CatalogStep;
        match step {
            CatalogStep::Timeout => PasteError::CatalogTimeout,
            CatalogStep::Open(e) => PasteError::CatalogOpen(e),
            CatalogStep::Failed(e) => PasteError::Catalog(e),
        }
    }
}
