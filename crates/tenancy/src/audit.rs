//! What `planshare-server doctor` asks of the catalog: every paste row of a
//! tenant (expired or not) in id order, the review blobs its rows name,
//! the tenant's recorded usage beside what its rows add up to, and the one
//! repair of usage that is safe while the server serves (a re-count under
//! the usage row's lock).
//!
//! Usage counts every indexed paste row (until the expiry sweep or a delete
//! removes it) and every review blob (a version, a comment set, a decision's
//! feedback) as one entry of its stored bytes.

use crate::catalog::with_pool;
use crate::pastes::PasteRow;
use crate::{BlobRef, Catalog, CatalogError, PasteRecord, TenantId};

/// A tenant's usage as recorded, and as its rows add up to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UsageCount {
    /// Bytes in the `usage` row.
    pub recorded_bytes: i64,
    /// Pastes (entries) in the `usage` row.
    pub recorded_pastes: i64,
    /// Bytes of the tenant's paste rows and review blobs.
    pub counted_bytes: i64,
    /// The tenant's paste rows and review blobs.
    pub counted_pastes: i64,
}

impl UsageCount {
    /// Whether the recorded usage is what the rows add up to.
    pub fn agrees(&self) -> bool {
        self.recorded_bytes == self.counted_bytes && self.recorded_pastes == self.counted_pastes
    }
}

/// Paste rows after `$2` in id order (byte order on both databases).
const PASTE_ROWS_AFTER: &str = "SELECT id, bytes, created_at, expires_at, burn_after_read \
     FROM pastes WHERE tenant_id = $1 AND id > $2 ORDER BY id LIMIT $3";
/// Every blob the review rows of tenant `$1` name, with its bytes.
const REVIEW_BLOBS: &str = "SELECT blob, bytes FROM review_versions WHERE tenant_id = $1 \
     UNION ALL SELECT blob, bytes FROM review_comments WHERE tenant_id = $1 \
     UNION ALL SELECT feedback_blob, feedback_bytes FROM reviews \
     WHERE tenant_id = $1 AND feedback_blob IS NOT NULL";
/// What tenant `$1`'s rows add up to: bytes, then entries.
/// (`SUM` of BIGINT is NUMERIC on PostgreSQL: cast back.)
const COUNT_ROWS: &str = "SELECT CAST(\
     (SELECT COALESCE(SUM(bytes), 0) FROM pastes WHERE tenant_id = $1) \
     + (SELECT COALESCE(SUM(bytes), 0) FROM review_versions WHERE tenant_id = $1) \
     + (SELECT COALESCE(SUM(bytes), 0) FROM review_comments WHERE tenant_id = $1) \
     + (SELECT COALESCE(SUM(feedback_bytes), 0) FROM reviews WHERE tenant_id = $1 AND feedback_blob IS NOT NULL) AS BIGINT), \
     CAST((SELECT COUNT(*) FROM pastes WHERE tenant_id = $1) \
     + (SELECT COUNT(*) FROM review_versions WHERE tenant_id = $1) \
     + (SELECT COUNT(*) FROM review_comments WHERE tenant_id = $1) \
     + (SELECT COUNT(*) FROM reviews WHERE tenant_id = $1 AND feedback_blob IS NOT NULL) AS BIGINT)";
/// Takes the usage row's lock (every write that changes usage writes this
/// row first, so holding it keeps the counts still) and reads it.
const LOCK_AND_READ_USAGE: &str =
    "UPDATE usage SET pastes = pastes WHERE tenant_id = $1 RETURNING bytes, pastes";
const SET_USAGE: &str = "UPDATE usage SET bytes = $2, pastes = $3 WHERE tenant_id = $1";

impl Catalog {
    /// Up to `limit` (1..=10 000) of `tenant`'s paste rows, expired or
    /// not, with `id > after`, in id order.
    pub async fn paste_rows_after(
        &self,
        tenant: &TenantId,
        after: &str,
        limit: i64,
    ) -> Result<Vec<PasteRecord>, CatalogError> {
        let rows: Vec<PasteRow> = with_pool!(self, p => sqlx::query_as(PASTE_ROWS_AFTER)
            .bind(tenant.as_str())
            .bind(after)
            .bind(limit.clamp(1, 10_000))
            .fetch_all(p)
            .await?);
        Ok(rows.into_iter().map(PasteRecord::from).collect())
    }

    /// The rows of `tenant` among the paste ids `ids` (at most 1 000),
    /// expired or not, in id order.
    pub async fn paste_rows_among(
        &self,
        tenant: &TenantId,
        ids: &[String],
    ) -> Result<Vec<PasteRecord>, CatalogError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        if ids.len() > 1000 {
            return Err(CatalogError::Invalid("at most 1 000 ids at a time".into()));
        }
        let placeholders: Vec<String> = (2..ids.len() + 2).map(|n| format!("${n}")).collect();
        let sql = format!(
            "SELECT id, bytes, created_at, expires_at, burn_after_read FROM pastes \
             WHERE tenant_id = $1 AND id IN ({}) ORDER BY id",
            placeholders.join(", ")
        );
        let rows: Vec<PasteRow> = with_pool!(self, p => {
            let mut query = sqlx::query_as(sqlx::AssertSqlSafe(sql.as_str())).bind(tenant.as_str());
            for id in ids {
                query = query.bind(id.as_str());
            }
            query.fetch_all(p).await?
        });
        Ok(rows.into_iter().map(PasteRecord::from).collect())
    }

    /// Every blob `tenant`'s review rows name (versions, comment sets,
    /// decision feedback), in no particular order.
    pub async fn review_blobs(&self, tenant: &TenantId) -> Result<Vec<BlobRef>, CatalogError> {
        let rows: Vec<(String, i64)> = with_pool!(self, p => sqlx::query_as(REVIEW_BLOBS)
            .bind(tenant.as_str())
            .fetch_all(p)
            .await?);
        Ok(rows
            .into_iter()
            .map(|(blob, bytes)| BlobRef { blob, bytes })
            .collect())
    }

    /// `tenant`'s recorded usage beside what its rows add up to, read
    /// under the usage row's lock so no write falls between the two.
    /// [`CatalogError::NotFound`] for an unknown tenant.
    pub async fn count_usage(&self, tenant: &TenantId) -> Result<UsageCount, CatalogError> {
        self.usage_under_lock(tenant, false).await
    }

    /// Sets `tenant`'s usage to what its rows add up to, under the usage
    /// row's lock; returns the counts as they were before.
    pub async fn recount_usage(&self, tenant: &TenantId) -> Result<UsageCount, CatalogError> {
        self.usage_under_lock(tenant, true).await
    }

    async fn usage_under_lock(
        &self,
        tenant: &TenantId,
        set: bool,
    ) -> Result<UsageCount, CatalogError> {
        with_pool!(self, p => {
            let mut tx = p.begin().await?;
            let recorded: Option<(i64, i64)> = sqlx::query_as(LOCK_AND_READ_USAGE)
                .bind(tenant.as_str())
                .fetch_optional(&mut *tx)
                .await?;
            let Some((recorded_bytes, recorded_pastes)) = recorded else {
                tx.rollback().await?;
                return Err(CatalogError::NotFound);
            };
            let (counted_bytes, counted_pastes): (i64, i64) = sqlx::query_as(COUNT_ROWS)
                .bind(tenant.as_str())
                .fetch_one(&mut *tx)
                .await?;
            let count = UsageCount {
                recorded_bytes,
                recorded_pastes,
                counted_bytes,
                counted_pastes,
            };
            if set && !count.agrees() {
                sqlx::query(SET_USAGE)
                    .bind(tenant.as_str())
                    .bind(counted_bytes)
                    .bind(counted_pastes)
                    .execute(&mut *tx)
                    .await?;
                tx.commit().await?;
            } else {
                tx.rollback().await?;
            }
            Ok(count)
        })
    }
}

impl Catalog {
    /// Writes a consistent copy of a SQLite catalog to the new file `dest`
    /// while it serves (`VACUUM INTO`: one read transaction, so the copy is
    /// the catalog as of one moment). PostgreSQL has its own tools
    /// (`pg_dump`): [`CatalogError::Invalid`] there.
    pub async fn backup_sqlite(&self, dest: &std::path::Path) -> Result<(), CatalogError> {
        let crate::catalog::Pool::Sqlite(pool) = &self.pool else {
            return Err(CatalogError::Invalid(
                "the catalog is on PostgreSQL: back it up with pg_dump".into(),
            ));
        };
        let dest = dest
            .to_str()
            .ok_or_else(|| CatalogError::Invalid("the backup path is not UTF-8".into()))?;
        sqlx::query("VACUUM INTO $1")
            .bind(dest)
            .execute(pool)
            .await?;
        Ok(())
    }
}
