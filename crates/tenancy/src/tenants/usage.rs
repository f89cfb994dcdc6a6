//! The tenant's usage and quota: bytes and pastes held, requests counted,
//! and the reserve / release every family's writes go through.

use super::{AllUsageRow, UsageRow};
use crate::catalog::with_pool;
use crate::quota::{RELEASE_USAGE, RESERVE_USAGE};
use crate::{Catalog, CatalogError, TenantId, Usage};

impl Catalog {
    // ---- usage ---------------------------------------------------------

    /// The accounted usage of `tenant`.
    pub async fn usage(&self, tenant: &TenantId) -> Result<Usage, CatalogError> {
        let row: Option<UsageRow> = with_pool!(self, p => sqlx::query_as(
            "SELECT bytes, pastes, requests FROM usage WHERE tenant_id = $1")
            .bind(tenant.as_str())
            .fetch_optional(p)
            .await?);
        let r = row.ok_or(CatalogError::NotFound)?;
        Ok(Usage {
            bytes: r.bytes,
            pastes: r.pastes,
            requests: r.requests,
        })
    }

    /// The usage of every tenant, by tenant id, when there are at most
    /// `limit` tenants; with more, only their number (an exporter keeps its
    /// label count bounded). One query, however many tenants.
    pub async fn usage_of_tenants(
        &self,
        limit: usize,
    ) -> Result<(i64, Option<Vec<(TenantId, Usage)>>), CatalogError> {
        let fetch = i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX);
        let rows: Vec<AllUsageRow> = with_pool!(self, p => sqlx::query_as(
            "SELECT u.tenant_id, u.bytes, u.pastes, u.requests, \
                    (SELECT COUNT(*) FROM tenants) AS tenants \
             FROM usage u ORDER BY u.tenant_id LIMIT $1")
            .bind(fetch)
            .fetch_all(p)
            .await?);
        let count = match rows.first() {
            Some(row) => row.tenants,
            None => {
                let (n,): (i64,) = with_pool!(self, p => sqlx::query_as(
                    "SELECT COUNT(*) FROM tenants")
                    .fetch_one(p)
                    .await?);
                n
            }
        };
        if rows.len() > limit {
            return Ok((count, None));
        }
        let usage = rows
            .into_iter()
            .map(|r| {
                let usage = Usage {
                    bytes: r.bytes,
                    pastes: r.pastes,
                    requests: r.requests,
                };
                (TenantId::from_db(r.tenant_id), usage)
            })
            .collect();
        Ok((count, Some(usage)))
    }

    /// Atomically reserves room for one paste of `bytes` within the tenant's
    /// stored quotas: `Ok(true)` when reserved, `Ok(false)` when it would
    /// exceed `quota_bytes` or `quota_pastes` (nothing changed). One guarded
    /// `UPDATE`, so concurrent reservations never overshoot.
    pub async fn reserve(&self, tenant: &TenantId, bytes: i64) -> Result<bool, CatalogError> {
        if bytes < 0 {
            return Err(CatalogError::Invalid(
                "a reservation cannot be negative".into(),
            ));
        }
        let done = with_pool!(self, p => sqlx::query(RESERVE_USAGE)
            .bind(bytes)
            .bind(tenant.as_str())
            .execute(p)
            .await?
            .rows_affected());
        if done == 1 {
            return Ok(true);
        }
        self.tenant_exists(tenant).await?;
        Ok(false)
    }

    /// Gives back a reservation of one paste of `bytes` (after a failed write
    /// or a deletion). Never goes below zero.
    pub async fn release(&self, tenant: &TenantId, bytes: i64) -> Result<(), CatalogError> {
        if bytes < 0 {
            return Err(CatalogError::Invalid("a release cannot be negative".into()));
        }
        let done = with_pool!(self, p => sqlx::query(RELEASE_USAGE)
            .bind(bytes)
            .bind(tenant.as_str())
            .execute(p)
            .await?
            .rows_affected());
        if done == 0 {
            return Err(CatalogError::NotFound);
        }
        Ok(())
    }

    /// Adds `n` to the tenant's request counter.
    pub async fn add_requests(&self, tenant: &TenantId, n: i64) -> Result<(), CatalogError> {
        if n < 0 {
            return Err(CatalogError::Invalid(
                "a request count cannot be negative".into(),
            ));
        }
        let done = with_pool!(self, p => sqlx::query(
            "UPDATE usage SET requests = requests + $1 WHERE tenant_id = $2")
            .bind(n)
            .bind(tenant.as_str())
            .execute(p)
            .await?
            .rows_affected());
        if done == 0 {
            return Err(CatalogError::NotFound);
        }
        Ok(())
    }
}
