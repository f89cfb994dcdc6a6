//! The per-tenant paste index (`pastes`, migration 0002): quota accounting
//! per paste, listing a tenant's pastes, burn-after-read claims and expiry
//! sweeps; and the Idempotency-Key records of paste creates
//! (`idempotency_records`, migration 0004: each scoped to the credential
//! that used the key).
//!
//! The `usage` row of a tenant stays the quota counter. Every transaction
//! here that writes it writes it FIRST: on PostgreSQL that takes the usage
//! row lock before any paste row lock (one lock order, so a record and a
//! forget of one id cannot deadlock), and on SQLite a transaction whose first
//! statement writes takes the write lock at once (waiting under
//! `busy_timeout`), so it never fails with `SQLITE_BUSY_SNAPSHOT` by
//! upgrading a stale read.

pub(crate) mod index_writer;

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::catalog::with_pool;
use crate::quota::{RELEASE_USAGE, RESERVE_USAGE};
use crate::{Catalog, CatalogError, KeyId, TenantId};

/// A paste as indexed in the catalog (sizes in bytes, times in Unix ms).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PasteRecord {
    /// The paste's id (unique within its tenant).
    pub id: String,
    /// Its size as accounted against the tenant's `quota_bytes`.
    pub bytes: i64,
    /// Creation time, Unix ms.
    pub created_at: i64,
    /// Expiry time, Unix ms: expired when `expires_at <= now`.
    pub expires_at: i64,
    /// Whether the first read deletes it (claimed with [`Catalog::forget_paste`]).
    pub burn_after_read: bool,
}

/// One page of a tenant's paste index ([`Catalog::list_pastes_page`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PastePage {
    /// The page, ordered by id.
    pub pastes: Vec<PasteRecord>,
    /// Whether more live pastes follow the last one of the page.
    pub more: bool,
}

/// Outcome of starting a create under an Idempotency-Key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Idempotency {
    /// First use of the key: the caller goes on and creates the paste, then
    /// calls [`Catalog::complete_idempotent`] (or
    /// [`Catalog::abandon_idempotent`] on failure).
    Started,
    /// The key was used before with the same body and that create finished.
    Completed {
        /// The paste that create made.
        paste_id: String,
        /// Its expiry, Unix ms.
        expires_at: i64,
    },
    /// The key is being used by a create that has not finished yet (started
    /// less than its lease ago).
    InProgress {
        /// How long until that create's lease runs out and a retry takes the
        /// key over (ms, at least 1): the wait to tell the client.
        retry_after_ms: i64,
    },
    /// The key was used before with a different body.
    Mismatch,
}

/// The lease of an in-progress record when the caller has no better bound
/// (see [`Catalog::begin_idempotent`]).
pub const DEFAULT_IDEMPOTENCY_LEASE_MS: i64 = 60_000;
/// The wait given when the record kept changing under a begin.
const BUSY_RETRY_MS: i64 = 1_000;
/// Idempotency records created longer ago than this are swept.
const IDEMPOTENCY_RETENTION_MS: i64 = 24 * 3_600_000;
/// Largest page of [`Catalog::list_pastes`] and [`Catalog::list_pastes_page`].
const MAX_LIST: i64 = 1000;

#[derive(sqlx::FromRow)]
pub(crate) struct PasteRow {
    id: String,
    bytes: i64,
    created_at: i64,
    expires_at: i64,
    burn_after_read: bool,
}

impl From<PasteRow> for PasteRecord {
    fn from(r: PasteRow) -> Self {
        PasteRecord {
            id: r.id,
            bytes: r.bytes,
            created_at: r.created_at,
            expires_at: r.expires_at,
            burn_after_read: r.burn_after_read,
        }
    }
}

#[derive(sqlx::FromRow)]
struct IdempotencyRow {
    body_digest: Vec<u8>,
    paste_id: Option<String>,
    expires_at: Option<i64>,
    created_at: i64,
}

/// Indexes one paste; a taken id inserts nothing instead of failing (a
/// failed statement would abort a whole PostgreSQL transaction).
const INSERT_PASTE_IF_NEW: &str = "INSERT INTO pastes \
     (tenant_id, id, bytes, created_at, expires_at, burn_after_read) \
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (tenant_id, id) DO NOTHING";
/// Reserves `$1` bytes and `$2` pastes for tenant `$3` at once, within its
/// quotas (the batch form of `RESERVE_USAGE`).
const RESERVE_USAGE_N: &str = "UPDATE usage SET bytes = bytes + $1, pastes = pastes + $2 \
     WHERE tenant_id = $3 \
     AND bytes + $1 <= (SELECT quota_bytes FROM tenants WHERE id = $3) \
     AND pastes + $2 <= (SELECT quota_pastes FROM tenants WHERE id = $3)";
/// Gives back `$1` bytes and `$2` pastes of tenant `$3`, never below zero.
const RELEASE_USAGE_N: &str = "UPDATE usage SET \
     bytes = CASE WHEN bytes >= $1 THEN bytes - $1 ELSE 0 END, \
     pastes = CASE WHEN pastes >= $2 THEN pastes - $2 ELSE 0 END \
     WHERE tenant_id = $3";

/// [`INSERT_PASTE_IF_NEW`] for `rows` rows at once, returning the ids it
/// inserted.
fn insert_pastes_sql(rows: usize) -> String {
    let mut sql = String::from(
        "INSERT INTO pastes (tenant_id, id, bytes, created_at, expires_at, burn_after_read) VALUES ",
    );
    for row in 0..rows {
        let n = row * 6;
        if row > 0 {
            sql.push_str(", ");
        }
        sql.push_str(&format!(
            "(${}, ${}, ${}, ${}, ${}, ${})",
            n + 1,
            n + 2,
            n + 3,
            n + 4,
            n + 5,
            n + 6
        ));
    }
    sql.push_str(" ON CONFLICT (tenant_id, id) DO NOTHING RETURNING id");
    sql
}

/// Locks the tenant's usage row (PostgreSQL) / takes the write lock (SQLite)
/// before a paste row is deleted; no row = no such tenant.
const LOCK_USAGE: &str = "UPDATE usage SET pastes = pastes WHERE tenant_id = $1";
/// `$3` bounds `expires_at`, so a sweep only ever removes an expired row.
const DELETE_PASTE: &str = "DELETE FROM pastes \
     WHERE tenant_id = $1 AND id = $2 AND expires_at <= $3 \
     RETURNING id, bytes, created_at, expires_at, burn_after_read";
const SELECT_PASTE: &str = "SELECT id, bytes, created_at, expires_at, burn_after_read \
     FROM pastes WHERE tenant_id = $1 AND id = $2";
/// `$3 = ''` lists from the start (ids are never empty).
const LIST_PASTES: &str = "SELECT id, bytes, created_at, expires_at, burn_after_read \
     FROM pastes WHERE tenant_id = $1 AND expires_at > $2 AND id > $3 \
     ORDER BY id LIMIT $4";
const EXPIRED_PASTES: &str = "SELECT tenant_id, id FROM pastes WHERE expires_at <= $1 \
     ORDER BY expires_at, tenant_id, id LIMIT $2";
const DELETE_OLD_IDEMPOTENCY: &str = "DELETE FROM idempotency_records WHERE created_at < $1";
/// The records of replicas on the release before 0004, swept the same way.
const DELETE_OLD_IDEMPOTENCY_V1: &str = "DELETE FROM idempotency_keys WHERE created_at < $1";

// In every statement on `idempotency_records`, `$1` is the tenant, `$2` the
// credential and `$3` the key.
const INSERT_IDEMPOTENCY: &str = "INSERT INTO idempotency_records \
     (tenant_id, credential, key, body_digest, paste_id, expires_at, created_at) \
     VALUES ($1, $2, $3, $4, NULL, NULL, $5) \
     ON CONFLICT (tenant_id, credential, key) DO NOTHING";
const SELECT_IDEMPOTENCY: &str = "SELECT body_digest, paste_id, expires_at, created_at \
     FROM idempotency_records WHERE tenant_id = $1 AND credential = $2 AND key = $3";
/// Compare-and-swap on `created_at`: of concurrent takeovers of one crashed
/// create, only one changes the row.
const TAKE_OVER_IDEMPOTENCY: &str = "UPDATE idempotency_records SET created_at = $4 \
     WHERE tenant_id = $1 AND credential = $2 AND key = $3 \
     AND paste_id IS NULL AND created_at = $5";
const COMPLETE_IDEMPOTENCY: &str = "UPDATE idempotency_records \
     SET paste_id = $4, expires_at = $5 \
     WHERE tenant_id = $1 AND credential = $2 AND key = $3 AND paste_id IS NULL";
/// A completed record whose paste is gone starts over (compare-and-swap on
/// the paste id, so of concurrent retries only one restarts it).
const RESTART_IDEMPOTENCY: &str = "UPDATE idempotency_records \
     SET paste_id = NULL, expires_at = NULL, created_at = $5 \
     WHERE tenant_id = $1 AND credential = $2 AND key = $3 AND paste_id = $4";
const LIVE_PASTE: &str =
    "SELECT id FROM pastes WHERE tenant_id = $1 AND id = $2 AND expires_at > $3";
const ABANDON_IDEMPOTENCY: &str = "DELETE FROM idempotency_records \
     WHERE tenant_id = $1 AND credential = $2 AND key = $3 AND paste_id IS NULL";

/// How a credential is stored in `idempotency_records.credential`: the API
/// key's id, or `''` for requests without a key.
fn credential_column(credential: Option<&KeyId>) -> &str {
    credential.map_or("", KeyId::as_str)
}

fn validate_paste_id(id: &str) -> Result<(), CatalogError> {
    if id.is_empty() || id.len() > 255 {
        return Err(CatalogError::Invalid(
            "a paste id must be 1-255 bytes".into(),
        ));
    }
    Ok(())
}

fn validate_idempotency_key(key: &str) -> Result<(), CatalogError> {
    if key.is_empty() || key.len() > 255 || !key.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Err(CatalogError::Invalid(
            "an Idempotency-Key must be 1-255 printable ASCII characters".into(),
        ));
    }
    Ok(())
}

/// What a read of an existing idempotency record means for a new `begin`.
enum Seen {
    Answer(Idempotency),
    /// In progress for too long: take it over if `created_at` is unchanged.
    Stale {
        created_at: i64,
    },
}

fn judge(
    row: IdempotencyRow,
    body_digest: &[u8; 32],
    now: i64,
    lease_ms: i64,
) -> Result<Seen, CatalogError> {
    if row.body_digest.as_slice() != body_digest.as_slice() {
        return Ok(Seen::Answer(Idempotency::Mismatch));
    }
    match (row.paste_id, row.expires_at) {
        (Some(paste_id), Some(expires_at)) => Ok(Seen::Answer(Idempotency::Completed {
            paste_id,
            expires_at,
        })),
        (Some(_), None) => Err(CatalogError::internal(
            "a completed idempotency record has no expires_at",
        )),
        (None, _) if now.saturating_sub(row.created_at) < lease_ms => {
            Ok(Seen::Answer(Idempotency::InProgress {
                retry_after_ms: row.created_at.saturating_add(lease_ms) - now,
            }))
        }
        (None, _) => Ok(Seen::Stale {
            created_at: row.created_at,
        }),
    }
}

impl Catalog {
    // ---- paste index ---------------------------------------------------

    /// Indexes a paste of `tenant`, reserving its bytes and one paste against
    /// the tenant's `quota_bytes` / `quota_pastes` in one transaction (the
    /// guarded `UPDATE` of [`reserve`](Self::reserve), then the `INSERT`).
    /// `Ok(false)`: over quota, nothing changed. An id already indexed for
    /// the tenant: [`CatalogError::Conflict`]`("paste")`, usage unchanged.
    /// Unknown tenant: [`CatalogError::NotFound`]. Negative `bytes` or an
    /// empty (or over 255-byte) id: [`CatalogError::Invalid`].
    pub async fn record_paste(
        &self,
        tenant: &TenantId,
        record: &PasteRecord,
    ) -> Result<bool, CatalogError> {
        // A batch of one: the same statements, the same answers.
        self.record_pastes(&[(tenant.clone(), record.clone())])
            .await?
            .pop()
            .unwrap_or_else(|| Err(CatalogError::internal("a batch of one gave no answer")))
    }

    /// [`record_paste`](Self::record_paste) for many pastes in ONE
    /// transaction (group commit): one commit, one flush, for the whole
    /// batch. Each entry gets the answer `record_paste` would give it, in
    /// order; they are applied tenant by tenant (sorted, so concurrent
    /// batches lock usage rows in the same order). `Err` when the
    /// transaction itself fails: then nothing of the batch was recorded.
    pub async fn record_pastes(
        &self,
        batch: &[(TenantId, PasteRecord)],
    ) -> Result<Vec<Result<bool, CatalogError>>, CatalogError> {
        let mut out: Vec<Result<bool, CatalogError>> = batch
            .iter()
            .map(|(_, record)| {
                if record.bytes < 0 {
                    return Err(CatalogError::Invalid(
                        "a paste size cannot be negative".into(),
                    ));
                }
                validate_paste_id(&record.id).map(|()| true)
            })
            .collect();
        let mut order: Vec<usize> = (0..batch.len()).filter(|&i| out[i].is_ok()).collect();
        order.sort_by(|&a, &b| batch[a].0.as_str().cmp(batch[b].0.as_str()));
        if order.is_empty() {
            return Ok(out);
        }
        with_pool!(self, p => {
            let mut tx = p.begin().await?;
            let mut start = 0;
            while start < order.len() {
                let tenant = &batch[order[start]].0;
                let end = order[start..]
                    .iter()
                    .position(|&i| batch[i].0 != *tenant)
                    .map_or(order.len(), |n| start + n);
                let group = &order[start..end];
                start = end;
                // Fast path: the tenant's whole group fits its quota, so one
                // reservation and one multi-row insert serve it.
                let bytes = group
                    .iter()
                    .fold(0_i64, |sum, &i| sum.saturating_add(batch[i].1.bytes));
                let count = i64::try_from(group.len()).unwrap_or(i64::MAX);
                let reserved = sqlx::query(RESERVE_USAGE_N)
                    .bind(bytes)
                    .bind(count)
                    .bind(tenant.as_str())
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                if reserved == 1 {
                    // Built only from placeholders: no value enters the text.
                    let sql = sqlx::AssertSqlSafe(insert_pastes_sql(group.len()));
                    let mut insert = sqlx::query_scalar::<_, String>(sql);
                    for &i in group {
                        let record = &batch[i].1;
                        insert = insert
                            .bind(tenant.as_str())
                            .bind(&record.id)
                            .bind(record.bytes)
                            .bind(record.created_at)
                            .bind(record.expires_at)
                            .bind(record.burn_after_read);
                    }
                    let mut inserted: HashSet<String> =
                        insert.fetch_all(&mut *tx).await?.into_iter().collect();
                    let (mut back_bytes, mut back_count) = (0_i64, 0_i64);
                    for &i in group {
                        // A taken id (also one repeated in this batch: its
                        // first entry wins) inserts nothing.
                        if inserted.remove(&batch[i].1.id) {
                            out[i] = Ok(true);
                        } else {
                            out[i] = Err(CatalogError::Conflict("paste"));
                            back_bytes = back_bytes.saturating_add(batch[i].1.bytes);
                            back_count += 1;
                        }
                    }
                    if back_count > 0 {
                        sqlx::query(RELEASE_USAGE_N)
                            .bind(back_bytes)
                            .bind(back_count)
                            .bind(tenant.as_str())
                            .execute(&mut *tx)
                            .await?;
                    }
                    continue;
                }
                // The group does not fit (or the tenant is unknown): entry by
                // entry, in order, so exactly the ones that fit are kept.
                for &i in group {
                    let record = &batch[i].1;
                    let reserved = sqlx::query(RESERVE_USAGE)
                        .bind(record.bytes)
                        .bind(tenant.as_str())
                        .execute(&mut *tx)
                        .await?
                        .rows_affected();
                    if reserved != 1 {
                        let exists: Option<String> =
                            sqlx::query_scalar("SELECT id FROM tenants WHERE id = $1")
                                .bind(tenant.as_str())
                                .fetch_optional(&mut *tx)
                                .await?;
                        out[i] = exists.map(|_| false).ok_or(CatalogError::NotFound);
                        continue;
                    }
                    let inserted = sqlx::query(INSERT_PASTE_IF_NEW)
                        .bind(tenant.as_str())
                        .bind(&record.id)
                        .bind(record.bytes)
                        .bind(record.created_at)
                        .bind(record.expires_at)
                        .bind(record.burn_after_read)
                        .execute(&mut *tx)
                        .await?
                        .rows_affected();
                    if inserted != 1 {
                        // Taken id: give the reservation back, inside the batch.
                        sqlx::query(RELEASE_USAGE)
                            .bind(record.bytes)
                            .bind(tenant.as_str())
                            .execute(&mut *tx)
                            .await?;
                        out[i] = Err(CatalogError::Conflict("paste"));
                    }
                }
            }
            tx.commit().await?;
        });
        Ok(out)
    }

    /// Removes a paste from the index and releases its quota (as
    /// [`release`](Self::release) does), in one transaction. `Ok(Some(record))`
    /// only for the one call that removed the row: of concurrent calls, on
    /// one process or many (`DELETE … RETURNING`), exactly one gets `Some`;
    /// this is the burn-after-read claim. `Ok(None)` if not indexed (or the
    /// id is another tenant's, or the tenant is unknown).
    pub async fn forget_paste(
        &self,
        tenant: &TenantId,
        id: &str,
    ) -> Result<Option<PasteRecord>, CatalogError> {
        self.delete_paste(tenant, id, i64::MAX).await
    }

    /// [`forget_paste`](Self::forget_paste) of a row with `expires_at <= max_expires_at`.
    async fn delete_paste(
        &self,
        tenant: &TenantId,
        id: &str,
        max_expires_at: i64,
    ) -> Result<Option<PasteRecord>, CatalogError> {
        let row: Option<PasteRow> = with_pool!(self, p => {
            let mut tx = p.begin().await?;
            // Usage row first: the crate's one lock order (see the module docs).
            let tenant_rows = sqlx::query(LOCK_USAGE)
                .bind(tenant.as_str())
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if tenant_rows == 0 {
                tx.rollback().await?;
                return Ok(None);
            }
            // fetch_all, not fetch_optional: the statement runs to completion
            // before the commit (at most one row: the primary key).
            let mut rows: Vec<PasteRow> = sqlx::query_as(DELETE_PASTE)
                .bind(tenant.as_str())
                .bind(id)
                .bind(max_expires_at)
                .fetch_all(&mut *tx)
                .await?;
            let row = rows.pop();
            match &row {
                Some(r) => {
                    sqlx::query(RELEASE_USAGE)
                        .bind(r.bytes.max(0))
                        .bind(tenant.as_str())
                        .execute(&mut *tx)
                        .await?;
                    tx.commit().await?;
                }
                None => tx.rollback().await?,
            }
            row
        });
        Ok(row.map(PasteRecord::from))
    }

    /// The tenant's indexed pastes not expired at `now` (`expires_at > now`),
    /// ordered by id ascending (byte order on both databases), with
    /// `id > after` when given, at most `limit` of them (clamped to
    /// 1..=1000). An unknown tenant has no pastes.
    pub async fn list_pastes(
        &self,
        tenant: &TenantId,
        now: i64,
        after: Option<&str>,
        limit: i64,
    ) -> Result<Vec<PasteRecord>, CatalogError> {
        Ok(self
            .list_pastes_page(tenant, now, after, limit)
            .await?
            .pastes)
    }

    /// [`list_pastes`](Self::list_pastes), and whether more pastes follow
    /// the page: one row beyond the page is read to tell, at every page
    /// size up to the largest.
    pub async fn list_pastes_page(
        &self,
        tenant: &TenantId,
        now: i64,
        after: Option<&str>,
        limit: i64,
    ) -> Result<PastePage, CatalogError> {
        let limit = limit.clamp(1, MAX_LIST);
        let rows: Vec<PasteRow> = with_pool!(self, p => sqlx::query_as(LIST_PASTES)
            .bind(tenant.as_str())
            .bind(now)
            .bind(after.unwrap_or(""))
            .bind(limit + 1)
            .fetch_all(p)
            .await?);
        let page = usize::try_from(limit).unwrap_or(usize::MAX);
        let more = rows.len() > page;
        let pastes = rows.into_iter().take(page).map(PasteRecord::from).collect();
        Ok(PastePage { pastes, more })
    }

    /// The tenants that index a paste `id`, with their namespaces (at most
    /// 16; ids are per tenant, so more than one is rare).
    pub async fn tenants_indexing(
        &self,
        id: &str,
    ) -> Result<Vec<(TenantId, String)>, CatalogError> {
        let rows: Vec<(String, String)> = with_pool!(self, p => sqlx::query_as(
            "SELECT p.tenant_id, t.namespace FROM pastes p JOIN tenants t ON t.id = p.tenant_id \
             WHERE p.id = $1 ORDER BY p.tenant_id LIMIT 16",
        )
        .bind(id)
        .fetch_all(p)
        .await?);
        Ok(rows
            .into_iter()
            .filter_map(|(tenant, namespace)| Some((TenantId::parse(&tenant).ok()?, namespace)))
            .collect())
    }

    /// The indexed paste `id` of `tenant` (expired or not), `None` if absent
    /// (or another tenant's).
    pub async fn paste_record(
        &self,
        tenant: &TenantId,
        id: &str,
    ) -> Result<Option<PasteRecord>, CatalogError> {
        let row: Option<PasteRow> = with_pool!(self, p => sqlx::query_as(SELECT_PASTE)
            .bind(tenant.as_str())
            .bind(id)
            .fetch_optional(p)
            .await?);
        Ok(row.map(PasteRecord::from))
    }

    /// Removes up to `limit` index rows with `expires_at <= now` across all
    /// tenants (earliest expiry first; none when `limit <= 0`), each in its
    /// own [`forget_paste`](Self::forget_paste)-style transaction releasing
    /// its quota, and deletes the Idempotency-Key records created more than
    /// 24 h before `now`. Returns the number of paste rows this call removed
    /// (a row removed meanwhile by another sweep or a forget is not counted,
    /// and its quota is released once, by whoever removed it).
    pub async fn sweep_expired(&self, now: i64, limit: i64) -> Result<u64, CatalogError> {
        let mut removed = 0;
        if limit > 0 {
            let expired: Vec<(String, String)> = with_pool!(self, p => sqlx::query_as(EXPIRED_PASTES)
                    .bind(now)
                    .bind(limit)
                    .fetch_all(p)
                    .await?);
            for (tenant, id) in expired {
                let tenant = TenantId::from_db(tenant);
                if self.delete_paste(&tenant, &id, now).await?.is_some() {
                    removed += 1;
                }
            }
        }
        let cutoff = now.saturating_sub(IDEMPOTENCY_RETENTION_MS);
        let keys = with_pool!(self, p => {
            let mut keys = 0;
            for sql in [DELETE_OLD_IDEMPOTENCY, DELETE_OLD_IDEMPOTENCY_V1] {
                keys += sqlx::query(sql).bind(cutoff).execute(p).await?.rows_affected();
            }
            keys
        });
        if removed > 0 || keys > 0 {
            tracing::debug!(
                pastes = removed,
                idempotency_keys = keys,
                "swept expired catalog rows"
            );
        }
        Ok(removed)
    }

    // ---- Idempotency-Key records ---------------------------------------

    /// Starts (or replays) a create under Idempotency-Key `key` for `tenant`,
    /// made with `credential` (the API key's id; `None` without a key): a
    /// record belongs to the credential that made it, so another credential
    /// (or none) using the same key starts a record of its own and learns
    /// nothing of the first. `body_digest` is the SHA-256 of the request
    /// body, `now` the time in Unix ms, and `lease_ms` how long a create may
    /// run: the longest it can legitimately take from this call to
    /// [`complete_idempotent`](Self::complete_idempotent) (the server bounds
    /// it by its store and catalog timeouts; [`DEFAULT_IDEMPOTENCY_LEASE_MS`]
    /// without a better bound). Atomic under concurrency (on one process or many): of N
    /// concurrent first uses exactly one gets [`Idempotency::Started`], the
    /// others [`Idempotency::InProgress`] (or `Completed` once it completed),
    /// with the time left of the running create's lease. A different body is
    /// [`Idempotency::Mismatch`] whatever the record's state. A record in
    /// progress for `lease_ms` or more (a create that crashed or was dropped
    /// with its connection) is taken over: that call gets `Started` and the
    /// record restarts at `now`.
    /// So is a completed record whose paste is no longer in the index
    /// (deleted, burnt after reading or expired): replaying it would hand out
    /// an id that answers 404, so the create starts over under the same key.
    /// Unknown tenant: [`CatalogError::NotFound`]; a key that is not 1-255
    /// printable ASCII characters: [`CatalogError::Invalid`].
    pub async fn begin_idempotent(
        &self,
        tenant: &TenantId,
        credential: Option<&KeyId>,
        key: &str,
        body_digest: &[u8; 32],
        now: i64,
        lease_ms: i64,
    ) -> Result<Idempotency, CatalogError> {
        validate_idempotency_key(key)?;
        let credential = credential_column(credential);
        with_pool!(self, p => {
            let mut tx = p.begin().await?;
            // A record deleted between the INSERT and the SELECT (abandoned
            // or swept) makes the INSERT worth another try.
            for _ in 0..3 {
                // The write comes first (see the module docs). On PostgreSQL a
                // concurrent INSERT of the same key waits for this one's
                // transaction and then does nothing.
                let inserted = sqlx::query(INSERT_IDEMPOTENCY)
                    .bind(tenant.as_str())
                    .bind(credential)
                    .bind(key)
                    .bind(&body_digest[..])
                    .bind(now)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                if inserted == 1 {
                    tx.commit().await?;
                    return Ok(Idempotency::Started);
                }
                let row: Option<IdempotencyRow> = sqlx::query_as(SELECT_IDEMPOTENCY)
                    .bind(tenant.as_str())
                    .bind(credential)
                    .bind(key)
                    .fetch_optional(&mut *tx)
                    .await?;
                let Some(row) = row else { continue };
                match judge(row, body_digest, now, lease_ms)? {
                    Seen::Answer(Idempotency::Completed { paste_id, expires_at }) => {
                        let live = expires_at > now
                            && sqlx::query(LIVE_PASTE)
                                .bind(tenant.as_str())
                                .bind(&paste_id)
                                .bind(now)
                                .fetch_optional(&mut *tx)
                                .await?
                                .is_some();
                        if live {
                            tx.commit().await?;
                            return Ok(Idempotency::Completed { paste_id, expires_at });
                        }
                        // Deleted, burnt or expired: a retry would be handed an
                        // id that no longer answers, so the create starts over.
                        let restarted = sqlx::query(RESTART_IDEMPOTENCY)
                            .bind(tenant.as_str())
                            .bind(credential)
                            .bind(key)
                            .bind(&paste_id)
                            .bind(now)
                            .execute(&mut *tx)
                            .await?
                            .rows_affected();
                        if restarted == 1 {
                            tx.commit().await?;
                            return Ok(Idempotency::Started);
                        }
                        // Another retry restarted it meanwhile: look again.
                    }
                    Seen::Answer(answer) => {
                        tx.commit().await?;
                        return Ok(answer);
                    }
                    Seen::Stale { created_at } => {
                        let taken = sqlx::query(TAKE_OVER_IDEMPOTENCY)
                            .bind(tenant.as_str())
                            .bind(credential)
                            .bind(key)
                            .bind(now)
                            .bind(created_at)
                            .execute(&mut *tx)
                            .await?
                            .rows_affected();
                        if taken == 1 {
                            tx.commit().await?;
                            tracing::info!(
                                tenant.id = %tenant,
                                "took over a stale idempotent create"
                            );
                            return Ok(Idempotency::Started);
                        }
                        // Another call took it over, completed or dropped it
                        // meanwhile: look again.
                    }
                }
            }
            tx.rollback().await?;
        });
        // The record kept changing under us: another create holds the key.
        Ok(Idempotency::InProgress {
            retry_after_ms: BUSY_RETRY_MS,
        })
    }

    /// Marks the create under `key` finished with the paste it made. Calling
    /// it again with the same `paste_id` is a no-op. No record of `key` (it
    /// was abandoned or swept): [`CatalogError::NotFound`]; a record already
    /// completed with another paste (this create was taken over and the
    /// other finished first): [`CatalogError::Conflict`]`("idempotency key")`.
    pub async fn complete_idempotent(
        &self,
        tenant: &TenantId,
        credential: Option<&KeyId>,
        key: &str,
        paste_id: &str,
        expires_at: i64,
    ) -> Result<(), CatalogError> {
        validate_paste_id(paste_id)?;
        let credential = credential_column(credential);
        let done = with_pool!(self, p => sqlx::query(COMPLETE_IDEMPOTENCY)
            .bind(tenant.as_str())
            .bind(credential)
            .bind(key)
            .bind(paste_id)
            .bind(expires_at)
            .execute(p)
            .await?
            .rows_affected());
        if done == 1 {
            return Ok(());
        }
        let row: Option<IdempotencyRow> = with_pool!(self, p => sqlx::query_as(SELECT_IDEMPOTENCY)
            .bind(tenant.as_str())
            .bind(credential)
            .bind(key)
            .fetch_optional(p)
            .await?);
        match row.and_then(|r| r.paste_id) {
            None => Err(CatalogError::NotFound),
            Some(done) if done == paste_id => Ok(()),
            Some(_) => Err(CatalogError::Conflict("idempotency key")),
        }
    }

    /// Drops the in-progress record of `key` made with `credential` (the
    /// create failed), so a retry starts afresh. A completed record is kept;
    /// an absent one is fine.
    pub async fn abandon_idempotent(
        &self,
        tenant: &TenantId,
        credential: Option<&KeyId>,
        key: &str,
    ) -> Result<(), CatalogError> {
        let credential = credential_column(credential);
        with_pool!(self, p => sqlx::query(ABANDON_IDEMPOTENCY)
            .bind(tenant.as_str())
            .bind(credential)
            .bind(key)
            .execute(p)
            .await
            .map(|_| ())?);
        Ok(())
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn multi_row_inserts_number_their_placeholders() {
        assert_eq!(
            super::insert_pastes_sql(2),
            "INSERT INTO pastes (tenant_id, id, bytes, created_at, expires_at, burn_after_read) \
             VALUES ($1, $2, $3, $4, $5, $6), ($7, $8, $9, $10, $11, $12) \
             ON CONFLICT (tenant_id, id) DO NOTHING RETURNING id"
        );
    }
    use super::*;

    fn row(digest: u8, paste_id: Option<&str>, created_at: i64) -> IdempotencyRow {
        IdempotencyRow {
            body_digest: vec![digest; 32],
            paste_id: paste_id.map(str::to_owned),
            expires_at: paste_id.map(|_| 99),
            created_at,
        }
    }

    const LEASE: i64 = 40_000;

    fn answer(s: Result<Seen, CatalogError>) -> Option<Idempotency> {
        match s {
            Ok(Seen::Answer(a)) => Some(a),
            _ => None,
        }
    }

    #[test]
    fn idempotency_records_are_judged_digest_first() {
        let d = [1u8; 32];
        assert_eq!(
            answer(judge(row(2, Some("p"), 0), &d, 0, LEASE)),
            Some(Idempotency::Mismatch)
        );
        assert_eq!(
            answer(judge(row(2, None, 0), &d, 10 * LEASE, LEASE)),
            Some(Idempotency::Mismatch),
            "a stale record with another body is a mismatch, not a takeover"
        );
        assert_eq!(
            answer(judge(row(1, Some("p"), 0), &d, 0, LEASE)),
            Some(Idempotency::Completed {
                paste_id: "p".into(),
                expires_at: 99
            })
        );
        assert_eq!(
            answer(judge(row(1, None, 1000), &d, 1000 + LEASE - 1, LEASE)),
            Some(Idempotency::InProgress { retry_after_ms: 1 })
        );
        assert_eq!(
            answer(judge(row(1, None, 1000), &d, 1500, LEASE)),
            Some(Idempotency::InProgress {
                retry_after_ms: LEASE - 500
            }),
            "the wait is what is left of the lease"
        );
        assert!(matches!(
            judge(row(1, None, 1000), &d, 1000 + LEASE, LEASE),
            Ok(Seen::Stale { created_at: 1000 })
        ));
    }

    #[test]
    fn keys_and_ids_are_validated() {
        assert!(validate_idempotency_key("abc-123_~ ").is_ok());
        assert!(validate_idempotency_key(&"k".repeat(255)).is_ok());
        for bad in ["", "tab\there", "é", &"k".repeat(256)] {
            assert!(validate_idempotency_key(bad).is_err(), "{bad:?}");
        }
        assert!(validate_paste_id("").is_err());
        assert!(validate_paste_id("abcdefgh").is_ok());
    }
}
