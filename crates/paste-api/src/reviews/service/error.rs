//! What can go wrong with a review operation, in the service's terms.

use paste_store::StoreError;
use tenancy::{CatalogError, ReviewRefusal};

/// A review operation's failure.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ReviewError {
    /// No such review for this token: unknown, expired, deleted, of another
    /// tenant, or the token is wrong or revoked (one answer for all).
    #[error("review not found")]
    NotFound,
    /// A reviewer asked for what only the owner may do.
    #[error("only the review's owner may do this")]
    OwnerOnly,
    /// A reviewer link asked to decide.
    #[error("only the owner or an approver may decide")]
    ApproverOnly,
    /// Creating a review needs a credential the request does not carry.
    #[error("a credential is required")]
    CredentialRequired,
    /// The review's rules refused the change; nothing changed.
    #[error("refused: {0:?}")]
    Refused(ReviewRefusal),
    /// An unknown version or link id on a route that names one.
    #[error("{0} not found")]
    NoSuch(&'static str),
    /// A stored blob of the review is damaged.
    #[error("a stored part of the review is damaged: {reason}")]
    Damaged {
        /// For the log only.
        reason: String,
    },
    /// The store failed.
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
    /// The review changed under every attempt to read it whole.
    #[error("the review kept changing while it was read")]
    Contended,
    /// The system's random source failed, or fresh ids kept colliding.
    #[error("cannot draw a fresh id or token")]
    Draw,
}

impl ReviewError {
    /// A store failure while reading a blob the catalog names (a missing
    /// one is told apart by the reader, which looks again: see
    /// `ReviewService::read`).
    pub(crate) fn from_store(error: StoreError) -> Self {
        match error {
            StoreError::Damaged { reason, .. } => ReviewError::Damaged { reason },
            other => ReviewError::Store(other),
        }
    }
}

impl From<crate::context::CredentialRequired> for ReviewError {
    fn from(_: crate::context::CredentialRequired) -> Self {
        ReviewError::CredentialRequired
    }
}

/// A bounded catalog call's failure; the catalog's `NotFound` is the
/// review's.
impl From<crate::within::CatalogStep> for ReviewError {
    fn from(step: crate::within::CatalogStep) -> Self {
        use crate::within::CatalogStep;
        match step {
            CatalogStep::Timeout => ReviewError::CatalogTimeout,
            CatalogStep::Open(e) => ReviewError::CatalogOpen(e),
            CatalogStep::Failed(tenancy::CatalogError::NotFound) => ReviewError::NotFound,
            CatalogStep::Failed(e) => ReviewError::Catalog(e),
        }
    }
}
