//! [`Catalog`]: opening the database (backend by URL scheme, durability
//! check, migrations) and the pool every area's queries run on (the
//! queries are in `tenants/`, `pastes/` and `reviews/`).
//!
//! The two backends use typed pools behind an enum; each query is written
//! once (`$1` placeholders and portable SQL) and run on either pool by the
//! `with_pool!` macro. Values are only TEXT, BIGINT, BOOLEAN and BLOB/BYTEA;
//! timestamps are Unix milliseconds.

use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sqlx::migrate::{MigrateError, Migrator};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use crate::{CatalogConfig, CatalogError};

static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("../../migrations/sqlite");
static POSTGRES_MIGRATIONS: Migrator = sqlx::migrate!("../../migrations/postgres");

/// SQLite's migrator takes no lock: opens in this process take turns, and
/// a loser of a race with another process retries (see [`migrate_sqlite`]).
static SQLITE_MIGRATION_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

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
    pub(crate) key_lookups: Arc<AtomicU64>,
    /// On SQLite, review changes of this process take turns here instead of
    /// in SQLite's busy handler, which polls with growing sleeps: under
    /// concurrent writers that stretched waits past the busy timeout
    /// ("database is locked"). PostgreSQL locks the review's row instead.
    pub(crate) review_writes: Arc<tokio::sync::Mutex<()>>,
    /// Changes of this process that queued notifications (outbox rows),
    /// counted as they are written: the deliverer skips its outbox read
    /// when nothing was queued since the last one found nothing.
    pub(crate) notices_queued: Arc<AtomicU64>,
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
}

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
        notices_queued: Arc::default(),
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
        notices_queued: Arc::default(),
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
