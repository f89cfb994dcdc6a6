//! Semantic catalog errors, and the one place that maps sqlx errors onto them.
//! Only the HTTP layer turns these into status codes.

use std::time::Duration;

/// Boxed source error kept for logs (never shown to clients).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Why a catalog operation failed.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    /// The tenant or key does not exist, or belongs to another tenant.
    #[error("not found")]
    NotFound,
    /// A unique value is already taken; the payload names it
    /// (`"namespace"`, `"host"`, `"key"`, `"tenant"`, `"paste"`,
    /// `"idempotency key"`).
    #[error("{0} already exists")]
    Conflict(&'static str),
    /// The record may not be changed that way whatever the input (the
    /// default tenant cannot be deleted; a namespace still being purged of a
    /// deleted tenant's pastes cannot be taken); the message says why.
    #[error("{0}")]
    Protected(&'static str),
    /// The input or configuration is invalid; the message says why and is
    /// safe to show (it never contains a secret or a connection string).
    #[error("{0}")]
    Invalid(String),
    /// The database cannot be reached or did not answer in time (pool
    /// timeout, connection error, statement timeout, busy). Retrying later may
    /// succeed. Never reported as `NotFound`, so authentication fails closed.
    #[error("catalog unavailable")]
    Unavailable {
        /// How long the caller should wait before retrying.
        retry_after: Option<Duration>,
        /// The underlying error.
        #[source]
        source: BoxError,
    },
    /// The database broke an invariant or answered something unexpected.
    /// Retrying will not help.
    #[error("catalog internal error: {reason}")]
    Internal {
        /// A short, log-safe description.
        reason: String,
        /// The underlying error, if any.
        #[source]
        source: Option<BoxError>,
    },
}

impl CatalogError {
    /// A [`CatalogError::Internal`] with a description and no source.
    pub fn internal(reason: impl Into<String>) -> Self {
        CatalogError::Internal {
            reason: reason.into(),
            source: None,
        }
    }

    /// A [`CatalogError::Unavailable`] with the default retry hint.
    pub fn unavailable(source: impl Into<BoxError>) -> Self {
        CatalogError::Unavailable {
            retry_after: Some(Duration::from_secs(1)),
            source: source.into(),
        }
    }

    /// The same kind of error, for handing one failure to several callers
    /// (a batch): the source is kept only as its message.
    pub fn duplicate(&self) -> CatalogError {
        match self {
            CatalogError::NotFound => CatalogError::NotFound,
            CatalogError::Conflict(what) => CatalogError::Conflict(what),
            CatalogError::Protected(why) => CatalogError::Protected(why),
            CatalogError::Invalid(message) => CatalogError::Invalid(message.clone()),
            CatalogError::Unavailable {
                retry_after,
                source,
            } => CatalogError::Unavailable {
                retry_after: *retry_after,
                source: source.to_string().into(),
            },
            CatalogError::Internal { reason, source } => CatalogError::Internal {
                reason: reason.clone(),
                source: source.as_ref().map(|s| s.to_string().into()),
            },
        }
    }

    /// Whether retrying the same call later may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, CatalogError::Unavailable { .. })
    }
}

/// Which unique value a constraint violation is about, from the constraint
/// name (Postgres) or message (SQLite).
fn conflict_subject(db: &dyn sqlx::error::DatabaseError) -> &'static str {
    let text = format!("{} {}", db.constraint().unwrap_or(""), db.message());
    if text.contains("host") {
        "host"
    } else if text.contains("namespace") {
        "namespace"
    } else if text.contains("digest") || text.contains("api_keys") {
        "key"
    } else {
        "tenant"
    }
}

/// Postgres SQLSTATEs (and SQLite primary result codes) that mean the
/// database is overloaded, shutting down or out of resources.
fn is_transient_code(code: &str) -> bool {
    code.starts_with("08") // connection exception
        || code.starts_with("53") // insufficient resources
        || code.starts_with("57") // operator intervention, incl. 57014 statement timeout
        || code == "40001" // serialization failure
        || code == "40P01" // deadlock detected
        || code == "55P03" // lock not available
        // SQLite: BUSY, LOCKED, IOERR, FULL, CANTOPEN (primary code in the low byte)
        || code.parse::<i64>().is_ok_and(|c| matches!(c & 0xff, 5 | 6 | 10 | 13 | 14))
}

impl From<sqlx::Error> for CatalogError {
    fn from(e: sqlx::Error) -> Self {
        use sqlx::error::ErrorKind;
        match e {
            sqlx::Error::RowNotFound => CatalogError::NotFound,
            sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::WorkerCrashed
            | sqlx::Error::BeginFailed => CatalogError::unavailable(e),
            sqlx::Error::Database(ref db) => match db.kind() {
                ErrorKind::UniqueViolation => CatalogError::Conflict(conflict_subject(&**db)),
                ErrorKind::ForeignKeyViolation => CatalogError::NotFound,
                ErrorKind::CheckViolation | ErrorKind::NotNullViolation => {
                    CatalogError::Invalid("a value is out of range".into())
                }
                _ if db.code().is_some_and(|c| is_transient_code(&c)) => {
                    CatalogError::unavailable(e)
                }
                _ => CatalogError::Internal {
                    reason: "database error".into(),
                    source: Some(Box::new(e)),
                },
            },
            other => CatalogError::Internal {
                reason: "database error".into(),
                source: Some(Box::new(other)),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_timeouts_are_unavailable_never_not_found() {
        let e = CatalogError::from(sqlx::Error::PoolTimedOut);
        assert!(e.is_retryable(), "{e:?}");
        let e = CatalogError::from(sqlx::Error::Io(std::io::Error::from(
            std::io::ErrorKind::ConnectionRefused,
        )));
        assert!(matches!(e, CatalogError::Unavailable { .. }), "{e:?}");
    }

    #[test]
    fn transient_codes_are_recognised() {
        assert!(is_transient_code("57014"));
        assert!(is_transient_code("08006"));
        assert!(is_transient_code("5")); // SQLITE_BUSY
        assert!(is_transient_code("517")); // SQLITE_BUSY_SNAPSHOT
        assert!(!is_transient_code("23505"));
        assert!(!is_transient_code("1"));
    }
}
