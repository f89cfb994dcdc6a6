//! The review service on the memory store with a SQLite catalog: what is
//! stored beside the catalog's rows (no blob left behind by a refusal, a
//! replacement or a deletion), and the fan-out's caps and gap handling.

use std::sync::Arc;
use std::time::Duration;

use paste_store::MemoryStore;
use tenancy::{CatalogConfig, LazyCatalog, NewTenant, TenantSettings, TenantUpdate};

use super::stream::{Feed, Next};
use super::{Caller, Decision, NewReviewInput, ReviewError, ReviewService};
use crate::config::ReviewConfig;
use crate::service::TenantCtx;
use crate::tenants::TenantView;

struct World {
    service: Arc<ReviewService>,
    store: Arc<MemoryStore>,
    ctx: TenantCtx,
    _dir: tempfile::TempDir,
}

async fn world(config: ReviewConfig) -> World {
    let dir = tempfile::tempdir().unwrap();
    let lazy = Arc::new(LazyCatalog::new(
        CatalogConfig {
            url: format!("sqlite://{}/catalog.sqlite", dir.path().display()),
            ..CatalogConfig::default()
        },
        TenantUpdate::default(),
    ));
    let catalog = lazy.get().await.unwrap();
    let tenant = catalog
        .create_tenant(&NewTenant {
            name: "t".into(),
            namespace: "t".into(),
            settings: TenantSettings {
                allow_anonymous: true,
                ..TenantSettings::default()
            },
        })
        .await
        .unwrap();
    let store = Arc::new(MemoryStore::new());
    let service = Arc::new(ReviewService::new(
        store.clone(),
        lazy,
        Duration::from_secs(5),
        config,
    ));
    World {
        service,
        store,
        ctx: TenantCtx {
            tenant: Arc::new(TenantView::of(&tenant).unwrap()),
            key: None,
        },
        _dir: dir,
    }
}

fn digest(n: u8) -> String {
    format!("{n:0>43}")
}

/// A review and its owner as a caller.
async fn review(world: &World) -> (Caller, String) {
    let created = world
        .service
        .create(
            &world.ctx,
            NewReviewInput {
                data: "v1".into(),
                digest: digest(1),
                ttl_secs: 3600,
            },
        )
        .await
        .unwrap();
    let caller = caller(world, &created.id, &created.owner_token).await;
    (caller, created.id)
}

async fn caller(world: &World, id: &str, token: &str) -> Caller {
    let digest = super::presented_digest(token);
    let (tenant, id) = (world.ctx.tenant.id.clone(), id.to_owned());
    let now = crate::service::now_ms_i64();
    let principal = world
        .service
        .catalog_call(|c| async move { c.review_principal(&tenant, &id, &digest, now).await })
        .await
        .unwrap()
        .expect("the token is the review's");
    Caller {
        principal,
        namespace: world.ctx.tenant.namespace.clone(),
        limits: world.ctx.tenant.review_limits,
    }
}

#[tokio::test]
async fn refused_and_unchanged_pushes_leave_no_blob_behind() {
    let world = world(ReviewConfig::default()).await;
    let (mut owner, _) = review(&world).await;
    // The tenant's limit (its `review_max_versions`), as the extractor
    // hands it on.
    owner.limits.max_versions = 2;
    assert_eq!(world.store.len(), 1, "the first version");
    // The same plan again: nothing stored.
    let same = world
        .service
        .push(&owner, "again".into(), digest(1), 1)
        .await
        .unwrap();
    assert!(same.unchanged);
    assert_eq!(world.store.len(), 1);
    // A stale parent: refused, its blob removed.
    let stale = world.service.push(&owner, "v2".into(), digest(2), 5).await;
    assert!(matches!(stale, Err(ReviewError::Refused(_))), "{stale:?}");
    assert_eq!(world.store.len(), 1);
    let pushed = world
        .service
        .push(&owner, "v2".into(), digest(2), 1)
        .await
        .unwrap();
    assert_eq!((pushed.n, pushed.unchanged), (2, false));
    assert_eq!(world.store.len(), 2);
    // Over the version cap: refused, nothing left.
    let owner = caller_again(&world, &owner).await;
    let capped = world.service.push(&owner, "v3".into(), digest(3), 2).await;
    assert!(
        matches!(
            capped,
            Err(ReviewError::Refused(
                tenancy::ReviewRefusal::TooManyVersions(2)
            ))
        ),
        "{capped:?}"
    );
    assert_eq!(world.store.len(), 2);
}

/// The caller with its review's head read again (as the next request's
/// extractor would: `latest` and the state move on).
async fn caller_again(world: &World, caller: &Caller) -> Caller {
    let (tenant, review) = (
        world.ctx.tenant.id.clone(),
        caller.principal.review.id.clone(),
    );
    let snapshot = world
        .service
        .catalog_call(|c| async move { c.review_snapshot(&tenant, &review).await })
        .await
        .unwrap()
        .unwrap();
    let mut again = caller.clone();
    again.principal.review = snapshot.head;
    again
}

#[tokio::test]
async fn replaced_withdrawn_and_deleted_comment_sets_leave_no_blob_behind() {
    let world = world(ReviewConfig::default()).await;
    let (owner, _) = review(&world).await;
    let (_, token) = world.service.add_link(&owner).await.unwrap();
    let reviewer = caller(&world, &owner.principal.review.id, &token).await;
    world
        .service
        .put_comments(&reviewer, "ann".into(), 1, "one".into())
        .await
        .unwrap();
    assert_eq!(world.store.len(), 2);
    world
        .service
        .put_comments(&reviewer, "ann".into(), 1, "two".into())
        .await
        .unwrap();
    assert_eq!(world.store.len(), 2, "the replaced set is removed");
    let renamed = world
        .service
        .put_comments(&reviewer, "bea".into(), 1, "three".into())
        .await;
    assert!(matches!(renamed, Err(ReviewError::Refused(_))));
    assert_eq!(world.store.len(), 2, "a refused set is removed");
    world.service.delete_comments(&reviewer).await.unwrap();
    assert_eq!(world.store.len(), 1);
    world
        .service
        .put_comments(&reviewer, "ann".into(), 1, "four".into())
        .await
        .unwrap();
    world
        .service
        .decide(&owner, Decision::Approved, Some("feedback".into()))
        .await
        .unwrap();
    assert_eq!(world.store.len(), 3, "version, set, feedback");
    let read = world.service.read(&reviewer).await.unwrap();
    assert_eq!(read.comments, ["four"]);
    assert_eq!(read.feedback.as_deref(), Some("feedback"));
    world.service.delete(&owner).await.unwrap();
    assert!(world.store.is_empty(), "a deleted review leaves nothing");
}

#[tokio::test]
async fn a_feed_replays_then_follows_and_fills_a_gap_from_the_catalog() {
    let world = world(ReviewConfig::default()).await;
    let (owner, _) = review(&world).await;
    let mut feed = Feed::open(&world.service, owner.clone(), 0)
        .await
        .unwrap()
        .unwrap();
    let next = feed.next(Duration::from_secs(1)).await.unwrap();
    assert!(matches!(&next, Next::Event(e) if e.seq == 1), "{next:?}");
    // Nothing waiting: idle.
    assert!(matches!(
        feed.next(Duration::from_millis(50)).await.unwrap(),
        Next::Idle
    ));
    world.service.add_link(&owner).await.unwrap();
    let next = feed.next(Duration::from_secs(1)).await.unwrap();
    assert!(matches!(&next, Next::Event(e) if e.seq == 2), "{next:?}");
    // An event the hub never saw (committed past the service), then one it
    // did: the feed reads the missing one from the catalog, in order.
    let (tenant, id) = (
        world.ctx.tenant.id.clone(),
        owner.principal.review.id.clone(),
    );
    let digest_bytes = [7u8; 32];
    let now = crate::service::now_ms_i64();
    let limits = tenancy::ReviewLimits {
        max_links: 8,
        max_versions: 100,
    };
    world
        .service
        .catalog_call(|c| async move {
            c.add_review_link(&tenant, &id, "ABCDEFGHabcd", &digest_bytes, now, limits)
                .await
        })
        .await
        .unwrap()
        .unwrap();
    world.service.add_link(&owner).await.unwrap();
    let mut seqs = Vec::new();
    for _ in 0..2 {
        match feed.next(Duration::from_secs(1)).await.unwrap() {
            Next::Event(e) => seqs.push(e.seq),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(seqs, [3, 4]);
}

#[tokio::test]
async fn the_stream_caps_hold_per_review_and_per_process() {
    let world = world(ReviewConfig {
        streams_per_review: 2,
        max_streams: 3,
        ..ReviewConfig::default()
    })
    .await;
    let (a, _) = review(&world).await;
    let (b, _) = review(&world).await;
    let open = |caller: &Caller| Feed::open(&world.service, caller.clone(), 0);
    let a1 = open(&a).await.unwrap().unwrap();
    let _a2 = open(&a).await.unwrap().unwrap();
    assert!(open(&a).await.unwrap().is_err(), "a third on one review");
    let _b1 = open(&b).await.unwrap().unwrap();
    assert!(open(&b).await.unwrap().is_err(), "a fourth in the process");
    drop(a1);
    assert!(
        open(&b).await.unwrap().is_ok(),
        "a closed feed gives its place back"
    );
}

#[tokio::test]
async fn the_expiry_sweep_removes_a_reviews_rows_blobs_and_quota() {
    let world = world(ReviewConfig::default()).await;
    let created = world
        .service
        .create(
            &world.ctx,
            NewReviewInput {
                data: "v1".into(),
                digest: digest(1),
                ttl_secs: 1,
            },
        )
        .await
        .unwrap();
    let owner = caller(&world, &created.id, &created.owner_token).await;
    let (_, token) = world.service.add_link(&owner).await.unwrap();
    let reviewer = caller(&world, &created.id, &token).await;
    world
        .service
        .put_comments(&reviewer, "ida".into(), 1, "set".into())
        .await
        .unwrap();
    let mut feed = Feed::open(&world.service, owner.clone(), 3)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(world.store.len(), 2);
    // The stream is told when the review expires, before any sweep.
    let next = feed.next(Duration::from_secs(5)).await.unwrap();
    assert!(matches!(next, Next::Closed("expired")), "{next:?}");
    let catalog = world.service.catalog.get().await.unwrap();
    world.service.sweep_expired(&catalog).await;
    assert!(world.store.is_empty(), "the sweep removes the blobs");
    let usage = catalog.usage(&world.ctx.tenant.id).await.unwrap();
    assert_eq!(
        (usage.pastes, usage.bytes),
        (0, 0),
        "and gives the quota back"
    );
}
