//! Live shared reviews in the catalog: a review's state and expiry, its
//! versions, its writers (the owner and one row per reviewer link, with the
//! SHA-256 of their tokens and the name each bound), the metadata of each
//! writer's comment set, the decision, and the per-review event log.
//!
//! The catalog never sees a review's content: versions, comment sets and
//! decision feedback are blobs in the paste store, named here by a
//! [`BlobRef`] (the store id the caller chose and its stored size). Every
//! change is one transaction that checks the review's rules, counts the
//! blobs' bytes against the tenant's quota (one entry per blob, as a paste),
//! bumps the review's `seq` and appends one [`ReviewEvent`] with it; on
//! PostgreSQL the same transaction sends a notification that other replicas
//! receive through [`Catalog::review_notices`] (on commit only).
//!
//! Every call takes the [`TenantId`] first (review ids are looked up within
//! the tenant), except [`Catalog::review_principal_any_tenant`], which finds a
//! review across tenants by its id *and* a token of it.
//!
//! A refusal by the review's rules (a stale parent, the link cap, a name
//! bound elsewhere, a decided review, the quota) is not an error: methods
//! that can refuse answer `Ok(Err(ReviewRefusal))` with nothing changed.

use std::fmt;

use crate::{Catalog, CatalogError, TenantId};

/// The writer id of a review's owner (reviewer link ids are 12 base62
/// characters, so they never meet it).
pub const OWNER_WRITER: &str = "owner";

/// Most events one [`Catalog::review_events`] call returns.
pub const MAX_EVENTS_PER_READ: i64 = 1000;

/// A review's state as stored. `closed` is not a stored state: a deleted or
/// expired review has no rows left, and its streams are told `closed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReviewState {
    /// Takes versions and comments.
    Open,
    /// The owner approved; read-only until expiry.
    Approved,
    /// The owner asked for changes; read-only until expiry.
    ChangesRequested,
}

impl ReviewState {
    /// The wire and database spelling: `open`, `approved`, `changes_requested`.
    pub fn as_str(self) -> &'static str {
        match self {
            ReviewState::Open => "open",
            ReviewState::Approved => "approved",
            ReviewState::ChangesRequested => "changes_requested",
        }
    }

    /// Parses [`as_str`](Self::as_str)'s spelling.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "open" => Some(ReviewState::Open),
            "approved" => Some(ReviewState::Approved),
            "changes_requested" => Some(ReviewState::ChangesRequested),
            _ => None,
        }
    }
}

impl fmt::Display for ReviewState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who holds a token of a review.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The creator: pushes versions, mints and revokes links, decides, deletes.
    Owner,
    /// A reviewer link: reads, writes and withdraws its own comment set.
    Reviewer,
}

impl Role {
    /// `owner` or `reviewer`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Reviewer => "reviewer",
        }
    }
}

/// The kinds of review events. The wire spelling is [`as_str`](Self::as_str).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// A version was pushed: `{"n"}`.
    Version,
    /// A writer stored or withdrew its comment set:
    /// `{"writer","name","version","withdrawn"}`.
    Comments,
    /// A reviewer link was minted: `{"link"}`.
    Links,
    /// The owner decided: `{"decision"}`.
    Decision,
    /// A reviewer link was revoked: `{"link"}`.
    Revoked,
    /// The review was deleted or expired: `{"reason"}`. Never stored (the
    /// review's rows are gone); streams make it up when they find it so.
    Closed,
}

impl EventKind {
    /// `version`, `comments`, `links`, `decision`, `revoked` or `closed`.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Version => "version",
            EventKind::Comments => "comments",
            EventKind::Links => "links",
            EventKind::Decision => "decision",
            EventKind::Revoked => "revoked",
            EventKind::Closed => "closed",
        }
    }

    /// Parses [`as_str`](Self::as_str)'s spelling.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "version" => EventKind::Version,
            "comments" => EventKind::Comments,
            "links" => EventKind::Links,
            "decision" => EventKind::Decision,
            "revoked" => EventKind::Revoked,
            "closed" => EventKind::Closed,
            _ => return None,
        })
    }
}

/// One event of a review's log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReviewEvent {
    /// The review's sequence number after the change (1 for the create).
    pub seq: i64,
    /// What changed.
    pub kind: EventKind,
    /// A small JSON object (ids, numbers, names; never content or a token).
    pub data: String,
    /// When it was appended, Unix ms.
    pub created_at: i64,
}

/// A blob in the paste store that the catalog names: the store id the
/// caller chose (a paste-id-shaped string, unique within the tenant's
/// review blobs) and its stored size, which the tenant's quota counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlobRef {
    /// The store id.
    pub blob: String,
    /// Stored bytes.
    pub bytes: i64,
}

/// A review to create, with its first version.
#[derive(Clone, Debug)]
pub struct NewReview {
    /// The review id (paste-id rules: 6–16 base62 characters).
    pub id: String,
    /// SHA-256 of the owner token.
    pub owner_digest: [u8; 32],
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms; after it the review reads as gone.
    pub expires_at: i64,
    /// The first version's digest (client-computed, opaque).
    pub digest: String,
    /// The first version's blob.
    pub blob: BlobRef,
}

/// The review-wide facts every request needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReviewHead {
    /// The tenant that holds the review.
    pub tenant: TenantId,
    /// The tenant's store namespace (for the blobs).
    pub namespace: String,
    /// The review id.
    pub id: String,
    /// Open or decided.
    pub state: ReviewState,
    /// The last event's sequence number.
    pub seq: i64,
    /// The latest version's `n`.
    pub latest: i64,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms.
    pub expires_at: i64,
}

/// A token holder of a review, as found by its token's digest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    /// The review.
    pub review: ReviewHead,
    /// Owner or reviewer.
    pub role: Role,
    /// The writer id: [`OWNER_WRITER`] or the link id.
    pub link: String,
    /// The name this writer bound with its first comment set, if any.
    pub name: Option<String>,
}

/// One version's metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionRow {
    /// 1, 2, …
    pub n: i64,
    /// The client's digest.
    pub digest: String,
    /// Where the ciphertext is.
    pub blob: BlobRef,
    /// Unix ms.
    pub created_at: i64,
}

/// One writer's comment set's metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommentRow {
    /// [`OWNER_WRITER`] or the link id.
    pub writer: String,
    /// The writer's bound name.
    pub name: String,
    /// The version the comments were made on.
    pub version: i64,
    /// Where the ciphertext is.
    pub blob: BlobRef,
    /// Unix ms.
    pub updated_at: i64,
}

/// One live reviewer link (the owner is not listed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkRow {
    /// The link id.
    pub id: String,
    /// The name it bound, if it has written yet.
    pub name: Option<String>,
    /// Unix ms.
    pub created_at: i64,
}

/// The owner's decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecisionRow {
    /// `Approved` or `ChangesRequested`.
    pub state: ReviewState,
    /// The feedback blob, if the owner sent one.
    pub feedback: Option<BlobRef>,
    /// Unix ms.
    pub decided_at: i64,
}

/// Everything the catalog knows of a review, read in one transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReviewSnapshot {
    /// State, seq, latest, expiry.
    pub head: ReviewHead,
    /// Every version, oldest first.
    pub versions: Vec<VersionRow>,
    /// Every stored comment set (of live and revoked writers), by writer id.
    pub comments: Vec<CommentRow>,
    /// Live reviewer links, oldest first.
    pub links: Vec<LinkRow>,
    /// The decision, once made.
    pub decision: Option<DecisionRow>,
}

/// The per-review limits a change is checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReviewLimits {
    /// Live reviewer links per review.
    pub max_links: i64,
    /// Versions per review.
    pub max_versions: i64,
}

/// Why a change was refused by the review's rules; nothing was changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReviewRefusal {
    /// The review is decided and takes no more versions, links, comments or
    /// decisions.
    NotOpen(ReviewState),
    /// The push named a parent that is not the latest version.
    StaleParent {
        /// The latest version's `n`.
        latest: i64,
    },
    /// The review has `max_versions` versions.
    TooManyVersions(i64),
    /// The review has `max_links` live reviewer links.
    TooManyLinks(i64),
    /// This writer bound another name with an earlier comment set.
    NameBound {
        /// The name it bound.
        bound: String,
    },
    /// Another live writer of the review bound this name (compared
    /// case-insensitively).
    NameTaken,
    /// A comment set made on a version the review does not have.
    UnknownVersion,
    /// The tenant's quota would be exceeded.
    OverQuota,
}

/// What a refusable change answers.
pub type Outcome<T> = Result<T, ReviewRefusal>;

/// The result of a version push.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pushed {
    /// A new version `n` with its event.
    Created {
        /// The new version's `n`.
        n: i64,
        /// Its `version` event.
        event: ReviewEvent,
    },
    /// The digest equals the latest version's: nothing changed (the caller
    /// removes the blob it wrote).
    Unchanged {
        /// The latest version's `n`.
        n: i64,
    },
}

/// The result of storing a comment set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommentsStored {
    /// Its `comments` event.
    pub event: ReviewEvent,
    /// The set it replaced, whose blob the caller removes.
    pub replaced: Option<BlobRef>,
}

/// A review removed by [`Catalog::sweep_expired_reviews`] or
/// [`Catalog::delete_review`], with the blobs the caller removes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemovedReview {
    /// The tenant that held it.
    pub tenant: TenantId,
    /// The tenant's store namespace.
    pub namespace: String,
    /// The review id.
    pub id: String,
    /// Every blob it named (versions, comment sets, feedback).
    pub blobs: Vec<BlobRef>,
}

/// A change to a review committed by some replica (PostgreSQL only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReviewNotice {
    /// The review's log reached `seq`.
    Changed {
        /// The tenant.
        tenant: TenantId,
        /// The review id.
        review: String,
        /// Its new seq.
        seq: i64,
    },
    /// The review was deleted or expired.
    Removed {
        /// The tenant.
        tenant: TenantId,
        /// The review id.
        review: String,
    },
    /// The listening connection was lost and re-made: notices may have been
    /// missed, so every watched review should be re-read.
    Resync,
}

impl Catalog {
    /// Creates a review: its row (`open`, seq 1), the owner's writer row,
    /// version 1 and its `version` event `{"n":1}` (seq 1), reserving the
    /// blob against the tenant's quota. An id the tenant already has:
    /// [`CatalogError::Conflict`]`("review")`. Over quota: `Ok(Err(OverQuota))`.
    pub async fn create_review(
        &self,
        tenant: &TenantId,
        new: &NewReview,
    ) -> Result<Outcome<ReviewEvent>, CatalogError> {
        let _ = (tenant, new);
        unimplemented!("reviews: create_review")
    }

    /// The holder of the token whose SHA-256 is `digest` on review `id` of
    /// `tenant`. `None` (one answer for all, no existence oracle) when the
    /// review does not exist or has expired at `now`, or the token is
    /// unknown or its link revoked.
    pub async fn review_principal(
        &self,
        tenant: &TenantId,
        id: &str,
        digest: &[u8; 32],
        now: i64,
    ) -> Result<Option<Principal>, CatalogError> {
        let _ = (tenant, id, digest, now);
        unimplemented!("reviews: review_principal")
    }

    /// [`review_principal`](Self::review_principal) across tenants: for a
    /// request that no API key or host name resolved to a tenant. The token
    /// proves access, as a paste's delete token does.
    pub async fn review_principal_any_tenant(
        &self,
        id: &str,
        digest: &[u8; 32],
        now: i64,
    ) -> Result<Option<Principal>, CatalogError> {
        let _ = (id, digest, now);
        unimplemented!("reviews: review_principal_any_tenant")
    }

    /// Everything of review `id`, read in one transaction; `None` when it
    /// does not exist (expiry is the caller's to judge from the head).
    pub async fn review_snapshot(
        &self,
        tenant: &TenantId,
        id: &str,
    ) -> Result<Option<ReviewSnapshot>, CatalogError> {
        let _ = (tenant, id);
        unimplemented!("reviews: review_snapshot")
    }

    /// Version `n` of review `id`, `None` when either does not exist.
    pub async fn review_version(
        &self,
        tenant: &TenantId,
        id: &str,
        n: i64,
    ) -> Result<Option<VersionRow>, CatalogError> {
        let _ = (tenant, id, n);
        unimplemented!("reviews: review_version")
    }

    /// Pushes a version on `parent`. The latest version's digest equal to
    /// `digest`: `Unchanged` (checked first, whatever `parent`). Refusals:
    /// `NotOpen`, `StaleParent` (parent is not the latest), `TooManyVersions`,
    /// `OverQuota`. Unknown review: [`CatalogError::NotFound`].
    #[allow(clippy::too_many_arguments)]
    pub async fn push_review_version(
        &self,
        tenant: &TenantId,
        id: &str,
        parent: i64,
        digest: &str,
        blob: &BlobRef,
        now: i64,
        limits: ReviewLimits,
    ) -> Result<Outcome<Pushed>, CatalogError> {
        let _ = (tenant, id, parent, digest, blob, now, limits);
        unimplemented!("reviews: push_review_version")
    }

    /// Adds reviewer link `link` (its token's SHA-256 is `digest`) with a
    /// `links` event `{"link"}`. Refusals: `NotOpen`, `TooManyLinks` (live
    /// links only count). Unknown review: [`CatalogError::NotFound`]; a link
    /// id the review already has: [`CatalogError::Conflict`]`("link")`.
    pub async fn add_review_link(
        &self,
        tenant: &TenantId,
        id: &str,
        link: &str,
        digest: &[u8; 32],
        now: i64,
        limits: ReviewLimits,
    ) -> Result<Outcome<ReviewEvent>, CatalogError> {
        let _ = (tenant, id, link, digest, now, limits);
        unimplemented!("reviews: add_review_link")
    }

    /// Revokes reviewer link `link` with a `revoked` event `{"link"}`; its
    /// token stops answering at once and its name is free again (its comment
    /// set stays). `Ok(None)` when it was already revoked (no event). Unknown
    /// review or link (or the owner's): [`CatalogError::NotFound`]. Allowed
    /// in any state.
    pub async fn revoke_review_link(
        &self,
        tenant: &TenantId,
        id: &str,
        link: &str,
        now: i64,
    ) -> Result<Option<ReviewEvent>, CatalogError> {
        let _ = (tenant, id, link, now);
        unimplemented!("reviews: revoke_review_link")
    }

    /// Stores `writer`'s comment set (made on version `version`), replacing
    /// its previous one, with a `comments` event
    /// `{"writer","name","version","withdrawn":false}`. The first set binds
    /// `name` to the writer. Refusals: `NotOpen`, `UnknownVersion`,
    /// `NameBound` (the writer bound another name), `NameTaken` (another
    /// live writer bound it, case-insensitively; of two racing claims
    /// exactly one wins), `OverQuota` (the new blob is counted and the
    /// replaced one released in the same transaction). Unknown review or
    /// writer, or a revoked writer: [`CatalogError::NotFound`].
    #[allow(clippy::too_many_arguments)]
    pub async fn put_review_comments(
        &self,
        tenant: &TenantId,
        id: &str,
        writer: &str,
        name: &str,
        version: i64,
        blob: &BlobRef,
        now: i64,
    ) -> Result<Outcome<CommentsStored>, CatalogError> {
        let _ = (tenant, id, writer, name, version, blob, now);
        unimplemented!("reviews: put_review_comments")
    }

    /// Withdraws `writer`'s comment set with a `comments` event
    /// `{"writer","name","version","withdrawn":true}` and answers the
    /// removed blob; `Ok(Ok(None))` when it had none (no event). The bound
    /// name stays bound. Refusal: `NotOpen`. Unknown review or writer:
    /// [`CatalogError::NotFound`].
    pub async fn delete_review_comments(
        &self,
        tenant: &TenantId,
        id: &str,
        writer: &str,
        now: i64,
    ) -> Result<Outcome<Option<(ReviewEvent, BlobRef)>>, CatalogError> {
        let _ = (tenant, id, writer, now);
        unimplemented!("reviews: delete_review_comments")
    }

    /// Records the owner's decision (`Approved` or `ChangesRequested`; `Open`
    /// is [`CatalogError::Invalid`]) with optional feedback, and a `decision`
    /// event `{"decision"}`. Refusals: `NotOpen` (already decided),
    /// `OverQuota` (the feedback blob). Unknown review: [`CatalogError::NotFound`].
    pub async fn decide_review(
        &self,
        tenant: &TenantId,
        id: &str,
        decision: ReviewState,
        feedback: Option<&BlobRef>,
        now: i64,
    ) -> Result<Outcome<ReviewEvent>, CatalogError> {
        let _ = (tenant, id, decision, feedback, now);
        unimplemented!("reviews: decide_review")
    }

    /// Deletes review `id` and every row of it, releasing its blobs' quota;
    /// answers the blobs for the caller to remove. `Ok(None)` when it does
    /// not exist. Notifies other replicas (`Removed`).
    pub async fn delete_review(
        &self,
        tenant: &TenantId,
        id: &str,
    ) -> Result<Option<RemovedReview>, CatalogError> {
        let _ = (tenant, id);
        unimplemented!("reviews: delete_review")
    }

    /// Events of review `id` with `seq > after`, oldest first, at most
    /// `limit` (capped at [`MAX_EVENTS_PER_READ`]). Empty for an unknown review.
    pub async fn review_events(
        &self,
        tenant: &TenantId,
        id: &str,
        after: i64,
        limit: i64,
    ) -> Result<Vec<ReviewEvent>, CatalogError> {
        let _ = (tenant, id, after, limit);
        unimplemented!("reviews: review_events")
    }

    /// Deletes up to `limit` reviews (of any tenant) that expired before
    /// `now`, with all their rows and quota, and answers them for the caller
    /// to remove their blobs. Notifies other replicas (`Removed`).
    pub async fn sweep_expired_reviews(
        &self,
        now: i64,
        limit: i64,
    ) -> Result<Vec<RemovedReview>, CatalogError> {
        let _ = (now, limit);
        unimplemented!("reviews: sweep_expired_reviews")
    }

    /// Notices of review changes committed by any replica, PostgreSQL only
    /// (`None` on SQLite, where one process owns the database). The
    /// receiver yields until the catalog is dropped; a lost listening
    /// connection is re-made and reported as [`ReviewNotice::Resync`].
    pub async fn review_notices(
        &self,
    ) -> Result<Option<tokio::sync::mpsc::Receiver<ReviewNotice>>, CatalogError> {
        unimplemented!("reviews: review_notices")
    }
}
