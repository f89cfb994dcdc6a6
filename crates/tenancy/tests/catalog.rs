//! The catalog conformance suite on SQLite and PostgreSQL in the same run,
//! plus the check that no API key plaintext is stored in any form.

// Helpers outside `#[test]` functions unwrap too: a failed step is a failed test.
#![allow(clippy::unwrap_used)]

use tenancy::conformance::{self, env};
use tenancy::{Backend, Catalog, CatalogConfig, CatalogError};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_catalog_conforms() {
    let db = env::sqlite();
    let catalog = db.open().await;
    assert_eq!(catalog.backend(), Backend::Sqlite);
    conformance::run(&catalog).await;
    catalog.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_catalog_conforms() {
    let Some(db) = env::postgres().await else {
        return;
    };
    let catalog = db.open().await;
    assert_eq!(catalog.backend(), Backend::Postgres);
    conformance::run(&catalog).await;
    catalog.close().await;
}

/// Two catalogs on one database act as two replicas (separate pools).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_burn_after_read_claims_hold_across_catalogs() {
    let db = env::sqlite();
    let (a, b) = (db.open().await, db.open().await);
    conformance::burn_after_read_claims_are_won_once(&a, &b).await;
    a.close().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_burn_after_read_claims_hold_across_catalogs() {
    let Some(db) = env::postgres().await else {
        return;
    };
    let (a, b) = (db.open().await, db.open().await);
    assert_eq!(a.backend(), Backend::Postgres);
    conformance::burn_after_read_claims_are_won_once(&a, &b).await;
    a.close().await;
    b.close().await;
}

/// Review notices: on PostgreSQL a change made through one catalog reaches
/// the notices of another (two replicas); SQLite has none.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_has_no_review_notices() {
    let db = env::sqlite();
    let (a, b) = (db.open().await, db.open().await);
    conformance::review_notices_reach_other_catalogs(&a, &b).await;
    a.close().await;
    b.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_review_notices_reach_other_catalogs() {
    let Some(db) = env::postgres().await else {
        return;
    };
    let (a, b) = (db.open().await, db.open().await);
    assert_eq!(a.backend(), Backend::Postgres);
    conformance::review_notices_reach_other_catalogs(&a, &b).await;
    a.close().await;
    b.close().await;
}

/// A lost listening connection is re-made and reported as `Resync`, and
/// notices flow again after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_review_notices_resync_after_a_lost_connection() {
    let Some(db) = env::postgres().await else {
        return;
    };
    let catalog = db.open().await;
    let mut rx = catalog.review_notices().await.unwrap().unwrap();
    use sqlx::Connection as _;
    let mut admin = sqlx::PgConnection::connect(&db.config.url).await.unwrap();
    let killed: Vec<bool> = sqlx::query_scalar(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
         WHERE datname = current_database() AND query LIKE 'LISTEN %'",
    )
    .fetch_all(&mut admin)
    .await
    .unwrap();
    assert_eq!(killed, [true], "one listening connection");
    let wait = std::time::Duration::from_secs(10);
    let first = tokio::time::timeout(wait, rx.recv()).await.unwrap();
    assert_eq!(first, Some(tenancy::ReviewNotice::Resync));
    // Listening again: a change is announced.
    let t = catalog
        .create_tenant(&conformance::new_tenant("resync"))
        .await
        .unwrap();
    let review = tenancy::NewReview {
        id: "resync01".into(),
        owner_digest: [7; 32],
        created_at: 1,
        expires_at: i64::MAX,
        digest: "d1".into(),
        blob: tenancy::BlobRef {
            blob: "v1".into(),
            bytes: 1,
        },
    };
    catalog
        .create_review(&t.id, &review)
        .await
        .unwrap()
        .unwrap();
    let next = tokio::time::timeout(wait, rx.recv()).await.unwrap();
    assert_eq!(
        next,
        Some(tenancy::ReviewNotice::Changed {
            tenant: t.id.clone(),
            review: "resync01".into(),
            seq: 1
        })
    );
    drop(admin);
    catalog.close().await;
}

#[tokio::test]
async fn unknown_url_schemes_name_the_valid_ones() {
    let err = Catalog::open(&CatalogConfig::new("mysql://u:s3cret@h/db"))
        .await
        .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, CatalogError::Invalid(_)), "{err:?}");
    assert!(
        msg.contains("sqlite://") && msg.contains("postgres://"),
        "{msg}"
    );
    assert!(!msg.contains("s3cret"), "{msg}");
}

#[tokio::test]
async fn an_unreachable_postgres_is_unavailable_not_not_found() {
    let config = CatalogConfig {
        acquire_timeout_ms: 300,
        connect_timeout_ms: 500,
        ..CatalogConfig::new("postgres://u:s3cret@127.0.0.1:1/db")
    };
    let err = Catalog::open(&config).await.unwrap_err();
    assert!(err.is_retryable(), "{err:?}");
    assert!(!format!("{err:?}").contains("s3cret"));
}

fn setting<'a>(settings: &'a [(&'static str, String)], name: &str) -> &'a str {
    settings
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no setting {name}"))
}

#[tokio::test]
async fn sqlite_opens_with_durable_settings() {
    let db = env::sqlite();
    let catalog = db.open().await;
    let s = catalog.db_settings().await.unwrap();
    assert_eq!(setting(&s, "synchronous"), "2", "FULL");
    assert_eq!(setting(&s, "journal_mode"), "wal");
    assert_eq!(setting(&s, "foreign_keys"), "1");
    assert_eq!(setting(&s, "busy_timeout"), "5000");
    // Re-open the same file: migrations are already applied.
    let again = db.open().await;
    again.health().await.unwrap();
    catalog.close().await;
    again.close().await;
}

#[tokio::test]
async fn postgres_sessions_are_durable_and_have_the_statement_timeout() {
    let Some(db) = env::postgres().await else {
        return;
    };
    let catalog = db.open().await;
    let s = catalog.db_settings().await.unwrap();
    assert_eq!(setting(&s, "fsync"), "on");
    assert_eq!(setting(&s, "synchronous_commit"), "on");
    assert_eq!(setting(&s, "statement_timeout"), "5s");
    catalog.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_sqlite_database_is_unavailable() {
    let db = env::sqlite();
    let catalog = Catalog::open(&CatalogConfig {
        busy_timeout_ms: 100,
        ..db.config.clone()
    })
    .await
    .unwrap();
    let t = catalog
        .create_tenant(&conformance::new_tenant("busy"))
        .await
        .unwrap();
    use sqlx::Connection as _;
    let mut holder = sqlx::SqliteConnection::connect(&db.config.url)
        .await
        .unwrap();
    sqlx::query("BEGIN IMMEDIATE")
        .execute(&mut holder)
        .await
        .unwrap();
    let err = catalog.reserve(&t.id, 1).await.unwrap_err();
    assert!(err.is_retryable(), "busy database: {err:?}");
    sqlx::query("ROLLBACK").execute(&mut holder).await.unwrap();
    assert!(catalog.reserve(&t.id, 1).await.unwrap());
    catalog.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_statement_timeout_is_unavailable() {
    let Some(db) = env::postgres().await else {
        return;
    };
    let catalog = Catalog::open(&CatalogConfig {
        statement_timeout_ms: 200,
        ..db.config.clone()
    })
    .await
    .unwrap();
    let t = catalog
        .create_tenant(&conformance::new_tenant("slow"))
        .await
        .unwrap();
    use sqlx::Connection as _;
    let mut holder = sqlx::PgConnection::connect(&db.config.url).await.unwrap();
    let mut tx = holder.begin().await.unwrap();
    sqlx::query("SELECT * FROM usage WHERE tenant_id = $1 FOR UPDATE")
        .bind(t.id.as_str())
        .execute(&mut *tx)
        .await
        .unwrap();
    let err = catalog.reserve(&t.id, 1).await.unwrap_err();
    assert!(err.is_retryable(), "statement timeout: {err:?}");
    tx.rollback().await.unwrap();
    assert!(catalog.reserve(&t.id, 1).await.unwrap());
    catalog.close().await;
}

/// Reads every row of every table as text and hex, joined.
async fn dump_sqlite(path: &str) -> String {
    use sqlx::Connection as _;
    use sqlx::Row as _;
    let mut conn = sqlx::SqliteConnection::connect(path).await.unwrap();
    let tables: Vec<String> =
        sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table'")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    let mut out = String::new();
    for t in tables {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!("SELECT * FROM \"{t}\"")))
            .fetch_all(&mut conn)
            .await
            .unwrap();
        for row in rows {
            for i in 0..row.len() {
                let raw = row.try_get_raw(i).unwrap();
                use sqlx::ValueRef as _;
                if raw.is_null() {
                    continue;
                }
                let text: Result<String, _> = row.try_get(i);
                let bytes: Result<Vec<u8>, _> = row.try_get(i);
                let int: Result<i64, _> = row.try_get(i);
                out.push_str(&format!("{text:?}|{bytes:?}|{int:?}\n"));
            }
        }
    }
    out
}

fn secret_forms(key: &tenancy::ApiKey) -> Vec<String> {
    use base64::Engine as _;
    let full = key.expose_secret();
    let secret = key.secret_part();
    let hex: String = full.bytes().map(|b| format!("{b:02x}")).collect();
    let secret_bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(secret)
        .unwrap();
    let secret_hex: String = secret_bytes.iter().map(|b| format!("{b:02x}")).collect();
    vec![
        full.to_owned(),
        secret.to_owned(),
        hex,
        secret_hex,
        base64::engine::general_purpose::STANDARD.encode(full),
        base64::engine::general_purpose::STANDARD.encode(&secret_bytes),
    ]
}

fn assert_absent(haystack: &[u8], forms: &[String], what: &str) {
    let lower = String::from_utf8_lossy(haystack).to_lowercase();
    for form in forms {
        let needle = form.as_bytes();
        let found = haystack.windows(needle.len()).any(|w| w == needle)
            || lower.contains(&form.to_lowercase());
        assert!(!found, "{what} contains a form of the plaintext key");
    }
}

#[tokio::test]
async fn sqlite_dump_never_contains_a_plaintext_key() {
    let db = env::sqlite();
    let catalog = db.open().await;
    let t = catalog
        .create_tenant(&conformance::new_tenant("dump"))
        .await
        .unwrap();
    let created = catalog.create_key(&t.id, "dumped").await.unwrap();
    assert!(catalog.authenticate(&created.key).await.unwrap().is_some());
    let forms = secret_forms(&created.key);
    let dump = dump_sqlite(&db.config.url).await;
    assert!(dump.contains(&t.id.to_string()), "the dump reads the rows");
    assert_absent(dump.as_bytes(), &forms, "the SQLite rows");
    catalog.close().await;
    // The raw database files (main, WAL) too.
    let path = db.config.url.trim_start_matches("sqlite://").to_owned();
    for file in [path.clone(), format!("{path}-wal")] {
        if let Ok(bytes) = std::fs::read(&file) {
            assert_absent(&bytes, &forms, &file);
        }
    }
}

#[tokio::test]
async fn postgres_dump_never_contains_a_plaintext_key() {
    let Some(db) = env::postgres().await else {
        return;
    };
    let catalog = db.open().await;
    let t = catalog
        .create_tenant(&conformance::new_tenant("dump"))
        .await
        .unwrap();
    let created = catalog.create_key(&t.id, "dumped").await.unwrap();
    assert!(catalog.authenticate(&created.key).await.unwrap().is_some());
    let forms = secret_forms(&created.key);
    let (admin, name) = db.postgres().unwrap();
    let url = env::with_database(admin, name);
    // Every table as JSON text (bytea rendered as hex).
    use sqlx::Connection as _;
    let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
    let tables: Vec<String> =
        sqlx::query_scalar("SELECT tablename::text FROM pg_tables WHERE schemaname = 'public'")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    let mut dump = String::new();
    for t in &tables {
        let rows: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT row_to_json(x)::text FROM \"{t}\" x"
        )))
        .fetch_all(&mut conn)
        .await
        .unwrap();
        dump.push_str(&rows.join("\n"));
    }
    assert!(dump.contains(t.id.as_str()), "the dump reads the rows");
    assert_absent(dump.as_bytes(), &forms, "the PostgreSQL rows");
    // pg_dump, when installed, sees the same.
    if let Ok(out) = std::process::Command::new("pg_dump").arg(&url).output()
        && out.status.success()
    {
        assert!(String::from_utf8_lossy(&out.stdout).contains(t.id.as_str()));
        assert_absent(&out.stdout, &forms, "pg_dump");
    }
    drop(conn);
    catalog.close().await;
}

/// A SQLite catalog's directory is created when missing (as every other
/// path a setting names is); a file that cannot be opened is `Invalid`, a
/// configuration problem naming the path and why, not a passing outage to
/// retry forever.
#[tokio::test]
async fn a_sqlite_catalog_creates_its_directory_and_names_a_path_it_cannot_open() {
    let dir = tempfile::tempdir().unwrap();
    let nested = dir.path().join("srv/pastes/deeper/catalog.sqlite");
    let catalog = Catalog::open(&CatalogConfig::new(format!(
        "sqlite://{}",
        nested.display()
    )))
    .await
    .unwrap();
    catalog.default_tenant().await.unwrap();
    assert!(nested.is_file(), "no catalog file at {}", nested.display());
    catalog.close().await;

    // Its parent is a file: the directory cannot be made.
    let blocker = dir.path().join("a-file");
    std::fs::write(&blocker, b"x").unwrap();
    let under_a_file = blocker.join("catalog.sqlite");
    // The name is a directory: SQLite cannot open it.
    let a_directory = dir.path().join("a-directory");
    std::fs::create_dir(&a_directory).unwrap();
    for path in [under_a_file, a_directory] {
        let err = Catalog::open(&CatalogConfig::new(format!("sqlite://{}", path.display())))
            .await
            .err()
            .unwrap_or_else(|| panic!("{} opened", path.display()));
        match err {
            CatalogError::Invalid(message) => assert!(
                message.contains(&*path.parent().unwrap().to_string_lossy()),
                "{message}"
            ),
            other => panic!("{}: {other:?}", path.display()),
        }
    }
}
