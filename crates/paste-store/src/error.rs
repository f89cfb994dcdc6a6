//! Semantic store errors. They carry what happened and whether a retry can help;
//! only the HTTP layer maps them to status codes.

use std::time::Duration;

use crate::{DeleteTokenDigest, UnixMillis};

/// Boxed source error kept for logs (never shown to clients).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Nothing live is stored under the key (absent, expired or deleted).
    #[error("paste not found")]
    NotFound,
    /// `put_if_absent` found a live value under the key; nothing was written.
    #[error("a paste is already stored under this key")]
    AlreadyExists,
    /// The backend cannot serve the operation right now (down, unreachable, out
    /// of space, I/O error). Retrying later may succeed.
    #[error("store unavailable: {reason}")]
    Unavailable {
        /// A short, log-safe description of what failed.
        reason: &'static str,
        /// How long the caller should wait before retrying, when the backend knows.
        retry_after: Option<Duration>,
        /// The underlying error.
        #[source]
        source: Option<BoxError>,
    },
    /// What is stored under the key is not a readable paste: empty,
    /// truncated, not a paste record at all, or a header that does not check
    /// out. It cannot be served, and retrying will not help; deleting it
    /// works. (Backends report it; they do not log it.)
    #[error("damaged paste: {reason}")]
    Damaged {
        /// A short, log-safe description of the damage (never payload bytes).
        reason: String,
        /// The record's header, when the header itself checked out and the
        /// damage lies past it (a truncated or undecodable payload); `None`
        /// when it cannot be trusted.
        header: Option<RecordHeader>,
    },
    /// The backend broke its own invariants. Retrying will not help.
    #[error("store internal error: {reason}")]
    Internal {
        /// A short, log-safe description.
        reason: String,
        /// The underlying error, if any.
        #[source]
        source: Option<BoxError>,
    },
}

impl StoreError {
    /// An [`StoreError::Unavailable`] wrapping `source`, with the default retry hint.
    pub fn unavailable(reason: &'static str, source: impl Into<BoxError>) -> Self {
        StoreError::Unavailable {
            reason,
            retry_after: Some(Duration::from_secs(1)),
            source: Some(source.into()),
        }
    }

    /// A [`StoreError::Damaged`] whose header cannot be trusted.
    pub fn damaged(reason: impl Into<String>) -> Self {
        StoreError::Damaged {
            reason: reason.into(),
            header: None,
        }
    }

    /// An [`StoreError::Internal`] with a description and no source.
    pub fn internal(reason: impl Into<String>) -> Self {
        StoreError::Internal {
            reason: reason.into(),
            source: None,
        }
    }
}

/// The fields of a damaged record's header that still hold, when the header
/// checked out ([`StoreError::Damaged`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    /// When it stops being readable (Unix ms).
    pub expires_at: UnixMillis,
    /// Digest of the owner's delete token, if the paste has one.
    pub delete_token: Option<DeleteTokenDigest>,
}

/// Why a backend could not be opened at start-up.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    /// The configuration is incomplete or contradictory.
    #[error("invalid store configuration: {0}")]
    Config(String),
    /// The backend's storage could not be prepared (e.g. the data directory
    /// cannot be created).
    #[error("cannot prepare {what}")]
    Io {
        /// What was being prepared, including the path.
        what: String,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
}
