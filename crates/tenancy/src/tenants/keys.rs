//! The tenant's API keys: created (the plaintext shown once, its digest
//! stored), listed, revoked, and checked on every keyed request.

use std::sync::atomic::Ordering;

use super::{AuthRow, KeyRow, LAST_USED_RESOLUTION_MS};
use crate::catalog::with_pool;
use crate::model::KeyInfo;
use crate::{ApiKey, Catalog, CatalogError, CreatedKey, KeyId, TenantId, now_ms};

impl Catalog {
    // ---- API keys ------------------------------------------------------

    /// Creates an API key for `tenant`. The returned [`CreatedKey`] is the
    /// only place the plaintext ever appears; the catalog stores its digest.
    pub async fn create_key(
        &self,
        tenant: &TenantId,
        name: &str,
    ) -> Result<CreatedKey, CatalogError> {
        crate::model::validate_key_name(name)?;
        let key = ApiKey::generate()
            .map_err(|e| CatalogError::internal(format!("cannot generate a key: {e}")))?;
        let id = KeyId::generate()?;
        let now = now_ms();
        let info = KeyInfo {
            id: id.clone(),
            tenant_id: tenant.clone(),
            display: key.display_prefix(),
            name: name.to_owned(),
            created_at: now,
            revoked_at: None,
            last_used_at: None,
        };
        let digest = key.digest();
        with_pool!(self, p => sqlx::query(
            "INSERT INTO api_keys (id, tenant_id, display, digest, name, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6)")
            .bind(id.as_str())
            .bind(tenant.as_str())
            .bind(&info.display)
            .bind(&digest.as_bytes()[..])
            .bind(name)
            .bind(now)
            .execute(p)
            .await?
            .rows_affected());
        tracing::info!(tenant.id = %tenant, key.id = %id, "api key created");
        Ok(CreatedKey { id, key, info })
    }

    /// The keys of `tenant` (revoked ones included), without secrets or digests.
    pub async fn list_keys(&self, tenant: &TenantId) -> Result<Vec<KeyInfo>, CatalogError> {
        self.tenant_exists(tenant).await?;
        let rows: Vec<KeyRow> = with_pool!(self, p => sqlx::query_as(KEYS_BY_TENANT)
            .bind(tenant.as_str())
            .fetch_all(p)
            .await?);
        Ok(rows.into_iter().map(KeyInfo::from).collect())
    }

    /// One key of `tenant`; a key of another tenant is [`CatalogError::NotFound`].
    pub async fn key(&self, tenant: &TenantId, id: &KeyId) -> Result<KeyInfo, CatalogError> {
        let row: Option<KeyRow> = with_pool!(self, p => sqlx::query_as(KEY_BY_ID)
            .bind(id.as_str())
            .bind(tenant.as_str())
            .fetch_optional(p)
            .await?);
        row.map(KeyInfo::from).ok_or(CatalogError::NotFound)
    }

    /// Revokes a key of `tenant` (idempotent; the first revocation time is
    /// kept). A key of another tenant is [`CatalogError::NotFound`].
    pub async fn revoke_key(&self, tenant: &TenantId, id: &KeyId) -> Result<(), CatalogError> {
        let done = with_pool!(self, p => sqlx::query(
            "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $3) \
             WHERE id = $1 AND tenant_id = $2")
            .bind(id.as_str())
            .bind(tenant.as_str())
            .bind(now_ms())
            .execute(p)
            .await?
            .rows_affected());
        if done == 0 {
            return Err(CatalogError::NotFound);
        }
        tracing::info!(tenant.id = %tenant, key.id = %id, "api key revoked");
        Ok(())
    }

    /// The tenant and key a presented key belongs to, looked up by digest
    /// only. `None` for unknown and revoked keys and for keys of disabled or
    /// deleted tenants. A database failure is an error (fail closed), never
    /// `None`. `last_used_at` is written at most once a minute per key.
    pub async fn authenticate(
        &self,
        key: &ApiKey,
    ) -> Result<Option<(TenantId, KeyId)>, CatalogError> {
        self.key_lookups.fetch_add(1, Ordering::Relaxed);
        let digest = key.digest();
        let row: Option<AuthRow> = with_pool!(self, p => sqlx::query_as(
            "SELECT k.id, k.tenant_id, k.last_used_at FROM api_keys k \
             JOIN tenants t ON t.id = k.tenant_id \
             WHERE k.digest = $1 AND k.revoked_at IS NULL AND t.status = 'active'")
            .bind(&digest.as_bytes()[..])
            .fetch_optional(p)
            .await?);
        let Some(row) = row else { return Ok(None) };
        let now = now_ms();
        if row
            .last_used_at
            .is_none_or(|t| now.saturating_sub(t) >= LAST_USED_RESOLUTION_MS)
        {
            let touched = with_pool!(self, p => sqlx::query(
                "UPDATE api_keys SET last_used_at = $2 WHERE id = $1 \
                 AND (last_used_at IS NULL OR last_used_at <= $3)")
                .bind(&row.id)
                .bind(now)
                .bind(now - LAST_USED_RESOLUTION_MS)
                .execute(p)
                .await
                .map(|r| r.rows_affected()));
            if let Err(e) = touched {
                // Bookkeeping only: the key is valid, so authentication stands.
                tracing::warn!(key.id = %row.id, error = %e, "cannot record key use");
            }
        }
        Ok(Some((
            TenantId::from_db(row.tenant_id),
            KeyId::from_db(row.id),
        )))
    }

    pub(super) async fn tenant_exists(&self, tenant: &TenantId) -> Result<(), CatalogError> {
        let found: Option<String> = with_pool!(self, p => sqlx::query_scalar(
            "SELECT id FROM tenants WHERE id = $1")
            .bind(tenant.as_str())
            .fetch_optional(p)
            .await?);
        found.map(|_| ()).ok_or(CatalogError::NotFound)
    }
}

pub(super) const KEYS_BY_TENANT: &str = "SELECT id, tenant_id, display, name, created_at, revoked_at, last_used_at FROM api_keys \
     WHERE tenant_id = $1 ORDER BY created_at, id";

pub(super) const KEY_BY_ID: &str = "SELECT id, tenant_id, display, name, created_at, revoked_at, last_used_at FROM api_keys \
     WHERE id = $1 AND tenant_id = $2";
