//! The review queries (migration 0007), one `impl Catalog` block.
//!
//! Every change is one transaction whose FIRST statement writes the
//! review's row (`LOCK_REVIEW`, an `UPDATE` that changes nothing): on
//! PostgreSQL that locks the row, so the changes of one review run one at a
//! time and each reads what the previous one committed (READ COMMITTED
//! takes a fresh snapshot per statement); on SQLite it takes the write lock
//! at once (waiting under `busy_timeout`), so a change never reads first and
//! then fails to upgrade. No row changed = no such review in the tenant.
//! The tenant's `usage` row is written after the review's, never before,
//! in every transaction here (one lock order). A refusal rolls back.

use sqlx::error::ErrorKind;

use super::{
    BlobRef, ByData, CommentRow, CommentsData, CommentsStored, Decided, DecidedBy, DecisionData,
    DecisionRow, EventKind, LinkData, LinkRow, MAX_EVENTS_PER_READ, NewDecision, NewReview,
    NewVersion, OWNER_WRITER, Outcome, Principal, Pushed, RemovedReview, ReviewEvent, ReviewHead,
    ReviewLimits, ReviewNotice, ReviewRefusal, ReviewSnapshot, ReviewState, Role, VersionData,
    VersionRow, check_blob, check_digest, check_link_id, check_name, check_review_id, check_writer,
    event_data, fold_name, is_review_id,
};
use crate::catalog::with_pool;
use crate::notify::queries::INSERT_OUTBOX;
use crate::notify::{Actor, notice_of_event};
use crate::quota::{RELEASE_USAGE, RESERVE_USAGE};
use crate::{Backend, Catalog, CatalogError, TenantId};

/// The PostgreSQL channel review changes are announced on.
pub(super) const CHANNEL: &str = "planshare_reviews";

/// Locks review `$2` of tenant `$1` for a change (see the module docs).
const LOCK_REVIEW: &str = "UPDATE reviews SET seq = seq WHERE tenant_id = $1 AND id = $2 \
     RETURNING state, seq, round";
/// The lock of a removal: only a review with `expires_at <= $3`.
const LOCK_REMOVED_REVIEW: &str = "UPDATE reviews SET seq = seq \
     WHERE tenant_id = $1 AND id = $2 AND expires_at <= $3 \
     RETURNING feedback_blob, feedback_bytes";
const BUMP_SEQ: &str = "UPDATE reviews SET seq = seq + 1 WHERE tenant_id = $1 AND id = $2 \
     RETURNING seq";
const INSERT_REVIEW: &str = "INSERT INTO reviews (tenant_id, id, state, seq, created_at, expires_at) \
     VALUES ($1, $2, 'open', 1, $3, $4) ON CONFLICT (tenant_id, id) DO NOTHING";
/// The current round's decision, mirrored on the review's row for
/// replicas on migration 0010 (the history is `review_decisions`).
const DECIDE_REVIEW: &str = "UPDATE reviews SET state = $3, decided_at = $4, feedback_blob = $5, \
     feedback_bytes = $6 WHERE tenant_id = $1 AND id = $2";
/// Opens round `$3`: open again, no current decision.
const OPEN_ROUND: &str = "UPDATE reviews SET state = 'open', round = $3, decided_at = NULL, \
     feedback_blob = NULL, feedback_bytes = NULL WHERE tenant_id = $1 AND id = $2";
const INSERT_DECISION: &str = "INSERT INTO review_decisions \
     (tenant_id, review_id, round, version, digest, decision, by_writer, by_role, by_name, \
     feedback_blob, feedback_bytes, decided_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)";
/// Marks round `$3`'s approval as voided by the push of version `$4`.
const VOID_DECISION: &str = "UPDATE review_decisions SET voided_by = $4 \
     WHERE tenant_id = $1 AND review_id = $2 AND round = $3";
const SELECT_DECISIONS: &str = "SELECT round, version, digest, decision, by_writer, by_role, \
     by_name, feedback_blob, feedback_bytes, decided_at, voided_by FROM review_decisions \
     WHERE tenant_id = $1 AND review_id = $2 ORDER BY round";
const DECISION_BLOBS: &str = "SELECT feedback_blob, feedback_bytes FROM review_decisions \
     WHERE tenant_id = $1 AND review_id = $2 AND feedback_blob IS NOT NULL \
     AND feedback_bytes IS NOT NULL ORDER BY round";
const DELETE_REVIEW: &str = "DELETE FROM reviews WHERE tenant_id = $1 AND id = $2";
const EXPIRED_REVIEWS: &str = "SELECT tenant_id, id FROM reviews WHERE expires_at <= $1 \
     ORDER BY expires_at, tenant_id, id LIMIT $2";
const NAMESPACE: &str = "SELECT namespace FROM tenants WHERE id = $1";

/// The head of review `$2` of tenant `$1` (its latest version is the
/// greatest `n`: versions are never removed one by one).
const SELECT_HEAD: &str = "SELECT r.tenant_id, t.namespace, r.id, r.state, r.round, r.seq, \
     COALESCE((SELECT MAX(v.n) FROM review_versions v \
               WHERE v.tenant_id = r.tenant_id AND v.review_id = r.id), 0) AS latest, \
     r.created_at, r.expires_at, r.deadline_at, r.remind_every \
     FROM reviews r JOIN tenants t ON t.id = r.tenant_id \
     WHERE r.tenant_id = $1 AND r.id = $2";
/// A live writer of review `$2` by token digest `$1`, not expired at `$3`;
/// the tenant-scoped form adds `$4`. By digest only (a unique index):
/// no token is ever compared.
const SELECT_PRINCIPAL_ANY_TENANT: &str = "SELECT r.tenant_id, t.namespace, r.id, r.state, \
     r.round, r.seq, \
     COALESCE((SELECT MAX(v.n) FROM review_versions v \
               WHERE v.tenant_id = r.tenant_id AND v.review_id = r.id), 0) AS latest, \
     r.created_at, r.expires_at, CASE WHEN w.approver THEN 'approver' ELSE w.role END AS role, \
     w.id AS writer, w.name \
     FROM review_writers w \
     JOIN reviews r ON r.tenant_id = w.tenant_id AND r.id = w.review_id \
     JOIN tenants t ON t.id = r.tenant_id \
     WHERE w.token_digest = $1 AND w.review_id = $2 AND w.revoked_at IS NULL \
     AND r.expires_at > $3";
const SELECT_PRINCIPAL: &str = "SELECT r.tenant_id, t.namespace, r.id, r.state, r.round, r.seq, \
     COALESCE((SELECT MAX(v.n) FROM review_versions v \
               WHERE v.tenant_id = r.tenant_id AND v.review_id = r.id), 0) AS latest, \
     r.created_at, r.expires_at, CASE WHEN w.approver THEN 'approver' ELSE w.role END AS role, \
     w.id AS writer, w.name \
     FROM review_writers w \
     JOIN reviews r ON r.tenant_id = w.tenant_id AND r.id = w.review_id \
     JOIN tenants t ON t.id = r.tenant_id \
     WHERE w.token_digest = $1 AND w.review_id = $2 AND w.revoked_at IS NULL \
     AND r.expires_at > $3 AND w.tenant_id = $4";

/// `$4` is the stored role (`owner` or `reviewer`), `$7` whether the link
/// is an approver's.
const INSERT_WRITER: &str = "INSERT INTO review_writers \
     (tenant_id, review_id, id, role, token_digest, created_at, approver) \
     VALUES ($1, $2, $3, $4, $5, $6, $7)";
const SELECT_WRITER: &str = "SELECT CASE WHEN approver THEN 'approver' ELSE role END AS role, \
     name, revoked_at FROM review_writers \
     WHERE tenant_id = $1 AND review_id = $2 AND id = $3";
const LIVE_LINKS: &str = "SELECT COUNT(*) FROM review_writers \
     WHERE tenant_id = $1 AND review_id = $2 AND role = 'reviewer' AND revoked_at IS NULL";
const SELECT_LINKS: &str = "SELECT id, CASE WHEN approver THEN 'approver' ELSE role END AS role, \
     name, created_at FROM review_writers \
     WHERE tenant_id = $1 AND review_id = $2 AND role = 'reviewer' AND revoked_at IS NULL \
     ORDER BY created_at, id";
const REVOKE_LINK: &str = "UPDATE review_writers SET revoked_at = $4 \
     WHERE tenant_id = $1 AND review_id = $2 AND id = $3 AND role = 'reviewer' \
     AND revoked_at IS NULL";
/// Another live writer (not `$4`) that bound the folded name `$3`.
const NAME_HOLDER: &str = "SELECT id FROM review_writers \
     WHERE tenant_id = $1 AND review_id = $2 AND name_fold = $3 AND revoked_at IS NULL \
     AND id <> $4";
/// Binds a name to a writer that has none (compare-and-set on `name IS NULL`).
const BIND_NAME: &str = "UPDATE review_writers SET name = $4, name_fold = $5 \
     WHERE tenant_id = $1 AND review_id = $2 AND id = $3 AND name IS NULL";
const SELECT_NAME: &str = "SELECT name FROM review_writers \
     WHERE tenant_id = $1 AND review_id = $2 AND id = $3";

const INSERT_VERSION: &str = "INSERT INTO review_versions \
     (tenant_id, review_id, n, digest, blob, bytes, created_at, round, progress) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";
const LATEST_VERSION: &str = "SELECT n, digest FROM review_versions \
     WHERE tenant_id = $1 AND review_id = $2 ORDER BY n DESC LIMIT 1";
const SELECT_VERSION: &str = "SELECT n, digest, blob, bytes, created_at, round, progress \
     FROM review_versions \
     WHERE tenant_id = $1 AND review_id = $2 AND n = $3";
const SELECT_VERSIONS: &str = "SELECT n, digest, blob, bytes, created_at, round, progress \
     FROM review_versions \
     WHERE tenant_id = $1 AND review_id = $2 ORDER BY n";
const VERSION_BLOBS: &str = "SELECT blob, bytes FROM review_versions \
     WHERE tenant_id = $1 AND review_id = $2 ORDER BY n";

const SELECT_COMMENT_SET: &str = "SELECT seq, blob, bytes FROM review_comments \
     WHERE tenant_id = $1 AND review_id = $2 AND writer = $3";
const UPSERT_COMMENT_SET: &str = "INSERT INTO review_comments \
     (tenant_id, review_id, writer, version, blob, bytes, updated_at, seq) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
     ON CONFLICT (tenant_id, review_id, writer) DO UPDATE SET version = excluded.version, \
     blob = excluded.blob, bytes = excluded.bytes, updated_at = excluded.updated_at, \
     seq = excluded.seq";
const DELETE_COMMENT_SET: &str = "DELETE FROM review_comments \
     WHERE tenant_id = $1 AND review_id = $2 AND writer = $3 \
     RETURNING version, blob, bytes, seq";
const SELECT_COMMENT_SETS: &str = "SELECT c.writer, COALESCE(w.name, '') AS name, \
     CASE WHEN w.approver THEN 'approver' ELSE w.role END AS role, c.version, \
     c.blob, c.bytes, c.updated_at, c.seq FROM review_comments c \
     JOIN review_writers w ON w.tenant_id = c.tenant_id AND w.review_id = c.review_id \
     AND w.id = c.writer \
     WHERE c.tenant_id = $1 AND c.review_id = $2 ORDER BY c.writer";
const COMMENT_BLOBS: &str = "SELECT blob, bytes FROM review_comments \
     WHERE tenant_id = $1 AND review_id = $2 ORDER BY writer";

const INSERT_EVENT: &str = "INSERT INTO review_events \
     (tenant_id, review_id, seq, kind, data, created_at) VALUES ($1, $2, $3, $4, $5, $6)";
const SELECT_EVENTS: &str = "SELECT seq, kind, data, created_at FROM review_events \
     WHERE tenant_id = $1 AND review_id = $2 AND seq > $3 ORDER BY seq LIMIT $4";

/// Announces a change on [`CHANNEL`] (PostgreSQL; delivered on commit only).
const NOTIFY: &str = "SELECT pg_notify($1, $2)";
/// A snapshot reads one state of the review on PostgreSQL too.
const SNAPSHOT_ISOLATION: &str = "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY";

#[derive(sqlx::FromRow)]
struct HeadRow {
    tenant_id: String,
    namespace: String,
    id: String,
    state: String,
    round: i64,
    seq: i64,
    latest: i64,
    created_at: i64,
    expires_at: i64,
    deadline_at: Option<i64>,
    remind_every: Option<i64>,
}

#[derive(sqlx::FromRow)]
struct PrincipalRow {
    tenant_id: String,
    namespace: String,
    id: String,
    state: String,
    round: i64,
    seq: i64,
    latest: i64,
    created_at: i64,
    expires_at: i64,
    role: String,
    writer: String,
    name: Option<String>,
}

#[derive(sqlx::FromRow)]
struct WriterRow {
    role: String,
    name: Option<String>,
    revoked_at: Option<i64>,
}

#[derive(sqlx::FromRow)]
struct VersionDbRow {
    n: i64,
    digest: String,
    blob: String,
    bytes: i64,
    created_at: i64,
    round: i64,
    progress: bool,
}

#[derive(sqlx::FromRow)]
struct CommentDbRow {
    writer: String,
    name: String,
    role: String,
    version: i64,
    blob: String,
    bytes: i64,
    updated_at: i64,
    seq: i64,
}

#[derive(sqlx::FromRow)]
struct DecisionDbRow {
    round: i64,
    version: i64,
    digest: String,
    decision: String,
    by_writer: String,
    by_role: String,
    by_name: Option<String>,
    feedback_blob: Option<String>,
    feedback_bytes: Option<i64>,
    decided_at: i64,
    voided_by: Option<i64>,
}

impl DecisionDbRow {
    fn into_row(self) -> Result<DecisionRow, CatalogError> {
        let feedback = match (self.feedback_blob, self.feedback_bytes) {
            (Some(blob), Some(bytes)) => Some(BlobRef { blob, bytes }),
            _ => None,
        };
        Ok(DecisionRow {
            round: self.round,
            version: self.version,
            digest: self.digest,
            state: state(&self.decision)?,
            by: DecidedBy {
                role: role(&self.by_role)?,
                link: self.by_writer,
                name: self.by_name,
            },
            feedback,
            decided_at: self.decided_at,
            voided_by: self.voided_by,
        })
    }
}

#[derive(sqlx::FromRow)]
struct EventRow {
    seq: i64,
    kind: String,
    data: String,
    created_at: i64,
}

impl From<VersionDbRow> for VersionRow {
    fn from(r: VersionDbRow) -> Self {
        VersionRow {
            n: r.n,
            digest: r.digest,
            blob: BlobRef {
                blob: r.blob,
                bytes: r.bytes,
            },
            created_at: r.created_at,
            round: r.round,
            progress: r.progress,
        }
    }
}

impl TryFrom<EventRow> for ReviewEvent {
    type Error = CatalogError;
    fn try_from(r: EventRow) -> Result<Self, CatalogError> {
        let kind = EventKind::parse(&r.kind)
            .ok_or_else(|| CatalogError::internal("a review event has an unknown kind"))?;
        Ok(ReviewEvent {
            seq: r.seq,
            kind,
            data: r.data,
            created_at: r.created_at,
        })
    }
}

fn state(s: &str) -> Result<ReviewState, CatalogError> {
    ReviewState::parse(s).ok_or_else(|| CatalogError::internal("a review has an unknown state"))
}

fn role(s: &str) -> Result<Role, CatalogError> {
    Role::parse(s).ok_or_else(|| CatalogError::internal("a review writer has an unknown role"))
}

impl HeadRow {
    fn head(&self) -> Result<ReviewHead, CatalogError> {
        Ok(ReviewHead {
            tenant: TenantId::from_db(self.tenant_id.clone()),
            namespace: self.namespace.clone(),
            id: self.id.clone(),
            state: state(&self.state)?,
            round: self.round,
            seq: self.seq,
            latest: self.latest,
            created_at: self.created_at,
            expires_at: self.expires_at,
        })
    }
}

impl PrincipalRow {
    fn into_principal(self) -> Result<Principal, CatalogError> {
        Ok(Principal {
            review: ReviewHead {
                tenant: TenantId::from_db(self.tenant_id),
                namespace: self.namespace,
                id: self.id,
                state: state(&self.state)?,
                round: self.round,
                seq: self.seq,
                latest: self.latest,
                created_at: self.created_at,
                expires_at: self.expires_at,
            },
            role: role(&self.role)?,
            link: self.writer,
            name: self.name,
        })
    }
}

fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(db) if db.kind() == ErrorKind::UniqueViolation)
}

/// The `pg_notify` payload of a change: `changed <tenant> <review> <seq>`.
fn changed_payload(tenant: &TenantId, id: &str, seq: i64) -> String {
    format!("changed {tenant} {id} {seq}")
}

/// The `pg_notify` payload of a removal: `removed <tenant> <review>`.
fn removed_payload(tenant: &TenantId, id: &str) -> String {
    format!("removed {tenant} {id}")
}

/// Parses a payload of [`changed_payload`] or [`removed_payload`].
pub(super) fn parse_payload(payload: &str) -> Option<ReviewNotice> {
    let parts: Vec<&str> = payload.split(' ').collect();
    match parts.as_slice() {
        ["changed", tenant, review, seq] => Some(ReviewNotice::Changed {
            tenant: TenantId::parse(tenant).ok()?,
            review: (*review).to_owned(),
            seq: seq.parse().ok()?,
        }),
        ["removed", tenant, review] => Some(ReviewNotice::Removed {
            tenant: TenantId::parse(tenant).ok()?,
            review: (*review).to_owned(),
        }),
        _ => None,
    }
}

/// Locks the review (`$tenant`, `$id`) in `$tx` and answers its state, its
/// sequence number (the changes it has had) and its round, or rolls back and returns
/// `NotFound` from the enclosing function.
macro_rules! lock_review {
    ($tx:ident, $tenant:expr, $id:expr) => {{
        // fetch_all: an UPDATE … RETURNING runs to completion.
        let rows: Vec<(String, i64, i64)> = sqlx::query_as(LOCK_REVIEW)
            .bind($tenant.as_str())
            .bind($id)
            .fetch_all(&mut *$tx)
            .await?;
        match rows.first() {
            Some((s, seq, round)) => (state(s)?, *seq, *round),
            None => {
                $tx.rollback().await?;
                return Err(CatalogError::NotFound);
            }
        }
    }};
}

/// Refuses (rolls back) when a review at sequence number `$seq` has had
/// `$limits.max_events` changes already.
macro_rules! require_event_room {
    ($tx:ident, $seq:expr, $limits:expr) => {{
        if $seq >= $limits.max_events {
            refuse!($tx, ReviewRefusal::TooManyEvents($limits.max_events));
        }
    }};
}

/// Rolls `$tx` back and returns the refusal `$refusal` from the enclosing
/// function.
macro_rules! refuse {
    ($tx:ident, $refusal:expr) => {{
        $tx.rollback().await?;
        return Ok(Err($refusal));
    }};
}

/// Reserves one entry of `$bytes` against the tenant's quota in `$tx`;
/// refuses with `OverQuota` when it does not fit.
macro_rules! reserve {
    ($tx:ident, $tenant:expr, $bytes:expr) => {{
        let reserved = sqlx::query(RESERVE_USAGE)
            .bind($bytes)
            .bind($tenant.as_str())
            .execute(&mut *$tx)
            .await?
            .rows_affected();
        if reserved != 1 {
            refuse!($tx, ReviewRefusal::OverQuota);
        }
    }};
}

/// Gives back one entry of `$bytes` in `$tx`.
macro_rules! release {
    ($tx:ident, $tenant:expr, $bytes:expr) => {{
        sqlx::query(RELEASE_USAGE)
            .bind(i64::max($bytes, 0))
            .bind($tenant.as_str())
            .execute(&mut *$tx)
            .await?;
    }};
}

/// Binds `$name` (folded: `$fold`) to writer `$writer`, whose bound name is
/// `$bound`, in `$tx`: nothing to do when it is that name already; refuses
/// with `NameBound` (it bound another) or `NameTaken` (another live writer
/// holds it; of two racing claims the unique index lets exactly one win).
macro_rules! bind_name {
    ($tx:ident, $tenant:expr, $id:expr, $writer:expr, $bound:expr, $name:expr, $fold:expr) => {{
        match $bound {
            // A name bound before names were normalised counts as its
            // normal form.
            Some(bound)
                if bound != $name
                    && api_types::rules::normalize_review_name(&bound).as_deref()
                        != Some($name) =>
            {
                refuse!($tx, ReviewRefusal::NameBound { bound });
            }
            Some(_) => {}
            None => {
                let holder: Option<String> = sqlx::query_scalar(NAME_HOLDER)
                    .bind($tenant.as_str())
                    .bind($id)
                    .bind($fold)
                    .bind($writer)
                    .fetch_optional(&mut *$tx)
                    .await?;
                if holder.is_some() {
                    refuse!($tx, ReviewRefusal::NameTaken);
                }
                // The partial unique index on live names decides a race
                // that the review's lock did not already serialise.
                let bound = sqlx::query(BIND_NAME)
                    .bind($tenant.as_str())
                    .bind($id)
                    .bind($writer)
                    .bind($name)
                    .bind($fold)
                    .execute(&mut *$tx)
                    .await;
                match bound {
                    Ok(done) if done.rows_affected() == 1 => {}
                    Ok(_) => {
                        // Bound meanwhile: read what it bound.
                        let again: Option<Option<String>> = sqlx::query_scalar(SELECT_NAME)
                            .bind($tenant.as_str())
                            .bind($id)
                            .bind($writer)
                            .fetch_optional(&mut *$tx)
                            .await?;
                        match again.flatten() {
                            Some(bound) if bound == $name => {}
                            Some(bound) => refuse!($tx, ReviewRefusal::NameBound { bound }),
                            None => {
                                $tx.rollback().await?;
                                return Err(CatalogError::NotFound);
                            }
                        }
                    }
                    Err(e) if is_unique_violation(&e) => {
                        refuse!($tx, ReviewRefusal::NameTaken);
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        }
    }};
}

/// Sends `$payload` on [`CHANNEL`] in `$tx` when `$pg`.
macro_rules! notify {
    ($tx:ident, $pg:expr, $payload:expr) => {{
        if $pg {
            sqlx::query(NOTIFY)
                .bind(CHANNEL)
                .bind($payload)
                .execute(&mut *$tx)
                .await?;
        }
    }};
}

/// Queues the notifications of `$event` in `$tx`: one outbox row per
/// subscription of the review that wants its type, other than `$actor`'s
/// own (migration 0012).
macro_rules! queue_notices {
    ($self_:ident, $tx:ident, $tenant:expr, $id:expr, $event:expr, $actor:expr) => {{
        let actor: &Actor<'_> = $actor;
        if let Some((notice, data)) =
            notice_of_event($id, $event.seq, $event.kind.as_str(), &$event.data, actor)?
        {
            let queued = sqlx::query(INSERT_OUTBOX)
                .bind($tenant.as_str())
                .bind($id)
                .bind($event.seq)
                .bind(notice.as_str())
                .bind(&data)
                .bind($event.created_at)
                .bind(notice.bit())
                .bind(actor.writer)
                .execute(&mut *$tx)
                .await?
                .rows_affected();
            if queued > 0 {
                $self_
                    .notices_queued
                    .fetch_add(queued, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }};
}

/// Bumps the review's `seq` in `$tx`, appends the event with it and
/// announces it; evaluates to the [`ReviewEvent`].
macro_rules! append_event {
    ($self_:ident, $tx:ident, $pg:expr, $tenant:expr, $id:expr, $kind:expr, $data:expr, $now:expr, $actor:expr) => {{
        let seqs: Vec<i64> = sqlx::query_scalar(BUMP_SEQ)
            .bind($tenant.as_str())
            .bind($id)
            .fetch_all(&mut *$tx)
            .await?;
        let seq = seqs
            .first()
            .copied()
            .ok_or_else(|| CatalogError::internal("a locked review vanished"))?;
        let event = ReviewEvent {
            seq,
            kind: $kind,
            data: $data,
            created_at: $now,
        };
        sqlx::query(INSERT_EVENT)
            .bind($tenant.as_str())
            .bind($id)
            .bind(seq)
            .bind(event.kind.as_str())
            .bind(&event.data)
            .bind(event.created_at)
            .execute(&mut *$tx)
            .await?;
        queue_notices!($self_, $tx, $tenant, $id, &event, $actor);
        notify!($tx, $pg, changed_payload($tenant, $id, seq));
        event
    }};
}

impl Catalog {
    /// This process's turn to change a review, on SQLite (see
    /// `Catalog::review_writes`); `None` on PostgreSQL.
    pub(crate) async fn review_write_turn(&self) -> Option<tokio::sync::MutexGuard<'_, ()>> {
        match self.pool {
            crate::catalog::Pool::Sqlite(_) => Some(self.review_writes.lock().await),
            crate::catalog::Pool::Postgres(_) => None,
        }
    }

    fn on_postgres(&self) -> bool {
        self.backend() == Backend::Postgres
    }

    /// Creates a review: its row (`open`, seq 1), the owner's writer row,
    /// version 1 and its `version` event `{"n":1}` (seq 1), reserving the
    /// blob against the tenant's quota. An id the tenant already has:
    /// [`CatalogError::Conflict`]`("review")`. Over quota: `Ok(Err(OverQuota))`.
    pub async fn create_review(
        &self,
        tenant: &TenantId,
        new: &NewReview,
    ) -> Result<Outcome<ReviewEvent>, CatalogError> {
        check_review_id(&new.id)?;
        check_digest(&new.digest)?;
        check_blob(&new.blob)?;
        let pg = self.on_postgres();
        let event = ReviewEvent {
            seq: 1,
            kind: EventKind::Version,
            data: event_data(&VersionData {
                n: 1,
                round: 1,
                reopened: false,
                progress: false,
                voided: false,
            })?,
            created_at: new.created_at,
        };
        let _turn = self.review_write_turn().await;
        with_pool!(self, p => {
            let mut tx = p.begin().await?;
            // The write first (see the module docs); an unknown tenant fails
            // its foreign key (NotFound).
            let inserted = sqlx::query(INSERT_REVIEW)
                .bind(tenant.as_str())
                .bind(&new.id)
                .bind(new.created_at)
                .bind(new.expires_at)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if inserted == 0 {
                tx.rollback().await?;
                return Err(CatalogError::Conflict("review"));
            }
            sqlx::query(INSERT_WRITER)
                .bind(tenant.as_str())
                .bind(&new.id)
                .bind(OWNER_WRITER)
                .bind(Role::Owner.as_str())
                .bind(&new.owner_digest[..])
                .bind(new.created_at)
                .bind(false)
                .execute(&mut *tx)
                .await?;
            sqlx::query(INSERT_VERSION)
                .bind(tenant.as_str())
                .bind(&new.id)
                .bind(1_i64)
                .bind(&new.digest)
                .bind(&new.blob.blob)
                .bind(new.blob.bytes)
                .bind(new.created_at)
                .bind(1_i64)
                .bind(false)
                .execute(&mut *tx)
                .await?;
            sqlx::query(INSERT_EVENT)
                .bind(tenant.as_str())
                .bind(&new.id)
                .bind(event.seq)
                .bind(event.kind.as_str())
                .bind(&event.data)
                .bind(event.created_at)
                .execute(&mut *tx)
                .await?;
            reserve!(tx, tenant, new.blob.bytes);
            notify!(tx, pg, changed_payload(tenant, &new.id, event.seq));
            tx.commit().await?;
        });
        tracing::debug!(tenant.id = %tenant, review.id = %new.id, "review created");
        Ok(Ok(event))
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
        if !is_review_id(id) {
            return Ok(None);
        }
        let row: Option<PrincipalRow> = with_pool!(self, p => sqlx::query_as(SELECT_PRINCIPAL)
            .bind(&digest[..])
            .bind(id)
            .bind(now)
            .bind(tenant.as_str())
            .fetch_optional(p)
            .await?);
        row.map(PrincipalRow::into_principal).transpose()
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
        if !is_review_id(id) {
            return Ok(None);
        }
        let row: Option<PrincipalRow> = with_pool!(self, p => sqlx::query_as(SELECT_PRINCIPAL_ANY_TENANT)
                .bind(&digest[..])
                .bind(id)
                .bind(now)
                .fetch_optional(p)
                .await?);
        row.map(PrincipalRow::into_principal).transpose()
    }

    /// Everything of review `id`, read in one transaction; `None` when it
    /// does not exist (expiry is the caller's to judge from the head).
    pub async fn review_snapshot(
        &self,
        tenant: &TenantId,
        id: &str,
    ) -> Result<Option<ReviewSnapshot>, CatalogError> {
        check_review_id(id)?;
        let pg = self.on_postgres();
        let read = with_pool!(self, p => {
            let mut tx = p.begin().await?;
            if pg {
                sqlx::query(SNAPSHOT_ISOLATION).execute(&mut *tx).await?;
            }
            let head: Option<HeadRow> = sqlx::query_as(SELECT_HEAD)
                .bind(tenant.as_str())
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?;
            let Some(head) = head else {
                tx.rollback().await?;
                return Ok(None);
            };
            let versions: Vec<VersionDbRow> = sqlx::query_as(SELECT_VERSIONS)
                .bind(tenant.as_str())
                .bind(id)
                .fetch_all(&mut *tx)
                .await?;
            let comments: Vec<CommentDbRow> = sqlx::query_as(SELECT_COMMENT_SETS)
                .bind(tenant.as_str())
                .bind(id)
                .fetch_all(&mut *tx)
                .await?;
            let links: Vec<(String, String, Option<String>, i64)> = sqlx::query_as(SELECT_LINKS)
                .bind(tenant.as_str())
                .bind(id)
                .fetch_all(&mut *tx)
                .await?;
            let decisions: Vec<DecisionDbRow> = sqlx::query_as(SELECT_DECISIONS)
                .bind(tenant.as_str())
                .bind(id)
                .fetch_all(&mut *tx)
                .await?;
            tx.commit().await?;
            (head, versions, comments, links, decisions)
        });
        let (head, versions, comments, links, decisions) = read;
        Ok(Some(ReviewSnapshot {
            deadline: head.deadline_at,
            remind_every: head.remind_every,
            head: head.head()?,
            versions: versions.into_iter().map(VersionRow::from).collect(),
            comments: comments
                .into_iter()
                .map(|c| {
                    Ok(CommentRow {
                        writer: c.writer,
                        name: c.name,
                        role: role(&c.role)?,
                        version: c.version,
                        blob: BlobRef {
                            blob: c.blob,
                            bytes: c.bytes,
                        },
                        updated_at: c.updated_at,
                        seq: c.seq,
                    })
                })
                .collect::<Result<_, CatalogError>>()?,
            links: links
                .into_iter()
                .map(|(id, link_role, name, created_at)| {
                    Ok(LinkRow {
                        id,
                        role: role(&link_role)?,
                        name,
                        created_at,
                    })
                })
                .collect::<Result<_, CatalogError>>()?,
            decisions: decisions
                .into_iter()
                .map(DecisionDbRow::into_row)
                .collect::<Result<_, CatalogError>>()?,
        }))
    }

    /// Version `n` of review `id`, `None` when either does not exist.
    pub async fn review_version(
        &self,
        tenant: &TenantId,
        id: &str,
        n: i64,
    ) -> Result<Option<VersionRow>, CatalogError> {
        check_review_id(id)?;
        let row: Option<VersionDbRow> = with_pool!(self, p => sqlx::query_as(SELECT_VERSION)
            .bind(tenant.as_str())
            .bind(id)
            .bind(n)
            .fetch_optional(p)
            .await?);
        Ok(row.map(VersionRow::from))
    }

    /// Pushes a version on `parent`. The latest version's digest equal to
    /// `digest`: `Unchanged` (checked first, whatever `parent` and the
    /// state: an identical plan neither reopens nor voids anything). A push
    /// is never refused because of a decision: after `changes_requested` it
    /// opens the next round; after an approval it opens the next round and
    /// voids the approval, unless it is a progress push, which keeps it.
    /// Refusals: `StaleParent` (parent is not the latest),
    /// `TooManyVersions`, `TooManyEvents`, `OverQuota`. Unknown review:
    /// [`CatalogError::NotFound`].
    pub async fn push_review_version(
        &self,
        tenant: &TenantId,
        id: &str,
        version: &NewVersion<'_>,
        now: i64,
        limits: ReviewLimits,
    ) -> Result<Outcome<Pushed>, CatalogError> {
        check_review_id(id)?;
        check_digest(version.digest)?;
        check_blob(version.blob)?;
        let pg = self.on_postgres();
        let _turn = self.review_write_turn().await;
        let pushed = with_pool!(self, p => {
            let mut tx = p.begin().await?;
            let (state, seq, round) = lock_review!(tx, tenant, id);
            require_event_room!(tx, seq, limits);
            let latest: Option<(i64, String)> = sqlx::query_as(LATEST_VERSION)
                .bind(tenant.as_str())
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?;
            let (latest, latest_digest) = latest.unwrap_or((0, String::new()));
            if latest > 0 && latest_digest == version.digest {
                tx.rollback().await?;
                return Ok(Ok(Pushed::Unchanged { n: latest }));
            }
            if version.parent != latest {
                refuse!(tx, ReviewRefusal::StaleParent { latest });
            }
            // Versions are numbered 1..=latest, so `latest` is their count.
            if latest >= limits.max_versions {
                refuse!(tx, ReviewRefusal::TooManyVersions(limits.max_versions));
            }
            reserve!(tx, tenant, version.blob.bytes);
            let n = latest + 1;
            let voided = state == ReviewState::Approved && !version.progress;
            let reopened = state == ReviewState::ChangesRequested || voided;
            let new_round = if reopened { round + 1 } else { round };
            sqlx::query(INSERT_VERSION)
                .bind(tenant.as_str())
                .bind(id)
                .bind(n)
                .bind(version.digest)
                .bind(&version.blob.blob)
                .bind(version.blob.bytes)
                .bind(now)
                .bind(new_round)
                .bind(version.progress)
                .execute(&mut *tx)
                .await?;
            if voided {
                sqlx::query(VOID_DECISION)
                    .bind(tenant.as_str())
                    .bind(id)
                    .bind(round)
                    .bind(n)
                    .execute(&mut *tx)
                    .await?;
            }
            if reopened {
                sqlx::query(OPEN_ROUND)
                    .bind(tenant.as_str())
                    .bind(id)
                    .bind(new_round)
                    .execute(&mut *tx)
                    .await?;
            }
            let data = event_data(&VersionData {
                n,
                round: new_round,
                reopened,
                progress: version.progress,
                voided,
            })?;
            let event = append_event!(self, tx, pg, tenant, id, EventKind::Version, data, now, &Actor::owner());
            tx.commit().await?;
            Pushed::Created {
                n,
                round: new_round,
                event,
            }
        });
        Ok(Ok(pushed))
    }

    /// Adds link `link` with role `role` (a reviewer's or an approver's;
    /// its token's SHA-256 is `digest`) with a `links` event
    /// `{"link","role"}`, in any state. Refusals: `TooManyLinks` (live
    /// links only count), `TooManyEvents`. Unknown review:
    /// [`CatalogError::NotFound`]; a link id the review already has:
    /// [`CatalogError::Conflict`]`("link")`; the owner's role:
    /// [`CatalogError::Invalid`].
    #[allow(clippy::too_many_arguments)]
    pub async fn add_review_link(
        &self,
        tenant: &TenantId,
        id: &str,
        link: &str,
        role: Role,
        digest: &[u8; 32],
        now: i64,
        limits: ReviewLimits,
    ) -> Result<Outcome<ReviewEvent>, CatalogError> {
        check_review_id(id)?;
        check_link_id(link)?;
        if role == Role::Owner {
            return Err(CatalogError::Invalid(
                "a link is a reviewer's or an approver's".into(),
            ));
        }
        let pg = self.on_postgres();
        let data = event_data(&LinkData {
            link,
            role: Some(role.as_str()),
        })?;
        let _turn = self.review_write_turn().await;
        let event = with_pool!(self, p => {
            let mut tx = p.begin().await?;
            let (_, seq, _) = lock_review!(tx, tenant, id);
            require_event_room!(tx, seq, limits);
            let existing: Option<WriterRow> = sqlx::query_as(SELECT_WRITER)
                .bind(tenant.as_str())
                .bind(id)
                .bind(link)
                .fetch_optional(&mut *tx)
                .await?;
            if existing.is_some() {
                tx.rollback().await?;
                return Err(CatalogError::Conflict("link"));
            }
            let live: i64 = sqlx::query_scalar(LIVE_LINKS)
                .bind(tenant.as_str())
                .bind(id)
                .fetch_one(&mut *tx)
                .await?;
            if live >= limits.max_links {
                refuse!(tx, ReviewRefusal::TooManyLinks(limits.max_links));
            }
            let inserted = sqlx::query(INSERT_WRITER)
                .bind(tenant.as_str())
                .bind(id)
                .bind(link)
                .bind(Role::Reviewer.as_str())
                .bind(&digest[..])
                .bind(now)
                .bind(role == Role::Approver)
                .execute(&mut *tx)
                .await;
            match inserted {
                Ok(_) => {}
                // A token digest some writer already has.
                Err(e) if is_unique_violation(&e) => {
                    tx.rollback().await?;
                    return Err(CatalogError::Conflict("link"));
                }
                Err(e) => return Err(e.into()),
            }
            let event = append_event!(self, tx, pg, tenant, id, EventKind::Links, data, now, &Actor::owner());
            tx.commit().await?;
            event
        });
        Ok(Ok(event))
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
        check_review_id(id)?;
        if link == OWNER_WRITER {
            return Err(CatalogError::NotFound);
        }
        check_link_id(link)?;
        let pg = self.on_postgres();
        let data = event_data(&LinkData { link, role: None })?;
        let _turn = self.review_write_turn().await;
        let event = with_pool!(self, p => {
            let mut tx = p.begin().await?;
            lock_review!(tx, tenant, id);
            let writer: Option<WriterRow> = sqlx::query_as(SELECT_WRITER)
                .bind(tenant.as_str())
                .bind(id)
                .bind(link)
                .fetch_optional(&mut *tx)
                .await?;
            let Some(writer) = writer.filter(|w| w.role != Role::Owner.as_str()) else {
                tx.rollback().await?;
                return Err(CatalogError::NotFound);
            };
            if writer.revoked_at.is_some() {
                tx.rollback().await?;
                return Ok(None);
            }
            sqlx::query(REVOKE_LINK)
                .bind(tenant.as_str())
                .bind(id)
                .bind(link)
                .bind(now)
                .execute(&mut *tx)
                .await?;
            let event = append_event!(self, tx, pg, tenant, id, EventKind::Revoked, data, now, &Actor::owner());
            tx.commit().await?;
            event
        });
        Ok(Some(event))
    }

    /// Stores `writer`'s comment set (made on version `version`), replacing
    /// its previous one, with a `comments` event
    /// `{"writer","name","version","withdrawn":false}`. The first set binds
    /// `name` to the writer. Refusals: `NotOpen`, `UnknownVersion`,
    /// `NameBound` (the writer bound another name), `NameTaken` (another
    /// live writer bound it, case-insensitively; of two racing claims
    /// exactly one wins), `OverQuota` (the new blob is counted and the
    /// replaced one released in the same transaction), `CommentsChanged`
    /// (`base` is given and is not the revision of the writer's current
    /// set, 0 standing for none). Unknown review or writer, or a revoked
    /// writer: [`CatalogError::NotFound`].
    #[allow(clippy::too_many_arguments)]
    pub async fn put_review_comments(
        &self,
        tenant: &TenantId,
        id: &str,
        writer: &str,
        name: &str,
        version: i64,
        base: Option<i64>,
        blob: &BlobRef,
        now: i64,
        limits: ReviewLimits,
    ) -> Result<Outcome<CommentsStored>, CatalogError> {
        self.put_review_comments_sealed(
            tenant, id, writer, name, version, base, blob, now, limits, None,
        )
        .await
    }

    /// [`put_review_comments`](Self::put_review_comments) with the sealed
    /// preview the writer's client attached, which its notifications carry.
    #[allow(clippy::too_many_arguments)]
    pub async fn put_review_comments_sealed(
        &self,
        tenant: &TenantId,
        id: &str,
        writer: &str,
        name: &str,
        version: i64,
        base: Option<i64>,
        blob: &BlobRef,
        now: i64,
        limits: ReviewLimits,
        sealed: Option<&str>,
    ) -> Result<Outcome<CommentsStored>, CatalogError> {
        check_review_id(id)?;
        check_writer(writer)?;
        check_name(name)?;
        check_blob(blob)?;
        let pg = self.on_postgres();
        let fold = fold_name(name);
        let data = event_data(&CommentsData {
            writer,
            name,
            version,
            withdrawn: false,
        })?;
        let _turn = self.review_write_turn().await;
        let stored = with_pool!(self, p => {
            let mut tx = p.begin().await?;
            let (_, seq, _) = lock_review!(tx, tenant, id);
            let row: Option<WriterRow> = sqlx::query_as(SELECT_WRITER)
                .bind(tenant.as_str())
                .bind(id)
                .bind(writer)
                .fetch_optional(&mut *tx)
                .await?;
            let Some(row) = row.filter(|w| w.revoked_at.is_none()) else {
                tx.rollback().await?;
                return Err(CatalogError::NotFound);
            };
            require_event_room!(tx, seq, limits);
            let known: Option<VersionDbRow> = sqlx::query_as(SELECT_VERSION)
                .bind(tenant.as_str())
                .bind(id)
                .bind(version)
                .fetch_optional(&mut *tx)
                .await?;
            if known.is_none() {
                refuse!(tx, ReviewRefusal::UnknownVersion);
            }
            bind_name!(tx, tenant, id, writer, row.name, name, &fold);
            let replaced: Option<(i64, String, i64)> = sqlx::query_as(SELECT_COMMENT_SET)
                .bind(tenant.as_str())
                .bind(id)
                .bind(writer)
                .fetch_optional(&mut *tx)
                .await?;
            let current = replaced.as_ref().map_or(0, |(seq, _, _)| *seq);
            if base.is_some_and(|base| base != current) {
                refuse!(tx, ReviewRefusal::CommentsChanged { current });
            }
            let replaced = replaced.map(|(_, blob, bytes)| BlobRef { blob, bytes });
            // Release first: a set that replaces one of similar size fits
            // a quota that is nearly full.
            if let Some(old) = &replaced {
                release!(tx, tenant, old.bytes);
            }
            reserve!(tx, tenant, blob.bytes);
            sqlx::query(UPSERT_COMMENT_SET)
                .bind(tenant.as_str())
                .bind(id)
                .bind(writer)
                .bind(version)
                .bind(&blob.blob)
                .bind(blob.bytes)
                .bind(now)
                // The seq the event below takes (the review is locked).
                .bind(seq + 1)
                .execute(&mut *tx)
                .await?;
            let event = append_event!(self, tx, pg, tenant, id, EventKind::Comments, data, now, &Actor { writer, role: role(&row.role)?.as_str(), name: Some(name), sealed });
            debug_assert_eq!(event.seq, seq + 1);
            tx.commit().await?;
            CommentsStored { event, replaced }
        });
        Ok(Ok(stored))
    }

    /// Withdraws `writer`'s comment set with a `comments` event
    /// `{"writer","name","version","withdrawn":true}` and answers the
    /// removed blob; `Ok(Ok(None))` when it had none (no event). The bound
    /// name stays bound. Refusals: `NotOpen`, `CommentsChanged` (`base`
    /// is given and is not the revision of the writer's current set, 0
    /// standing for none). Unknown review or writer:
    /// [`CatalogError::NotFound`].
    pub async fn delete_review_comments(
        &self,
        tenant: &TenantId,
        id: &str,
        writer: &str,
        base: Option<i64>,
        now: i64,
    ) -> Result<Outcome<Option<(ReviewEvent, BlobRef)>>, CatalogError> {
        check_review_id(id)?;
        check_writer(writer)?;
        let pg = self.on_postgres();
        let _turn = self.review_write_turn().await;
        let withdrawn = with_pool!(self, p => {
            let mut tx = p.begin().await?;
            lock_review!(tx, tenant, id);
            let row: Option<WriterRow> = sqlx::query_as(SELECT_WRITER)
                .bind(tenant.as_str())
                .bind(id)
                .bind(writer)
                .fetch_optional(&mut *tx)
                .await?;
            let Some(row) = row else {
                tx.rollback().await?;
                return Err(CatalogError::NotFound);
            };
            let mut removed: Vec<(i64, String, i64, i64)> = sqlx::query_as(DELETE_COMMENT_SET)
                .bind(tenant.as_str())
                .bind(id)
                .bind(writer)
                .fetch_all(&mut *tx)
                .await?;
            let current = removed.last().map_or(0, |(_, _, _, seq)| *seq);
            if base.is_some_and(|base| base != current) {
                refuse!(tx, ReviewRefusal::CommentsChanged { current });
            }
            let Some((version, blob, bytes, _)) = removed.pop() else {
                tx.rollback().await?;
                return Ok(Ok(None));
            };
            release!(tx, tenant, bytes);
            let data = event_data(&CommentsData {
                writer,
                name: row.name.as_deref().unwrap_or_default(),
                version,
                withdrawn: true,
            })?;
            let event = append_event!(self, tx, pg, tenant, id, EventKind::Comments, data, now, &Actor { writer, role: role(&row.role)?.as_str(), name: row.name.as_deref(), sealed: None });
            tx.commit().await?;
            (event, BlobRef { blob, bytes })
        });
        Ok(Ok(Some(withdrawn)))
    }

    /// Records this round's decision (`Approved` or `ChangesRequested`;
    /// `Open` is [`CatalogError::Invalid`]) by `decision.writer` (the owner
    /// or a live approver link), on `decision.version`, with optional
    /// feedback, and a `decision` event
    /// `{"decision","round","version","by":{"role","link","name"}}`, answered
    /// with the decision as recorded. With
    /// `decision.name` the name is bound first, as a comment set's first
    /// `PUT` binds one. Refusals: `NotOpen` (this round is decided),
    /// `StaleVersion` (not the latest version), `NameRequired` (an
    /// approver with no name), `NameBound`, `NameTaken`, `OverQuota` (the
    /// feedback blob). Unknown review or writer, or a revoked one:
    /// [`CatalogError::NotFound`]; a writer that may not decide:
    /// [`CatalogError::Invalid`].
    pub async fn decide_review(
        &self,
        tenant: &TenantId,
        id: &str,
        decision: &NewDecision<'_>,
        now: i64,
    ) -> Result<Outcome<Decided>, CatalogError> {
        check_review_id(id)?;
        check_writer(decision.writer)?;
        if decision.state == ReviewState::Open {
            return Err(CatalogError::Invalid(
                "a decision is approved or changes_requested".into(),
            ));
        }
        if let Some(feedback) = decision.feedback {
            check_blob(feedback)?;
        }
        if let Some(name) = decision.name {
            check_name(name)?;
        }
        let fold = decision.name.map(fold_name).unwrap_or_default();
        let pg = self.on_postgres();
        let writer = decision.writer;
        let _turn = self.review_write_turn().await;
        let event = with_pool!(self, p => {
            let mut tx = p.begin().await?;
            let (state, _, round) = lock_review!(tx, tenant, id);
            let row: Option<WriterRow> = sqlx::query_as(SELECT_WRITER)
                .bind(tenant.as_str())
                .bind(id)
                .bind(writer)
                .fetch_optional(&mut *tx)
                .await?;
            let Some(row) = row.filter(|w| w.revoked_at.is_none()) else {
                tx.rollback().await?;
                return Err(CatalogError::NotFound);
            };
            let by_role = role(&row.role)?;
            if !by_role.decides() {
                tx.rollback().await?;
                return Err(CatalogError::Invalid(
                    "only the owner or an approver link decides".into(),
                ));
            }
            if state != ReviewState::Open {
                refuse!(tx, ReviewRefusal::NotOpen(state));
            }
            let latest: Option<(i64, String)> = sqlx::query_as(LATEST_VERSION)
                .bind(tenant.as_str())
                .bind(id)
                .fetch_optional(&mut *tx)
                .await?;
            let (latest, digest) = latest.unwrap_or((0, String::new()));
            if decision.version != latest {
                refuse!(tx, ReviewRefusal::StaleVersion { latest });
            }
            let name = match (decision.name, row.name) {
                (Some(name), bound) => {
                    bind_name!(tx, tenant, id, writer, bound, name, &fold);
                    Some(name.to_owned())
                }
                (None, Some(bound)) => Some(bound),
                (None, None) if by_role == Role::Approver => {
                    refuse!(tx, ReviewRefusal::NameRequired);
                }
                (None, None) => None,
            };
            let feedback = decision.feedback;
            if let Some(feedback) = feedback {
                reserve!(tx, tenant, feedback.bytes);
            }
            sqlx::query(DECIDE_REVIEW)
                .bind(tenant.as_str())
                .bind(id)
                .bind(decision.state.as_str())
                .bind(now)
                .bind(feedback.map(|f| f.blob.as_str()))
                .bind(feedback.map(|f| f.bytes))
                .execute(&mut *tx)
                .await?;
            sqlx::query(INSERT_DECISION)
                .bind(tenant.as_str())
                .bind(id)
                .bind(round)
                .bind(latest)
                .bind(&digest)
                .bind(decision.state.as_str())
                .bind(writer)
                .bind(by_role.as_str())
                .bind(name.as_deref())
                .bind(feedback.map(|f| f.blob.as_str()))
                .bind(feedback.map(|f| f.bytes))
                .bind(now)
                .execute(&mut *tx)
                .await?;
            let data = event_data(&DecisionData {
                decision: decision.state.as_str(),
                round,
                version: latest,
                by: ByData {
                    role: by_role.as_str(),
                    link: writer,
                    name: name.as_deref(),
                },
            })?;
            let event = append_event!(self, tx, pg, tenant, id, EventKind::Decision, data, now, &Actor { writer, role: by_role.as_str(), name: name.as_deref(), sealed: decision.sealed });
            tx.commit().await?;
            Decided {
                event,
                decision: DecisionRow {
                    round,
                    version: latest,
                    digest,
                    state: decision.state,
                    by: DecidedBy {
                        role: by_role,
                        link: writer.to_owned(),
                        name,
                    },
                    feedback: feedback.cloned(),
                    decided_at: now,
                    voided_by: None,
                },
            }
        });
        Ok(Ok(event))
    }

    /// Deletes review `id` and every row of it, releasing its blobs' quota;
    /// answers the blobs for the caller to remove. `Ok(None)` when it does
    /// not exist. Notifies other replicas (`Removed`).
    pub async fn delete_review(
        &self,
        tenant: &TenantId,
        id: &str,
    ) -> Result<Option<RemovedReview>, CatalogError> {
        check_review_id(id)?;
        self.remove_review(tenant, id, i64::MAX).await
    }

    /// [`delete_review`](Self::delete_review) of a review with
    /// `expires_at <= max_expires_at`: one transaction that locks the
    /// review's row, reads its blobs, deletes it (its other rows go by
    /// cascade) and releases each blob's quota.
    async fn remove_review(
        &self,
        tenant: &TenantId,
        id: &str,
        max_expires_at: i64,
    ) -> Result<Option<RemovedReview>, CatalogError> {
        let pg = self.on_postgres();
        let _turn = self.review_write_turn().await;
        let removed = with_pool!(self, p => {
            let mut tx = p.begin().await?;
            let mut locked: Vec<(Option<String>, Option<i64>)> =
                sqlx::query_as(LOCK_REMOVED_REVIEW)
                    .bind(tenant.as_str())
                    .bind(id)
                    .bind(max_expires_at)
                    .fetch_all(&mut *tx)
                    .await?;
            let Some(feedback) = locked.pop() else {
                tx.rollback().await?;
                return Ok(None);
            };
            let namespace: String = sqlx::query_scalar(NAMESPACE)
                .bind(tenant.as_str())
                .fetch_one(&mut *tx)
                .await?;
            let mut blobs: Vec<(String, i64)> = sqlx::query_as(VERSION_BLOBS)
                .bind(tenant.as_str())
                .bind(id)
                .fetch_all(&mut *tx)
                .await?;
            let comments: Vec<(String, i64)> = sqlx::query_as(COMMENT_BLOBS)
                .bind(tenant.as_str())
                .bind(id)
                .fetch_all(&mut *tx)
                .await?;
            blobs.extend(comments);
            let decided: Vec<(String, i64)> = sqlx::query_as(DECISION_BLOBS)
                .bind(tenant.as_str())
                .bind(id)
                .fetch_all(&mut *tx)
                .await?;
            // The row's feedback mirrors the current round's decision: the
            // same blob, counted once (a review decided by a replica on
            // migration 0010 has it on the row only).
            if let (Some(blob), Some(bytes)) = feedback
                && !decided.iter().any(|(named, _)| *named == blob)
            {
                blobs.push((blob, bytes));
            }
            blobs.extend(decided);
            sqlx::query(DELETE_REVIEW)
                .bind(tenant.as_str())
                .bind(id)
                .execute(&mut *tx)
                .await?;
            for (_, bytes) in &blobs {
                release!(tx, tenant, *bytes);
            }
            notify!(tx, pg, removed_payload(tenant, id));
            tx.commit().await?;
            (namespace, blobs)
        });
        let (namespace, blobs) = removed;
        tracing::debug!(tenant.id = %tenant, review.id = %id, "review removed");
        Ok(Some(RemovedReview {
            tenant: tenant.clone(),
            namespace,
            id: id.to_owned(),
            blobs: blobs
                .into_iter()
                .map(|(blob, bytes)| BlobRef { blob, bytes })
                .collect(),
        }))
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
        check_review_id(id)?;
        let limit = limit.min(MAX_EVENTS_PER_READ);
        if limit <= 0 {
            return Ok(Vec::new());
        }
        let rows: Vec<EventRow> = with_pool!(self, p => sqlx::query_as(SELECT_EVENTS)
            .bind(tenant.as_str())
            .bind(id)
            .bind(after)
            .bind(limit)
            .fetch_all(p)
            .await?);
        rows.into_iter().map(ReviewEvent::try_from).collect()
    }

    /// Deletes up to `limit` reviews (of any tenant) that expired before
    /// `now`, with all their rows and quota, and answers them for the caller
    /// to remove their blobs. Notifies other replicas (`Removed`).
    ///
    /// Expired means `expires_at <= now`, as for
    /// [`review_principal`](Self::review_principal). Each review goes in a
    /// transaction of its own (as [`delete_review`](Self::delete_review)); one
    /// removed meanwhile by another sweep or a delete is not answered.
    pub async fn sweep_expired_reviews(
        &self,
        now: i64,
        limit: i64,
    ) -> Result<Vec<RemovedReview>, CatalogError> {
        if limit <= 0 {
            return Ok(Vec::new());
        }
        let expired: Vec<(String, String)> = with_pool!(self, p => sqlx::query_as(EXPIRED_REVIEWS)
            .bind(now)
            .bind(limit)
            .fetch_all(p)
            .await?);
        let mut removed = Vec::new();
        for (tenant, id) in expired {
            let tenant = TenantId::from_db(tenant);
            if let Some(review) = self.remove_review(&tenant, &id, now).await? {
                removed.push(review);
            }
        }
        if !removed.is_empty() {
            tracing::debug!(reviews = removed.len(), "swept expired reviews");
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notice_payloads_round_trip() {
        let tenant = TenantId::default_tenant();
        assert_eq!(
            parse_payload(&changed_payload(&tenant, "abc123", 7)),
            Some(ReviewNotice::Changed {
                tenant: tenant.clone(),
                review: "abc123".into(),
                seq: 7
            })
        );
        assert_eq!(
            parse_payload(&removed_payload(&tenant, "abc123")),
            Some(ReviewNotice::Removed {
                tenant,
                review: "abc123".into()
            })
        );
        for bad in [
            "",
            "changed tnt_default abc123",
            "changed x abc123 1",
            "gone a b",
        ] {
            assert_eq!(parse_payload(bad), None, "{bad:?}");
        }
    }
}
