//! The notification queries (migration 0012), one `impl Catalog` block.

use std::collections::HashSet;

use super::{
    Attempt, AttemptEnd, CLAIM_LEASE_MS, Delivery, DeliveryState, MAX_SUBSCRIPTIONS_PER_REVIEW,
    NewSubscription, NoticeType, OutboxItem, Subscription, TargetKind, check_new,
};
use crate::catalog::with_pool;
use crate::{Catalog, CatalogError, TenantId};

/// One outbox row per subscription of review `$2` that wants type `$7`,
/// except the writer `$8`'s own (nobody is told of their own change). A
/// target in back-off gets the row due when its back-off ends. Run by
/// `append_event!` in the event's transaction.
pub(crate) const INSERT_OUTBOX: &str = "INSERT INTO notify_outbox \
     (tenant_id, review_id, subscription_id, seq, type, data, created_at, next_at) \
     SELECT s.tenant_id, s.review_id, s.id, $3, $4, $5, $6, \
     CASE WHEN s.retry_at IS NOT NULL AND s.retry_at > $6 THEN s.retry_at ELSE $6 END \
     FROM notify_subscriptions s \
     WHERE s.tenant_id = $1 AND s.review_id = $2 AND s.disabled_at IS NULL \
     AND (s.events & $7) <> 0 AND s.writer <> $8";

const COUNT_SUBSCRIPTIONS: &str = "SELECT COUNT(*) FROM notify_subscriptions \
     WHERE tenant_id = $1 AND review_id = $2";
const INSERT_SUBSCRIPTION: &str = "INSERT INTO notify_subscriptions \
     (tenant_id, review_id, id, writer, kind, target, link_base, events, created_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";
const SELECT_SUBSCRIPTIONS: &str = "SELECT id, review_id, writer, kind, target, link_base, events, \
     created_at, disabled_at FROM notify_subscriptions \
     WHERE tenant_id = $1 AND review_id = $2 AND ($3 IS NULL OR writer = $3) ORDER BY created_at, id";
const SELECT_SUBSCRIPTION: &str = "SELECT id, review_id, writer, kind, target, link_base, events, \
     created_at, disabled_at FROM notify_subscriptions \
     WHERE tenant_id = $1 AND review_id = $2 AND id = $3";
const DELETE_SUBSCRIPTION: &str = "DELETE FROM notify_subscriptions \
     WHERE tenant_id = $1 AND review_id = $2 AND id = $3 AND ($4 IS NULL OR writer = $4)";
const SELECT_DELIVERIES: &str = "SELECT id, seq, type, created_at, state, next_at \
     FROM notify_outbox WHERE tenant_id = $1 AND review_id = $2 AND subscription_id = $3 \
     ORDER BY id DESC LIMIT $4";

/// Due rows of targets not in back-off, oldest first, that no live claim
/// holds (`$1` now, `$2` how many). PostgreSQL skips rows another replica
/// is claiming this moment.
const DUE_SQLITE: &str = "SELECT o.id FROM notify_outbox o \
     JOIN notify_subscriptions s ON s.tenant_id = o.tenant_id \
     AND s.review_id = o.review_id AND s.id = o.subscription_id \
     WHERE o.state = 'pending' AND o.next_at <= $1 \
     AND (o.claimed_until IS NULL OR o.claimed_until < $1) \
     AND s.disabled_at IS NULL AND (s.retry_at IS NULL OR s.retry_at <= $1) \
     ORDER BY o.next_at, o.id LIMIT $2";
const DUE_POSTGRES: &str = "SELECT o.id FROM notify_outbox o \
     JOIN notify_subscriptions s ON s.tenant_id = o.tenant_id \
     AND s.review_id = o.review_id AND s.id = o.subscription_id \
     WHERE o.state = 'pending' AND o.next_at <= $1 \
     AND (o.claimed_until IS NULL OR o.claimed_until < $1) \
     AND s.disabled_at IS NULL AND (s.retry_at IS NULL OR s.retry_at <= $1) \
     ORDER BY o.next_at, o.id LIMIT $2 FOR UPDATE OF o SKIP LOCKED";
const CLAIM: &str = "UPDATE notify_outbox SET claimed_by = $2, claimed_until = $3 \
     WHERE id = $1 AND state = 'pending' AND (claimed_until IS NULL OR claimed_until < $4)";
const SELECT_CLAIMED: &str = "SELECT o.id, o.tenant_id, o.review_id, o.subscription_id, \
     s.kind, s.target, s.link_base, o.seq, o.type, o.data, o.created_at, o.attempts \
     FROM notify_outbox o JOIN notify_subscriptions s ON s.tenant_id = o.tenant_id \
     AND s.review_id = o.review_id AND s.id = o.subscription_id \
     WHERE o.claimed_by = $1 AND o.claimed_until = $2 AND o.state = 'pending' ORDER BY o.next_at, o.id";
/// Renews the claim on row `$1` when `$2` still holds it.
const RENEW: &str = "UPDATE notify_outbox SET claimed_until = $3 \
     WHERE id = $1 AND claimed_by = $2 AND state = 'pending'";
const INSERT_ATTEMPT: &str = "INSERT INTO notify_attempts (outbox_id, n, at, status, error, ms) \
     VALUES ($1, $2, $3, $4, $5, $6)";
const FINISH_ROW: &str = "UPDATE notify_outbox SET state = $2, attempts = $3, next_at = $4, \
     claimed_by = NULL, claimed_until = NULL, done_at = $5 WHERE id = $1";
const TARGET_OK: &str = "UPDATE notify_subscriptions SET failures = 0, retry_at = NULL \
     WHERE tenant_id = $1 AND review_id = $2 AND id = $3 AND failures <> 0";
const TARGET_FAILED: &str = "UPDATE notify_subscriptions SET failures = failures + 1, retry_at = $4 \
     WHERE tenant_id = $1 AND review_id = $2 AND id = $3 RETURNING failures";
const TARGET_GONE: &str = "UPDATE notify_subscriptions SET disabled_at = $4 \
     WHERE tenant_id = $1 AND review_id = $2 AND id = $3";
/// The target's other waiting rows wait for its back-off too.
const DEFER_TARGET: &str = "UPDATE notify_outbox SET next_at = $4, claimed_by = NULL, \
     claimed_until = NULL WHERE tenant_id = $1 AND review_id = $2 AND subscription_id = $3 \
     AND state = 'pending' AND (next_at < $4 OR claimed_by IS NOT NULL)";
const FAIL_TARGET_ROWS: &str = "UPDATE notify_outbox SET state = 'failed', done_at = $4, \
     claimed_by = NULL, claimed_until = NULL \
     WHERE tenant_id = $1 AND review_id = $2 AND subscription_id = $3 AND state = 'pending'";
const RELEASE_ROW: &str = "UPDATE notify_outbox SET claimed_by = NULL, claimed_until = NULL \
     WHERE id = $1 AND claimed_by = $2 AND state = 'pending'";
const RELEASE_MINE: &str = "UPDATE notify_outbox SET claimed_by = NULL, claimed_until = NULL \
     WHERE claimed_by = $1 AND state = 'pending'";
const SWEEP_DONE: &str = "DELETE FROM notify_outbox WHERE id IN \
     (SELECT id FROM notify_outbox WHERE state <> 'pending' AND done_at < $1 LIMIT $2)";
const SELECT_KEY: &str = "SELECT value FROM notify_keys WHERE name = $1";
const INSERT_KEY: &str = "INSERT INTO notify_keys (name, value, created_at) VALUES ($1, $2, $3) \
     ON CONFLICT (name) DO NOTHING";
const SET_DEADLINE: &str = "UPDATE reviews SET deadline_at = $3, remind_every = $4, \
     remind_at = $5, deadline_sent = FALSE WHERE tenant_id = $1 AND id = $2";
/// Reviews whose reminder is due (`$1` now): each moves its next reminder
/// on by its interval in the same statement, so one replica sends it.
const DUE_REMINDERS: &str = "UPDATE reviews SET remind_at = $1 + remind_every \
     WHERE remind_at IS NOT NULL AND remind_at <= $1 \
     RETURNING tenant_id, id, state, round, deadline_at, \
     COALESCE((SELECT MAX(v.n) FROM review_versions v \
               WHERE v.tenant_id = reviews.tenant_id AND v.review_id = reviews.id), 0) AS latest";
/// Reviews whose deadline passed (`$1` now), marked sent by the same
/// statement.
const DUE_DEADLINES: &str = "UPDATE reviews SET deadline_sent = TRUE, remind_at = NULL \
     WHERE deadline_at IS NOT NULL AND deadline_at <= $1 AND NOT deadline_sent \
     RETURNING tenant_id, id, state, round, deadline_at, \
     COALESCE((SELECT MAX(v.n) FROM review_versions v \
               WHERE v.tenant_id = reviews.tenant_id AND v.review_id = reviews.id), 0) AS latest";
/// A reminder's rows: the subscriptions of the review's approver links,
/// or the owner's when it has none (the owner is then the one to decide).
const INSERT_REMINDER: &str = "INSERT INTO notify_outbox \
     (tenant_id, review_id, subscription_id, seq, type, data, created_at, next_at) \
     SELECT s.tenant_id, s.review_id, s.id, 0, $3, $4, $5, \
     CASE WHEN s.retry_at IS NOT NULL AND s.retry_at > $5 THEN s.retry_at ELSE $5 END \
     FROM notify_subscriptions s \
     WHERE s.tenant_id = $1 AND s.review_id = $2 AND s.disabled_at IS NULL \
     AND (s.events & $6) <> 0 \
     AND (s.writer IN (SELECT w.id FROM review_writers w WHERE w.tenant_id = $1 \
          AND w.review_id = $2 AND w.approver AND w.revoked_at IS NULL) \
       OR (s.writer = 'owner' AND NOT EXISTS (SELECT 1 FROM review_writers w \
          WHERE w.tenant_id = $1 AND w.review_id = $2 AND w.approver AND w.revoked_at IS NULL)))";
/// A deadline's rows: every subscription of the review.
const INSERT_DEADLINE: &str = "INSERT INTO notify_outbox \
     (tenant_id, review_id, subscription_id, seq, type, data, created_at, next_at) \
     SELECT s.tenant_id, s.review_id, s.id, 0, $3, $4, $5, \
     CASE WHEN s.retry_at IS NOT NULL AND s.retry_at > $5 THEN s.retry_at ELSE $5 END \
     FROM notify_subscriptions s \
     WHERE s.tenant_id = $1 AND s.review_id = $2 AND s.disabled_at IS NULL \
     AND (s.events & $6) <> 0";
const PENDING_COUNT: &str = "SELECT COUNT(*) FROM notify_outbox WHERE state = 'pending'";

/// The back-off of a target after `failures` failed attempts in a row: the
/// first retry within seconds, then longer, up to six hours.
pub fn backoff_ms(failures: i64) -> i64 {
    const STEPS: [i64; 9] = [
        5_000, 30_000, 120_000, 600_000, 1_800_000, 3_600_000, 7_200_000, 14_400_000, 21_600_000,
    ];
    let i = usize::try_from(failures.saturating_sub(1).max(0)).unwrap_or(usize::MAX);
    STEPS[i.min(STEPS.len() - 1)]
}

/// How long a notification is retried after its event.
pub const RETRY_FOR_MS: i64 = 86_400_000;

#[derive(sqlx::FromRow)]
struct SubscriptionRow {
    id: String,
    review_id: String,
    writer: String,
    kind: String,
    target: String,
    link_base: String,
    events: i64,
    created_at: i64,
    disabled_at: Option<i64>,
}

impl TryFrom<SubscriptionRow> for Subscription {
    type Error = CatalogError;
    fn try_from(r: SubscriptionRow) -> Result<Self, CatalogError> {
        Ok(Subscription {
            id: r.id,
            review: r.review_id,
            writer: r.writer,
            kind: kind(&r.kind)?,
            target: r.target,
            link_base: r.link_base,
            events: r.events,
            created_at: r.created_at,
            disabled_at: r.disabled_at,
        })
    }
}

#[derive(sqlx::FromRow)]
struct DeliveryRow {
    id: i64,
    seq: i64,
    #[sqlx(rename = "type")]
    kind: String,
    created_at: i64,
    state: String,
    next_at: i64,
}

#[derive(sqlx::FromRow)]
struct AttemptRow {
    outbox_id: i64,
    n: i64,
    at: i64,
    status: Option<i64>,
    error: Option<String>,
    ms: i64,
}

#[derive(sqlx::FromRow)]
struct ClaimedRow {
    id: i64,
    tenant_id: String,
    review_id: String,
    subscription_id: String,
    kind: String,
    target: String,
    link_base: String,
    seq: i64,
    #[sqlx(rename = "type")]
    notice: String,
    data: String,
    created_at: i64,
    attempts: i64,
}

fn kind(s: &str) -> Result<TargetKind, CatalogError> {
    TargetKind::parse(s)
        .ok_or_else(|| CatalogError::internal(format!("unknown subscription kind {s:?}")))
}

fn notice(s: &str) -> Result<NoticeType, CatalogError> {
    NoticeType::parse(s)
        .ok_or_else(|| CatalogError::internal(format!("unknown notification type {s:?}")))
}

/// What [`Catalog::add_subscription`] may refuse.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SubscriptionRefusal {
    /// The review has [`MAX_SUBSCRIPTIONS_PER_REVIEW`] subscriptions.
    TooMany(i64),
}

#[derive(sqlx::FromRow)]
struct DueRow {
    tenant_id: String,
    id: String,
    state: String,
    round: i64,
    deadline_at: Option<i64>,
    latest: i64,
}

impl Catalog {
    /// Sets (or with `None`, clears) review `review`'s deadline and the
    /// interval of its reminders (ms; the first is due one interval from
    /// `now`). Unknown review: [`CatalogError::NotFound`].
    pub async fn set_review_deadline(
        &self,
        tenant: &TenantId,
        review: &str,
        deadline: Option<i64>,
        remind_every: Option<i64>,
        now: i64,
    ) -> Result<(), CatalogError> {
        if remind_every.is_some_and(|ms| ms < 60_000) {
            return Err(CatalogError::Invalid(
                "reminders are at least a minute apart".into(),
            ));
        }
        let _turn = self.review_write_turn().await;
        let changed = with_pool!(self, p => {
            sqlx::query(SET_DEADLINE)
                .bind(tenant.as_str())
                .bind(review)
                .bind(deadline)
                .bind(remind_every)
                .bind(remind_every.map(|every| now + every))
                .execute(p)
                .await?
                .rows_affected()
        });
        if changed == 0 {
            return Err(CatalogError::NotFound);
        }
        Ok(())
    }

    /// Queues the reminders and deadline notices due at `now` (each review's
    /// by one replica: the statement that finds it moves it on); answers
    /// how many notifications were queued.
    pub async fn queue_due_reminders(&self, now: i64) -> Result<u64, CatalogError> {
        let _turn = self.review_write_turn().await;
        let queued = with_pool!(self, p => {
            let mut tx = p.begin().await?;
            let mut queued = 0;
            let deadlines: Vec<DueRow> = sqlx::query_as(DUE_DEADLINES)
                .bind(now)
                .fetch_all(&mut *tx)
                .await?;
            for due in deadlines.iter().filter(|d| d.state == "open") {
                let data = super::notice_of_time(&due.id, due.round, due.latest, due.deadline_at)?;
                queued += sqlx::query(INSERT_DEADLINE)
                    .bind(&due.tenant_id)
                    .bind(&due.id)
                    .bind(NoticeType::Deadline.as_str())
                    .bind(&data)
                    .bind(now)
                    .bind(NoticeType::Deadline.bit())
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
            }
            let reminders: Vec<DueRow> = sqlx::query_as(DUE_REMINDERS)
                .bind(now)
                .fetch_all(&mut *tx)
                .await?;
            for due in reminders.iter().filter(|d| d.state == "open") {
                if due.deadline_at.is_some_and(|d| d <= now) {
                    continue;
                }
                let data = super::notice_of_time(&due.id, due.round, due.latest, None)?;
                queued += sqlx::query(INSERT_REMINDER)
                    .bind(&due.tenant_id)
                    .bind(&due.id)
                    .bind(NoticeType::Reminder.as_str())
                    .bind(&data)
                    .bind(now)
                    .bind(NoticeType::Reminder.bit())
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
            }
            tx.commit().await?;
            queued
        });
        if queued > 0 {
            self.notices_queued
                .fetch_add(queued, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(queued)
    }

    /// Adds a subscription to review `review` of `tenant`. Unknown review:
    /// [`CatalogError::NotFound`]; an id the review already has:
    /// [`CatalogError::Conflict`]`("subscription")`.
    pub async fn add_subscription(
        &self,
        tenant: &TenantId,
        review: &str,
        new: &NewSubscription<'_>,
    ) -> Result<Result<Subscription, SubscriptionRefusal>, CatalogError> {
        check_new(new)?;
        let _turn = self.review_write_turn().await;
        with_pool!(self, p => {
            let mut tx = p.begin().await?;
            // The review's row first, as every review change (one lock
            // order; on SQLite it takes the write lock at once).
            let locked = sqlx::query("UPDATE reviews SET seq = seq WHERE tenant_id = $1 AND id = $2")
                .bind(tenant.as_str())
                .bind(review)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if locked == 0 {
                tx.rollback().await?;
                return Err(CatalogError::NotFound);
            }
            let count: i64 = sqlx::query_scalar(COUNT_SUBSCRIPTIONS)
                .bind(tenant.as_str())
                .bind(review)
                .fetch_one(&mut *tx)
                .await?;
            if count >= MAX_SUBSCRIPTIONS_PER_REVIEW {
                tx.rollback().await?;
                return Ok(Err(SubscriptionRefusal::TooMany(MAX_SUBSCRIPTIONS_PER_REVIEW)));
            }
            let inserted = sqlx::query(INSERT_SUBSCRIPTION)
                .bind(tenant.as_str())
                .bind(review)
                .bind(new.id)
                .bind(new.writer)
                .bind(new.kind.as_str())
                .bind(new.target)
                .bind(new.link_base)
                .bind(new.events)
                .bind(new.now)
                .execute(&mut *tx)
                .await;
            match inserted {
                Ok(_) => {}
                Err(e) if is_unique_violation(&e) => {
                    tx.rollback().await?;
                    return Err(CatalogError::Conflict("subscription"));
                }
                Err(e) => return Err(e.into()),
            }
            tx.commit().await?;
        });
        Ok(Ok(Subscription {
            id: new.id.to_owned(),
            review: review.to_owned(),
            writer: new.writer.to_owned(),
            kind: new.kind,
            target: new.target.to_owned(),
            link_base: new.link_base.to_owned(),
            events: new.events,
            created_at: new.now,
            disabled_at: None,
        }))
    }

    /// The subscriptions of a review: `writer`'s own, or all with `None`
    /// (the owner's view), oldest first.
    pub async fn subscriptions(
        &self,
        tenant: &TenantId,
        review: &str,
        writer: Option<&str>,
    ) -> Result<Vec<Subscription>, CatalogError> {
        let rows: Vec<SubscriptionRow> = with_pool!(self, p => {
            sqlx::query_as(SELECT_SUBSCRIPTIONS)
                .bind(tenant.as_str())
                .bind(review)
                .bind(writer)
                .fetch_all(p)
                .await?
        });
        rows.into_iter().map(Subscription::try_from).collect()
    }

    /// One subscription, when it exists and `writer` (or the owner, with
    /// `None`) may see it.
    pub async fn subscription(
        &self,
        tenant: &TenantId,
        review: &str,
        id: &str,
        writer: Option<&str>,
    ) -> Result<Option<Subscription>, CatalogError> {
        let row: Option<SubscriptionRow> = with_pool!(self, p => {
            sqlx::query_as(SELECT_SUBSCRIPTION)
                .bind(tenant.as_str())
                .bind(review)
                .bind(id)
                .fetch_optional(p)
                .await?
        });
        match row {
            Some(r) if writer.is_none_or(|w| w == r.writer) => Ok(Some(r.try_into()?)),
            _ => Ok(None),
        }
    }

    /// Removes a subscription (`writer`'s own, or any with `None`) and its
    /// undelivered notifications; `false` when there was none to remove.
    pub async fn remove_subscription(
        &self,
        tenant: &TenantId,
        review: &str,
        id: &str,
        writer: Option<&str>,
    ) -> Result<bool, CatalogError> {
        let _turn = self.review_write_turn().await;
        let removed = with_pool!(self, p => {
            sqlx::query(DELETE_SUBSCRIPTION)
                .bind(tenant.as_str())
                .bind(review)
                .bind(id)
                .bind(writer)
                .execute(p)
                .await?
                .rows_affected()
        });
        Ok(removed > 0)
    }

    /// The newest `limit` notifications of a subscription with their
    /// attempts, newest first.
    pub async fn deliveries(
        &self,
        tenant: &TenantId,
        review: &str,
        subscription: &str,
        limit: i64,
    ) -> Result<Vec<Delivery>, CatalogError> {
        let (rows, attempts): (Vec<DeliveryRow>, Vec<AttemptRow>) = with_pool!(self, p => {
            let rows: Vec<DeliveryRow> = sqlx::query_as(SELECT_DELIVERIES)
                .bind(tenant.as_str())
                .bind(review)
                .bind(subscription)
                .bind(limit)
                .fetch_all(p)
                .await?;
            let attempts: Vec<AttemptRow> = match (rows.last(), rows.first()) {
                (Some(lo), Some(hi)) => sqlx::query_as(
                    "SELECT a.outbox_id, a.n, a.at, a.status, a.error, a.ms FROM notify_attempts a \
                     JOIN notify_outbox o ON o.id = a.outbox_id \
                     WHERE o.tenant_id = $1 AND o.review_id = $2 AND o.subscription_id = $3 \
                     AND a.outbox_id BETWEEN $4 AND $5 ORDER BY a.outbox_id, a.n",
                )
                .bind(tenant.as_str())
                .bind(review)
                .bind(subscription)
                .bind(lo.id)
                .bind(hi.id)
                .fetch_all(p)
                .await?,
                _ => Vec::new(),
            };
            (rows, attempts)
        });
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            let state = DeliveryState::parse(&r.state)?;
            out.push(Delivery {
                id: r.id,
                seq: r.seq,
                kind: notice(&r.kind)?,
                created_at: r.created_at,
                state,
                next_at: (state == DeliveryState::Pending).then_some(r.next_at),
                attempts: attempts
                    .iter()
                    .filter(|a| a.outbox_id == r.id)
                    .map(|a| Attempt {
                        n: a.n,
                        at: a.at,
                        status: a.status,
                        error: a.error.clone(),
                        ms: a.ms,
                    })
                    .collect(),
            });
        }
        Ok(out)
    }

    /// Claims up to `limit` due notifications for `replica` until
    /// `now + CLAIM_LEASE_MS`, skipping targets in back-off and rows whose
    /// target is in `busy` (this replica is sending to it already).
    pub async fn claim_outbox(
        &self,
        replica: &str,
        now: i64,
        limit: i64,
        busy: &HashSet<String>,
    ) -> Result<Vec<OutboxItem>, CatalogError> {
        let until = now + CLAIM_LEASE_MS;
        let pg = self.backend() == crate::Backend::Postgres;
        let _turn = self.review_write_turn().await;
        let rows: Vec<ClaimedRow> = with_pool!(self, p => {
            let mut tx = p.begin().await?;
            let due: Vec<i64> = sqlx::query_scalar(if pg { DUE_POSTGRES } else { DUE_SQLITE })
                .bind(now)
                .bind(limit + i64::try_from(busy.len()).unwrap_or(i64::MAX).min(limit * 4))
                .fetch_all(&mut *tx)
                .await?;
            let mut mine = HashSet::with_capacity(due.len());
            for id in due {
                let claimed = sqlx::query(CLAIM)
                    .bind(id)
                    .bind(replica)
                    .bind(until)
                    .bind(now)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                if claimed == 1 {
                    mine.insert(id);
                }
            }
            // Only the rows this call claimed: an earlier call in the same
            // millisecond left claims with the same lease, which its
            // senders hold.
            let claimed: Vec<ClaimedRow> = sqlx::query_as(SELECT_CLAIMED)
                .bind(replica)
                .bind(until)
                .fetch_all(&mut *tx)
                .await?;
            let rows: Vec<ClaimedRow> = claimed
                .into_iter()
                .filter(|r: &ClaimedRow| mine.contains(&r.id))
                .collect();
            // Rows of a target this replica is sending to already go back.
            let mut kept = Vec::with_capacity(rows.len());
            for r in rows {
                if busy.contains(&r.subscription_id)
                    || i64::try_from(kept.len()).unwrap_or(i64::MAX) >= limit
                {
                    sqlx::query(RELEASE_ROW)
                        .bind(r.id)
                        .bind(replica)
                        .execute(&mut *tx)
                        .await?;
                } else {
                    kept.push(r);
                }
            }
            tx.commit().await?;
            kept
        });
        rows.into_iter()
            .map(|r| {
                Ok(OutboxItem {
                    id: r.id,
                    tenant: TenantId::parse(&r.tenant_id).map_err(|_| {
                        CatalogError::internal("an outbox row names a malformed tenant id")
                    })?,
                    review: r.review_id,
                    subscription: r.subscription_id,
                    kind: kind(&r.kind)?,
                    target: r.target,
                    link_base: r.link_base,
                    seq: r.seq,
                    notice: notice(&r.notice)?,
                    data: r.data,
                    created_at: r.created_at,
                    attempts: r.attempts,
                })
            })
            .collect()
    }

    /// Renews `replica`'s claim on row `id` before an attempt; `false` when
    /// the claim was lost (the row is someone else's or done).
    pub async fn renew_claim(
        &self,
        replica: &str,
        id: i64,
        now: i64,
    ) -> Result<bool, CatalogError> {
        let _turn = self.review_write_turn().await;
        let renewed = with_pool!(self, p => {
            sqlx::query(RENEW)
                .bind(id)
                .bind(replica)
                .bind(now + CLAIM_LEASE_MS)
                .execute(p)
                .await?
                .rows_affected()
        });
        Ok(renewed == 1)
    }

    /// Records an attempt at `item` and what it came to; a failure puts the
    /// whole target in back-off (its other rows wait too) and answers when
    /// the target is tried next.
    pub async fn finish_attempt(
        &self,
        item: &OutboxItem,
        attempt: &Attempt,
        end: AttemptEnd,
    ) -> Result<(), CatalogError> {
        let tenant = item.tenant.as_str();
        let done = attempt.at + attempt.ms;
        let _turn = self.review_write_turn().await;
        with_pool!(self, p => {
            let mut tx = p.begin().await?;
            sqlx::query(INSERT_ATTEMPT)
                .bind(item.id)
                .bind(attempt.n)
                .bind(attempt.at)
                .bind(attempt.status)
                .bind(attempt.error.as_deref())
                .bind(attempt.ms)
                .execute(&mut *tx)
                .await?;
            let (state, next_at, done_at) = match end {
                AttemptEnd::Delivered => (DeliveryState::Delivered, done, Some(done)),
                AttemptEnd::RetryAt(at) => (DeliveryState::Pending, at, None),
                AttemptEnd::GiveUp | AttemptEnd::Gone => (DeliveryState::Failed, done, Some(done)),
            };
            sqlx::query(FINISH_ROW)
                .bind(item.id)
                .bind(state.as_str())
                .bind(attempt.n)
                .bind(next_at)
                .bind(done_at)
                .execute(&mut *tx)
                .await?;
            match end {
                AttemptEnd::Delivered => {
                    sqlx::query(TARGET_OK)
                        .bind(tenant)
                        .bind(&item.review)
                        .bind(&item.subscription)
                        .execute(&mut *tx)
                        .await?;
                }
                AttemptEnd::RetryAt(at) => {
                    sqlx::query(TARGET_FAILED)
                        .bind(tenant)
                        .bind(&item.review)
                        .bind(&item.subscription)
                        .bind(at)
                        .fetch_all(&mut *tx)
                        .await?;
                    sqlx::query(DEFER_TARGET)
                        .bind(tenant)
                        .bind(&item.review)
                        .bind(&item.subscription)
                        .bind(at)
                        .execute(&mut *tx)
                        .await?;
                }
                AttemptEnd::GiveUp => {
                    sqlx::query(TARGET_FAILED)
                        .bind(tenant)
                        .bind(&item.review)
                        .bind(&item.subscription)
                        .bind(done + backoff_ms(1))
                        .fetch_all(&mut *tx)
                        .await?;
                }
                AttemptEnd::Gone => {
                    sqlx::query(TARGET_GONE)
                        .bind(tenant)
                        .bind(&item.review)
                        .bind(&item.subscription)
                        .bind(done)
                        .execute(&mut *tx)
                        .await?;
                    sqlx::query(FAIL_TARGET_ROWS)
                        .bind(tenant)
                        .bind(&item.review)
                        .bind(&item.subscription)
                        .bind(done)
                        .execute(&mut *tx)
                        .await?;
                }
            }
            tx.commit().await?;
        });
        Ok(())
    }

    /// The back-off a target's next failure gets: how many failures in a
    /// row it has had so far, plus this one.
    pub async fn target_failures(
        &self,
        tenant: &TenantId,
        review: &str,
        subscription: &str,
    ) -> Result<i64, CatalogError> {
        let n: Option<i64> = with_pool!(self, p => {
            sqlx::query_scalar(
                "SELECT failures FROM notify_subscriptions \
                 WHERE tenant_id = $1 AND review_id = $2 AND id = $3",
            )
            .bind(tenant.as_str())
            .bind(review)
            .bind(subscription)
            .fetch_optional(p)
            .await?
        });
        Ok(n.unwrap_or(0))
    }

    /// Gives back a claimed row untried (shutdown).
    pub async fn release_claim(&self, replica: &str, id: i64) -> Result<(), CatalogError> {
        let _turn = self.review_write_turn().await;
        with_pool!(self, p => {
            sqlx::query(RELEASE_ROW).bind(id).bind(replica).execute(p).await?;
        });
        Ok(())
    }

    /// Gives back every claim `replica` holds: a restarted replica's claims
    /// from before its crash, so they go out now instead of when they lapse.
    pub async fn release_claims(&self, replica: &str) -> Result<u64, CatalogError> {
        let _turn = self.review_write_turn().await;
        let n = with_pool!(self, p => {
            sqlx::query(RELEASE_MINE).bind(replica).execute(p).await?.rows_affected()
        });
        Ok(n)
    }

    /// Removes up to `limit` delivered or failed notifications finished
    /// before `before`, with their attempts; answers how many.
    pub async fn sweep_deliveries(&self, before: i64, limit: i64) -> Result<u64, CatalogError> {
        let _turn = self.review_write_turn().await;
        let n = with_pool!(self, p => {
            sqlx::query(SWEEP_DONE).bind(before).bind(limit).execute(p).await?.rows_affected()
        });
        Ok(n)
    }

    /// How many notifications this process's changes have queued so far.
    pub fn notices_queued(&self) -> u64 {
        self.notices_queued
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Notifications not yet delivered or given up, across tenants.
    pub async fn pending_notifications(&self) -> Result<i64, CatalogError> {
        Ok(with_pool!(self, p => {
            sqlx::query_scalar(PENDING_COUNT).fetch_one(p).await?
        }))
    }

    /// The deployment's notification key `name`: the stored one, or `make()`
    /// stored by the first replica to get here (the others read it).
    pub async fn notify_key(
        &self,
        name: &str,
        now: i64,
        make: impl FnOnce() -> String,
    ) -> Result<String, CatalogError> {
        let existing: Option<String> = with_pool!(self, p => {
            sqlx::query_scalar(SELECT_KEY).bind(name).fetch_optional(p).await?
        });
        if let Some(v) = existing {
            return Ok(v);
        }
        let fresh = make();
        let _turn = self.review_write_turn().await;
        let stored: String = with_pool!(self, p => {
            sqlx::query(INSERT_KEY).bind(name).bind(&fresh).bind(now).execute(p).await?;
            sqlx::query_scalar(SELECT_KEY).bind(name).fetch_one(p).await?
        });
        Ok(stored)
    }
}

fn is_unique_violation(e: &sqlx::Error) -> bool {
    matches!(e, sqlx::Error::Database(d) if d.kind() == sqlx::error::ErrorKind::UniqueViolation)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_starts_within_a_minute_and_grows_to_six_hours() {
        assert_eq!(backoff_ms(0), 5_000);
        assert_eq!(backoff_ms(1), 5_000);
        assert!(backoff_ms(2) <= 60_000);
        let mut last = 0;
        for n in 1..20 {
            assert!(backoff_ms(n) >= last);
            last = backoff_ms(n);
        }
        assert_eq!(last, 21_600_000);
        // Retried through a day: the steps add up to more than a day.
        let total: i64 = (1..=12).map(backoff_ms).sum();
        assert!(total > RETRY_FOR_MS, "{total}");
    }
}
