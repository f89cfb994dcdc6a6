//! The behaviour the catalog must show on every database. A backend's test
//! calls [`run`] with a freshly opened catalog; each check creates tenants of
//! its own, so checks share a catalog safely. [`env`] provides the test
//! databases (a temp SQLite file; a fresh Postgres database per run).

use std::sync::Arc;

use crate::{
    ApiKey, Catalog, CatalogError, KeyId, NewTenant, TenantId, TenantSettings, TenantStatus,
    TenantUpdate,
};

/// Runs every check against `catalog`, panicking with the check's name on failure.
pub async fn run(catalog: &Catalog) {
    default_tenant_exists_and_allows_anonymous(catalog).await;
    tenant_crud_round_trips(catalog).await;
    namespace_and_host_uniqueness_is_a_conflict(catalog).await;
    keys_are_shown_once_and_listed_without_secrets(catalog).await;
    revoked_keys_and_deleted_tenants_fail_to_authenticate(catalog).await;
    cross_tenant_calls_are_not_found(catalog).await;
    disabled_tenants_fail_to_authenticate(catalog).await;
    quota_reservations_never_overshoot(catalog.clone()).await;
    usage_release_and_requests(catalog).await;
    invalid_input_is_rejected(catalog).await;
    malformed_keys_never_reach_the_database(catalog).await;
}

fn ok<T>(r: Result<T, CatalogError>, what: &str) -> T {
    r.unwrap_or_else(|e| panic!("{what}: unexpected error {e:?}"))
}

fn suffix() -> String {
    let mut b = [0u8; 6];
    let _ = getrandom::fill(&mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A new tenant description with a unique namespace and host.
pub fn new_tenant(label: &str) -> NewTenant {
    let s = suffix();
    NewTenant {
        name: format!("Tenant {label}"),
        namespace: format!("{label}-{s}"),
        settings: TenantSettings {
            hosts: vec![format!("{label}-{s}.example.com")],
            cors_origins: vec![format!("https://{label}-{s}.example.com")],
            ..TenantSettings::default()
        },
    }
}

async fn default_tenant_exists_and_allows_anonymous(c: &Catalog) {
    let t = ok(c.default_tenant().await, "default tenant");
    assert_eq!(t.namespace, "default");
    assert!(
        t.settings.allow_anonymous,
        "default tenant allows anonymous"
    );
    assert_eq!(t.id, TenantId::default_tenant());
    let err = c.delete_tenant(&t.id).await;
    assert!(
        matches!(err, Err(CatalogError::Invalid(_))),
        "delete default: {err:?}"
    );
}

async fn tenant_crud_round_trips(c: &Catalog) {
    let new = new_tenant("crud");
    let t = ok(c.create_tenant(&new).await, "create");
    assert_eq!(t.namespace, new.namespace);
    assert_eq!(t.status, TenantStatus::Active);
    let got = ok(c.tenant(&t.id).await, "get");
    assert_eq!(got, t, "get returns what create returned");
    assert!(ok(c.list_tenants().await, "list").iter().any(|x| x == &t));
    let host = &t.settings.hosts[0];
    let by_host = ok(c.tenant_by_host(&host.to_uppercase()).await, "by host");
    assert_eq!(by_host.map(|x| x.id), Some(t.id.clone()));
    assert!(ok(c.tenant_by_host("nobody.example.com").await, "absent host").is_none());

    let update = TenantUpdate {
        name: Some("Renamed".into()),
        hosts: Some(vec![format!("new-{}", host)]),
        quota_bytes: Some(1234),
        allow_anonymous: Some(true),
        ..TenantUpdate::default()
    };
    let u = ok(c.update_tenant(&t.id, &update).await, "update");
    assert_eq!(u.name, "Renamed");
    assert_eq!(u.settings.quota_bytes, 1234);
    assert!(u.settings.allow_anonymous);
    assert_eq!(u.namespace, t.namespace, "namespace is not settable");
    assert_eq!(ok(c.tenant(&t.id).await, "get after update"), u);
    assert!(ok(c.tenant_by_host(host).await, "old host").is_none());
    assert!(ok(c.tenant_by_host(&format!("new-{host}")).await, "new host").is_some());

    ok(c.delete_tenant(&t.id).await, "delete");
    assert!(matches!(c.tenant(&t.id).await, Err(CatalogError::NotFound)));
    assert!(matches!(
        c.delete_tenant(&t.id).await,
        Err(CatalogError::NotFound)
    ));
    assert!(matches!(c.usage(&t.id).await, Err(CatalogError::NotFound)));
    assert!(
        ok(
            c.tenant_by_host(&format!("new-{host}")).await,
            "host after delete"
        )
        .is_none()
    );
    let missing = TenantId::generate().unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(
        c.update_tenant(&missing, &TenantUpdate::default()).await,
        Err(CatalogError::NotFound)
    ));
}

async fn namespace_and_host_uniqueness_is_a_conflict(c: &Catalog) {
    let a = ok(c.create_tenant(&new_tenant("uniq")).await, "create a");
    let mut same_ns = new_tenant("uniq");
    same_ns.namespace = a.namespace.clone();
    let r = c.create_tenant(&same_ns).await;
    assert!(
        matches!(r, Err(CatalogError::Conflict("namespace"))),
        "same namespace: {r:?}"
    );
    let mut same_host = new_tenant("uniq");
    same_host.settings.hosts = a.settings.hosts.clone();
    let r = c.create_tenant(&same_host).await;
    assert!(
        matches!(r, Err(CatalogError::Conflict("host"))),
        "same host: {r:?}"
    );
    let b = ok(c.create_tenant(&new_tenant("uniq")).await, "create b");
    let r = c
        .update_tenant(
            &b.id,
            &TenantUpdate {
                hosts: Some(a.settings.hosts.clone()),
                ..TenantUpdate::default()
            },
        )
        .await;
    assert!(
        matches!(r, Err(CatalogError::Conflict("host"))),
        "update to a's host: {r:?}"
    );
    assert_eq!(
        ok(c.tenant(&b.id).await, "b unchanged").settings.hosts,
        b.settings.hosts
    );
}

async fn keys_are_shown_once_and_listed_without_secrets(c: &Catalog) {
    let t = ok(c.create_tenant(&new_tenant("keys")).await, "create");
    let created = ok(c.create_key(&t.id, "ci").await, "create key");
    let plaintext = created.key.expose_secret().to_owned();
    assert!(ApiKey::parse(&plaintext).is_ok());
    let listed = ok(c.list_keys(&t.id).await, "list keys");
    assert_eq!(listed, vec![created.info.clone()]);
    let listed_json = format!("{listed:?}");
    assert!(
        !listed_json.contains(created.key.secret_part()),
        "listing leaks the secret"
    );
    assert!(
        !format!("{created:?}").contains(created.key.secret_part()),
        "Debug leaks"
    );
    let auth = ok(c.authenticate(&created.key).await, "authenticate");
    assert_eq!(auth, Some((t.id.clone(), created.id.clone())));
    let info = ok(c.key(&t.id, &created.id).await, "get key");
    assert!(info.last_used_at.is_some(), "last_used_at recorded");
    let unknown = ApiKey::generate().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(ok(c.authenticate(&unknown).await, "unknown key"), None);
}

async fn revoked_keys_and_deleted_tenants_fail_to_authenticate(c: &Catalog) {
    let t = ok(c.create_tenant(&new_tenant("revoke")).await, "create");
    let k1 = ok(c.create_key(&t.id, "one").await, "key 1");
    let k2 = ok(c.create_key(&t.id, "two").await, "key 2");
    ok(c.revoke_key(&t.id, &k1.id).await, "revoke");
    ok(
        c.revoke_key(&t.id, &k1.id).await,
        "revoke again is idempotent",
    );
    assert_eq!(ok(c.authenticate(&k1.key).await, "revoked"), None);
    assert!(ok(c.authenticate(&k2.key).await, "other key").is_some());
    assert!(
        ok(c.key(&t.id, &k1.id).await, "revoked key")
            .revoked_at
            .is_some()
    );
    ok(c.delete_tenant(&t.id).await, "delete tenant");
    assert_eq!(
        ok(c.authenticate(&k2.key).await, "deleted tenant's key"),
        None
    );
    assert!(matches!(
        c.list_keys(&t.id).await,
        Err(CatalogError::NotFound)
    ));
    assert!(matches!(
        c.create_key(&t.id, "late").await,
        Err(CatalogError::NotFound)
    ));
}

async fn cross_tenant_calls_are_not_found(c: &Catalog) {
    let a = ok(c.create_tenant(&new_tenant("xa")).await, "create a");
    let b = ok(c.create_tenant(&new_tenant("xb")).await, "create b");
    let kb = ok(c.create_key(&b.id, "b's").await, "b key");
    let r = c.key(&a.id, &kb.id).await;
    assert!(
        matches!(r, Err(CatalogError::NotFound)),
        "get b's key as a: {r:?}"
    );
    let r = c.revoke_key(&a.id, &kb.id).await;
    assert!(
        matches!(r, Err(CatalogError::NotFound)),
        "revoke b's key as a: {r:?}"
    );
    assert!(ok(c.list_keys(&a.id).await, "a's keys").is_empty());
    assert!(ok(c.authenticate(&kb.key).await, "b's key still works").is_some());
    assert!(
        ok(c.key(&b.id, &kb.id).await, "b's key")
            .revoked_at
            .is_none()
    );
    let missing_key = KeyId::generate().unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(
        c.key(&b.id, &missing_key).await,
        Err(CatalogError::NotFound)
    ));
    let missing = TenantId::generate().unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(
        c.reserve(&missing, 1).await,
        Err(CatalogError::NotFound)
    ));
    assert!(matches!(
        c.release(&missing, 1).await,
        Err(CatalogError::NotFound)
    ));
    assert!(matches!(
        c.add_requests(&missing, 1).await,
        Err(CatalogError::NotFound)
    ));
    assert!(matches!(
        c.disable_tenant(&missing).await,
        Err(CatalogError::NotFound)
    ));
}

async fn disabled_tenants_fail_to_authenticate(c: &Catalog) {
    let t = ok(c.create_tenant(&new_tenant("off")).await, "create");
    let k = ok(c.create_key(&t.id, "k").await, "key");
    ok(c.disable_tenant(&t.id).await, "disable");
    assert_eq!(
        ok(c.tenant(&t.id).await, "get").status,
        TenantStatus::Disabled
    );
    assert_eq!(
        ok(c.authenticate(&k.key).await, "disabled tenant's key"),
        None
    );
    ok(c.enable_tenant(&t.id).await, "enable");
    assert!(ok(c.authenticate(&k.key).await, "re-enabled").is_some());
}

async fn quota_reservations_never_overshoot(c: Catalog) {
    const SIZE: i64 = 10 * 1024;
    let mut new = new_tenant("quota");
    new.settings.quota_bytes = 50 * SIZE;
    let t = ok(c.create_tenant(&new).await, "create");
    let other = ok(c.create_tenant(&new_tenant("quotab")).await, "create b");
    let c = Arc::new(c);
    let tasks: Vec<_> = (0..100)
        .map(|i| {
            let (c, a, b) = (c.clone(), t.id.clone(), other.id.clone());
            tokio::spawn(async move {
                let mine = c.reserve(&a, SIZE).await;
                if i % 4 == 0 {
                    ok(
                        c.reserve(&b, SIZE).await.map(|r| assert!(r, "b has room")),
                        "b reserve",
                    );
                }
                mine
            })
        })
        .collect();
    let mut won = 0;
    for task in tasks {
        let r = task.await.unwrap_or_else(|e| panic!("task: {e}"));
        if ok(r, "reserve") {
            won += 1;
        }
    }
    assert_eq!(won, 50, "exactly 50 of 100 reservations fit");
    let u = ok(c.usage(&t.id).await, "usage");
    assert_eq!((u.bytes, u.pastes), (50 * SIZE, 50));
    assert!(!ok(c.reserve(&t.id, 1).await, "full"));
    assert!(ok(c.reserve(&t.id, 0).await, "zero bytes still fit"));
    let u = ok(c.usage(&other.id).await, "b usage");
    assert_eq!(u.pastes, 25);
}

async fn usage_release_and_requests(c: &Catalog) {
    let mut new = new_tenant("usage");
    new.settings.quota_bytes = 100;
    new.settings.quota_pastes = 2;
    let t = ok(c.create_tenant(&new).await, "create");
    assert!(ok(c.reserve(&t.id, 60).await, "first"));
    assert!(!ok(c.reserve(&t.id, 60).await, "over bytes"));
    assert!(ok(c.reserve(&t.id, 40).await, "exactly fits"));
    ok(c.release(&t.id, 60).await, "release");
    let u = ok(c.usage(&t.id).await, "usage");
    assert_eq!((u.bytes, u.pastes), (40, 1));
    assert!(ok(c.reserve(&t.id, 10).await, "room after release"));
    assert!(!ok(c.reserve(&t.id, 0).await, "over paste count"));
    ok(c.release(&t.id, 1000).await, "over-release clamps");
    ok(c.release(&t.id, 1000).await, "over-release clamps");
    ok(c.release(&t.id, 1000).await, "over-release clamps");
    let u = ok(c.usage(&t.id).await, "usage");
    assert_eq!((u.bytes, u.pastes), (0, 0));
    ok(c.add_requests(&t.id, 3).await, "requests");
    ok(c.add_requests(&t.id, 4).await, "requests");
    assert_eq!(ok(c.usage(&t.id).await, "usage").requests, 7);
    assert!(matches!(
        c.reserve(&t.id, -1).await,
        Err(CatalogError::Invalid(_))
    ));
}

async fn invalid_input_is_rejected(c: &Catalog) {
    let mut bad = new_tenant("bad");
    bad.namespace = "Not Valid".into();
    assert!(matches!(
        c.create_tenant(&bad).await,
        Err(CatalogError::Invalid(_))
    ));
    let t = ok(c.create_tenant(&new_tenant("valid")).await, "create");
    let r = c
        .update_tenant(
            &t.id,
            &TenantUpdate {
                default_ttl_secs: Some(t.settings.max_ttl_secs + 1),
                ..TenantUpdate::default()
            },
        )
        .await;
    assert!(
        matches!(r, Err(CatalogError::Invalid(_))),
        "ttl above max: {r:?}"
    );
    assert_eq!(ok(c.tenant(&t.id).await, "unchanged"), t);
}

async fn malformed_keys_never_reach_the_database(c: &Catalog) {
    let before = c.key_lookups();
    let good = ApiKey::generate().unwrap_or_else(|e| panic!("{e}"));
    let s = good.expose_secret();
    let mut bad_sum = s.to_owned();
    bad_sum.replace_range(s.len() - 1.., if s.ends_with('A') { "B" } else { "A" });
    for bad in [
        "",
        "Bearer x",
        &bad_sum,
        &s[..s.len() - 1],
        &"x".repeat(10 * 1024),
    ] {
        assert!(ApiKey::parse(bad).is_err(), "{bad:?} parsed");
    }
    // Only a parsed ApiKey can be presented, so no lookup happened.
    assert_eq!(c.key_lookups(), before);
}

/// Test databases from the environment. A missing URL fails under `CI` and
/// skips with a message otherwise.
pub mod env {
    use crate::{Catalog, CatalogConfig};

    /// The variable naming a PostgreSQL server the tests may create databases on.
    pub const POSTGRES_URL_VAR: &str = "PLANSHARE_TEST_DATABASE_URL";

    /// A catalog database that lives as long as this value: a temp SQLite
    /// file, or a fresh PostgreSQL database dropped on drop.
    pub struct TestDb {
        /// The catalog configuration for this database.
        pub config: CatalogConfig,
        _dir: Option<tempfile::TempDir>,
        pg: Option<(String, String)>,
    }

    impl std::fmt::Debug for TestDb {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.debug_struct("TestDb")
                .field("config", &self.config)
                .finish()
        }
    }

    impl TestDb {
        /// Opens the catalog on this database.
        pub async fn open(&self) -> Catalog {
            Catalog::open(&self.config)
                .await
                .unwrap_or_else(|e| panic!("open {:?}: {e:?}", self.config))
        }

        /// The Postgres admin URL and database name, for Postgres databases.
        pub fn postgres(&self) -> Option<(&str, &str)> {
            self.pg.as_ref().map(|(a, n)| (a.as_str(), n.as_str()))
        }
    }

    impl Drop for TestDb {
        fn drop(&mut self) {
            let Some((admin, name)) = self.pg.take() else {
                return;
            };
            // Drop may run inside a runtime: use a thread with its own.
            let _ = std::thread::spawn(move || {
                let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                else {
                    return;
                };
                rt.block_on(async move {
                    use sqlx::Connection as _;
                    if let Ok(mut conn) = sqlx::PgConnection::connect(&admin).await {
                        let sql = format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)");
                        let _ = sqlx::query(sqlx::AssertSqlSafe(sql))
                            .execute(&mut conn)
                            .await;
                    }
                });
            })
            .join();
        }
    }

    /// A fresh SQLite catalog file in a temp directory.
    pub fn sqlite() -> TestDb {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
        let path = dir.path().join("catalog.sqlite");
        TestDb {
            config: CatalogConfig::new(format!("sqlite://{}", path.display())),
            _dir: Some(dir),
            pg: None,
        }
    }

    /// A fresh database `planshare_test_<random>` on the server
    /// `PLANSHARE_TEST_DATABASE_URL` names, dropped when the value is; `None`
    /// (skip) outside CI when the variable is not set.
    pub async fn postgres() -> Option<TestDb> {
        let admin = match std::env::var(POSTGRES_URL_VAR) {
            Ok(v) if !v.is_empty() => v,
            _ if std::env::var_os("CI").is_some() => panic!(
                "{POSTGRES_URL_VAR} is not set: the tenancy tests need PostgreSQL \
                 (e.g. postgres://postgres@127.0.0.1:5432/postgres)"
            ),
            _ => {
                #[expect(clippy::print_stderr, reason = "a skipped backend test says so")]
                {
                    eprintln!(
                        "skipping: {POSTGRES_URL_VAR} is not set (point it at a PostgreSQL server)"
                    );
                }
                return None;
            }
        };
        let mut bytes = [0u8; 8];
        let _ = getrandom::fill(&mut bytes);
        let name = format!(
            "planshare_test_{}",
            bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()
        );
        {
            use sqlx::Connection as _;
            let mut conn = sqlx::PgConnection::connect(&admin)
                .await
                .unwrap_or_else(|e| panic!("connect to {POSTGRES_URL_VAR}: {e}"));
            sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE \"{name}\"")))
                .execute(&mut conn)
                .await
                .unwrap_or_else(|e| panic!("create database {name}: {e}"));
        }
        let url = with_database(&admin, &name);
        Some(TestDb {
            config: CatalogConfig::new(url),
            _dir: None,
            pg: Some((admin, name)),
        })
    }

    /// `url` with its database (path) replaced by `name`.
    pub fn with_database(url: &str, name: &str) -> String {
        let (base, query) = match url.split_once('?') {
            Some((b, q)) => (b, Some(q)),
            None => (url, None),
        };
        let authority_start = base.find("://").map_or(0, |i| i + 3);
        let base = match base[authority_start..].find('/') {
            Some(slash) => &base[..authority_start + slash],
            None => base,
        };
        match query {
            Some(q) => format!("{base}/{name}?{q}"),
            None => format!("{base}/{name}"),
        }
    }
}
