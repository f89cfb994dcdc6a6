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
//!
//! The types are here; the queries are in `queries.rs` (migration 0007:
//! each change locks the review's row with its first statement, which on
//! SQLite also takes the write lock at once) and the PostgreSQL listener in
//! `notices.rs`.

use std::fmt;

use serde::Serialize;

#[cfg(doc)]
use crate::Catalog;
use crate::{CatalogError, TenantId};

mod notices;
mod queries;

/// The writer id of a review's owner (reviewer link ids are 12 base62
/// characters, so they never meet it).
pub const OWNER_WRITER: &str = "owner";

/// Most events one [`Catalog::review_events`] call returns.
pub const MAX_EVENTS_PER_READ: i64 = 1000;

/// A review's state as stored. `closed` is not a stored state: a deleted or
/// expired review has no rows left, and its streams are told `closed`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReviewState {
    /// Waiting for this round's decision.
    Open,
    /// Approved in this round; a progress push keeps it, any other push
    /// voids it and opens the next round.
    Approved,
    /// Changes were asked for in this round; the next push opens the next
    /// round.
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
    /// An approver link: what a reviewer does, and decides.
    Approver,
}

impl Role {
    /// `owner`, `reviewer` or `approver`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Reviewer => "reviewer",
            Role::Approver => "approver",
        }
    }

    /// Parses [`as_str`](Self::as_str)'s spelling.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "owner" => Some(Role::Owner),
            "reviewer" => Some(Role::Reviewer),
            "approver" => Some(Role::Approver),
            _ => None,
        }
    }

    /// Whether this role may decide (the owner and approvers).
    pub fn decides(self) -> bool {
        matches!(self, Role::Owner | Role::Approver)
    }
}

/// The kinds of review events. The wire spelling is [`as_str`](Self::as_str).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// A version was pushed: `{"n","round"}`, with `"reopened":true` when
    /// it opened a new round, `"progress":true` for a progress push and
    /// `"voided":true` when it voided an approval.
    Version,
    /// A writer stored or withdrew its comment set:
    /// `{"writer","name","version","withdrawn"}`.
    Comments,
    /// A link was minted: `{"link","role"}`.
    Links,
    /// A decision: `{"decision","round","version","by":{"role","link","name"}}`.
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
    /// Open or decided (in the current round).
    pub state: ReviewState,
    /// The current round: 1, 2, …
    pub round: i64,
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
    /// Owner, reviewer or approver.
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
    /// The round it was pushed in.
    pub round: i64,
    /// Its pusher claimed a progress push (only checklist marks changed).
    pub progress: bool,
}

/// One writer's comment set's metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommentRow {
    /// [`OWNER_WRITER`] or the link id.
    pub writer: String,
    /// The writer's bound name.
    pub name: String,
    /// The writer's role.
    pub role: Role,
    /// The version the comments were made on.
    pub version: i64,
    /// Where the ciphertext is.
    pub blob: BlobRef,
    /// Unix ms.
    pub updated_at: i64,
    /// The set's revision: the review's `seq` of the event that stored it
    /// (never 0: 0 stands for "no set" in a compare-and-set).
    pub seq: i64,
}

/// One live link (the owner is not listed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkRow {
    /// The link id.
    pub id: String,
    /// Reviewer or approver.
    pub role: Role,
    /// The name it bound, if it has written yet.
    pub name: Option<String>,
    /// Unix ms.
    pub created_at: i64,
}

/// Who made a decision, as they were when they made it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecidedBy {
    /// Owner or approver.
    pub role: Role,
    /// The writer id: [`OWNER_WRITER`] or the link id.
    pub link: String,
    /// The name the writer had bound (an approver always has one).
    pub name: Option<String>,
}

/// One round's decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecisionRow {
    /// The round it closed.
    pub round: i64,
    /// The version it was made on.
    pub version: i64,
    /// That version's digest.
    pub digest: String,
    /// `Approved` or `ChangesRequested`.
    pub state: ReviewState,
    /// Who decided.
    pub by: DecidedBy,
    /// The feedback blob, if one was sent.
    pub feedback: Option<BlobRef>,
    /// Unix ms.
    pub decided_at: i64,
    /// The version whose push voided this approval.
    pub voided_by: Option<i64>,
}

/// A decision to record.
#[derive(Clone, Debug)]
pub struct NewDecision<'a> {
    /// `Approved` or `ChangesRequested`.
    pub state: ReviewState,
    /// The version it is made on: must be the latest.
    pub version: i64,
    /// Who decides: [`OWNER_WRITER`] or an approver link's id.
    pub writer: &'a str,
    /// A name to bind first (the writer's bound name must agree with it,
    /// or it is bound as a comment set's first `PUT` binds one).
    pub name: Option<&'a str>,
    /// The feedback blob.
    pub feedback: Option<&'a BlobRef>,
    /// The preview the decider's client sealed (the decision's first line),
    /// which its notifications carry.
    pub sealed: Option<&'a str>,
}

/// A version to push.
#[derive(Clone, Debug)]
pub struct NewVersion<'a> {
    /// The version it replaces: must be the latest.
    pub parent: i64,
    /// The client's digest of the plan.
    pub digest: &'a str,
    /// The ciphertext's blob.
    pub blob: &'a BlobRef,
    /// The pusher claims only checklist marks changed: an approval stays.
    pub progress: bool,
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
    /// Live links, oldest first.
    pub links: Vec<LinkRow>,
    /// Every decision, oldest (round 1) first.
    pub decisions: Vec<DecisionRow>,
    /// The owner's deadline for a decision, Unix ms.
    pub deadline: Option<i64>,
    /// How often deciders are reminded while the round is undecided, ms.
    pub remind_every: Option<i64>,
}

/// The per-review limits a change is checked against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReviewLimits {
    /// Live reviewer links per review.
    pub max_links: i64,
    /// Versions per review.
    pub max_versions: i64,
    /// Changes (events in the log) per review: versions, minted links and
    /// comment sets past it are refused. Revocations, withdrawals and the
    /// decision are not, so that a link can always be taken away and a
    /// review decided; each of those happens a bounded number of times.
    pub max_events: i64,
}

/// Why a change was refused by the review's rules; nothing was changed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReviewRefusal {
    /// This round is decided already: the next push opens another.
    NotOpen(ReviewState),
    /// A decision named a version that is not the latest: someone pushed
    /// while the decider was reading.
    StaleVersion {
        /// The latest version's `n`.
        latest: i64,
    },
    /// An approver link with no name tried to decide without naming itself.
    NameRequired,
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
    /// The review has had `max_events` changes.
    TooManyEvents(i64),
    /// The writer's comment set is not the one the change was based on: it
    /// changed since the writer read it (another tab, another device).
    CommentsChanged {
        /// The set's current revision (0: the writer has no set).
        current: i64,
    },
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
        /// The round it is in (one more than before when it reopened).
        round: i64,
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

/// A recorded decision and its event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decided {
    /// The `decision` event.
    pub event: ReviewEvent,
    /// The decision as the history now holds it.
    pub decision: DecisionRow,
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

// ---- input checks (defence in depth: the HTTP layer validates first) ----

/// Whether `s` has the shape of a review or link id: 6–16 ASCII letters and
/// digits.
fn is_review_id(s: &str) -> bool {
    (6..=16).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_alphanumeric())
}

fn check_review_id(id: &str) -> Result<(), CatalogError> {
    if is_review_id(id) {
        Ok(())
    } else {
        Err(CatalogError::Invalid(
            "a review id must be 6-16 letters and digits".into(),
        ))
    }
}

fn check_link_id(link: &str) -> Result<(), CatalogError> {
    if is_review_id(link) {
        Ok(())
    } else {
        Err(CatalogError::Invalid(
            "a link id must be 6-16 letters and digits".into(),
        ))
    }
}

fn check_writer(writer: &str) -> Result<(), CatalogError> {
    if writer == OWNER_WRITER || is_review_id(writer) {
        Ok(())
    } else {
        Err(CatalogError::Invalid(
            "a writer is `owner` or a link id of 6-16 letters and digits".into(),
        ))
    }
}

fn check_blob(blob: &BlobRef) -> Result<(), CatalogError> {
    if blob.bytes < 0 {
        return Err(CatalogError::Invalid(
            "a blob size cannot be negative".into(),
        ));
    }
    if blob.blob.is_empty() || blob.blob.len() > 255 {
        return Err(CatalogError::Invalid(
            "a blob id must be 1-255 bytes".into(),
        ));
    }
    Ok(())
}

fn check_digest(digest: &str) -> Result<(), CatalogError> {
    if digest.is_empty() || digest.len() > 255 {
        return Err(CatalogError::Invalid(
            "a version digest must be 1-255 bytes".into(),
        ));
    }
    Ok(())
}

/// A writer's name as [`api_types::rules::normalize_review_name`] leaves
/// it: composed (NFC), trimmed, 1–64 characters, no control or invisible
/// formatting characters.
fn check_name(name: &str) -> Result<(), CatalogError> {
    if !api_types::rules::is_review_name(name) {
        return Err(CatalogError::Invalid(
            "a name must be 1-64 characters, not only spaces, without control or invisible formatting characters, composed (NFC) and trimmed".into(),
        ));
    }
    Ok(())
}

/// The form names are compared in: stored in `review_writers.name_fold`,
/// whose partial unique index keeps live writers' names distinct. Two names
/// that differ only in case, or that look alike (a Cyrillic "А" for a Latin
/// "A", "rn" for "m": Unicode's confusable skeleton, UTS #39), fold alike,
/// so one link cannot pass itself off as another in the review.
fn fold_name(name: &str) -> String {
    let lower = name.to_lowercase();
    unicode_security::skeleton(&lower)
        .collect::<String>()
        .to_lowercase()
}

// ---- event data (serialised in field order: compact, stable JSON) ----

#[derive(Serialize)]
struct VersionData {
    n: i64,
    round: i64,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    reopened: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    progress: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    voided: bool,
}

#[derive(Serialize)]
struct CommentsData<'a> {
    writer: &'a str,
    name: &'a str,
    version: i64,
    withdrawn: bool,
}

#[derive(Serialize)]
struct LinkData<'a> {
    link: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<&'static str>,
}

#[derive(Serialize)]
struct DecisionData<'a> {
    decision: &'static str,
    round: i64,
    version: i64,
    by: ByData<'a>,
}

#[derive(Serialize)]
struct ByData<'a> {
    role: &'static str,
    link: &'a str,
    name: Option<&'a str>,
}

/// An event's `data` as compact JSON.
fn event_data(data: &impl Serialize) -> Result<String, CatalogError> {
    serde_json::to_string(data).map_err(|e| CatalogError::Internal {
        reason: "cannot encode a review event as JSON".into(),
        source: Some(Box::new(e)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_writers_and_names_are_checked() {
        assert!(check_review_id("abc123").is_ok());
        assert!(check_review_id(&"a".repeat(16)).is_ok());
        for bad in ["abc12", "abc-123", &"a".repeat(17), "ab\u{e9}cdef"] {
            assert!(check_review_id(bad).is_err(), "{bad:?}");
        }
        assert!(check_writer(OWNER_WRITER).is_ok());
        assert!(check_writer("Link0001").is_ok());
        assert!(check_writer("Owner").is_err());
        assert!(check_link_id(OWNER_WRITER).is_err());
        assert!(check_name("Alice").is_ok());
        assert!(
            check_name(&"\u{e9}".repeat(64)).is_ok(),
            "characters, not bytes"
        );
        for bad in [
            "",
            "   ",
            "a\nb",
            &"x".repeat(65),
            " Alice",
            "Ali\u{200b}ce",
            "\u{202e}Alice",
            "A\u{30a}sa",
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        let blob = |bytes| BlobRef {
            blob: "b1".into(),
            bytes,
        };
        assert!(check_blob(&blob(0)).is_ok());
        assert!(check_blob(&blob(-1)).is_err());
    }

    #[test]
    fn event_data_is_compact_json_in_field_order() {
        let data = CommentsData {
            writer: "Link0001",
            name: "alice",
            version: 2,
            withdrawn: false,
        };
        assert_eq!(
            event_data(&data).ok().as_deref(),
            Some(r#"{"writer":"Link0001","name":"alice","version":2,"withdrawn":false}"#)
        );
        assert_eq!(fold_name("ÄLice"), fold_name("älice"));
        assert_eq!(fold_name("Alice"), fold_name("alice"));
        assert_eq!(fold_name("\u{410}lice"), fold_name("Alice"), "Cyrillic A");
        assert_eq!(fold_name("paypal"), fold_name("p\u{430}yp\u{430}l"));
        assert_ne!(fold_name("Alice"), fold_name("Alicia"));
        assert_ne!(fold_name("Sam"), fold_name("Pam"));
    }
}
