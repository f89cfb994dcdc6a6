//! The tenant area of the catalog: tenants and their host names (this
//! file), their API keys (`keys.rs`) and their usage and quota
//! (`usage.rs`), and the purge of a deleted tenant's namespace.

mod keys;
mod usage;

use std::collections::HashMap;

use crate::catalog::with_pool;
use crate::model::{KeyInfo, Tenant, TenantSettings, TenantStatus};
use crate::{Catalog, CatalogError, KeyId, NewTenant, TenantId, TenantUpdate, now_ms};

/// How long after a tenant's deletion a purge of its namespace must have
/// begun for the namespace to count as purged: longer than any create that
/// was under way at the deletion can take (the servers bound each store
/// and catalog step by seconds).
pub const PURGE_SETTLE_MS: i64 = 60_000;

/// The refusal of a namespace still being purged.
const NAMESPACE_PURGING: &str = "this namespace belonged to a deleted tenant whose pastes are still being removed; it can be taken again a minute or two after the deletion";

/// A deleted tenant's namespace whose pastes are still to be purged from
/// the paste store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NamespacePurge {
    /// The namespace.
    pub namespace: String,
    /// The deleted tenant's id (for logs).
    pub tenant_id: String,
    /// When the tenant was deleted, Unix ms.
    pub requested_at: i64,
}

/// `last_used_at` is written at most this often per key.
const LAST_USED_RESOLUTION_MS: i64 = 60_000;

#[derive(sqlx::FromRow)]
struct TenantRow {
    id: String,
    name: String,
    namespace: String,
    cors_origins: String,
    max_paste_size: i64,
    default_ttl_secs: i64,
    max_ttl_secs: i64,
    quota_bytes: i64,
    quota_pastes: i64,
    rate_per_sec: i64,
    rate_burst: i64,
    id_length: i64,
    allow_anonymous: bool,
    status: String,
    created_at: i64,
    updated_at: i64,
    review_max_links: i64,
    review_max_versions: i64,
    notify_private_targets: bool,
}

impl TenantRow {
    fn into_tenant(self, hosts: Vec<String>) -> Result<Tenant, CatalogError> {
        let cors_origins: Vec<String> =
            serde_json::from_str(&self.cors_origins).map_err(|e| CatalogError::Internal {
                reason: "cors_origins is not a JSON array of strings".into(),
                source: Some(Box::new(e)),
            })?;
        Ok(Tenant {
            id: TenantId::from_db(self.id),
            name: self.name,
            namespace: self.namespace,
            settings: TenantSettings {
                hosts,
                cors_origins,
                max_paste_size: self.max_paste_size,
                default_ttl_secs: self.default_ttl_secs,
                max_ttl_secs: self.max_ttl_secs,
                quota_bytes: self.quota_bytes,
                quota_pastes: self.quota_pastes,
                rate_per_sec: self.rate_per_sec,
                rate_burst: self.rate_burst,
                id_length: self.id_length,
                allow_anonymous: self.allow_anonymous,
                review_max_links: self.review_max_links,
                review_max_versions: self.review_max_versions,
                notify_private_targets: self.notify_private_targets,
            },
            status: TenantStatus::from_db(&self.status)?,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

#[derive(sqlx::FromRow)]
struct KeyRow {
    id: String,
    tenant_id: String,
    display: String,
    name: String,
    created_at: i64,
    revoked_at: Option<i64>,
    last_used_at: Option<i64>,
}

impl From<KeyRow> for KeyInfo {
    fn from(r: KeyRow) -> Self {
        KeyInfo {
            id: KeyId::from_db(r.id),
            tenant_id: TenantId::from_db(r.tenant_id),
            display: r.display,
            name: r.name,
            created_at: r.created_at,
            revoked_at: r.revoked_at,
            last_used_at: r.last_used_at,
        }
    }
}

#[derive(sqlx::FromRow)]
struct AuthRow {
    id: String,
    tenant_id: String,
    last_used_at: Option<i64>,
}

#[derive(sqlx::FromRow)]
struct AllUsageRow {
    tenant_id: String,
    bytes: i64,
    pastes: i64,
    requests: i64,
    tenants: i64,
}

#[derive(sqlx::FromRow)]
struct UsageRow {
    bytes: i64,
    pastes: i64,
    requests: i64,
}

#[cfg(test)]
const TENANT_COLUMNS: &str = "id, name, namespace, cors_origins, max_paste_size, default_ttl_secs, \
     max_ttl_secs, quota_bytes, quota_pastes, rate_per_sec, rate_burst, id_length, \
     allow_anonymous, status, created_at, updated_at, review_max_links, review_max_versions, \
     notify_private_targets";

const SELECT_TENANT: &str = "SELECT id, name, namespace, cors_origins, max_paste_size, \
     default_ttl_secs, max_ttl_secs, quota_bytes, quota_pastes, rate_per_sec, rate_burst, \
     id_length, allow_anonymous, status, created_at, updated_at, review_max_links, review_max_versions, \
     notify_private_targets FROM tenants WHERE id = $1";
const SELECT_TENANTS: &str = "SELECT id, name, namespace, cors_origins, max_paste_size, \
     default_ttl_secs, max_ttl_secs, quota_bytes, quota_pastes, rate_per_sec, rate_burst, \
     id_length, allow_anonymous, status, created_at, updated_at, review_max_links, review_max_versions, \
     notify_private_targets FROM tenants ORDER BY created_at, id";
const INSERT_TENANT: &str = "INSERT INTO tenants (id, name, namespace, cors_origins, \
     max_paste_size, default_ttl_secs, max_ttl_secs, quota_bytes, quota_pastes, rate_per_sec, \
     rate_burst, id_length, allow_anonymous, status, created_at, updated_at, review_max_links, \
     review_max_versions, notify_private_targets) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 'active', $14, $14, $15, $16, $17)";
const UPDATE_TENANT: &str = "UPDATE tenants SET name = $2, cors_origins = $3, \
     max_paste_size = $4, default_ttl_secs = $5, max_ttl_secs = $6, quota_bytes = $7, \
     quota_pastes = $8, rate_per_sec = $9, rate_burst = $10, id_length = $11, \
     allow_anonymous = $12, updated_at = $13, review_max_links = $14, review_max_versions = $15, \
     notify_private_targets = $16 WHERE id = $1";
const SELECT_HOSTS: &str = "SELECT host FROM tenant_hosts WHERE tenant_id = $1 ORDER BY host";
const INSERT_HOST: &str = "INSERT INTO tenant_hosts (host, tenant_id) VALUES ($1, $2)";
#[cfg(test)]
const KEY_COLUMNS: &str =
    "SELECT id, tenant_id, display, name, created_at, revoked_at, last_used_at FROM api_keys";

fn json(v: &[String]) -> Result<String, CatalogError> {
    serde_json::to_string(v).map_err(|e| CatalogError::Internal {
        reason: "cannot encode a list as JSON".into(),
        source: Some(Box::new(e)),
    })
}

impl Catalog {
    // ---- tenants -------------------------------------------------------

    /// Creates a tenant (active, usage zero). Namespace or host already
    /// taken → [`CatalogError::Conflict`]; the namespace of a deleted tenant
    /// whose pastes are not purged yet → [`CatalogError::Protected`].
    pub async fn create_tenant(&self, new: &NewTenant) -> Result<Tenant, CatalogError> {
        let mut new = new.clone();
        new.validate()?;
        let id = TenantId::generate()?;
        let now = now_ms();
        let s = &new.settings;
        let cors = json(&s.cors_origins)?;
        with_pool!(self, p => {
            let mut tx = p.begin().await?;
            sqlx::query(INSERT_TENANT)
                .bind(id.as_str())
                .bind(&new.name)
                .bind(&new.namespace)
                .bind(&cors)
                .bind(s.max_paste_size)
                .bind(s.default_ttl_secs)
                .bind(s.max_ttl_secs)
                .bind(s.quota_bytes)
                .bind(s.quota_pastes)
                .bind(s.rate_per_sec)
                .bind(s.rate_burst)
                .bind(s.id_length)
                .bind(s.allow_anonymous)
                .bind(now)
                .bind(s.review_max_links)
                .bind(s.review_max_versions)
                .bind(s.notify_private_targets)
                .execute(&mut *tx)
                .await?;
            // After the insert, which waits for a deletion of the namespace's
            // last tenant still in progress, and so sees its purge row.
            let purging: Option<String> =
                sqlx::query_scalar("SELECT namespace FROM namespace_purges WHERE namespace = $1")
                    .bind(&new.namespace)
                    .fetch_optional(&mut *tx)
                    .await?;
            if purging.is_some() {
                tx.rollback().await?;
                return Err(CatalogError::Protected(NAMESPACE_PURGING));
            }
            for host in &s.hosts {
                sqlx::query(INSERT_HOST).bind(host).bind(id.as_str()).execute(&mut *tx).await?;
            }
            sqlx::query("INSERT INTO usage (tenant_id, bytes, pastes, requests) VALUES ($1, 0, 0, 0)")
                .bind(id.as_str())
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
        });
        tracing::info!(tenant.id = %id, "tenant created");
        Ok(Tenant {
            id,
            name: new.name,
            namespace: new.namespace,
            settings: new.settings,
            status: TenantStatus::Active,
            created_at: now,
            updated_at: now,
        })
    }

    /// The tenant `id`.
    pub async fn tenant(&self, id: &TenantId) -> Result<Tenant, CatalogError> {
        let (row, hosts) = with_pool!(self, p => {
            let row: Option<TenantRow> =
                sqlx::query_as(SELECT_TENANT).bind(id.as_str()).fetch_optional(p).await?;
            let hosts: Vec<String> =
                sqlx::query_scalar(SELECT_HOSTS).bind(id.as_str()).fetch_all(p).await?;
            (row, hosts)
        });
        row.ok_or(CatalogError::NotFound)?.into_tenant(hosts)
    }

    /// The default tenant (namespace `default`), which anonymous clients use.
    pub async fn default_tenant(&self) -> Result<Tenant, CatalogError> {
        self.tenant(&TenantId::default_tenant()).await
    }

    /// Every tenant, oldest first.
    pub async fn list_tenants(&self) -> Result<Vec<Tenant>, CatalogError> {
        let (rows, hosts) = with_pool!(self, p => {
            let rows: Vec<TenantRow> = sqlx::query_as(SELECT_TENANTS).fetch_all(p).await?;
            let hosts: Vec<(String, String)> =
                sqlx::query_as("SELECT tenant_id, host FROM tenant_hosts ORDER BY host")
                    .fetch_all(p)
                    .await?;
            (rows, hosts)
        });
        let mut by_tenant: HashMap<String, Vec<String>> = HashMap::new();
        for (tenant, host) in hosts {
            by_tenant.entry(tenant).or_default().push(host);
        }
        rows.into_iter()
            .map(|r| {
                let hosts = by_tenant.remove(&r.id).unwrap_or_default();
                r.into_tenant(hosts)
            })
            .collect()
    }

    /// The tenant a request's `Host` maps to, if any (case-insensitive;
    /// disabled tenants are returned too, with their status).
    pub async fn tenant_by_host(&self, host: &str) -> Result<Option<Tenant>, CatalogError> {
        let host = host.trim().to_ascii_lowercase();
        let id: Option<String> = with_pool!(self, p => sqlx::query_scalar(
            "SELECT tenant_id FROM tenant_hosts WHERE host = $1")
            .bind(&host)
            .fetch_optional(p)
            .await?);
        match id {
            None => Ok(None),
            Some(id) => match self.tenant(&TenantId::from_db(id)).await {
                Ok(t) => Ok(Some(t)),
                Err(CatalogError::NotFound) => Ok(None), // deleted in between
                Err(e) => Err(e),
            },
        }
    }

    /// Changes the fields `update` sets and returns the tenant as stored.
    pub async fn update_tenant(
        &self,
        id: &TenantId,
        update: &TenantUpdate,
    ) -> Result<Tenant, CatalogError> {
        update.validate_name()?;
        let now = now_ms();
        let tenant = with_pool!(self, p => {
            let mut tx = p.begin().await?;
            // The write first: it takes the row's lock on PostgreSQL and the
            // write lock on SQLite before the read, so two updates of one
            // tenant run one after the other — neither puts back a field
            // the other changed, and SQLite never fails the second with
            // SQLITE_BUSY by upgrading a read made before the first committed.
            let locked = sqlx::query("UPDATE tenants SET updated_at = $2 WHERE id = $1")
                .bind(id.as_str())
                .bind(now)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if locked == 0 {
                return Err(CatalogError::NotFound);
            }
            let row: Option<TenantRow> =
                sqlx::query_as(SELECT_TENANT).bind(id.as_str()).fetch_optional(&mut *tx).await?;
            let hosts: Vec<String> =
                sqlx::query_scalar(SELECT_HOSTS).bind(id.as_str()).fetch_all(&mut *tx).await?;
            let mut tenant = row.ok_or(CatalogError::NotFound)?.into_tenant(hosts)?;
            if let Some(name) = &update.name {
                tenant.name = name.clone();
            }
            tenant.settings.apply(update);
            tenant.settings.validate()?;
            tenant.updated_at = now;
            let s = &tenant.settings;
            sqlx::query(UPDATE_TENANT)
                .bind(id.as_str())
                .bind(&tenant.name)
                .bind(json(&s.cors_origins)?)
                .bind(s.max_paste_size)
                .bind(s.default_ttl_secs)
                .bind(s.max_ttl_secs)
                .bind(s.quota_bytes)
                .bind(s.quota_pastes)
                .bind(s.rate_per_sec)
                .bind(s.rate_burst)
                .bind(s.id_length)
                .bind(s.allow_anonymous)
                .bind(now)
                .bind(s.review_max_links)
                .bind(s.review_max_versions)
                .bind(s.notify_private_targets)
                .execute(&mut *tx)
                .await?;
            if update.hosts.is_some() {
                sqlx::query("DELETE FROM tenant_hosts WHERE tenant_id = $1")
                    .bind(id.as_str())
                    .execute(&mut *tx)
                    .await?;
                for host in &s.hosts {
                    sqlx::query(INSERT_HOST).bind(host).bind(id.as_str()).execute(&mut *tx).await?;
                }
            }
            tx.commit().await?;
            tenant
        });
        Ok(tenant)
    }

    async fn set_status(&self, id: &TenantId, status: TenantStatus) -> Result<(), CatalogError> {
        let done = with_pool!(self, p => sqlx::query(
            "UPDATE tenants SET status = $2, updated_at = $3 WHERE id = $1")
            .bind(id.as_str())
            .bind(status.as_str())
            .bind(now_ms())
            .execute(p)
            .await?
            .rows_affected());
        if done == 0 {
            return Err(CatalogError::NotFound);
        }
        tracing::info!(tenant.id = %id, tenant.status = status.as_str(), "tenant status changed");
        Ok(())
    }

    /// Disables a tenant: its keys stop authenticating, its data is kept.
    pub async fn disable_tenant(&self, id: &TenantId) -> Result<(), CatalogError> {
        self.set_status(id, TenantStatus::Disabled).await
    }

    /// Re-enables a disabled tenant.
    pub async fn enable_tenant(&self, id: &TenantId) -> Result<(), CatalogError> {
        self.set_status(id, TenantStatus::Active).await
    }

    /// Deletes a tenant with its hosts, keys, usage, paste index and
    /// Idempotency-Key records, and records its namespace as to be purged
    /// ([`Catalog::namespace_purges`]) in the same transaction: from the
    /// commit on no key or host reaches the namespace, and no new tenant can
    /// take it until its pastes are gone from the store. Returns the
    /// namespace. The default tenant cannot be deleted.
    pub async fn delete_tenant(&self, id: &TenantId) -> Result<String, CatalogError> {
        if id.is_default() {
            return Err(CatalogError::Protected(
                "the default tenant cannot be deleted",
            ));
        }
        let now = now_ms();
        let namespace = with_pool!(self, p => {
            let mut tx = p.begin().await?;
            let namespace: Option<String> =
                sqlx::query_scalar("DELETE FROM tenants WHERE id = $1 RETURNING namespace")
                    .bind(id.as_str())
                    .fetch_optional(&mut *tx)
                    .await?;
            if let Some(namespace) = &namespace {
                sqlx::query(
                    "INSERT INTO namespace_purges (namespace, tenant_id, requested_at) \
                     VALUES ($1, $2, $3) ON CONFLICT (namespace) DO UPDATE \
                     SET tenant_id = excluded.tenant_id, requested_at = excluded.requested_at",
                )
                .bind(namespace)
                .bind(id.as_str())
                .bind(now)
                .execute(&mut *tx)
                .await?;
            }
            tx.commit().await?;
            namespace
        });
        let Some(namespace) = namespace else {
            return Err(CatalogError::NotFound);
        };
        tracing::info!(tenant.id = %id, "tenant deleted; its pastes are to be purged");
        Ok(namespace)
    }

    /// Namespaces of deleted tenants whose pastes are still to be purged,
    /// oldest deletion first.
    pub async fn namespace_purges(&self) -> Result<Vec<NamespacePurge>, CatalogError> {
        let rows: Vec<(String, String, i64)> = with_pool!(self, p => sqlx::query_as(
            "SELECT namespace, tenant_id, requested_at FROM namespace_purges \
             ORDER BY requested_at, namespace",
        )
        .fetch_all(p)
        .await?);
        Ok(rows
            .into_iter()
            .map(|(namespace, tenant_id, requested_at)| NamespacePurge {
                namespace,
                tenant_id,
                requested_at,
            })
            .collect())
    }

    /// Records that `purge`'s namespace was purged (the store reported no
    /// paste left). The row goes, and the namespace may be taken again,
    /// only if the purge began at least [`PURGE_SETTLE_MS`] after the
    /// deletion (`purge_started`, Unix ms): creates that were under way at
    /// the deletion have ended by then. Returns whether the row went.
    pub async fn finish_namespace_purge(
        &self,
        purge: &NamespacePurge,
        purge_started: i64,
    ) -> Result<bool, CatalogError> {
        if purge_started < purge.requested_at.saturating_add(PURGE_SETTLE_MS) {
            return Ok(false);
        }
        let done = with_pool!(self, p => sqlx::query(
            "DELETE FROM namespace_purges WHERE namespace = $1 AND requested_at = $2",
        )
        .bind(&purge.namespace)
        .bind(purge.requested_at)
        .execute(p)
        .await?
        .rows_affected());
        if done > 0 {
            tracing::info!(tenant.id = %purge.tenant_id, "a deleted tenant's pastes are purged");
        }
        Ok(done > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::keys::{KEY_BY_ID, KEYS_BY_TENANT};
    use super::*;

    #[test]
    fn tenant_columns_match_the_select() {
        assert!(SELECT_TENANT.contains(TENANT_COLUMNS));
        assert!(SELECT_TENANTS.contains(TENANT_COLUMNS));
        assert!(KEYS_BY_TENANT.starts_with(KEY_COLUMNS));
        assert!(KEY_BY_ID.starts_with(KEY_COLUMNS));
    }
}
