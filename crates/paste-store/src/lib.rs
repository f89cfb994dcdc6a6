//! Paste storage for planshare: the [`PasteStore`] trait, the typed [`PasteKey`]
//! that is the only way to address a stored value, the semantic [`StoreError`]
//! kinds, [`StoreConfig`] and the one place that turns a configuration into a
//! backend ([`open`]).
//!
//! Backends live in `src/backends/`, one file each (`memory`, `fs`, `redis`,
//! `s3`; the last two behind the cargo features of the same names). Every
//! backend passes the same conformance suite (`conformance`, behind the `testsuite`
//! feature).
//!
//! This crate knows nothing of HTTP, tenants' SQL or status codes: it must not
//! depend on axum, sqlx or the tenancy catalog. Errors say *what* went wrong
//! (not found, already exists, backend unavailable); the HTTP layer decides how
//! to answer. Start reading at [`PasteStore`].

mod backends;
mod config;
mod error;
pub mod instrument;
pub mod inventory;
mod key;
mod payload;
mod record;
mod time;

#[cfg(feature = "testsuite")]
pub mod conformance;

pub use backends::fs::FsStore;
#[cfg(unix)]
pub use backends::fs::inventory::{
    EntryMeta, FileHead, FsEntry, FsEntryKind, NotFollowed, QUARANTINE_DIR, QuarantineLink,
    not_followed, shard_of, sync_filesystem,
};
pub use backends::memory::MemoryStore;
#[cfg(feature = "redis")]
pub use backends::redis::RedisStore;
#[cfg(feature = "s3")]
pub use backends::s3::inventory::S3Repair;
#[cfg(feature = "s3")]
pub use backends::s3::{LIFECYCLE_RULE_ID, S3Store, apply_lifecycle_rule};
pub use config::{FsConfig, FsSync, RedisConfig, S3Config, StoreConfig, StoreKind, redacted};
pub use error::{OpenError, RecordHeader, StoreError};
pub use inventory::{EntryKind, InventoryEntry, Page, RecordHead, StoreInventory, TopLevel};
pub use key::{KeyError, KeyKind, Namespace, PasteId, PasteKey};
pub use payload::{DeleteToken, DeleteTokenDigest, Payload, StoredPaste};
pub use record::{
    HEADER_LEN as RECORD_HEADER_LEN, RECORD_FORMAT, RecordInfo, RecordProblem,
    check_text as check_record_text, encode as encode_record, inspect as inspect_record,
};
pub use time::{UnixMillis, now_ms};

use std::sync::Arc;

/// A key-value store for pastes with create-if-absent semantics and expiry.
///
/// The contract every backend keeps (checked by the conformance suite):
/// - [`put_if_absent`](PasteStore::put_if_absent) never overwrites: when a live
///   value exists under the key it returns [`StoreError::AlreadyExists`] and the
///   stored value is unchanged. When it returns `Ok(())` the value is durable as
///   far as the backend can make it (the fs backend has fsynced file and
///   directory entry). Of many concurrent puts of one key exactly one succeeds.
/// - A value whose `expires_at` has passed reads as [`StoreError::NotFound`],
///   whether or not it has been physically removed yet.
/// - [`delete`](PasteStore::delete) is idempotent: deleting an absent key is `Ok`.
/// - A backend that cannot be reached or cannot do its I/O answers
///   [`StoreError::Unavailable`], never `NotFound`.
/// - A stored value that is not a readable paste (empty, truncated, not a
///   record, a header that does not check out) reads as
///   [`StoreError::Damaged`], never `NotFound` (unless the header checked out
///   and says it expired) and never a partial paste; `delete` removes it.
#[async_trait::async_trait]
pub trait PasteStore: Send + Sync + std::fmt::Debug + 'static {
    /// Short name of the backend (`"fs"`, `"memory"`, …) for logs and metrics.
    fn backend(&self) -> &'static str;

    /// Stores `paste` under `key` unless a live value is already there.
    async fn put_if_absent(&self, key: &PasteKey, paste: StoredPaste) -> Result<(), StoreError>;

    /// Reads the live value under `key`.
    async fn get(&self, key: &PasteKey) -> Result<StoredPaste, StoreError>;

    /// Removes the value under `key`; `Ok(())` whether or not it existed.
    async fn delete(&self, key: &PasteKey) -> Result<(), StoreError>;

    /// Checks that the backend can serve reads and writes right now.
    async fn health(&self) -> Result<(), StoreError>;

    /// Removes every paste of `namespace` (a deleted tenant's) and returns
    /// how many were removed. Idempotent: a purge of an empty or unknown
    /// namespace is `Ok(0)`; when it returns `Ok`, no paste written to the
    /// namespace before the call is readable any more. Other namespaces are
    /// never touched.
    async fn purge_namespace(&self, namespace: &Namespace) -> Result<u64, StoreError>;
}

/// Opens the backend that `config` selects. This is the only place that
/// matches on [`StoreKind`].
pub async fn open(config: &StoreConfig) -> Result<Arc<dyn PasteStore>, OpenError> {
    match config.kind {
        StoreKind::Memory => Ok(Arc::new(MemoryStore::new())),
        StoreKind::Fs => Ok(Arc::new(FsStore::open(&config.fs).await?)),
        #[cfg(feature = "redis")]
        StoreKind::Redis => Ok(Arc::new(
            backends::redis::RedisStore::open(&config.redis).await?,
        )),
        #[cfg(feature = "s3")]
        StoreKind::S3 => Ok(Arc::new(backends::s3::S3Store::open(&config.s3).await?)),
        #[cfg(not(feature = "redis"))]
        StoreKind::Redis => Err(OpenError::Config(
            "this build of planshare has no Redis backend (cargo feature `redis`)".into(),
        )),
        #[cfg(not(feature = "s3"))]
        StoreKind::S3 => Err(OpenError::Config(
            "this build of planshare has no S3 backend (cargo feature `s3`)".into(),
        )),
    }
}
