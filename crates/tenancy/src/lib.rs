//! The tenant catalog of planshare: tenants and their settings, host names,
//! hashed API keys, quotas and usage, stored over sqlx in SQLite (the embedded
//! default) or PostgreSQL.
//!
//! Start reading at [`Catalog`]: [`Catalog::open`] picks the backend from the
//! URL scheme in [`CatalogConfig`], checks the database's durability settings,
//! applies the embedded migrations (`migrations/sqlite`, `migrations/postgres`
//! at the workspace root) and serves every query. API keys are modelled in
//! `keys.rs` ([`ApiKey`]): a key is parsed and its checksum checked before any
//! lookup, and it is stored and looked up only as its SHA-256 digest. Every
//! function that touches a tenant's data takes the [`TenantId`] first, so a
//! query can never forget the tenant (cross-tenant ids read as
//! [`CatalogError::NotFound`]).
//!
//! The catalog is split the way the HTTP crate's resource families are:
//! `tenants/` (tenants and hosts, `keys.rs` API keys, `usage.rs` usage and
//! quota), `pastes/` and `reviews/`, each an `impl Catalog` over the one
//! pool of `catalog.rs`; `quota.rs` holds the reserve/release statements
//! every area's writes share.
//!
//! `pastes/` keeps the per-tenant paste index ([`PasteRecord`]: quota
//! accounting, listings, burn-after-read claims, expiry sweeps) and the
//! Idempotency-Key records of paste creates ([`Idempotency`]), in the same
//! transactions as the `usage` quota counter.
//!
//! `reviews/` keeps live shared reviews (migration 0007): a review's
//! versions, writers (token digests, bound names), comment-set metadata,
//! decision and event log, each change one transaction that counts its blobs
//! against the same quota; on PostgreSQL changes are announced to other
//! replicas ([`Catalog::review_notices`]).
//!
//! This crate knows nothing of HTTP or paste storage: it must not depend on
//! axum or paste-store (it indexes pastes by id and size, never their
//! content). It hands the HTTP layer a tenant's namespace as a string; errors
//! are semantic kinds ([`CatalogError`]), mapped to status codes only by the
//! HTTP crate. Of `api-types` it uses only `api_types::rules`, the limits and
//! patterns of tenants and keys that the OpenAPI document states too; its
//! records are not the API's bodies (the HTTP crate converts them). The
//! conformance suite (`conformance`, behind the `testsuite` feature) runs
//! against both databases.

mod audit;
mod catalog;
mod config;
mod error;
mod ids;
mod keys;
mod lazy;
mod model;
mod notify;
mod pastes;
mod quota;
mod reviews;
mod tenants;
mod time;

#[cfg(feature = "testsuite")]
pub mod conformance;

pub use audit::UsageCount;
pub use catalog::{Backend, Catalog};
pub use config::CatalogConfig;
pub use error::{BoxError, CatalogError};
pub use ids::{KeyId, TenantId};
pub use keys::{ApiKey, KeyDigest, KeyFormatError};
pub use lazy::LazyCatalog;
pub use model::{
    CreatedKey, KeyInfo, NewTenant, Tenant, TenantSettings, TenantStatus, TenantUpdate, Usage,
    validate_key_name, validate_name, validate_namespace,
};
pub use notify::queries::{RETRY_FOR_MS, SubscriptionRefusal, backoff_ms};
pub use notify::{
    Actor, Attempt, AttemptEnd, CLAIM_LEASE_MS, Delivery, DeliveryState, MAX_SEALED_BYTES,
    MAX_SUBSCRIPTIONS_PER_REVIEW, MAX_TARGET_BYTES, NewSubscription, NoticeType, OutboxItem,
    Subscription, TargetKind, is_subscription_id,
};
pub use pastes::index_writer::IndexWriter;
pub use pastes::{DEFAULT_IDEMPOTENCY_LEASE_MS, Idempotency, PastePage, PasteRecord};
pub use reviews::{
    BlobRef, CommentRow, CommentsStored, Decided, DecidedBy, DecisionRow, EventKind, LinkRow,
    MAX_EVENTS_PER_READ, NewDecision, NewReview, NewVersion, OWNER_WRITER, Outcome, Principal,
    Pushed, RemovedReview, ReviewEvent, ReviewHead, ReviewLimits, ReviewNotice, ReviewRefusal,
    ReviewSnapshot, ReviewState, Role, VersionRow,
};
pub use tenants::{NamespacePurge, PURGE_SETTLE_MS};
pub use time::now_ms;
