//! The paste service's errors as API errors (their statuses and codes are
//! `ApiError`'s, in `crate::error`).

use std::time::Duration;

use super::service::PasteError;
use crate::error::ApiError;

impl ApiError {
    /// Maps a paste operation's failure; `compat` picks the paste-not-found
    /// answer of the calling route.
    pub(crate) fn from_paste(err: PasteError, compat: bool) -> Self {
        match err {
            PasteError::NotFound => ApiError::PasteNotFound { compat },
            PasteError::Damaged { reason } => ApiError::PasteDamaged { reason },
            PasteError::CredentialRequired => ApiError::Unauthorized,
            PasteError::QuotaExceeded => ApiError::QuotaExceeded,
            PasteError::IdempotencyInProgress { retry_after } => {
                ApiError::IdempotencyInProgress { retry_after }
            }
            PasteError::IdempotencyMismatch => ApiError::IdempotencyMismatch,
            PasteError::Store(e) => ApiError::from_store(e, compat),
            PasteError::CatalogOpen(e) => ApiError::from_catalog_open(e),
            PasteError::Catalog(e) => ApiError::from_catalog(e),
            PasteError::CatalogTimeout => ApiError::CatalogUnavailable {
                retry_after: Duration::from_secs(1),
                source: None,
            },
            err @ (PasteError::Draw(_) | PasteError::IdsExhausted(_)) => {
                ApiError::PasteFailed(Box::new(err))
            }
        }
    }
}
