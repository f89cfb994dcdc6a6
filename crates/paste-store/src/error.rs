//! Semantic store errors. They carry what happened and whether a retry can help;
//! only the HTTP layer maps them to status codes.

use std::time::Duration;

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
    /// The stored data is damaged or the backend broke its own invariants.
    /// Retrying will not help.
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

    /// An [`StoreError::Internal`] with a description and no source.
    pub fn internal(reason: impl Into<String>) -> Self {
        StoreError::Internal {
            reason: reason.into(),
            source: None,
        }
    }
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
