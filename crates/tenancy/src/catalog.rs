//! [`Catalog`]: opening the database (backend by URL scheme, durability
//! check, migrations) and every catalog query.
//!
//! The two backends use typed pools behind an enum; each query is written
//! once (`$1` placeholders and portable SQL) and run on either pool by the
//! `with_pool!` macro. Values are only TEXT, BIGINT, BOOLEAN and BLOB/BYTEA;
//! timestamps are Unix milliseconds.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sqlx::migrate::{MigrateError, Migrator};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use crate::model::{KeyInfo, Tenant, TenantSettings, TenantStatus};
use crate::{
    ApiKey, CatalogConfig, CatalogError, CreatedKey, KeyId, NewTenant, TenantId, TenantUpdate,
    Usage, now_ms,
};

static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("../../migrations/sqlite");
static POSTGRES_MIGRATIONS: Migrator = sqlx::migrate!("../../migrations/postgres");

/// SQLite's migrator takes no lock: opens in this process take turns, and
/// a loser of a race with another process retries (see [`migrate_sqlite`]).
static SQLITE_MIGRATION_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

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

/// Which database a catalog runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// An SQLite file (the self-hosted default).
    Sqlite,
    /// A PostgreSQL database (hosted, shared by replicas).
    Postgres,
}

impl Backend {
    /// The URL schemes accepted in [`CatalogConfig::url`], for error messages.
    pub const SCHEMES: &'static [&'static str] = &["sqlite://", "postgres://", "postgresql://"];

    /// Short name for logs and metrics.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) enum Pool {
    Sqlite(SqlitePool),
    Postgres(PgPool),
}

/// Runs `$body` with `$p` bound to the typed pool, whichever it is.
macro_rules! with_pool {
    ($self:expr, $p:ident => $body:expr) => {
        match &$self.pool {
            $crate::catalog::Pool::Sqlite($p) => $body,
            $crate::catalog::Pool::Postgres($p) => $body,
        }
    };
}
/// For the other `impl Catalog` blocks of the crate (`pastes.rs`).
pub(crate) use with_pool;

/// The tenant catalog. Cheap to clone (the pool is shared).
#[derive(Clone, Debug)]
pub struct Catalog {
    pub(crate) pool: Pool,
    key_lookups: Arc<AtomicU64>,
    /// On SQLite, review changes of this process take turns here instead of
    /// in SQLite's busy handler, which polls with growing sleeps: under
    /// concurrent writers that stretched waits past the busy timeout
    /// ("database is locked"). PostgreSQL locks the review's row instead.
    pub(crate) review_writes: Arc<tokio::sync::Mutex<()>>,
}

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
     allow_anonymous, status, created_at, updated_at, review_max_links, review_max_versions";

const SELECT_TENANT: &str = "SELECT id, name, namespace, cors_origins, max_paste_size, \
     default_ttl_secs, max_ttl_secs, quota_bytes, quota_pastes, rate_per_sec, rate_burst, \
     id_length, allow_anonymous, status, created_at, updated_at, review_max_links, review_max_versions \
     FROM tenants WHERE id = $1";
const SELECT_TENANTS: &str = "SELECT id, name, namespace, cors_origins, max_paste_size, \
     default_ttl_secs, max_ttl_secs, quota_bytes, quota_pastes, rate_per_sec, rate_burst, \
     id_length, allow_anonymous, status, created_at, updated_at, review_max_links, review_max_versions \
     FROM tenants ORDER BY created_at, id";
const INSERT_TENANT: &str = "INSERT INTO tenants (id, name, namespace, cors_origins, \
     max_paste_size, default_ttl_secs, max_ttl_secs, quota_bytes, quota_pastes, rate_per_sec, \
     rate_burst, id_length, allow_anonymous, status, created_at, updated_at, review_max_links, \
     review_max_versions) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 'active', $14, $14, $15, $16)";
const UPDATE_TENANT: &str = "UPDATE tenants SET name = $2, cors_origins = $3, \
     max_paste_size = $4, default_ttl_secs = $5, max_ttl_secs = $6, quota_bytes = $7, \
     quota_pastes = $8, rate_per_sec = $9, rate_burst = $10, id_length = $11, \
     allow_anonymous = $12, updated_at = $13, review_max_links = $14, review_max_versions = $15 \
     WHERE id = $1";
const SELECT_HOSTS: &str = "SELECT host FROM tenant_hosts WHERE tenant_id = $1 ORDER BY host";
const INSERT_HOST: &str = "INSERT INTO tenant_hosts (host, tenant_id) VALUES ($1, $2)";
#[cfg(test)]
const KEY_COLUMNS: &str =
    "SELECT id, tenant_id, display, name, created_at, revoked_at, last_used_at FROM api_keys";

/// Reserves one paste of `$1` bytes for tenant `$2` if it fits the tenant's
/// quotas (one guarded `UPDATE`; no row changed = over quota or no tenant).
/// Shared by [`Catalog::reserve`] and [`Catalog::record_paste`].
pub(crate) const RESERVE_USAGE: &str = "UPDATE usage SET bytes = bytes + $1, pastes = pastes + 1 \
     WHERE tenant_id = $2 \
     AND bytes + $1 <= (SELECT quota_bytes FROM tenants WHERE id = $2) \
     AND pastes + 1 <= (SELECT quota_pastes FROM tenants WHERE id = $2)";

/// Gives back one paste of `$1` bytes of tenant `$2`, never below zero.
/// Shared by [`Catalog::release`] and [`Catalog::forget_paste`].
pub(crate) const RELEASE_USAGE: &str = "UPDATE usage SET bytes = CASE WHEN bytes >= $1 THEN bytes - $1 ELSE 0 END, \
     pastes = CASE WHEN pastes >= 1 THEN pastes - 1 ELSE 0 END \
     WHERE tenant_id = $2";

fn json(v: &[String]) -> Result<String, CatalogError> {
    serde_json::to_string(v).map_err(|e| CatalogError::Internal {
        reason: "cannot encode a list as JSON".into(),
        source: Some(Box::new(e)),
    })
}

fn migrate_error(e: MigrateError) -> CatalogError {
    match e {
        MigrateError::Execute(e) => CatalogError::from(e),
        other => CatalogError::Internal {
            reason: "cannot apply the catalog migrations".into(),
            source: Some(Box::new(other)),
        },
    }
}

impl Catalog {
    /// Opens the catalog `config.url` names (`sqlite://…` or `postgres://…`),
    /// checks that the database makes commits durable (refusing otherwise
    /// unless `allow_unsafe_durability`), and applies the embedded migrations.
    /// Concurrent opens of one empty database are safe: the migrations run once.
    pub async fn open(config: &CatalogConfig) -> Result<Catalog, CatalogError> {
        let url = config.url.trim();
        let scheme = url.split(':').next().unwrap_or_default();
        let catalog = match scheme {
            "sqlite" => open_sqlite_racing(url, config).await?,
            "postgres" | "postgresql" => {
                let catalog = open_postgres(url, config).await?;
                catalog.check_durability(config).await?;
                catalog
            }
            _ => {
                return Err(CatalogError::Invalid(format!(
                    "unsupported catalog URL scheme {scheme:?}: valid schemes are {}",
                    Backend::SCHEMES.join(", ")
                )));
            }
        };
        catalog.migrate().await?;
        tracing::info!(
            catalog.backend = catalog.backend().name(),
            "tenant catalog ready"
        );
        Ok(catalog)
    }

    /// Which database this catalog runs on.
    pub fn backend(&self) -> Backend {
        match self.pool {
            Pool::Sqlite(_) => Backend::Sqlite,
            Pool::Postgres(_) => Backend::Postgres,
        }
    }

    /// How many key lookups ([`authenticate`](Self::authenticate)) reached the
    /// database since open; for tests that assert malformed keys never do.
    pub fn key_lookups(&self) -> u64 {
        self.key_lookups.load(Ordering::Relaxed)
    }

    /// Checks that the database answers.
    pub async fn health(&self) -> Result<(), CatalogError> {
        with_pool!(self, p => {
            sqlx::query("SELECT 1").execute(p).await?;
        });
        Ok(())
    }

    /// Closes the pool, waiting for checked-out connections to return.
    pub async fn close(&self) {
        with_pool!(self, p => p.close().await);
    }

    /// The database settings the catalog relies on, as the database reports
    /// them: SQLite `synchronous`, `journal_mode`, `foreign_keys`,
    /// `busy_timeout`; Postgres `fsync`, `synchronous_commit`,
    /// `statement_timeout`. For start-up logs, `check-config` and tests.
    pub async fn db_settings(&self) -> Result<Vec<(&'static str, String)>, CatalogError> {
        let mut out = Vec::new();
        match &self.pool {
            Pool::Sqlite(p) => {
                let mut conn = p.acquire().await?;
                for (name, sql) in [
                    ("synchronous", "PRAGMA synchronous"),
                    ("journal_mode", "PRAGMA journal_mode"),
                    ("foreign_keys", "PRAGMA foreign_keys"),
                    ("busy_timeout", "PRAGMA busy_timeout"),
                ] {
                    let row = sqlx::query(sql).fetch_one(&mut *conn).await?;
                    let value = sqlx::Row::try_get::<i64, _>(&row, 0)
                        .map(|v| v.to_string())
                        .or_else(|_| sqlx::Row::try_get::<String, _>(&row, 0))?;
                    out.push((name, value));
                }
            }
            Pool::Postgres(p) => {
                let mut conn = p.acquire().await?;
                for (name, sql) in [
                    ("fsync", "SHOW fsync"),
                    ("synchronous_commit", "SHOW synchronous_commit"),
                    ("statement_timeout", "SHOW statement_timeout"),
                ] {
                    out.push((name, sqlx::query_scalar(sql).fetch_one(&mut *conn).await?));
                }
            }
        }
        Ok(out)
    }

    async fn check_durability(&self, config: &CatalogConfig) -> Result<(), CatalogError> {
        let problem = match &self.pool {
            Pool::Sqlite(p) => {
                let mut conn = p.acquire().await?;
                let sync: i64 = sqlx::query_scalar("PRAGMA synchronous")
                    .fetch_one(&mut *conn)
                    .await?;
                let journal: String = sqlx::query_scalar("PRAGMA journal_mode")
                    .fetch_one(&mut *conn)
                    .await?;
                (sync != 2 || !journal.eq_ignore_ascii_case("wal")).then(|| {
                    format!("SQLite synchronous={sync} journal_mode={journal} (need 2 and wal)")
                })
            }
            Pool::Postgres(p) => {
                let fsync: String = sqlx::query_scalar("SHOW fsync").fetch_one(p).await?;
                let commit: String = sqlx::query_scalar("SHOW synchronous_commit")
                    .fetch_one(p)
                    .await?;
                (fsync != "on" || !matches!(commit.as_str(), "on" | "remote_apply")).then(|| {
                    format!("PostgreSQL fsync={fsync} synchronous_commit={commit} (need on and on)")
                })
            }
        };
        match problem {
            None => Ok(()),
            Some(p) if config.allow_unsafe_durability => {
                tracing::warn!("catalog durability is off: {p}");
                Ok(())
            }
            Some(p) => Err(CatalogError::Invalid(format!(
                "refusing to open the catalog: commits would not be durable: {p}"
            ))),
        }
    }

    async fn migrate(&self) -> Result<(), CatalogError> {
        match &self.pool {
            // sqlx's Postgres migrator holds an advisory lock while it runs.
            Pool::Postgres(p) => POSTGRES_MIGRATIONS.run(p).await.map_err(migrate_error),
            Pool::Sqlite(p) => migrate_sqlite(p).await,
        }
    }

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

    async fn tenant_exists(&self, tenant: &TenantId) -> Result<(), CatalogError> {
        let found: Option<String> = with_pool!(self, p => sqlx::query_scalar(
            "SELECT id FROM tenants WHERE id = $1")
            .bind(tenant.as_str())
            .fetch_optional(p)
            .await?);
        found.map(|_| ()).ok_or(CatalogError::NotFound)
    }

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

const KEYS_BY_TENANT: &str = "SELECT id, tenant_id, display, name, created_at, revoked_at, last_used_at FROM api_keys \
     WHERE tenant_id = $1 ORDER BY created_at, id";

const KEY_BY_ID: &str = "SELECT id, tenant_id, display, name, created_at, revoked_at, last_used_at FROM api_keys \
     WHERE id = $1 AND tenant_id = $2";

async fn open_sqlite(url: &str, config: &CatalogConfig) -> Result<Catalog, CatalogError> {
    let options = SqliteConnectOptions::from_str(url)
        .map_err(|_| CatalogError::Invalid("invalid SQLite catalog URL".into()))?
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Full)
        .foreign_keys(true)
        .busy_timeout(Duration::from_millis(config.busy_timeout_ms));
    // The directory the file is to live in is created, as for every other
    // path a setting names; a file that cannot be opened is a configuration
    // problem with its path and reason, not a passing outage.
    let file = options.get_filename().to_owned();
    let on_disk = !file.as_os_str().is_empty() && file.as_os_str() != ":memory:";
    if on_disk && let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            CatalogError::Invalid(format!(
                "cannot create the directory of the SQLite catalog {}: {e}",
                dir.display()
            ))
        })?;
    }
    let pool = SqlitePoolOptions::new()
        .max_connections(config.max_connections.max(1))
        .acquire_timeout(Duration::from_millis(config.acquire_timeout_ms))
        .connect_with(options)
        .await
        .map_err(|e| match &e {
            // SQLITE_CANTOPEN (14) and SQLITE_PERM (3), SQLITE_READONLY (8):
            // the file itself is the problem.
            sqlx::Error::Database(db) if matches!(db.code().as_deref(), Some("14" | "3" | "8")) => {
                CatalogError::Invalid(format!(
                    "cannot open the SQLite catalog {}: {e}",
                    file.display()
                ))
            }
            _ => CatalogError::from(e),
        })?;
    Ok(Catalog {
        pool: Pool::Sqlite(pool),
        key_lookups: Arc::default(),
        review_writes: Arc::default(),
    })
}

async fn open_postgres(url: &str, config: &CatalogConfig) -> Result<Catalog, CatalogError> {
    let options = PgConnectOptions::from_str(url)
        .map_err(|_| CatalogError::Invalid("invalid PostgreSQL catalog URL".into()))?
        // Sent in the startup packet of every connection.
        .options([("statement_timeout", config.statement_timeout_ms)]);
    let connect = PgPoolOptions::new()
        .max_connections(config.max_connections.max(1))
        .acquire_timeout(Duration::from_millis(config.acquire_timeout_ms))
        .connect_with(options);
    let pool = tokio::time::timeout(Duration::from_millis(config.connect_timeout_ms), connect)
        .await
        .map_err(|_| {
            CatalogError::unavailable("timed out connecting to the PostgreSQL catalog")
        })??;
    Ok(Catalog {
        pool: Pool::Postgres(pool),
        key_lookups: Arc::default(),
        review_writes: Arc::default(),
    })
}

/// Opens a SQLite catalog and checks its durability settings. Processes that
/// open one new database at the same moment race to switch it to WAL, and
/// SQLite answers the losers "database is locked" at once (no busy wait
/// applies to that switch), so a busy open is retried for a few seconds.
async fn open_sqlite_racing(url: &str, config: &CatalogConfig) -> Result<Catalog, CatalogError> {
    let mut attempt = 0;
    loop {
        let opened = match open_sqlite(url, config).await {
            Ok(catalog) => match catalog.check_durability(config).await {
                Ok(()) => Ok(catalog),
                Err(e) => {
                    catalog.close().await;
                    Err(e)
                }
            },
            Err(e) => Err(e),
        };
        match opened {
            Err(CatalogError::Unavailable { .. }) if attempt < 20 => {
                attempt += 1;
                tracing::debug!(attempt, "the SQLite catalog is busy; opening it again");
                tokio::time::sleep(Duration::from_millis(25 * attempt)).await;
            }
            other => return other,
        }
    }
}

/// Applies the SQLite migrations. The migrator takes no lock on SQLite, so
/// opens in this process take turns; a race lost to another process (a
/// migration's transaction fails because the other applied it first, or the
/// database is busy) rolls back and is retried, and the retry finds the
/// migration applied.
async fn migrate_sqlite(pool: &SqlitePool) -> Result<(), CatalogError> {
    let _turn = SQLITE_MIGRATION_LOCK.lock().await;
    let mut attempt = 0;
    loop {
        match SQLITE_MIGRATIONS.run(pool).await {
            Ok(()) => return Ok(()),
            Err(e) if attempt < 20 && !matches!(e, MigrateError::VersionMismatch(_)) => {
                attempt += 1;
                tracing::debug!(error = %e, attempt, "retrying the catalog migrations");
                tokio::time::sleep(Duration::from_millis(50 * attempt)).await;
            }
            Err(e) => return Err(migrate_error(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenant_columns_match_the_select() {
        assert!(SELECT_TENANT.contains(TENANT_COLUMNS));
        assert!(SELECT_TENANTS.contains(TENANT_COLUMNS));
        assert!(KEYS_BY_TENANT.starts_with(KEY_COLUMNS));
        assert!(KEY_BY_ID.starts_with(KEY_COLUMNS));
    }
}
