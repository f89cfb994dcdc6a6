//! The behaviour the catalog must show on every database. A backend's test
//! calls [`run`] with a freshly opened catalog; each check creates tenants of
//! its own, so checks share a catalog safely. [`env`] provides the test
//! databases (a temp SQLite file; a fresh Postgres database per run).

use std::sync::Arc;

mod audit;
mod notify;
mod reviews;
mod support;

pub use reviews::review_notices_reach_other_catalogs;
pub use support::new_tenant;
use support::ok;

use crate::{
    ApiKey, Catalog, CatalogError, Idempotency, KeyId, PasteRecord, TenantId, TenantStatus,
    TenantUpdate, now_ms,
};

/// Runs every check against `catalog`, panicking with the check's name on failure.
pub async fn run(catalog: &Catalog) {
    default_tenant_exists_and_allows_anonymous(catalog).await;
    tenant_crud_round_trips(catalog).await;
    concurrent_updates_keep_every_field(catalog).await;
    namespace_and_host_uniqueness_is_a_conflict(catalog).await;
    a_host_name_is_one_tenants_whatever_the_port(catalog).await;
    keys_are_shown_once_and_listed_without_secrets(catalog).await;
    revoked_keys_and_deleted_tenants_fail_to_authenticate(catalog).await;
    cross_tenant_calls_are_not_found(catalog).await;
    disabled_tenants_fail_to_authenticate(catalog).await;
    quota_reservations_never_overshoot(catalog.clone()).await;
    usage_release_and_requests(catalog).await;
    invalid_input_is_rejected(catalog).await;
    malformed_keys_never_reach_the_database(catalog).await;
    paste_index_round_trips_and_is_tenant_isolated(catalog).await;
    the_largest_page_still_tells_whether_more_follow(catalog).await;
    paste_quota_race_never_overshoots(catalog.clone()).await;
    batched_records_answer_as_single_ones(catalog).await;
    concurrent_batches_never_overshoot_a_quota(catalog.clone()).await;
    burn_after_read_claims_are_won_once(catalog, catalog).await;
    sweep_removes_expired_pastes_and_releases_quota(catalog).await;
    idempotency_keys_start_replay_and_mismatch(catalog).await;
    concurrent_idempotent_begins_start_once(catalog.clone()).await;
    idempotency_records_belong_to_their_credential(catalog).await;
    a_deleted_tenants_namespace_waits_for_its_purge(catalog).await;
    reviews::run(catalog).await;
    notify::run(catalog).await;
    audit::run(catalog).await;
}

async fn a_deleted_tenants_namespace_waits_for_its_purge(c: &Catalog) {
    let what = "a_deleted_tenants_namespace_waits_for_its_purge";
    let first = new_tenant("purged");
    let t = ok(c.create_tenant(&first).await, what);
    let namespace = ok(c.delete_tenant(&t.id).await, what);
    assert_eq!(
        namespace, first.namespace,
        "{what}: the namespace is returned"
    );
    let pending = |c: &Catalog| {
        let namespace = namespace.clone();
        let c = c.clone();
        async move {
            ok(c.namespace_purges().await, what)
                .into_iter()
                .filter(|p| p.namespace == namespace)
                .collect::<Vec<_>>()
        }
    };
    let purges = pending(c).await;
    assert_eq!(purges.len(), 1, "{what}: {purges:?}");
    let purge = purges[0].clone();
    assert_eq!(purge.tenant_id, t.id.as_str(), "{what}");

    // The namespace cannot be taken while its pastes may still be stored.
    let mut again = new_tenant("purged-again");
    again.namespace = namespace.clone();
    assert!(
        matches!(
            c.create_tenant(&again).await,
            Err(CatalogError::Protected(_))
        ),
        "{what}: a namespace being purged was taken"
    );
    // A purge that began too soon after the deletion does not count.
    assert!(!ok(
        c.finish_namespace_purge(&purge, purge.requested_at + 1_000)
            .await,
        what
    ));
    assert_eq!(pending(c).await.len(), 1, "{what}: finished too soon");
    // One that began late enough does, and the namespace is free again.
    let late = purge.requested_at + crate::PURGE_SETTLE_MS;
    assert!(ok(c.finish_namespace_purge(&purge, late).await, what));
    assert!(pending(c).await.is_empty(), "{what}: still listed");
    let t2 = ok(c.create_tenant(&again).await, "the namespace taken again");
    assert_eq!(t2.namespace, namespace);

    // A second deletion is a new purge: finishing the first one again
    // (a slow replica) does not end it.
    ok(c.delete_tenant(&t2.id).await, what);
    let second = pending(c).await;
    assert_eq!(second.len(), 1, "{what}");
    if second[0].requested_at != purge.requested_at {
        assert!(!ok(c.finish_namespace_purge(&purge, late + 1).await, what));
        assert_eq!(
            pending(c).await.len(),
            1,
            "{what}: a stale finish ended a new purge"
        );
    }
    let late = second[0].requested_at + crate::PURGE_SETTLE_MS;
    assert!(ok(c.finish_namespace_purge(&second[0], late).await, what));
    assert!(pending(c).await.is_empty(), "{what}");
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
        matches!(err, Err(CatalogError::Protected(_))),
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

/// Updates of one tenant that change different fields, all at once: each
/// succeeds (no SQLITE_BUSY from a read upgraded to a write), and the
/// stored tenant has every field (none put back by a stale read).
async fn concurrent_updates_keep_every_field(c: &Catalog) {
    let t = ok(
        c.create_tenant(&new_tenant("concurrent-update")).await,
        "create",
    );
    let updates = [
        TenantUpdate {
            name: Some("Renamed at once".into()),
            ..TenantUpdate::default()
        },
        TenantUpdate {
            quota_bytes: Some(4321),
            ..TenantUpdate::default()
        },
        TenantUpdate {
            quota_pastes: Some(77),
            ..TenantUpdate::default()
        },
        TenantUpdate {
            rate_burst: Some(33),
            ..TenantUpdate::default()
        },
        TenantUpdate {
            allow_anonymous: Some(true),
            ..TenantUpdate::default()
        },
        TenantUpdate {
            review_max_links: Some(9),
            ..TenantUpdate::default()
        },
    ];
    let tasks: Vec<_> = updates
        .into_iter()
        .map(|u| {
            let (c, id) = (c.clone(), t.id.clone());
            tokio::spawn(async move { c.update_tenant(&id, &u).await })
        })
        .collect();
    for (n, task) in tasks.into_iter().enumerate() {
        let result = task
            .await
            .unwrap_or_else(|e| panic!("update task {n}: {e}"));
        ok(result, &format!("concurrent update {n}"));
    }
    let got = ok(c.tenant(&t.id).await, "get after the updates");
    assert_eq!(got.name, "Renamed at once");
    assert_eq!(got.settings.quota_bytes, 4321);
    assert_eq!(got.settings.quota_pastes, 77);
    assert_eq!(got.settings.rate_burst, 33);
    assert!(got.settings.allow_anonymous);
    assert_eq!(got.settings.review_max_links, 9);
    ok(c.delete_tenant(&t.id).await, "delete");
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

/// Requests are matched by `name:port`, then by `name`: so a host name is
/// one tenant's whatever the port, on create and on update, and the
/// default ports are the bare name.
async fn a_host_name_is_one_tenants_whatever_the_port(c: &Catalog) {
    let b = ok(c.create_tenant(&new_tenant("portb")).await, "create b");
    let b_host = b.settings.hosts[0].clone(); // no port
    let a = ok(c.create_tenant(&new_tenant("porta")).await, "create a");
    for taken in [
        format!("{b_host}:80"),
        format!("{b_host}:443"),
        format!("{b_host}:8080"),
        b_host.to_uppercase(),
    ] {
        let mut new = new_tenant("porta");
        new.settings.hosts = vec![taken.clone()];
        let r = c.create_tenant(&new).await;
        assert!(
            matches!(r, Err(CatalogError::Conflict("host"))),
            "create with {taken}: {r:?}"
        );
        let r = c
            .update_tenant(
                &a.id,
                &TenantUpdate {
                    hosts: Some(vec![taken.clone()]),
                    ..TenantUpdate::default()
                },
            )
            .await;
        assert!(
            matches!(r, Err(CatalogError::Conflict("host"))),
            "update to {taken}: {r:?}"
        );
    }
    assert_eq!(
        ok(c.tenant(&a.id).await, "a unchanged").settings.hosts,
        a.settings.hosts
    );
    // The other way round: a name held with a port keeps its bare name too.
    let held = format!("held-{b_host}");
    let mut h = new_tenant("porth");
    h.settings.hosts = vec![format!("{held}:9000")];
    ok(c.create_tenant(&h).await, "create held");
    for taken in [held.clone(), format!("{held}:9001")] {
        let r = c
            .update_tenant(
                &a.id,
                &TenantUpdate {
                    hosts: Some(vec![taken.clone()]),
                    ..TenantUpdate::default()
                },
            )
            .await;
        assert!(
            matches!(r, Err(CatalogError::Conflict("host"))),
            "update to {taken}: {r:?}"
        );
    }
    // The default ports are stored as the bare name; a tenant's own update
    // of its hosts never conflicts with itself.
    let mut d = new_tenant("portd");
    let d_host = d.settings.hosts[0].clone();
    d.settings.hosts = vec![format!("{d_host}:443")];
    let d = ok(c.create_tenant(&d).await, "create with :443");
    assert_eq!(d.settings.hosts, vec![d_host.clone()]);
    let updated = ok(
        c.update_tenant(
            &d.id,
            &TenantUpdate {
                hosts: Some(vec![format!("{d_host}:80")]),
                ..TenantUpdate::default()
            },
        )
        .await,
        "update to :80",
    );
    assert_eq!(updated.settings.hosts, vec![d_host.clone()]);
    let found = ok(c.tenant_by_host(&d_host).await, "by host").map(|t| t.id);
    assert_eq!(found, Some(d.id.clone()));
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
    // Every tenant's usage in one query, the same as one by one; past the
    // limit only the count.
    let (count, all) = ok(c.usage_of_tenants(1000).await, "all usage");
    let all = all.unwrap_or_else(|| panic!("within the limit"));
    assert_eq!(usize::try_from(count).ok(), Some(all.len()));
    for (id, usage) in &all {
        let one = ok(c.usage(id).await, "one usage");
        assert_eq!(
            (one.bytes, one.pastes, one.requests),
            (usage.bytes, usage.pastes, usage.requests)
        );
    }
    assert!(all.iter().any(|(id, u)| *id == t.id && u.requests == 7));
    let (again, none) = ok(c.usage_of_tenants(0).await, "over the limit");
    assert_eq!((again, none.is_none()), (count, true));
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

fn paste(id: &str, bytes: i64, created_at: i64, expires_at: i64, burn: bool) -> PasteRecord {
    PasteRecord {
        id: id.to_owned(),
        bytes,
        created_at,
        expires_at,
        burn_after_read: burn,
    }
}

fn ids(list: &[PasteRecord]) -> Vec<&str> {
    list.iter().map(|p| p.id.as_str()).collect()
}

async fn usage_of(c: &Catalog, t: &TenantId) -> (i64, i64) {
    let u = ok(c.usage(t).await, "usage");
    (u.bytes, u.pastes)
}

async fn paste_index_round_trips_and_is_tenant_isolated(c: &Catalog) {
    let now = now_ms();
    let a = ok(c.create_tenant(&new_tenant("pidx")).await, "create a").id;
    let b = ok(c.create_tenant(&new_tenant("pidxb")).await, "create b").id;
    let pa = paste("Pa", 10, now, now + 60_000, false);
    let pb = paste("pb", 20, now, now + 60_000, true);
    let pc = paste("pc", 30, now, now + 60_000, false);
    let gone = paste("pd", 40, now - 10_000, now, false); // expired at `now`
    for p in [&pc, &gone, &pa, &pb] {
        assert!(ok(c.record_paste(&a, p).await, "record"), "{} fits", p.id);
    }
    let mine = paste("Pa", 5, now, now + 1000, false); // same id, other tenant
    let only_b = paste("qb", 7, now, now + 1000, false);
    assert!(ok(c.record_paste(&b, &mine).await, "record b"));
    assert!(ok(c.record_paste(&b, &only_b).await, "record b 2"));
    assert_eq!(usage_of(c, &a).await, (100, 4), "a's usage counts all four");

    // Listing: live only, by id in byte order ("P" < "p"), keyset pages.
    let all = ok(c.list_pastes(&a, now, None, 100).await, "list");
    assert_eq!(all, vec![pa.clone(), pb.clone(), pc.clone()]);
    let page = ok(c.list_pastes(&a, now, None, 2).await, "page 1");
    assert_eq!(ids(&page), ["Pa", "pb"]);
    let page = ok(c.list_pastes(&a, now, Some("pb"), 2).await, "page 2");
    assert_eq!(ids(&page), ["pc"]);
    assert!(ok(c.list_pastes(&a, now, Some("pc"), 2).await, "page 3").is_empty());
    assert_eq!(
        ok(c.list_pastes(&a, now, None, 0).await, "limit 0").len(),
        1,
        "limit clamps up to 1"
    );
    assert_eq!(
        ok(
            c.list_pastes(&a, now - 1, None, 5000).await,
            "before expiry"
        )
        .len(),
        4
    );
    assert_eq!(
        ok(c.list_pastes(&b, now, None, 100).await, "b's"),
        vec![mine.clone(), only_b.clone()]
    );
    let missing = TenantId::generate().unwrap_or_else(|e| panic!("{e}"));
    assert!(
        ok(
            c.list_pastes(&missing, now, None, 10).await,
            "unknown tenant"
        )
        .is_empty()
    );

    // Single records: expired ones too, never another tenant's.
    assert_eq!(ok(c.paste_record(&a, "pb").await, "get"), Some(pb.clone()));
    assert_eq!(
        ok(c.paste_record(&a, "pd").await, "get expired"),
        Some(gone.clone())
    );
    assert_eq!(ok(c.paste_record(&a, "qb").await, "b's id as a"), None);
    assert_eq!(
        ok(c.paste_record(&b, "Pa").await, "b's own Pa"),
        Some(mine.clone())
    );

    // Duplicates, unknown tenants and bad input change nothing.
    let r = c
        .record_paste(&a, &paste("pb", 1, now, now + 1, false))
        .await;
    assert!(
        matches!(r, Err(CatalogError::Conflict("paste"))),
        "duplicate: {r:?}"
    );
    assert_eq!(
        usage_of(c, &a).await,
        (100, 4),
        "a duplicate reserves nothing"
    );
    assert_eq!(ok(c.paste_record(&a, "pb").await, "kept"), Some(pb.clone()));
    let r = c.record_paste(&missing, &pa).await;
    assert!(
        matches!(r, Err(CatalogError::NotFound)),
        "unknown tenant: {r:?}"
    );
    let r = c
        .record_paste(&a, &paste("neg", -1, now, now + 1, false))
        .await;
    assert!(
        matches!(r, Err(CatalogError::Invalid(_))),
        "negative size: {r:?}"
    );
    let r = c.record_paste(&a, &paste("", 1, now, now + 1, false)).await;
    assert!(
        matches!(r, Err(CatalogError::Invalid(_))),
        "empty id: {r:?}"
    );

    // Forgetting: only one's own rows, once, releasing exactly their quota.
    assert_eq!(ok(c.forget_paste(&a, "qb").await, "b's id as a"), None);
    assert_eq!(
        ok(c.forget_paste(&missing, "qb").await, "unknown tenant"),
        None
    );
    assert_eq!(
        ok(c.paste_record(&b, "qb").await, "b's row stays"),
        Some(only_b)
    );
    assert_eq!(usage_of(c, &b).await, (12, 2), "b's usage untouched");
    assert_eq!(
        ok(c.forget_paste(&a, "Pa").await, "forget"),
        Some(pa.clone())
    );
    assert_eq!(ok(c.forget_paste(&a, "Pa").await, "forget again"), None);
    assert_eq!(usage_of(c, &a).await, (90, 3), "released once");
    assert_eq!(
        ok(c.paste_record(&b, "Pa").await, "b's Pa stays"),
        Some(mine)
    );
    assert_eq!(
        ids(&ok(c.list_pastes(&a, now, None, 100).await, "list")),
        ["pb", "pc"]
    );
    // A forgotten id may be indexed again.
    assert!(ok(c.record_paste(&a, &pa).await, "record again"));

    // quota_pastes is enforced as well as quota_bytes.
    let mut one = new_tenant("pone");
    one.settings.quota_pastes = 1;
    let one = ok(c.create_tenant(&one).await, "create one").id;
    assert!(ok(c.record_paste(&one, &pa).await, "first"));
    assert!(!ok(c.record_paste(&one, &pb).await, "second is over quota"));
    assert_eq!(ok(c.paste_record(&one, "pb").await, "not indexed"), None);
    assert_eq!(usage_of(c, &one).await, (10, 1));

    // Deleting a tenant drops its index.
    ok(c.delete_tenant(&a).await, "delete a");
    assert_eq!(ok(c.paste_record(&a, "pb").await, "after delete"), None);
    assert!(ok(c.list_pastes(&a, now, None, 10).await, "after delete").is_empty());
}

async fn batched_records_answer_as_single_ones(c: &Catalog) {
    let now = now_ms();
    let mut small = new_tenant("batch-a");
    small.settings.quota_pastes = 2;
    let a = ok(c.create_tenant(&small).await, "create a").id;
    let b = ok(c.create_tenant(&new_tenant("batch-b")).await, "create b").id;
    let missing = TenantId::generate().unwrap_or_else(|e| panic!("{e}"));
    let p = |id: &str, bytes: i64| paste(id, bytes, now, now + 60_000, false);
    let batch = vec![
        (b.clone(), p("b1", 10)),
        (a.clone(), p("a1", 10)),
        (a.clone(), p("a1", 10)), // the same id twice in one batch
        (a.clone(), p("a2", 10)),
        (a.clone(), p("a3", 10)), // over the quota of two pastes
        (missing.clone(), p("m1", 10)),
        (b.clone(), p("neg", -1)),
        (b.clone(), p("", 1)),
    ];
    let results = ok(c.record_pastes(&batch).await, "record batch");
    let kinds: Vec<String> = results
        .iter()
        .map(|r| match r {
            Ok(v) => v.to_string(),
            Err(CatalogError::Conflict(what)) => format!("conflict {what}"),
            Err(CatalogError::NotFound) => "not found".into(),
            Err(CatalogError::Invalid(_)) => "invalid".into(),
            Err(e) => format!("{e:?}"),
        })
        .collect();
    assert_eq!(
        kinds,
        [
            "true",
            "true",
            "conflict paste",
            "true",
            "false",
            "not found",
            "invalid",
            "invalid"
        ],
        "batched_records_answer_as_single_ones"
    );
    assert_eq!(
        usage_of(c, &a).await,
        (20, 2),
        "a: two pastes, the duplicate released"
    );
    assert_eq!(usage_of(c, &b).await, (10, 1));
    let listed = ok(c.list_pastes(&a, now, None, 10).await, "list a");
    assert_eq!(ids(&listed), ["a1", "a2"]);
    assert!(ok(c.record_pastes(&[]).await, "empty batch").is_empty());

    // A group that fits goes the fast way (one reservation, one insert);
    // ids taken before or earlier in the batch still conflict.
    let f = ok(c.create_tenant(&new_tenant("batch-f")).await, "create f").id;
    assert!(ok(c.record_paste(&f, &p("f0", 5)).await, "f0"));
    let batch = vec![
        (f.clone(), p("f1", 10)),
        (f.clone(), p("f0", 7)),
        (f.clone(), p("f1", 3)),
        (f.clone(), p("f2", 20)),
    ];
    let results = ok(c.record_pastes(&batch).await, "fast batch");
    assert!(matches!(results[0], Ok(true)), "{results:?}");
    assert!(
        matches!(results[1], Err(CatalogError::Conflict("paste"))),
        "{results:?}"
    );
    assert!(
        matches!(results[2], Err(CatalogError::Conflict("paste"))),
        "{results:?}"
    );
    assert!(matches!(results[3], Ok(true)), "{results:?}");
    assert_eq!(
        usage_of(c, &f).await,
        (35, 3),
        "f0 + f1 + f2; conflicts given back"
    );
    let listed = ok(c.list_pastes(&f, now, None, 10).await, "list f");
    assert_eq!(ids(&listed), ["f0", "f1", "f2"]);
    assert_eq!(listed[1].bytes, 10, "the first f1 of the batch was kept");
}

async fn concurrent_batches_never_overshoot_a_quota(c: Catalog) {
    const SIZE: i64 = 1000;
    let now = now_ms();
    let mut new = new_tenant("batch-race");
    new.settings.quota_bytes = 50 * SIZE;
    let t = ok(c.create_tenant(&new).await, "create").id;
    let other = ok(
        c.create_tenant(&new_tenant("batch-race-b")).await,
        "create b",
    )
    .id;
    let c = Arc::new(c);
    let tasks: Vec<_> = (0..10)
        .map(|task| {
            let (c, t, other) = (c.clone(), t.clone(), other.clone());
            tokio::spawn(async move {
                let batch: Vec<_> = (0..10)
                    .flat_map(|i| {
                        let id = format!("r{task:02}{i:02}");
                        [
                            (t.clone(), paste(&id, SIZE, now, now + 60_000, false)),
                            (other.clone(), paste(&id, SIZE, now, now + 60_000, false)),
                        ]
                    })
                    .collect();
                c.record_pastes(&batch).await
            })
        })
        .collect();
    let (mut won, mut others) = (0, 0);
    for task in tasks {
        let results = task
            .await
            .unwrap_or_else(|e| panic!("task: {e}"))
            .unwrap_or_else(|e| panic!("batch failed: {e:?}"));
        for (i, r) in results.into_iter().enumerate() {
            let stored = r.unwrap_or_else(|e| panic!("entry {i}: {e:?}"));
            if i % 2 == 0 {
                won += usize::from(stored);
            } else {
                assert!(stored, "the unlimited neighbour always has room");
                others += 1;
            }
        }
    }
    assert_eq!(won, 50, "concurrent_batches_never_overshoot_a_quota");
    assert_eq!(others, 100);
    assert_eq!(usage_of(&c, &t).await, (50 * SIZE, 50));
}

/// A page of the largest size (1000) says whether more pastes follow, as a
/// smaller one does: the catalog reads one row beyond the page at every size.
async fn the_largest_page_still_tells_whether_more_follow(c: &Catalog) {
    const MAX: usize = 1000;
    let now = now_ms();
    let t = ok(c.create_tenant(&new_tenant("maxpage")).await, "create").id;
    let batch: Vec<(TenantId, PasteRecord)> = (0..=MAX)
        .map(|i| {
            let p = paste(&format!("page{i:05}"), 1, now, now + 60_000, false);
            (t.clone(), p)
        })
        .collect();
    for (i, r) in ok(c.record_pastes(&batch).await, "record 1001")
        .into_iter()
        .enumerate()
    {
        assert!(ok(r, "record"), "paste {i} fits");
    }
    let first = ok(c.list_pastes_page(&t, now, None, 1000).await, "page 1");
    assert_eq!(first.pastes.len(), MAX);
    assert!(first.more, "1001 pastes: a page of 1000 has more after it");
    let last = first
        .pastes
        .last()
        .map(|p| p.id.clone())
        .unwrap_or_default();
    assert_eq!(last, format!("page{:05}", MAX - 1));
    let second = ok(
        c.list_pastes_page(&t, now, Some(&last), 1000).await,
        "page 2",
    );
    assert_eq!(ids(&second.pastes), [format!("page{MAX:05}").as_str()]);
    assert!(!second.more, "nothing after the 1001st");
    // Exactly a full page left: nothing more.
    let full = ok(
        c.list_pastes_page(&t, now, Some("page00000"), 1000).await,
        "exactly 1000 left",
    );
    assert_eq!((full.pastes.len(), full.more), (MAX, false));
    // Larger asks are clamped to the largest page, and still tell.
    let clamped = ok(c.list_pastes_page(&t, now, None, 5000).await, "limit 5000");
    assert_eq!((clamped.pastes.len(), clamped.more), (MAX, true));
    assert_eq!(
        ok(c.list_pastes(&t, now, None, 1000).await, "list").len(),
        MAX
    );
}

async fn paste_quota_race_never_overshoots(c: Catalog) {
    const SIZE: i64 = 10 * 1024;
    let now = now_ms();
    let mut new = new_tenant("pquota");
    new.settings.quota_bytes = 50 * SIZE;
    let t = ok(c.create_tenant(&new).await, "create").id;
    let c = Arc::new(c);
    let tasks: Vec<_> = (0..100)
        .map(|i| {
            let (c, t) = (c.clone(), t.clone());
            tokio::spawn(async move {
                let p = paste(&format!("race{i:03}"), SIZE, now, now + 60_000, false);
                c.record_paste(&t, &p).await
            })
        })
        .collect();
    let mut won = 0;
    for task in tasks {
        let r = task.await.unwrap_or_else(|e| panic!("task: {e}"));
        if ok(r, "record_paste") {
            won += 1;
        }
    }
    assert_eq!(won, 50, "exactly 50 of 100 pastes fit");
    assert_eq!(usage_of(&c, &t).await, (50 * SIZE, 50));
    let listed = ok(c.list_pastes(&t, now, None, 1000).await, "list");
    assert_eq!(
        listed.len(),
        50,
        "an index row for every reservation, no more"
    );
    assert!(!ok(
        c.record_paste(&t, &paste("late", 1, now, now + 1, false))
            .await,
        "full"
    ));
}

/// Of 20 concurrent [`Catalog::forget_paste`] calls of one burn-after-read
/// paste, split between `a` and `b` (two catalogs on one database act as two
/// replicas), exactly one claims it and its quota is released once.
pub async fn burn_after_read_claims_are_won_once(a: &Catalog, b: &Catalog) {
    let now = now_ms();
    let t = ok(a.create_tenant(&new_tenant("burn")).await, "create").id;
    let burn = paste("burnme01", 777, now, now + 60_000, true);
    let keep = paste("keepme01", 100, now, now + 60_000, false);
    assert!(ok(a.record_paste(&t, &burn).await, "record burn"));
    assert!(ok(a.record_paste(&t, &keep).await, "record keep"));
    assert_eq!(usage_of(b, &t).await, (877, 2));
    let tasks: Vec<_> = (0..20)
        .map(|i| {
            let c = if i % 2 == 0 { a.clone() } else { b.clone() };
            let t = t.clone();
            tokio::spawn(async move { c.forget_paste(&t, "burnme01").await })
        })
        .collect();
    let mut claims = Vec::new();
    for task in tasks {
        let r = task.await.unwrap_or_else(|e| panic!("task: {e}"));
        if let Some(p) = ok(r, "forget_paste") {
            claims.push(p);
        }
    }
    assert_eq!(claims, vec![burn], "exactly one claim wins");
    assert_eq!(usage_of(a, &t).await, (100, 1), "released exactly once");
    assert_eq!(
        ok(a.paste_record(&t, "keepme01").await, "other paste"),
        Some(keep)
    );
}

async fn sweep_removes_expired_pastes_and_releases_quota(c: &Catalog) {
    let now = now_ms();
    let t = ok(c.create_tenant(&new_tenant("sweep")).await, "create").id;
    let expired = [
        paste("exp1", 11, now - 9000, now - 10, false),
        paste("exp2", 22, now - 9000, now - 5, true),
        paste("exp3", 33, now - 9000, now, false), // expires_at <= now: expired
    ];
    let live = paste("live", 44, now - 9000, now + 1, false);
    for p in expired.iter().chain([&live]) {
        assert!(ok(c.record_paste(&t, p).await, "record"));
    }
    assert_eq!(usage_of(c, &t).await, (110, 4));
    assert_eq!(ok(c.sweep_expired(now, 0).await, "limit 0"), 0);
    // Other checks' expired rows may be swept too: count at least ours.
    assert_eq!(
        ok(c.sweep_expired(now, 1).await, "limit 1"),
        1,
        "the limit holds"
    );
    let mut removed = 1;
    loop {
        let n = ok(c.sweep_expired(now, 2).await, "sweep");
        assert!(n <= 2, "the limit holds");
        if n == 0 {
            break;
        }
        removed += n;
    }
    assert!(removed >= 3, "removed {removed}");
    for p in &expired {
        assert_eq!(
            ok(c.paste_record(&t, &p.id).await, "swept"),
            None,
            "{}",
            p.id
        );
    }
    assert_eq!(
        ok(c.paste_record(&t, "live").await, "kept"),
        Some(live.clone())
    );
    assert_eq!(usage_of(c, &t).await, (44, 1), "expired pastes released");
    assert_eq!(
        ok(c.list_pastes(&t, now, None, 10).await, "list"),
        vec![live]
    );
    assert_eq!(ok(c.sweep_expired(now, 100).await, "nothing left"), 0);

    // Idempotency records older than 24 h go; younger ones stay.
    let (d1, d2) = ([1u8; 32], [2u8; 32]);
    let day = 24 * 3_600_000;
    let begin = |key: &'static str, d: [u8; 32], at: i64| {
        let t = t.clone();
        async move { ok(c.begin_idempotent(&t, None, key, &d, at, LEASE).await, key) }
    };
    assert_eq!(begin("old", d1, now - day - 1).await, Idempotency::Started);
    ok(
        c.complete_idempotent(&t, None, "old", "live", now + 1)
            .await,
        "complete old",
    );
    assert_eq!(
        begin("young", d1, now - day + 1000).await,
        Idempotency::Started
    );
    ok(
        c.complete_idempotent(&t, None, "young", "live", now + 1)
            .await,
        "complete young",
    );
    ok(c.sweep_expired(now, 0).await, "sweep keys");
    assert_eq!(
        begin("old", d2, now).await,
        Idempotency::Started,
        "old record swept"
    );
    assert_eq!(
        begin("young", d2, now).await,
        Idempotency::Mismatch,
        "young record kept"
    );
}

/// The lease the checks give a create (the catalog's default).
const LEASE: i64 = crate::DEFAULT_IDEMPOTENCY_LEASE_MS;

fn in_progress(retry_after_ms: i64) -> Idempotency {
    Idempotency::InProgress { retry_after_ms }
}

async fn idempotency_keys_start_replay_and_mismatch(c: &Catalog) {
    let now = now_ms();
    let t = ok(c.create_tenant(&new_tenant("idem")).await, "create").id;
    let other = ok(c.create_tenant(&new_tenant("idemb")).await, "create b").id;
    let (d1, d2) = ([1u8; 32], [2u8; 32]);
    let begin = |t: &TenantId, key: &str, d: &[u8; 32], at: i64| {
        let (t, key, d) = (t.clone(), key.to_owned(), *d);
        async move {
            ok(
                c.begin_idempotent(&t, None, &key, &d, at, LEASE).await,
                "begin",
            )
        }
    };
    // A completed create replays only while its paste is indexed and live.
    let index = |t: &TenantId, id: &str, expires_at: i64| {
        let (t, record) = (
            t.clone(),
            PasteRecord {
                id: id.to_owned(),
                bytes: 1,
                created_at: now,
                expires_at,
                burn_after_read: false,
            },
        );
        async move { assert!(ok(c.record_paste(&t, &record).await, "index")) }
    };
    assert_eq!(begin(&t, "k1", &d1, now).await, Idempotency::Started);
    assert_eq!(begin(&t, "k1", &d1, now + 1).await, in_progress(LEASE - 1));
    assert_eq!(begin(&t, "k1", &d2, now + 1).await, Idempotency::Mismatch);
    assert_eq!(
        begin(&other, "k1", &d2, now).await,
        Idempotency::Started,
        "keys are per tenant"
    );
    index(&t, "made0001", now + 3_700_000).await;
    ok(
        c.complete_idempotent(&t, None, "k1", "made0001", now + 3_700_000)
            .await,
        "complete",
    );
    let done = Idempotency::Completed {
        paste_id: "made0001".into(),
        expires_at: now + 3_700_000,
    };
    assert_eq!(begin(&t, "k1", &d1, now + 2).await, done);
    assert_eq!(
        begin(&t, "k1", &d1, now + 3_600_000).await,
        done,
        "no takeover once completed"
    );
    assert_eq!(begin(&t, "k1", &d2, now + 2).await, Idempotency::Mismatch);
    ok(
        c.complete_idempotent(&t, None, "k1", "made0001", now + 3_700_000)
            .await,
        "complete again",
    );
    let r = c.complete_idempotent(&t, None, "k1", "other001", now).await;
    assert!(
        matches!(r, Err(CatalogError::Conflict(_))),
        "complete with another paste: {r:?}"
    );
    ok(
        c.abandon_idempotent(&t, None, "k1").await,
        "abandon a completed key is a no-op",
    );
    assert_eq!(begin(&t, "k1", &d1, now + 2).await, done);
    assert_eq!(
        begin(&other, "k1", &d2, now + 1).await,
        in_progress(LEASE - 1),
        "b's own record"
    );

    // Abandon: the key starts afresh (with any body).
    assert_eq!(begin(&t, "k2", &d1, now).await, Idempotency::Started);
    ok(c.abandon_idempotent(&t, None, "k2").await, "abandon");
    ok(c.abandon_idempotent(&t, None, "k2").await, "abandon again");
    assert_eq!(begin(&t, "k2", &d2, now + 1).await, Idempotency::Started);
    assert_eq!(begin(&t, "k2", &d2, now + 2).await, in_progress(LEASE - 1));

    // A create in progress for its whole lease (60 s here) crashed: the
    // next begin takes over. Until then the wait is what is left of it.
    assert_eq!(begin(&t, "k3", &d1, now).await, Idempotency::Started);
    assert_eq!(begin(&t, "k3", &d1, now + 59_000).await, in_progress(1_000));
    assert_eq!(
        begin(&t, "k3", &d2, now + 61_000).await,
        Idempotency::Mismatch
    );
    assert_eq!(
        begin(&t, "k3", &d1, now + 61_000).await,
        Idempotency::Started,
        "takeover"
    );
    assert_eq!(
        begin(&t, "k3", &d1, now + 62_000).await,
        in_progress(LEASE - 1_000),
        "the takeover restarted the clock"
    );
    // The lease is the caller's: a shorter one is taken over sooner, and
    // the wait it gives is counted from it.
    let short = |at: i64, d: [u8; 32]| {
        let t = t.clone();
        async move {
            ok(
                c.begin_idempotent(&t, None, "k4", &d, at, 40_000).await,
                "k4",
            )
        }
    };
    assert_eq!(short(now, d1).await, Idempotency::Started);
    assert_eq!(short(now + 1_500, d1).await, in_progress(38_500));
    assert_eq!(short(now + 39_999, d1).await, in_progress(1));
    assert_eq!(
        short(now + 40_000, d1).await,
        Idempotency::Started,
        "taken over"
    );
    index(&t, "made0003", now + 90_000).await;
    ok(
        c.complete_idempotent(&t, None, "k3", "made0003", now + 90_000)
            .await,
        "complete k3",
    );
    assert_eq!(
        begin(&t, "k3", &d1, now + 63_000).await,
        Idempotency::Completed {
            paste_id: "made0003".into(),
            expires_at: now + 90_000
        }
    );

    // A completed create whose paste is gone (deleted, burnt, expired)
    // starts over, once, under the same key and body.
    ok(c.forget_paste(&t, "made0003").await, "forget");
    assert_eq!(
        begin(&t, "k3", &d2, now + 64_000).await,
        Idempotency::Mismatch,
        "another body is still refused"
    );
    assert_eq!(
        begin(&t, "k3", &d1, now + 64_000).await,
        Idempotency::Started
    );
    assert_eq!(
        begin(&t, "k3", &d1, now + 64_001).await,
        in_progress(LEASE - 1)
    );
    index(&t, "made0005", now + 70_000).await;
    ok(
        c.complete_idempotent(&t, None, "k3", "made0005", now + 70_000)
            .await,
        "complete k3 again",
    );
    let again = Idempotency::Completed {
        paste_id: "made0005".into(),
        expires_at: now + 70_000,
    };
    assert_eq!(begin(&t, "k3", &d1, now + 69_999).await, again);
    assert_eq!(
        begin(&t, "k3", &d1, now + 70_000).await,
        Idempotency::Started,
        "expired: starts over"
    );

    // Errors.
    let r = c
        .complete_idempotent(&t, None, "never", "made0004", now)
        .await;
    assert!(
        matches!(r, Err(CatalogError::NotFound)),
        "complete unknown key: {r:?}"
    );
    let missing = TenantId::generate().unwrap_or_else(|e| panic!("{e}"));
    let r = c
        .begin_idempotent(&missing, None, "k1", &d1, now, LEASE)
        .await;
    assert!(
        matches!(r, Err(CatalogError::NotFound)),
        "unknown tenant: {r:?}"
    );
    for bad in ["", "new\nline"] {
        let r = c.begin_idempotent(&t, None, bad, &d1, now, LEASE).await;
        assert!(
            matches!(r, Err(CatalogError::Invalid(_))),
            "key {bad:?}: {r:?}"
        );
    }
    ok(c.delete_tenant(&t).await, "delete");
    let r = c.begin_idempotent(&t, None, "k1", &d1, now, LEASE).await;
    assert!(
        matches!(r, Err(CatalogError::NotFound)),
        "deleted tenant: {r:?}"
    );
}

/// One Idempotency-Key used by two API keys of a tenant and without a key
/// makes three records: none is replayed, refused or reported in progress
/// to another credential, and each completes and is abandoned on its own.
async fn idempotency_records_belong_to_their_credential(c: &Catalog) {
    let now = now_ms();
    let t = ok(c.create_tenant(&new_tenant("idscope")).await, "create").id;
    let one = ok(c.create_key(&t, "one").await, "key one").id;
    let two = ok(c.create_key(&t, "two").await, "key two").id;
    let (d, other) = ([5u8; 32], [6u8; 32]);
    let record = paste("scoped01", 1, now, now + 60_000, false);
    assert!(ok(c.record_paste(&t, &record).await, "record"));
    let begin = |who: Option<&KeyId>, digest: [u8; 32]| {
        let (t, who) = (t.clone(), who.cloned());
        async move {
            ok(
                c.begin_idempotent(&t, who.as_ref(), "k", &digest, now, LEASE)
                    .await,
                "begin",
            )
        }
    };
    assert_eq!(begin(Some(&one), d).await, Idempotency::Started);
    // In progress for key one: the others start their own.
    assert_eq!(begin(None, d).await, Idempotency::Started);
    assert_eq!(begin(Some(&two), other).await, Idempotency::Started);
    assert_eq!(begin(Some(&one), d).await, in_progress(LEASE));
    ok(
        c.complete_idempotent(&t, Some(&one), "k", "scoped01", now + 60_000)
            .await,
        "complete one",
    );
    assert_eq!(
        begin(Some(&one), d).await,
        Idempotency::Completed {
            paste_id: "scoped01".into(),
            expires_at: now + 60_000
        }
    );
    // Another body is a mismatch only for the credential that used the key.
    assert_eq!(begin(Some(&one), other).await, Idempotency::Mismatch);
    assert_eq!(begin(None, d).await, in_progress(LEASE));
    assert_eq!(begin(None, other).await, Idempotency::Mismatch);
    assert_eq!(begin(Some(&two), d).await, Idempotency::Mismatch);
    // Abandoning without a key drops that record only.
    ok(
        c.abandon_idempotent(&t, None, "k").await,
        "abandon anonymous",
    );
    assert_eq!(begin(None, other).await, Idempotency::Started);
    assert_eq!(begin(Some(&two), other).await, in_progress(LEASE));
    assert!(matches!(
        begin(Some(&one), d).await,
        Idempotency::Completed { .. }
    ));
    let r = c
        .complete_idempotent(&t, Some(&two), "k", "scoped01", now + 60_000)
        .await;
    assert!(r.is_ok(), "key two completes its own record: {r:?}");
    ok(c.delete_tenant(&t).await, "delete");
}

async fn concurrent_idempotent_begins_start_once(c: Catalog) {
    let now = now_ms();
    let t = ok(c.create_tenant(&new_tenant("idemrace")).await, "create").id;
    let c = Arc::new(c);
    let race = |key: &'static str, at: i64| {
        let tasks: Vec<_> = (0..20)
            .map(|_| {
                let (c, t) = (c.clone(), t.clone());
                tokio::spawn(async move {
                    c.begin_idempotent(&t, None, key, &[7u8; 32], at, LEASE)
                        .await
                })
            })
            .collect();
        async move {
            let mut out = Vec::new();
            for task in tasks {
                let r = task.await.unwrap_or_else(|e| panic!("task: {e}"));
                out.push(ok(r, "begin_idempotent"));
            }
            out
        }
    };
    let started = |v: &[Idempotency]| v.iter().filter(|y| **y == Idempotency::Started).count();
    let waiting = |v: &[Idempotency]| {
        v.iter()
            .filter(
                |y| matches!(y, Idempotency::InProgress { retry_after_ms } if *retry_after_ms > 0),
            )
            .count()
    };
    let first = race("race-key", now).await;
    assert_eq!(started(&first), 1, "{first:?}");
    assert_eq!(waiting(&first), 19, "{first:?}");
    // Concurrent takeovers of a crashed create: one wins.
    let later = race("race-key", now + 61_000).await;
    assert_eq!(started(&later), 1, "{later:?}");
    assert_eq!(waiting(&later), 19, "{later:?}");
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
