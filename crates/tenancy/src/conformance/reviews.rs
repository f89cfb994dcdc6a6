//! The review catalog's conformance checks (`reviews/`, migration 0007),
//! run by [`run`](super::run) on every database; and the notices check
//! across two catalogs ([`review_notices_reach_other_catalogs`]).

use std::time::Duration;

use super::support::{DecideLatest, new_tenant, ok, suffix};
use crate::{
    Backend, BlobRef, Catalog, CatalogError, EventKind, MAX_EVENTS_PER_READ, NewReview, NewVersion,
    OWNER_WRITER, Pushed, ReviewEvent, ReviewLimits, ReviewNotice, ReviewRefusal, ReviewState,
    Role, TenantId, now_ms,
};

/// Runs every review check against `c`.
pub(super) async fn run(c: &Catalog) {
    reviews_round_trip_through_a_snapshot(c).await;
    principals_answer_only_live_unexpired_tokens_of_the_tenant(c).await;
    pushes_answer_unchanged_stale_over_cap_and_created(c).await;
    concurrent_pushes_on_one_parent_create_one_version(c.clone()).await;
    the_link_cap_counts_only_live_links(c).await;
    names_bind_once_and_stay_distinct_among_live_writers(c).await;
    concurrent_claims_of_one_name_bind_it_once(c.clone()).await;
    comment_sets_compare_and_set_on_their_revision(c).await;
    concurrent_writes_from_one_revision_store_one(c.clone()).await;
    rounds_reopen_void_and_keep_approvals(c).await;
    concurrent_decisions_record_one(c.clone()).await;
    the_event_cap_refuses_growth_but_not_revocations_withdrawals_or_decisions(c).await;
    review_blobs_count_against_the_quota_and_are_released(c).await;
    events_are_consecutive_with_exact_data(c).await;
    the_sweep_removes_only_expired_reviews(c).await;
    another_tenants_review_cannot_be_deleted(c).await;
}

const LIMITS: ReviewLimits = ReviewLimits {
    max_links: 3,
    max_versions: 3,
    max_events: 10_000,
};

/// A random review or link id (12 hex digits: letters and digits).
fn rid() -> String {
    suffix()
}

/// A random token digest (digests are unique across the catalog).
fn digest() -> [u8; 32] {
    let mut d = [0u8; 32];
    let _ = getrandom::fill(&mut d);
    d
}

fn blob(name: &str, bytes: i64) -> BlobRef {
    BlobRef {
        blob: format!("{name}-{}", suffix()),
        bytes,
    }
}

fn new_review(now: i64, bytes: i64) -> NewReview {
    NewReview {
        id: rid(),
        owner_digest: digest(),
        created_at: now,
        expires_at: now + 3_600_000,
        digest: "d1".into(),
        blob: blob("v1", bytes),
    }
}

async fn tenant(c: &Catalog, label: &str) -> TenantId {
    ok(c.create_tenant(&new_tenant(label)).await, label).id
}

async fn created(c: &Catalog, t: &TenantId, new: &NewReview, what: &str) -> ReviewEvent {
    match ok(c.create_review(t, new).await, what) {
        Ok(event) => event,
        Err(refusal) => panic!("{what}: create refused: {refusal:?}"),
    }
}

async fn usage_of(c: &Catalog, t: &TenantId) -> (i64, i64) {
    let u = ok(c.usage(t).await, "usage");
    (u.bytes, u.pastes)
}

async fn add_link(c: &Catalog, t: &TenantId, id: &str, what: &str) -> (String, [u8; 32]) {
    let (link, d) = (rid(), digest());
    let added = ok(
        c.add_review_link(t, id, &link, Role::Reviewer, &d, now_ms(), LIMITS)
            .await,
        what,
    );
    assert!(added.is_ok(), "{what}: {added:?}");
    (link, d)
}

async fn reviews_round_trip_through_a_snapshot(c: &Catalog) {
    let what = "reviews_round_trip_through_a_snapshot";
    let t = tenant(c, "review").await;
    let other = tenant(c, "review-other").await;
    let now = now_ms();
    let new = new_review(now, 10);
    let event = created(c, &t, &new, what).await;
    assert_eq!(
        event,
        ReviewEvent {
            seq: 1,
            kind: EventKind::Version,
            data: r#"{"n":1,"round":1}"#.into(),
            created_at: now,
        },
        "{what}"
    );
    assert!(
        matches!(
            c.create_review(&t, &new).await,
            Err(CatalogError::Conflict("review"))
        ),
        "{what}: a taken id"
    );
    let snap = ok(c.review_snapshot(&t, &new.id).await, what)
        .unwrap_or_else(|| panic!("{what}: no snapshot"));
    let namespace = ok(c.tenant(&t).await, what).namespace;
    assert_eq!(snap.head.tenant, t, "{what}");
    assert_eq!(snap.head.namespace, namespace, "{what}");
    assert_eq!(snap.head.id, new.id, "{what}");
    assert_eq!(snap.head.state, ReviewState::Open, "{what}");
    assert_eq!((snap.head.seq, snap.head.latest), (1, 1), "{what}");
    assert_eq!(
        (snap.head.created_at, snap.head.expires_at),
        (new.created_at, new.expires_at),
        "{what}"
    );
    assert_eq!(snap.versions.len(), 1, "{what}");
    let v1 = &snap.versions[0];
    assert_eq!((v1.n, v1.digest.as_str()), (1, "d1"), "{what}");
    assert_eq!((&v1.blob, v1.created_at), (&new.blob, now), "{what}");
    assert!(snap.comments.is_empty() && snap.links.is_empty(), "{what}");
    assert!(snap.decisions.is_empty(), "{what}");
    assert_eq!(snap.head.round, 1, "{what}");
    assert_eq!((v1.round, v1.progress), (1, false), "{what}");
    assert_eq!(
        ok(c.review_version(&t, &new.id, 1).await, what).as_ref(),
        Some(v1),
        "{what}"
    );
    assert_eq!(ok(c.review_version(&t, &new.id, 2).await, what), None);
    // Ids are per tenant: another tenant sees nothing and may take the id.
    assert_eq!(ok(c.review_snapshot(&other, &new.id).await, what), None);
    assert_eq!(ok(c.review_version(&other, &new.id, 1).await, what), None);
    let mut same_id = new_review(now, 1);
    same_id.id = new.id.clone();
    created(c, &other, &same_id, what).await;
    // Malformed input never reaches the database.
    let mut bad = new_review(now, 1);
    bad.id = "a-b".into();
    assert!(matches!(
        c.create_review(&t, &bad).await,
        Err(CatalogError::Invalid(_))
    ));
    let mut negative = new_review(now, 1);
    negative.blob.bytes = -1;
    assert!(matches!(
        c.create_review(&t, &negative).await,
        Err(CatalogError::Invalid(_))
    ));
    // An unknown tenant has no reviews to hold.
    let unknown = ok(TenantId::parse("tnt_nosuchtenant"), what);
    assert!(matches!(
        c.create_review(&unknown, &new_review(now, 1)).await,
        Err(CatalogError::NotFound)
    ));
}

async fn principals_answer_only_live_unexpired_tokens_of_the_tenant(c: &Catalog) {
    let what = "principals_answer_only_live_unexpired_tokens_of_the_tenant";
    let t = tenant(c, "principal").await;
    let other = tenant(c, "principal-other").await;
    let now = now_ms();
    let new = new_review(now, 10);
    created(c, &t, &new, what).await;
    let (link, link_digest) = add_link(c, &t, &new.id, what).await;

    let owner = ok(
        c.review_principal(&t, &new.id, &new.owner_digest, now)
            .await,
        what,
    )
    .unwrap_or_else(|| panic!("{what}: the owner is not found"));
    assert_eq!(owner.role, Role::Owner, "{what}");
    assert_eq!(
        (owner.link.as_str(), owner.name.as_deref()),
        (OWNER_WRITER, None)
    );
    assert_eq!(
        (owner.review.id.as_str(), owner.review.tenant.clone()),
        (new.id.as_str(), t.clone())
    );
    assert_eq!((owner.review.seq, owner.review.latest), (2, 1), "{what}");
    assert_eq!(owner.review.state, ReviewState::Open, "{what}");

    let reviewer = ok(
        c.review_principal(&t, &new.id, &link_digest, now).await,
        what,
    )
    .unwrap_or_else(|| panic!("{what}: the live link is not found"));
    assert_eq!(
        (reviewer.role, reviewer.link.as_str()),
        (Role::Reviewer, link.as_str())
    );

    // Every miss is one answer: None.
    let misses = [
        (
            t.clone(),
            new.id.clone(),
            digest(),
            now,
            "an unknown digest",
        ),
        (
            other.clone(),
            new.id.clone(),
            new.owner_digest,
            now,
            "another tenant",
        ),
        (t.clone(), rid(), new.owner_digest, now, "another review id"),
        (
            t.clone(),
            new.id.clone(),
            new.owner_digest,
            new.expires_at,
            "expired",
        ),
        (
            t.clone(),
            "not-an-id".into(),
            new.owner_digest,
            now,
            "a malformed id",
        ),
    ];
    for (tenant, id, d, at, case) in misses {
        assert_eq!(
            ok(c.review_principal(&tenant, &id, &d, at).await, what),
            None,
            "{what}: {case}"
        );
    }
    // Across tenants: found by id and digest, with the tenant's namespace.
    let any = ok(
        c.review_principal_any_tenant(&new.id, &link_digest, now)
            .await,
        what,
    )
    .unwrap_or_else(|| panic!("{what}: not found across tenants"));
    assert_eq!(any, reviewer, "{what}");
    assert_eq!(
        any.review.namespace,
        ok(c.tenant(&t).await, what).namespace,
        "{what}"
    );
    assert_eq!(
        ok(
            c.review_principal_any_tenant(&rid(), &link_digest, now)
                .await,
            what
        ),
        None,
        "{what}: the digest of another review"
    );
    assert_eq!(
        ok(
            c.review_principal_any_tenant(&new.id, &link_digest, new.expires_at + 1)
                .await,
            what
        ),
        None,
        "{what}: expired across tenants"
    );
    // A revoked link stops answering at once, in either lookup.
    assert!(ok(c.revoke_review_link(&t, &new.id, &link, now).await, what).is_some());
    assert_eq!(
        ok(
            c.review_principal(&t, &new.id, &link_digest, now).await,
            what
        ),
        None,
        "{what}: revoked"
    );
    assert_eq!(
        ok(
            c.review_principal_any_tenant(&new.id, &link_digest, now)
                .await,
            what
        ),
        None,
        "{what}: revoked across tenants"
    );
    // The owner still answers.
    assert!(
        ok(
            c.review_principal_any_tenant(&new.id, &new.owner_digest, now)
                .await,
            what
        )
        .is_some()
    );
}

async fn pushes_answer_unchanged_stale_over_cap_and_created(c: &Catalog) {
    let what = "pushes_answer_unchanged_stale_over_cap_and_created";
    let t = tenant(c, "push").await;
    let now = now_ms();
    let new = new_review(now, 10);
    created(c, &t, &new, what).await;
    let id = new.id.as_str();
    let push = |parent: i64, digest: &'static str| {
        let t = t.clone();
        async move {
            let b = blob("v", 5);
            ok(
                c.push_review_version(
                    &t,
                    id,
                    &NewVersion {
                        parent,
                        digest,
                        blob: &b,
                        progress: false,
                    },
                    now + 1,
                    LIMITS,
                )
                .await,
                what,
            )
        }
    };
    assert_eq!(
        push(1, "d1").await,
        Ok(Pushed::Unchanged { n: 1 }),
        "{what}"
    );
    assert_eq!(
        push(0, "d1").await,
        Ok(Pushed::Unchanged { n: 1 }),
        "{what}: unchanged whatever the parent"
    );
    assert_eq!(
        push(0, "d2").await,
        Err(ReviewRefusal::StaleParent { latest: 1 }),
        "{what}"
    );
    assert_eq!(
        push(1, "d2").await,
        Ok(Pushed::Created {
            n: 2,
            round: 1,
            event: ReviewEvent {
                seq: 2,
                kind: EventKind::Version,
                data: r#"{"n":2,"round":1}"#.into(),
                created_at: now + 1,
            }
        }),
        "{what}"
    );
    assert!(matches!(
        push(2, "d3").await,
        Ok(Pushed::Created { n: 3, .. })
    ));
    assert_eq!(
        push(3, "d4").await,
        Err(ReviewRefusal::TooManyVersions(3)),
        "{what}"
    );
    assert_eq!(
        push(1, "d3").await,
        Ok(Pushed::Unchanged { n: 3 }),
        "{what}"
    );
    let snap = ok(c.review_snapshot(&t, id).await, what).unwrap_or_else(|| panic!("{what}: gone"));
    assert_eq!((snap.head.seq, snap.head.latest), (3, 3), "{what}");
    let digests: Vec<&str> = snap.versions.iter().map(|v| v.digest.as_str()).collect();
    assert_eq!(digests, ["d1", "d2", "d3"], "{what}");
    assert!(matches!(
        c.push_review_version(
            &t,
            &rid(),
            &NewVersion {
                parent: 1,
                digest: "dx",
                blob: &blob("v", 1),
                progress: false
            },
            now,
            LIMITS
        )
        .await,
        Err(CatalogError::NotFound)
    ));
}

/// Of 8 concurrent pushes on one parent exactly one creates the version;
/// the others are told it is stale.
async fn concurrent_pushes_on_one_parent_create_one_version(c: Catalog) {
    let what = "concurrent_pushes_on_one_parent_create_one_version";
    let t = tenant(&c, "push-race").await;
    let now = now_ms();
    let new = new_review(now, 10);
    created(&c, &t, &new, what).await;
    let limits = ReviewLimits {
        max_links: 3,
        max_versions: 100,
        max_events: 10_000,
    };
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let (c, t, id) = (c.clone(), t.clone(), new.id.clone());
            tokio::spawn(async move {
                let digest = format!("race-{i}");
                c.push_review_version(
                    &t,
                    &id,
                    &NewVersion {
                        parent: 1,
                        digest: &digest,
                        blob: &blob("v", 1),
                        progress: false,
                    },
                    now,
                    limits,
                )
                .await
            })
        })
        .collect();
    let (mut won, mut stale) = (0, 0);
    for task in tasks {
        match ok(task.await.unwrap_or_else(|e| panic!("task: {e}")), what) {
            Ok(Pushed::Created { n: 2, event, .. }) => {
                assert_eq!(event.seq, 2, "{what}");
                won += 1;
            }
            Err(ReviewRefusal::StaleParent { latest: 2 }) => stale += 1,
            other => panic!("{what}: {other:?}"),
        }
    }
    assert_eq!((won, stale), (1, 7), "{what}");
    assert_eq!(usage_of(&c, &t).await, (11, 2), "{what}: one blob counted");
}

async fn the_link_cap_counts_only_live_links(c: &Catalog) {
    let what = "the_link_cap_counts_only_live_links";
    let t = tenant(c, "links").await;
    let now = now_ms();
    let new = new_review(now, 10);
    created(c, &t, &new, what).await;
    let id = new.id.as_str();
    let limits = ReviewLimits {
        max_links: 2,
        max_versions: 3,
        max_events: 10_000,
    };
    let add = |link: String| {
        let t = t.clone();
        async move {
            ok(
                c.add_review_link(&t, id, &link, Role::Reviewer, &digest(), now, limits)
                    .await,
                what,
            )
        }
    };
    let (l1, l2, l3) = (rid(), rid(), rid());
    let event = add(l1.clone())
        .await
        .unwrap_or_else(|r| panic!("{what}: {r:?}"));
    assert_eq!(
        (event.seq, event.kind, event.data),
        (
            2,
            EventKind::Links,
            format!(r#"{{"link":"{l1}","role":"reviewer"}}"#)
        ),
        "{what}"
    );
    assert!(add(l2.clone()).await.is_ok());
    assert_eq!(add(l3.clone()).await, Err(ReviewRefusal::TooManyLinks(2)));
    let revoked = ok(c.revoke_review_link(&t, id, &l1, now + 1).await, what)
        .unwrap_or_else(|| panic!("{what}: not revoked"));
    assert_eq!(
        (revoked.seq, revoked.kind, revoked.data),
        (4, EventKind::Revoked, format!(r#"{{"link":"{l1}"}}"#)),
        "{what}"
    );
    assert_eq!(
        ok(c.revoke_review_link(&t, id, &l1, now + 2).await, what),
        None,
        "{what}: revoked twice"
    );
    assert!(
        add(l3.clone()).await.is_ok(),
        "{what}: the revoked link no longer counts"
    );
    assert!(
        matches!(
            c.add_review_link(&t, id, &l1, Role::Reviewer, &digest(), now, LIMITS)
                .await,
            Err(CatalogError::Conflict("link"))
        ),
        "{what}: a revoked link's id stays taken"
    );
    for bad in [OWNER_WRITER.to_owned(), rid()] {
        assert!(
            matches!(
                c.revoke_review_link(&t, id, &bad, now).await,
                Err(CatalogError::NotFound)
            ),
            "{what}: revoke {bad}"
        );
    }
    let snap = ok(c.review_snapshot(&t, id).await, what).unwrap_or_else(|| panic!("{what}: gone"));
    let mut live: Vec<String> = snap.links.iter().map(|l| l.id.clone()).collect();
    live.sort();
    let mut expected = vec![l2, l3];
    expected.sort();
    assert_eq!(live, expected, "{what}: live links, owner not listed");
    assert!(matches!(
        c.add_review_link(&t, &rid(), &rid(), Role::Reviewer, &digest(), now, LIMITS)
            .await,
        Err(CatalogError::NotFound)
    ));
}

async fn names_bind_once_and_stay_distinct_among_live_writers(c: &Catalog) {
    let what = "names_bind_once_and_stay_distinct_among_live_writers";
    let t = tenant(c, "names").await;
    let now = now_ms();
    let new = new_review(now, 10);
    created(c, &t, &new, what).await;
    let id = new.id.as_str();
    let (l1, _) = add_link(c, &t, id, what).await;
    let (l2, d2) = add_link(c, &t, id, what).await;
    let put = |writer: String, name: &'static str, version: i64, b: BlobRef| {
        let t = t.clone();
        async move {
            ok(
                c.put_review_comments(&t, id, &writer, name, version, None, &b, now, LIMITS)
                    .await,
                what,
            )
        }
    };
    let first = blob("c", 7);
    let stored = put(l1.clone(), "Alice", 1, first.clone())
        .await
        .unwrap_or_else(|r| panic!("{what}: {r:?}"));
    assert_eq!(stored.replaced, None, "{what}");
    assert_eq!(stored.event.kind, EventKind::Comments, "{what}");
    assert_eq!(
        stored.event.data,
        format!(r#"{{"writer":"{l1}","name":"Alice","version":1,"withdrawn":false}}"#),
        "{what}"
    );
    assert_eq!(
        put(l1.clone(), "Bob", 1, blob("c", 1)).await,
        Err(ReviewRefusal::NameBound {
            bound: "Alice".into()
        }),
        "{what}"
    );
    assert_eq!(
        put(l1.clone(), "alice", 1, blob("c", 1)).await,
        Err(ReviewRefusal::NameBound {
            bound: "Alice".into()
        }),
        "{what}: a bound name compares exactly"
    );
    assert_eq!(
        put(l2.clone(), "alice", 1, blob("c", 1)).await,
        Err(ReviewRefusal::NameTaken)
    );
    assert_eq!(
        put(OWNER_WRITER.into(), "ALICE", 1, blob("c", 1)).await,
        Err(ReviewRefusal::NameTaken),
        "{what}: case-insensitively"
    );
    assert_eq!(
        put(l2.clone(), "Zed", 9, blob("c", 1)).await,
        Err(ReviewRefusal::UnknownVersion),
        "{what}"
    );
    // A refusal binds nothing.
    let p2 = ok(c.review_principal(&t, id, &d2, now).await, what)
        .unwrap_or_else(|| panic!("{what}: l2"));
    assert_eq!(p2.name, None, "{what}");
    // Replacing a set answers the one it replaced.
    let again = put(l1.clone(), "Alice", 1, blob("c", 3))
        .await
        .unwrap_or_else(|r| panic!("{what}: {r:?}"));
    assert_eq!(again.replaced, Some(first), "{what}");
    // A revoked link's name is free again; its comment set stays.
    assert!(ok(c.revoke_review_link(&t, id, &l1, now).await, what).is_some());
    assert!(
        matches!(
            c.put_review_comments(&t, id, &l1, "Alice", 1, None, &blob("c", 1), now, LIMITS)
                .await,
            Err(CatalogError::NotFound)
        ),
        "{what}: a revoked writer"
    );
    assert!(
        put(l2.clone(), "alice", 1, blob("c", 2)).await.is_ok(),
        "{what}"
    );
    assert!(matches!(
        c.put_review_comments(&t, id, &rid(), "X", 1, None, &blob("c", 1), now, LIMITS)
            .await,
        Err(CatalogError::NotFound)
    ));
    assert!(matches!(
        c.put_review_comments(&t, id, &l2, " ", 1, None, &blob("c", 1), now, LIMITS)
            .await,
        Err(CatalogError::Invalid(_))
    ));
    let snap = ok(c.review_snapshot(&t, id).await, what).unwrap_or_else(|| panic!("{what}: gone"));
    let mut sets: Vec<(String, String)> = snap
        .comments
        .iter()
        .map(|s| (s.writer.clone(), s.name.clone()))
        .collect();
    sets.sort();
    let mut expected = vec![(l1, "Alice".to_owned()), (l2.clone(), "alice".to_owned())];
    expected.sort();
    assert_eq!(sets, expected, "{what}");
    let links: Vec<(&str, Option<&str>)> = snap
        .links
        .iter()
        .map(|l| (l.id.as_str(), l.name.as_deref()))
        .collect();
    assert_eq!(links, [(l2.as_str(), Some("alice"))], "{what}");
}

/// Of 6 links claiming one name at once (in different cases), exactly one
/// binds it.
async fn concurrent_claims_of_one_name_bind_it_once(c: Catalog) {
    let what = "concurrent_claims_of_one_name_bind_it_once";
    let t = tenant(&c, "name-race").await;
    let now = now_ms();
    let new = new_review(now, 10);
    created(&c, &t, &new, what).await;
    let limits = ReviewLimits {
        max_links: 10,
        max_versions: 3,
        max_events: 10_000,
    };
    let mut links = Vec::new();
    for _ in 0..6 {
        let link = rid();
        let added = ok(
            c.add_review_link(&t, &new.id, &link, Role::Reviewer, &digest(), now, limits)
                .await,
            what,
        );
        assert!(added.is_ok(), "{what}");
        links.push(link);
    }
    let tasks: Vec<_> = links
        .into_iter()
        .enumerate()
        .map(|(i, link)| {
            let (c, t, id) = (c.clone(), t.clone(), new.id.clone());
            let name = if i % 2 == 0 { "Carol" } else { "cAROL" };
            tokio::spawn(async move {
                c.put_review_comments(&t, &id, &link, name, 1, None, &blob("c", 1), now, LIMITS)
                    .await
            })
        })
        .collect();
    let (mut won, mut taken) = (0, 0);
    for task in tasks {
        match ok(task.await.unwrap_or_else(|e| panic!("task: {e}")), what) {
            Ok(_) => won += 1,
            Err(ReviewRefusal::NameTaken) => taken += 1,
            Err(other) => panic!("{what}: {other:?}"),
        }
    }
    assert_eq!((won, taken), (1, 5), "{what}");
}

/// A write that names the revision it read (`base`) lands only on that
/// revision; 0 stands for "no set"; a write without one always lands.
async fn comment_sets_compare_and_set_on_their_revision(c: &Catalog) {
    let what = "comment_sets_compare_and_set_on_their_revision";
    let t = tenant(c, "cas").await;
    let now = now_ms();
    let new = new_review(now, 10);
    created(c, &t, &new, what).await;
    let id = new.id.as_str();
    let (link, _) = add_link(c, &t, id, what).await;
    let put = |base: Option<i64>, b: BlobRef| {
        let (t, link) = (t.clone(), link.clone());
        async move {
            ok(
                c.put_review_comments(&t, id, &link, "Ann", 1, base, &b, now, LIMITS)
                    .await,
                what,
            )
        }
    };
    // No set yet: a base other than 0 is stale.
    assert_eq!(
        put(Some(3), blob("c", 1)).await.map(|_| ()),
        Err(ReviewRefusal::CommentsChanged { current: 0 }),
        "{what}"
    );
    let first = put(Some(0), blob("c", 1))
        .await
        .unwrap_or_else(|r| panic!("{what}: {r:?}"));
    let rev1 = first.event.seq;
    let snap = ok(c.review_snapshot(&t, id).await, what).unwrap_or_else(|| panic!("{what}"));
    assert_eq!(
        snap.comments[0].seq, rev1,
        "{what}: the set's revision is its event's seq"
    );
    // A second page that also read "no set" is refused, naming the revision.
    assert_eq!(
        put(Some(0), blob("d", 1)).await.map(|_| ()),
        Err(ReviewRefusal::CommentsChanged { current: rev1 }),
        "{what}"
    );
    let kept = blob("e", 1);
    let second = put(Some(rev1), kept.clone())
        .await
        .unwrap_or_else(|r| panic!("{what}: {r:?}"));
    let rev2 = second.event.seq;
    assert!(rev2 > rev1, "{what}");
    assert_eq!(
        put(Some(rev1), blob("f", 1)).await.map(|_| ()),
        Err(ReviewRefusal::CommentsChanged { current: rev2 }),
        "{what}: a stale revision"
    );
    let snap = ok(c.review_snapshot(&t, id).await, what).unwrap_or_else(|| panic!("{what}"));
    assert_eq!(
        (
            snap.comments[0].blob.blob.as_str(),
            snap.comments[0].seq,
            snap.head.seq
        ),
        (kept.blob.as_str(), rev2, rev2),
        "{what}: refusals store nothing and add no event"
    );
    // A withdrawal compares the same way.
    let stale = ok(
        c.delete_review_comments(&t, id, &link, Some(rev1), now)
            .await,
        what,
    );
    assert_eq!(
        stale.map(|_| ()),
        Err(ReviewRefusal::CommentsChanged { current: rev2 }),
        "{what}"
    );
    let withdrawn = ok(
        c.delete_review_comments(&t, id, &link, Some(rev2), now)
            .await,
        what,
    );
    assert!(matches!(withdrawn, Ok(Some(_))), "{what}: {withdrawn:?}");
    // Without a base, a write lands whatever the set is.
    assert!(put(None, blob("g", 1)).await.is_ok(), "{what}");
    assert!(put(None, blob("h", 1)).await.is_ok(), "{what}");
    ok(c.delete_review(&t, id).await, what);
}

/// Pages that read the same revision and write at once: exactly one
/// lands, the others learn the revision it made.
async fn concurrent_writes_from_one_revision_store_one(c: Catalog) {
    let what = "concurrent_writes_from_one_revision_store_one";
    let t = tenant(&c, "cas-race").await;
    let now = now_ms();
    let new = new_review(now, 10);
    created(&c, &t, &new, what).await;
    let (link, _) = add_link(&c, &t, &new.id, what).await;
    let tasks: Vec<_> = (0..6)
        .map(|i| {
            let (c, t, id, link) = (c.clone(), t.clone(), new.id.clone(), link.clone());
            tokio::spawn(async move {
                let b = blob(&format!("c{i}"), 1);
                c.put_review_comments(&t, &id, &link, "Bea", 1, Some(0), &b, now, LIMITS)
                    .await
            })
        })
        .collect();
    let (mut won, mut refused) = (Vec::new(), Vec::new());
    for task in tasks {
        match ok(task.await.unwrap_or_else(|e| panic!("task: {e}")), what) {
            Ok(stored) => won.push(stored.event.seq),
            Err(ReviewRefusal::CommentsChanged { current }) => refused.push(current),
            Err(other) => panic!("{what}: {other:?}"),
        }
    }
    assert_eq!(won.len(), 1, "{what}: {won:?} {refused:?}");
    assert!(refused.iter().all(|r| *r == won[0]), "{what}: {refused:?}");
    ok(c.delete_review(&t, &new.id).await, what);
}

async fn the_event_cap_refuses_growth_but_not_revocations_withdrawals_or_decisions(c: &Catalog) {
    let what = "the_event_cap_refuses_growth_but_not_revocations_withdrawals_or_decisions";
    let limits = ReviewLimits {
        max_events: 4,
        ..LIMITS
    };
    let t = tenant(c, "eventcap").await;
    let now = now_ms();
    let new = new_review(now, 10);
    created(c, &t, &new, what).await; // 1
    let id = new.id.as_str();
    let (link, _) = add_link(c, &t, id, what).await; // 2
    for (n, name) in [(3, "Eve"), (4, "Eve")] {
        let put = ok(
            c.put_review_comments(&t, id, &link, name, 1, None, &blob("c", 1), now, limits)
                .await,
            what,
        );
        assert!(put.is_ok(), "{what}: change {n}");
    }
    let full = Err(ReviewRefusal::TooManyEvents(4));
    let before = ok(c.review_snapshot(&t, id).await, what).unwrap_or_else(|| panic!("{what}"));
    assert_eq!(
        ok(
            c.put_review_comments(&t, id, &link, "Eve", 1, None, &blob("c", 1), now, limits)
                .await,
            what
        )
        .map(|_| ()),
        full.clone(),
        "{what}: comments"
    );
    assert_eq!(
        ok(
            c.push_review_version(
                &t,
                id,
                &NewVersion {
                    parent: 1,
                    digest: "d2",
                    blob: &blob("v", 1),
                    progress: false
                },
                now,
                limits
            )
            .await,
            what
        )
        .map(|_| ()),
        full.clone(),
        "{what}: push"
    );
    assert_eq!(
        ok(
            c.add_review_link(&t, id, &rid(), Role::Reviewer, &digest(), now, limits)
                .await,
            what
        )
        .map(|_| ()),
        full,
        "{what}: link"
    );
    let after = ok(c.review_snapshot(&t, id).await, what).unwrap_or_else(|| panic!("{what}"));
    assert_eq!(after.head.seq, before.head.seq, "{what}: nothing changed");
    assert_eq!(after.versions.len(), 1, "{what}");
    // A withdrawal, a revocation and the decision still go through.
    let withdrawn = ok(
        c.delete_review_comments(&t, id, &link, None, now).await,
        what,
    );
    assert!(
        matches!(withdrawn, Ok(Some(_))),
        "{what}: withdrawal {withdrawn:?}"
    );
    let revoked = ok(c.revoke_review_link(&t, id, &link, now).await, what);
    assert!(revoked.is_some(), "{what}: revocation");
    let decided = ok(
        c.decide_latest(&t, id, ReviewState::Approved, None, now)
            .await,
        what,
    );
    assert!(decided.is_ok(), "{what}: decision");
    ok(c.delete_review(&t, id).await, what);
}

/// Pushes `digest` on the latest version, progress or not; the push's
/// version event's data.
async fn push_on_latest(
    c: &Catalog,
    t: &TenantId,
    id: &str,
    digest: &str,
    progress: bool,
    what: &str,
) -> String {
    let latest = ok(c.review_snapshot(t, id).await, what)
        .unwrap_or_else(|| panic!("{what}: gone"))
        .head
        .latest;
    let version = NewVersion {
        parent: latest,
        digest,
        blob: &blob("v", 1),
        progress,
    };
    match ok(
        c.push_review_version(t, id, &version, now_ms(), LIMITS_ROUNDS)
            .await,
        what,
    ) {
        Ok(Pushed::Created { event, .. }) => event.data,
        other => panic!("{what}: push of {digest}: {other:?}"),
    }
}

/// Room for the rounds below.
const LIMITS_ROUNDS: ReviewLimits = ReviewLimits {
    max_links: 3,
    max_versions: 20,
    max_events: 10_000,
};

/// A decision on `version` by `writer`.
fn decision<'a>(
    state: ReviewState,
    version: i64,
    writer: &'a str,
    name: Option<&'a str>,
    feedback: Option<&'a BlobRef>,
) -> crate::NewDecision<'a> {
    crate::NewDecision {
        state,
        version,
        writer,
        name,
        feedback,
        sealed: None,
    }
}

async fn rounds_reopen_void_and_keep_approvals(c: &Catalog) {
    let what = "rounds_reopen_void_and_keep_approvals";
    let t = tenant(c, "rounds").await;
    let now = now_ms();
    let new = new_review(now, 10);
    created(c, &t, &new, what).await;
    let id = new.id.as_str();
    let (link, _) = add_link(c, &t, id, what).await;
    // Round 1: changes requested on v1 by the owner, with feedback.
    let feedback = blob("f", 4);
    let event = ok(
        c.decide_review(
            &t,
            id,
            &decision(
                ReviewState::ChangesRequested,
                1,
                OWNER_WRITER,
                Some("Olga"),
                Some(&feedback),
            ),
            now + 5,
        )
        .await,
        what,
    )
    .unwrap_or_else(|r| panic!("{what}: {r:?}"))
    .event;
    assert_eq!(
        (event.kind, event.data.as_str()),
        (
            EventKind::Decision,
            r#"{"decision":"changes_requested","round":1,"version":1,"by":{"role":"owner","link":"owner","name":"Olga"}}"#
        ),
        "{what}"
    );
    // Deciding twice in a round is refused; comments and links still go.
    assert_eq!(
        ok(
            c.decide_review(
                &t,
                id,
                &decision(ReviewState::Approved, 1, OWNER_WRITER, None, None),
                now
            )
            .await,
            what
        ),
        Err(ReviewRefusal::NotOpen(ReviewState::ChangesRequested)),
        "{what}: twice in round 1"
    );
    let put = ok(
        c.put_review_comments(&t, id, &link, "Dana", 1, None, &blob("c", 1), now, LIMITS)
            .await,
        what,
    );
    assert!(put.is_ok(), "{what}: comments after a decision: {put:?}");
    // An identical plan reopens nothing.
    let same = NewVersion {
        parent: 1,
        digest: "d1",
        blob: &blob("v", 1),
        progress: false,
    };
    assert_eq!(
        ok(
            c.push_review_version(&t, id, &same, now, LIMITS_ROUNDS)
                .await,
            what
        ),
        Ok(Pushed::Unchanged { n: 1 }),
        "{what}"
    );
    // The push after changes_requested opens round 2.
    assert_eq!(
        push_on_latest(c, &t, id, "d2", false, what).await,
        r#"{"n":2,"round":2,"reopened":true}"#,
        "{what}"
    );
    // An approver link decides; without a name it must give one.
    let approver = rid();
    let added = ok(
        c.add_review_link(&t, id, &approver, Role::Approver, &digest(), now, LIMITS)
            .await,
        what,
    )
    .unwrap_or_else(|r| panic!("{what}: {r:?}"));
    assert_eq!(
        added.data,
        format!(r#"{{"link":"{approver}","role":"approver"}}"#),
        "{what}"
    );
    assert!(
        matches!(
            c.decide_review(
                &t,
                id,
                &decision(ReviewState::Approved, 2, &link, None, None),
                now
            )
            .await,
            Err(CatalogError::Invalid(_))
        ),
        "{what}: a reviewer does not decide"
    );
    assert_eq!(
        ok(
            c.decide_review(
                &t,
                id,
                &decision(ReviewState::Approved, 2, &approver, None, None),
                now
            )
            .await,
            what
        ),
        Err(ReviewRefusal::NameRequired),
        "{what}"
    );
    assert_eq!(
        ok(
            c.decide_review(
                &t,
                id,
                &decision(ReviewState::Approved, 2, &approver, Some("dana"), None),
                now
            )
            .await,
            what
        ),
        Err(ReviewRefusal::NameTaken),
        "{what}: Dana's name"
    );
    assert_eq!(
        ok(
            c.decide_review(
                &t,
                id,
                &decision(ReviewState::Approved, 1, &approver, Some("Ann"), None),
                now
            )
            .await,
            what
        ),
        Err(ReviewRefusal::StaleVersion { latest: 2 }),
        "{what}: a decision on v1 in round 2"
    );
    let event = ok(
        c.decide_review(
            &t,
            id,
            &decision(
                ReviewState::ChangesRequested,
                2,
                &approver,
                Some("Ann"),
                None,
            ),
            now + 6,
        )
        .await,
        what,
    )
    .unwrap_or_else(|r| panic!("{what}: {r:?}"));
    assert_eq!(
        (
            event.decision.round,
            event.decision.version,
            event.decision.by.name.as_deref()
        ),
        (2, 2, Some("Ann")),
        "{what}: the decision as recorded"
    );
    let event = event.event;
    assert_eq!(
        event.data,
        format!(
            r#"{{"decision":"changes_requested","round":2,"version":2,"by":{{"role":"approver","link":"{approver}","name":"Ann"}}}}"#
        ),
        "{what}"
    );
    // Round 3: approved on v3; a progress push keeps it, another voids it.
    assert_eq!(
        push_on_latest(c, &t, id, "d3", false, what).await,
        r#"{"n":3,"round":3,"reopened":true}"#,
        "{what}"
    );
    let approved = ok(
        c.decide_review(
            &t,
            id,
            &decision(ReviewState::Approved, 3, &approver, None, None),
            now + 7,
        )
        .await,
        what,
    );
    assert!(approved.is_ok(), "{what}: {approved:?}");
    assert_eq!(
        push_on_latest(c, &t, id, "d4", true, what).await,
        r#"{"n":4,"round":3,"progress":true}"#,
        "{what}"
    );
    let snap = ok(c.review_snapshot(&t, id).await, what).unwrap_or_else(|| panic!("{what}: gone"));
    assert_eq!(
        (snap.head.state, snap.head.round),
        (ReviewState::Approved, 3),
        "{what}"
    );
    assert_eq!(
        ok(
            c.decide_review(
                &t,
                id,
                &decision(ReviewState::Approved, 4, OWNER_WRITER, None, None),
                now
            )
            .await,
            what
        ),
        Err(ReviewRefusal::NotOpen(ReviewState::Approved)),
        "{what}: round 3 is decided"
    );
    assert_eq!(
        push_on_latest(c, &t, id, "d5", false, what).await,
        r#"{"n":5,"round":4,"reopened":true,"voided":true}"#,
        "{what}"
    );
    let snap = ok(c.review_snapshot(&t, id).await, what).unwrap_or_else(|| panic!("{what}: gone"));
    assert_eq!(
        (snap.head.state, snap.head.round, snap.head.latest),
        (ReviewState::Open, 4, 5),
        "{what}"
    );
    let history: Vec<_> = snap
        .decisions
        .iter()
        .map(|d| {
            (
                d.round,
                d.version,
                d.digest.as_str(),
                d.state,
                d.by.role,
                d.by.name.as_deref(),
                d.voided_by,
            )
        })
        .collect();
    assert_eq!(
        history,
        [
            (
                1,
                1,
                "d1",
                ReviewState::ChangesRequested,
                Role::Owner,
                Some("Olga"),
                None
            ),
            (
                2,
                2,
                "d2",
                ReviewState::ChangesRequested,
                Role::Approver,
                Some("Ann"),
                None
            ),
            (
                3,
                3,
                "d3",
                ReviewState::Approved,
                Role::Approver,
                Some("Ann"),
                Some(5)
            ),
        ],
        "{what}"
    );
    assert_eq!(snap.decisions[0].feedback, Some(feedback), "{what}");
    assert_eq!(snap.decisions[0].decided_at, now + 5, "{what}");
    let rounds: Vec<(i64, i64, bool)> = snap
        .versions
        .iter()
        .map(|v| (v.n, v.round, v.progress))
        .collect();
    assert_eq!(
        rounds,
        [
            (1, 1, false),
            (2, 2, false),
            (3, 3, false),
            (4, 3, true),
            (5, 4, false)
        ],
        "{what}"
    );
    let roles: std::collections::BTreeMap<&str, Role> =
        snap.links.iter().map(|l| (l.id.as_str(), l.role)).collect();
    let expected = [
        (link.as_str(), Role::Reviewer),
        (approver.as_str(), Role::Approver),
    ];
    assert_eq!(roles, expected.into_iter().collect(), "{what}");
    assert_eq!(
        snap.comments.first().map(|c| c.role),
        Some(Role::Reviewer),
        "{what}"
    );
    // A revoked approver decides nothing; revoking works in any state.
    assert!(ok(c.revoke_review_link(&t, id, &approver, now).await, what).is_some());
    assert!(
        matches!(
            c.decide_review(
                &t,
                id,
                &decision(ReviewState::Approved, 5, &approver, None, None),
                now
            )
            .await,
            Err(CatalogError::NotFound)
        ),
        "{what}: a revoked approver"
    );
    ok(c.delete_review(&t, id).await, what);
}

/// Two approvers decide the same round at once: exactly one decision is
/// recorded, the other is refused as already decided.
async fn concurrent_decisions_record_one(c: Catalog) {
    let what = "concurrent_decisions_record_one";
    let t = tenant(&c, "decide-race").await;
    let now = now_ms();
    let new = new_review(now, 10);
    created(&c, &t, &new, what).await;
    let mut tasks = Vec::new();
    for (i, state) in [
        ReviewState::Approved,
        ReviewState::ChangesRequested,
        ReviewState::Approved,
    ]
    .into_iter()
    .enumerate()
    {
        let link = rid();
        let added = ok(
            c.add_review_link(&t, &new.id, &link, Role::Approver, &digest(), now, LIMITS)
                .await,
            what,
        );
        assert!(added.is_ok(), "{what}");
        let (c, t, id) = (c.clone(), t.clone(), new.id.clone());
        tasks.push(tokio::spawn(async move {
            let name = format!("Approver {i}");
            c.decide_review(&t, &id, &decision(state, 1, &link, Some(&name), None), now)
                .await
        }));
    }
    let (mut won, mut refused) = (0, 0);
    for task in tasks {
        match ok(task.await.unwrap_or_else(|e| panic!("task: {e}")), what) {
            Ok(_) => won += 1,
            Err(ReviewRefusal::NotOpen(_)) => refused += 1,
            other => panic!("{what}: {other:?}"),
        }
    }
    assert_eq!((won, refused), (1, 2), "{what}");
    let snap = ok(c.review_snapshot(&t, &new.id).await, what).unwrap_or_else(|| panic!("{what}"));
    assert_eq!(snap.decisions.len(), 1, "{what}");
    assert_eq!(snap.head.state, snap.decisions[0].state, "{what}");
}

async fn review_blobs_count_against_the_quota_and_are_released(c: &Catalog) {
    let what = "review_blobs_count_against_the_quota_and_are_released";
    let mut nt = new_tenant("review-quota");
    nt.settings.quota_bytes = 1000;
    nt.settings.quota_pastes = 100;
    let t = ok(c.create_tenant(&nt).await, what).id;
    let now = now_ms();
    // A first version over quota creates nothing.
    let too_big = new_review(now, 1001);
    assert_eq!(
        ok(c.create_review(&t, &too_big).await, what),
        Err(ReviewRefusal::OverQuota),
        "{what}"
    );
    assert_eq!(ok(c.review_snapshot(&t, &too_big.id).await, what), None);
    assert_eq!(usage_of(c, &t).await, (0, 0), "{what}");

    let new = new_review(now, 100);
    created(c, &t, &new, what).await;
    let id = new.id.as_str();
    assert_eq!(usage_of(c, &t).await, (100, 1), "{what}");
    assert_eq!(
        ok(
            c.push_review_version(
                &t,
                id,
                &NewVersion {
                    parent: 1,
                    digest: "d2",
                    blob: &blob("v", 901),
                    progress: false
                },
                now,
                LIMITS
            )
            .await,
            what
        ),
        Err(ReviewRefusal::OverQuota),
        "{what}"
    );
    assert_eq!(usage_of(c, &t).await, (100, 1), "{what}: unchanged");
    assert!(matches!(
        ok(
            c.push_review_version(
                &t,
                id,
                &NewVersion {
                    parent: 1,
                    digest: "d2",
                    blob: &blob("v", 200),
                    progress: false
                },
                now,
                LIMITS
            )
            .await,
            what
        ),
        Ok(Pushed::Created { n: 2, .. })
    ));
    assert_eq!(usage_of(c, &t).await, (300, 2), "{what}");
    let (l1, _) = add_link(c, &t, id, what).await;
    let (l2, d2) = add_link(c, &t, id, what).await;
    let put = |writer: String, name: &'static str, bytes: i64| {
        let t = t.clone();
        async move {
            ok(
                c.put_review_comments(
                    &t,
                    id,
                    &writer,
                    name,
                    2,
                    None,
                    &blob("c", bytes),
                    now,
                    LIMITS,
                )
                .await,
                what,
            )
        }
    };
    assert!(put(l1.clone(), "Eve", 100).await.is_ok());
    assert_eq!(usage_of(c, &t).await, (400, 3), "{what}");
    // A replacement releases the set it replaces, in the same transaction.
    let replaced = put(l1.clone(), "Eve", 150)
        .await
        .unwrap_or_else(|r| panic!("{what}: {r:?}"));
    assert_eq!(replaced.replaced.map(|b| b.bytes), Some(100), "{what}");
    assert_eq!(usage_of(c, &t).await, (450, 3), "{what}");
    assert_eq!(
        put(l1.clone(), "Eve", 701).await.map(|_| ()),
        Err(ReviewRefusal::OverQuota),
        "{what}"
    );
    assert_eq!(
        usage_of(c, &t).await,
        (450, 3),
        "{what}: refused replacement"
    );
    // An over-quota first set binds no name either.
    assert_eq!(
        put(l2.clone(), "Frank", 600).await.map(|_| ()),
        Err(ReviewRefusal::OverQuota),
        "{what}"
    );
    let p2 = ok(c.review_principal(&t, id, &d2, now).await, what)
        .unwrap_or_else(|| panic!("{what}: l2"));
    assert_eq!(p2.name, None, "{what}: the name binding rolled back");
    assert!(put(l2.clone(), "Frank", 50).await.is_ok());
    assert_eq!(usage_of(c, &t).await, (500, 4), "{what}");
    // Withdrawing releases the set.
    let withdrawn = ok(c.delete_review_comments(&t, id, &l2, None, now).await, what)
        .unwrap_or_else(|r| panic!("{what}: {r:?}"))
        .unwrap_or_else(|| panic!("{what}: nothing withdrawn"));
    assert_eq!(withdrawn.1.bytes, 50, "{what}");
    assert_eq!(usage_of(c, &t).await, (450, 3), "{what}");
    assert_eq!(
        ok(c.delete_review_comments(&t, id, &l2, None, now).await, what),
        Ok(None),
        "{what}: no set left"
    );
    // A decision's feedback is counted too.
    assert_eq!(
        ok(
            c.decide_latest(&t, id, ReviewState::Approved, Some(&blob("f", 551)), now)
                .await,
            what
        ),
        Err(ReviewRefusal::OverQuota),
        "{what}"
    );
    assert!(
        ok(
            c.decide_latest(&t, id, ReviewState::Approved, Some(&blob("f", 50)), now)
                .await,
            what
        )
        .is_ok()
    );
    assert_eq!(usage_of(c, &t).await, (500, 4), "{what}");
    // Deleting the review answers every blob and releases them all.
    let removed =
        ok(c.delete_review(&t, id).await, what).unwrap_or_else(|| panic!("{what}: not removed"));
    let mut sizes: Vec<i64> = removed.blobs.iter().map(|b| b.bytes).collect();
    sizes.sort_unstable();
    assert_eq!(sizes, [50, 100, 150, 200], "{what}");
    assert_eq!(
        (removed.tenant.clone(), removed.id.as_str()),
        (t.clone(), id),
        "{what}"
    );
    assert_eq!(usage_of(c, &t).await, (0, 0), "{what}: all released");
    assert_eq!(ok(c.review_snapshot(&t, id).await, what), None);
    assert_eq!(
        ok(c.delete_review(&t, id).await, what),
        None,
        "{what}: twice"
    );
}

async fn events_are_consecutive_with_exact_data(c: &Catalog) {
    let what = "events_are_consecutive_with_exact_data";
    let t = tenant(c, "events").await;
    let now = now_ms();
    let new = new_review(now, 1);
    created(c, &t, &new, what).await;
    let id = new.id.as_str();
    let (link, _) = add_link(c, &t, id, what).await;
    let pushed = ok(
        c.push_review_version(
            &t,
            id,
            &NewVersion {
                parent: 1,
                digest: "d2",
                blob: &blob("v", 1),
                progress: false,
            },
            now,
            LIMITS,
        )
        .await,
        what,
    );
    assert!(matches!(pushed, Ok(Pushed::Created { n: 2, .. })), "{what}");
    let put = ok(
        c.put_review_comments(&t, id, &link, "Gus", 2, None, &blob("c", 1), now, LIMITS)
            .await,
        what,
    );
    assert!(put.is_ok(), "{what}");
    let withdrawn = ok(
        c.delete_review_comments(&t, id, &link, None, now).await,
        what,
    );
    assert!(matches!(withdrawn, Ok(Some(_))), "{what}");
    assert!(ok(c.revoke_review_link(&t, id, &link, now).await, what).is_some());
    let decided = ok(
        c.decide_latest(&t, id, ReviewState::ChangesRequested, None, now)
            .await,
        what,
    );
    assert!(decided.is_ok(), "{what}");

    let events = ok(c.review_events(&t, id, 0, 100).await, what);
    let got: Vec<(i64, EventKind, &str)> = events
        .iter()
        .map(|e| (e.seq, e.kind, e.data.as_str()))
        .collect();
    let link_data = format!(r#"{{"link":"{link}","role":"reviewer"}}"#);
    let revoked_data = format!(r#"{{"link":"{link}"}}"#);
    let comments = format!(r#"{{"writer":"{link}","name":"Gus","version":2,"withdrawn":false}}"#);
    let withdrawn = format!(r#"{{"writer":"{link}","name":"Gus","version":2,"withdrawn":true}}"#);
    assert_eq!(
        got,
        [
            (1, EventKind::Version, r#"{"n":1,"round":1}"#),
            (2, EventKind::Links, link_data.as_str()),
            (3, EventKind::Version, r#"{"n":2,"round":1}"#),
            (4, EventKind::Comments, comments.as_str()),
            (5, EventKind::Comments, withdrawn.as_str()),
            (6, EventKind::Revoked, revoked_data.as_str()),
            (
                7,
                EventKind::Decision,
                r#"{"decision":"changes_requested","round":1,"version":2,"by":{"role":"owner","link":"owner","name":null}}"#
            ),
        ],
        "{what}"
    );
    let page: Vec<i64> = ok(c.review_events(&t, id, 3, 2).await, what)
        .iter()
        .map(|e| e.seq)
        .collect();
    assert_eq!(page, [4, 5], "{what}: after and limit");
    assert!(ok(c.review_events(&t, id, 0, 0).await, what).is_empty());
    assert!(ok(c.review_events(&t, id, 7, 10).await, what).is_empty());
    assert_eq!(
        ok(
            c.review_events(&t, id, 0, MAX_EVENTS_PER_READ * 10).await,
            what
        )
        .len(),
        7
    );
    assert!(ok(c.review_events(&t, &rid(), 0, 10).await, what).is_empty());
    let other = tenant(c, "events-other").await;
    assert!(ok(c.review_events(&other, id, 0, 10).await, what).is_empty());
    let head = ok(c.review_snapshot(&t, id).await, what)
        .unwrap_or_else(|| panic!("{what}: gone"))
        .head;
    assert_eq!(head.seq, 7, "{what}");
}

async fn the_sweep_removes_only_expired_reviews(c: &Catalog) {
    let what = "the_sweep_removes_only_expired_reviews";
    let t = tenant(c, "review-sweep").await;
    let now = now_ms();
    let mut expired = new_review(now - 10_000, 30);
    expired.expires_at = now - 1;
    let mut at_now = new_review(now - 10_000, 20);
    at_now.expires_at = now; // expires_at <= now: expired
    let mut live = new_review(now - 10_000, 10);
    live.expires_at = now + 1;
    for r in [&expired, &at_now, &live] {
        created(c, &t, r, what).await;
    }
    let (link, _) = add_link(c, &t, &expired.id, what).await;
    let put = ok(
        c.put_review_comments(
            &t,
            &expired.id,
            &link,
            "Hal",
            1,
            None,
            &blob("c", 5),
            now,
            LIMITS,
        )
        .await,
        what,
    );
    assert!(put.is_ok(), "{what}");
    assert_eq!(usage_of(c, &t).await, (65, 4), "{what}");
    assert!(ok(c.sweep_expired_reviews(now, 0).await, what).is_empty());
    // Other checks' expired reviews may be swept too: collect ours.
    let mut swept = Vec::new();
    loop {
        let round = ok(c.sweep_expired_reviews(now, 1).await, what);
        assert!(round.len() <= 1, "{what}: the limit holds");
        if round.is_empty() {
            break;
        }
        swept.extend(round.into_iter().filter(|r| r.tenant == t));
    }
    let mut ids: Vec<&str> = swept.iter().map(|r| r.id.as_str()).collect();
    ids.sort_unstable();
    let mut expected = vec![expired.id.as_str(), at_now.id.as_str()];
    expected.sort_unstable();
    assert_eq!(ids, expected, "{what}");
    let namespace = ok(c.tenant(&t).await, what).namespace;
    for r in &swept {
        assert_eq!(r.namespace, namespace, "{what}");
        let blobs = if r.id == expired.id { 2 } else { 1 };
        assert_eq!(r.blobs.len(), blobs, "{what}: {}", r.id);
    }
    assert_eq!(usage_of(c, &t).await, (10, 1), "{what}: released");
    assert_eq!(ok(c.review_snapshot(&t, &expired.id).await, what), None);
    assert!(ok(c.review_snapshot(&t, &live.id).await, what).is_some());
    assert!(ok(c.review_events(&t, &expired.id, 0, 10).await, what).is_empty());
}

async fn another_tenants_review_cannot_be_deleted(c: &Catalog) {
    let what = "another_tenants_review_cannot_be_deleted";
    let t = tenant(c, "review-owner").await;
    let other = tenant(c, "review-intruder").await;
    let now = now_ms();
    let new = new_review(now, 10);
    created(c, &t, &new, what).await;
    assert_eq!(ok(c.delete_review(&other, &new.id).await, what), None);
    assert!(ok(c.review_snapshot(&t, &new.id).await, what).is_some());
    assert_eq!(usage_of(c, &t).await, (10, 1), "{what}");
    assert_eq!(usage_of(c, &other).await, (0, 0), "{what}");
    // Nor changed: every change is looked up within the tenant.
    assert!(matches!(
        c.push_review_version(
            &other,
            &new.id,
            &NewVersion {
                parent: 1,
                digest: "d2",
                blob: &blob("v", 1),
                progress: false
            },
            now,
            LIMITS
        )
        .await,
        Err(CatalogError::NotFound)
    ));
    assert!(matches!(
        c.decide_latest(&other, &new.id, ReviewState::Approved, None, now)
            .await,
        Err(CatalogError::NotFound)
    ));
    assert!(matches!(
        c.put_review_comments(
            &other,
            &new.id,
            OWNER_WRITER,
            "Ida",
            1,
            None,
            &blob("c", 1),
            now,
            LIMITS
        )
        .await,
        Err(CatalogError::NotFound)
    ));
}

/// Waits for the first notice about `tenant` that `wanted` accepts.
async fn notice_for(
    rx: &mut tokio::sync::mpsc::Receiver<ReviewNotice>,
    tenant: &TenantId,
    wanted: impl Fn(&ReviewNotice) -> bool,
    what: &str,
) -> ReviewNotice {
    let wait = async {
        while let Some(notice) = rx.recv().await {
            let ours = match &notice {
                ReviewNotice::Changed { tenant: t, .. }
                | ReviewNotice::Removed { tenant: t, .. } => t == tenant,
                ReviewNotice::Resync => false,
            };
            if ours && wanted(&notice) {
                return notice;
            }
        }
        panic!("{what}: the notices ended");
    };
    tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .unwrap_or_else(|_| panic!("{what}: no notice within 10 s"))
}

/// Changes made through `b` reach the notices of `a` (two catalogs on one
/// database act as two replicas) on PostgreSQL; SQLite has no notices.
pub async fn review_notices_reach_other_catalogs(a: &Catalog, b: &Catalog) {
    let what = "review_notices_reach_other_catalogs";
    let notices = ok(a.review_notices().await, what);
    if a.backend() == Backend::Sqlite {
        assert!(notices.is_none(), "{what}: SQLite has no notices");
        return;
    }
    let mut rx = notices.unwrap_or_else(|| panic!("{what}: no notices on PostgreSQL"));
    let t = tenant(b, "notices").await;
    let now = now_ms();
    let new = new_review(now, 10);
    created(b, &t, &new, what).await;
    let id = new.id.clone();
    let pushed = ok(
        b.push_review_version(
            &t,
            &id,
            &NewVersion {
                parent: 1,
                digest: "d2",
                blob: &blob("v", 1),
                progress: false,
            },
            now,
            LIMITS,
        )
        .await,
        what,
    );
    assert!(matches!(pushed, Ok(Pushed::Created { n: 2, .. })), "{what}");
    let changed = notice_for(
        &mut rx,
        &t,
        |n| matches!(n, ReviewNotice::Changed { seq: 2, .. }),
        what,
    )
    .await;
    assert_eq!(
        changed,
        ReviewNotice::Changed {
            tenant: t.clone(),
            review: id.clone(),
            seq: 2
        },
        "{what}"
    );
    // A refused change commits nothing, so it announces nothing: the next
    // notice is the removal.
    let stale = ok(
        b.push_review_version(
            &t,
            &id,
            &NewVersion {
                parent: 1,
                digest: "d3",
                blob: &blob("v", 1),
                progress: false,
            },
            now,
            LIMITS,
        )
        .await,
        what,
    );
    assert!(stale.is_err(), "{what}");
    assert!(ok(b.delete_review(&t, &id).await, what).is_some());
    let removed = notice_for(&mut rx, &t, |_| true, what).await;
    assert_eq!(
        removed,
        ReviewNotice::Removed {
            tenant: t,
            review: id
        },
        "{what}"
    );
}
