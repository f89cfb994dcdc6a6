//! The two migration trees stay in step, concurrent opens of one empty
//! database migrate it exactly once, and a migration that rebuilds a table
//! keeps its rows.

// Helpers outside `#[test]` functions unwrap too: a failed step is a failed test.
#![allow(clippy::unwrap_used)]

use tenancy::conformance::env;
use tenancy::{Catalog, TenantId};

fn names(dir: &str) -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../migrations")
        .join(dir);
    let mut names: Vec<String> = std::fs::read_dir(&path)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".sql"))
        .collect();
    names.sort();
    names
}

#[test]
fn both_migration_trees_list_the_same_file_names() {
    let sqlite = names("sqlite");
    assert!(!sqlite.is_empty());
    assert_eq!(sqlite, names("postgres"));
}

async fn race(db: &env::TestDb) -> Vec<Catalog> {
    let opens: Vec<_> = (0..2)
        .map(|_| {
            let config = db.config.clone();
            tokio::spawn(async move { Catalog::open(&config).await })
        })
        .collect();
    let mut out = Vec::new();
    for o in opens {
        out.push(
            o.await
                .unwrap()
                .unwrap_or_else(|e| panic!("racing open: {e:?}")),
        );
    }
    out
}

async fn applied(catalog: &Catalog, db: &env::TestDb) -> i64 {
    use sqlx::Connection as _;
    let sql = "SELECT COUNT(*) FROM _sqlx_migrations";
    let _ = catalog;
    match db.postgres() {
        Some((admin, name)) => {
            let mut c = sqlx::PgConnection::connect(&env::with_database(admin, name))
                .await
                .unwrap();
            sqlx::query_scalar(sql).fetch_one(&mut c).await.unwrap()
        }
        None => {
            let mut c = sqlx::SqliteConnection::connect(&db.config.url)
                .await
                .unwrap();
            sqlx::query_scalar(sql).fetch_one(&mut c).await.unwrap()
        }
    }
}

async fn check_migrated_once(db: env::TestDb) {
    let catalogs = race(&db).await;
    assert_eq!(
        applied(&catalogs[0], &db).await,
        names("sqlite").len() as i64
    );
    let tenants = catalogs[1].list_tenants().await.unwrap();
    let defaults = tenants
        .iter()
        .filter(|t| t.id == TenantId::default_tenant())
        .count();
    assert_eq!(defaults, 1, "one default tenant");
    for c in catalogs {
        c.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_sqlite_opens_migrate_once() {
    check_migrated_once(env::sqlite()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_postgres_opens_migrate_once() {
    let Some(db) = env::postgres().await else {
        return;
    };
    check_migrated_once(db).await;
}

const CHILD_URL: &str = "TENANCY_TEST_CHILD_OPEN_URL";
const CHILD_START_AT: &str = "TENANCY_TEST_CHILD_START_AT_MS";

#[tokio::test]
#[ignore = "helper: run in child processes by concurrent_sqlite_opens_from_separate_processes_migrate_once"]
async fn child_process_opens_the_catalog() {
    let Ok(url) = std::env::var(CHILD_URL) else {
        eprintln!("skipping: {CHILD_URL} is not set (this test is a helper of another)");
        return;
    };
    // Start together, so the opens race for the empty database.
    let start: i64 = std::env::var(CHILD_START_AT).unwrap().parse().unwrap();
    let wait = start - tenancy::now_ms();
    if wait > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(wait as u64)).await;
    }
    let catalog = Catalog::open(&tenancy::CatalogConfig::new(url))
        .await
        .unwrap_or_else(|e| panic!("child open: {e:?}"));
    catalog.default_tenant().await.unwrap();
    catalog.close().await;
}

/// SQLite's migrator takes no lock and the in-process turn-taking does not
/// reach other processes: racing processes rely on the retry.
#[tokio::test]
async fn concurrent_sqlite_opens_from_separate_processes_migrate_once() {
    let db = env::sqlite();
    let exe = std::env::current_exe().unwrap();
    let start = tenancy::now_ms() + 500;
    let children: Vec<_> = (0..4)
        .map(|_| {
            std::process::Command::new(&exe)
                .args(["--exact", "child_process_opens_the_catalog", "--ignored"])
                .env(CHILD_URL, &db.config.url)
                .env(CHILD_START_AT, start.to_string())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.contains("1 passed"),
            "child failed:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let catalog = db.open().await;
    assert_eq!(applied(&catalog, &db).await, names("sqlite").len() as i64);
    assert_eq!(catalog.list_tenants().await.unwrap().len(), 1);
    catalog.close().await;
}

/// Migration 0009 rebuilds SQLite's paste index (`WITHOUT ROWID`): rows a
/// catalog held at 0008 are all there afterwards, unchanged, in id order,
/// and still found by id alone (the index 0006 made is rebuilt too).
#[tokio::test]
async fn the_sqlite_paste_index_rebuild_keeps_every_row() {
    use sqlx::Connection as _;
    let db = env::sqlite();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations/sqlite");
    let migrator = sqlx::migrate::Migrator::new(dir.as_path()).await.unwrap();
    let url = format!("{}?mode=rwc", db.config.url);
    let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
    migrator.run_to(8, &mut conn).await.unwrap();
    // Inserted in an order other than the ids'.
    let ids = ["mmmm0003", "AAAA0001", "zzzz0002", "bbbb0004"];
    for (n, id) in ids.iter().enumerate() {
        let n = i64::try_from(n).unwrap();
        sqlx::query(
            "INSERT INTO pastes (tenant_id, id, bytes, created_at, expires_at, burn_after_read) \
             VALUES ('tnt_default', $1, $2, $3, $4, $5)",
        )
        .bind(id)
        .bind(100 + n)
        .bind(1_000 + n)
        .bind(i64::MAX - n)
        .bind(n == 2)
        .execute(&mut conn)
        .await
        .unwrap();
    }
    conn.close().await.unwrap();

    let catalog = db.open().await; // applies 0009
    let tenant = TenantId::parse("tnt_default").unwrap();
    let rows = catalog.paste_rows_after(&tenant, "", 100).await.unwrap();
    let mut sorted = ids.to_vec();
    sorted.sort_unstable();
    assert_eq!(
        rows.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(),
        sorted
    );
    for row in &rows {
        let n = i64::try_from(ids.iter().position(|id| *id == row.id).unwrap()).unwrap();
        assert_eq!(
            (
                row.bytes,
                row.created_at,
                row.expires_at,
                row.burn_after_read
            ),
            (100 + n, 1_000 + n, i64::MAX - n, n == 2),
            "{}",
            row.id
        );
    }
    let mut conn = sqlx::SqliteConnection::connect(&db.config.url)
        .await
        .unwrap();
    let plan: Vec<(i64, i64, i64, String)> =
        sqlx::query_as("EXPLAIN QUERY PLAN SELECT tenant_id FROM pastes WHERE id = 'zzzz0002'")
            .fetch_all(&mut conn)
            .await
            .unwrap();
    assert!(
        plan.iter()
            .any(|(_, _, _, detail)| detail.contains("pastes_id")),
        "{plan:?}"
    );
    let without_rowid: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM sqlite_schema WHERE name = 'pastes' AND sql LIKE '%WITHOUT ROWID%'",
    )
    .fetch_one(&mut conn)
    .await
    .unwrap();
    assert_eq!(without_rowid, 1);
    catalog.close().await;
}
