//! The review service on the memory store with a SQLite catalog: what is
//! stored beside the catalog's rows (no blob left behind by a refusal, a
//! replacement or a deletion), and the fan-out's caps and gap handling.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use paste_store::MemoryStore;
use tenancy::{CatalogConfig, LazyCatalog, NewTenant, Role, TenantSettings, TenantUpdate};

use super::hub::StreamRefusal;
use super::stream::{Feed, Next};
use super::{Caller, Decision, NewReviewInput, ReviewError, ReviewService};
use crate::config::ReviewConfig;
use crate::context::TenantCtx;
use crate::tenants::TenantView;

/// Admits every answer (the budget is the handlers').
struct Unbounded;

impl super::Admit<ReviewError> for Unbounded {
    async fn admit(&mut self, _bytes: usize) -> Result<(), ReviewError> {
        Ok(())
    }
}

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
        Arc::default(),
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
    let now = crate::within::now_ms_i64();
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
        .push(&owner, push("again", digest(1), 1))
        .await
        .unwrap();
    assert!(same.unchanged);
    assert_eq!(world.store.len(), 1);
    // A stale parent: refused, its blob removed.
    let stale = world.service.push(&owner, push("v2", digest(2), 5)).await;
    assert!(matches!(stale, Err(ReviewError::Refused(_))), "{stale:?}");
    assert_eq!(world.store.len(), 1);
    let pushed = world
        .service
        .push(&owner, push("v2", digest(2), 1))
        .await
        .unwrap();
    assert_eq!((pushed.n, pushed.unchanged), (2, false));
    assert_eq!(world.store.len(), 2);
    // Over the version cap: refused, nothing left.
    let owner = caller_again(&world, &owner).await;
    let capped = world.service.push(&owner, push("v3", digest(3), 2)).await;
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
    let (_, token) = world
        .service
        .add_link(&owner, Role::Reviewer)
        .await
        .unwrap();
    let reviewer = caller(&world, &owner.principal.review.id, &token).await;
    world
        .service
        .put_comments(&reviewer, "ann".into(), 1, None, "one".into(), None)
        .await
        .unwrap();
    assert_eq!(world.store.len(), 2);
    world
        .service
        .put_comments(&reviewer, "ann".into(), 1, None, "two".into(), None)
        .await
        .unwrap();
    assert_eq!(
        world.store.len(),
        3,
        "the replaced set stays for readers of the snapshot before"
    );
    world.service.remove_queued_now().await;
    assert_eq!(world.store.len(), 2, "then it is removed");
    let renamed = world
        .service
        .put_comments(&reviewer, "bea".into(), 1, None, "three".into(), None)
        .await;
    assert!(matches!(renamed, Err(ReviewError::Refused(_))));
    assert_eq!(world.store.len(), 2, "a refused set is removed");
    world
        .service
        .delete_comments(&reviewer, None)
        .await
        .unwrap();
    world.service.remove_queued_now().await;
    assert_eq!(world.store.len(), 1);
    world
        .service
        .put_comments(&reviewer, "ann".into(), 1, None, "four".into(), None)
        .await
        .unwrap();
    world
        .service
        .decide(
            &owner,
            decide(Decision::Approved, 1, Some("feedback".into())),
        )
        .await
        .unwrap();
    assert_eq!(world.store.len(), 3, "version, set, feedback");
    let read = world.service.read(&reviewer, &mut Unbounded).await.unwrap();
    assert_eq!(read.comments, ["four"]);
    assert_eq!(read.feedback, [Some("feedback".to_owned())]);
    world.service.delete(&owner).await.unwrap();
    assert!(world.store.is_empty(), "a deleted review leaves nothing");
}

#[tokio::test]
async fn a_feed_replays_then_follows_and_fills_a_gap_from_the_catalog() {
    let world = world(ReviewConfig::default()).await;
    let (owner, _) = review(&world).await;
    let mut feed = Feed::open(&world.service, owner.clone(), 0, None)
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
    world
        .service
        .add_link(&owner, Role::Reviewer)
        .await
        .unwrap();
    let next = feed.next(Duration::from_secs(1)).await.unwrap();
    assert!(matches!(&next, Next::Event(e) if e.seq == 2), "{next:?}");
    // An event the hub never saw (committed past the service), then one it
    // did: the feed reads the missing one from the catalog, in order.
    let (tenant, id) = (
        world.ctx.tenant.id.clone(),
        owner.principal.review.id.clone(),
    );
    let digest_bytes = [7u8; 32];
    let now = crate::within::now_ms_i64();
    let limits = tenancy::ReviewLimits {
        max_links: 8,
        max_versions: 100,
        max_events: 10_000,
    };
    world
        .service
        .catalog_call(|c| async move {
            c.add_review_link(
                &tenant,
                &id,
                "ABCDEFGHabcd",
                Role::Reviewer,
                &digest_bytes,
                now,
                limits,
            )
            .await
        })
        .await
        .unwrap()
        .unwrap();
    world
        .service
        .add_link(&owner, Role::Reviewer)
        .await
        .unwrap();
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
    let open = |caller: &Caller| Feed::open(&world.service, caller.clone(), 0, None);
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
async fn one_link_and_one_client_hold_at_most_their_share_of_streams() {
    let world = world(ReviewConfig {
        streams_per_review: 32,
        streams_per_link: 2,
        streams_per_client: 3,
        max_streams: 100,
        ..ReviewConfig::default()
    })
    .await;
    let (owner, _) = review(&world).await;
    let (_, token) = world
        .service
        .add_link(&owner, Role::Reviewer)
        .await
        .unwrap();
    let reviewer = caller(&world, &owner.principal.review.id, &token).await;
    let open =
        |caller: &Caller, ip: Option<IpAddr>| Feed::open(&world.service, caller.clone(), 0, ip);
    let (a, b): (IpAddr, IpAddr) = ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap());
    // One link: its most, then refused, whoever asks; the owner still gets in.
    let r1 = open(&reviewer, Some(a)).await.unwrap().unwrap();
    let _r2 = open(&reviewer, Some(b)).await.unwrap().unwrap();
    assert!(matches!(
        open(&reviewer, None).await.unwrap(),
        Err(StreamRefusal::Link(2))
    ));
    let _o1 = open(&owner, Some(a)).await.unwrap().unwrap();
    // One client: its most over every link and review, then refused.
    let (other, _) = review(&world).await;
    let _x1 = open(&other, Some(a)).await.unwrap().unwrap();
    assert!(matches!(
        open(&other, Some(a)).await.unwrap(),
        Err(StreamRefusal::Client(3))
    ));
    assert!(
        open(&other, Some(b)).await.unwrap().is_ok(),
        "another client"
    );
    drop(r1);
    assert!(
        open(&other, Some(a)).await.unwrap().is_ok(),
        "a closed feed gives its client's place back"
    );
    // An IPv6 client is counted by its /64: the addresses of one host are one client.
    let v6 = |last: &str| -> IpAddr { format!("2001:db8:1:2::{last}").parse().unwrap() };
    let (fresh, _) = review(&world).await;
    let _v1 = open(&fresh, Some(v6("1"))).await.unwrap().unwrap();
    let _v2 = open(&fresh, Some(v6("2"))).await.unwrap().unwrap();
    let (fresh2, _) = review(&world).await;
    let _v3 = open(&fresh2, Some(v6("3"))).await.unwrap().unwrap();
    assert!(matches!(
        open(&fresh2, Some(v6("ffff:ffff"))).await.unwrap(),
        Err(StreamRefusal::Client(3))
    ));
}

#[tokio::test]
async fn a_replay_longer_than_a_page_goes_on_to_the_newest_event() {
    let world = world(ReviewConfig::default()).await;
    let (owner, _) = review(&world).await;
    let (_, token) = world
        .service
        .add_link(&owner, Role::Reviewer)
        .await
        .unwrap();
    let reviewer = caller(&world, &owner.principal.review.id, &token).await;
    let page = usize::try_from(tenancy::MAX_EVENTS_PER_READ).unwrap();
    for i in 0..page * 2 + 10 {
        world
            .service
            .put_comments(&reviewer, "ida".into(), 1, None, format!("set {i}"), None)
            .await
            .unwrap();
    }
    let last = world.service.events(&owner, 0).await.unwrap();
    let mut feed = Feed::open(&world.service, owner.clone(), 0, None)
        .await
        .unwrap()
        .unwrap();
    let mut seen = 0;
    let mut last_seq = 0;
    loop {
        match feed.next(Duration::from_millis(200)).await.unwrap() {
            Next::Event(event) => {
                assert_eq!(event.seq, last_seq + 1, "no gap, no repeat");
                last_seq = event.seq;
                seen += 1;
            }
            Next::Idle => break,
            other => panic!("{other:?}"),
        }
    }
    assert!(last.len() == page, "the catalog reads a page at a time");
    // create, link, then every comment set.
    assert_eq!(seen, page * 2 + 10 + 2, "every event, past the first page");
    // A live event after the long replay still arrives.
    world
        .service
        .decide(&owner, decide(Decision::Approved, 1, None))
        .await
        .unwrap();
    match feed.next(Duration::from_secs(5)).await.unwrap() {
        Next::Event(event) => assert_eq!(event.kind, tenancy::EventKind::Decision),
        other => panic!("{other:?}"),
    }
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
    let (_, token) = world
        .service
        .add_link(&owner, Role::Reviewer)
        .await
        .unwrap();
    let reviewer = caller(&world, &created.id, &token).await;
    world
        .service
        .put_comments(&reviewer, "ida".into(), 1, None, "set".into(), None)
        .await
        .unwrap();
    let mut feed = Feed::open(&world.service, owner.clone(), 3, None)
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

/// A push of `data` on `parent` (not a progress push).
fn push(data: &str, digest: String, parent: i64) -> super::VersionPush {
    super::VersionPush {
        data: data.into(),
        digest,
        parent,
        progress: false,
    }
}

/// A decision on `version`, with no name.
fn decide(decision: Decision, version: i64, feedback: Option<String>) -> super::DecisionInput {
    super::DecisionInput {
        sealed: None,
        decision,
        version,
        name: None,
        feedback,
    }
}
