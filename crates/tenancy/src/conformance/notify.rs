//! The notification catalog's conformance checks (`notify/`, migration
//! 0012), run by [`run`](super::run) on every database.
//!
//! Only these checks make subscriptions, and they run one after another,
//! so every outbox row a check claims is its own.

use std::collections::HashSet;

use super::support::{DecideLatest, new_tenant, ok, suffix};
use crate::{
    Attempt, AttemptEnd, BlobRef, Catalog, CatalogError, DeliveryState,
    MAX_SUBSCRIPTIONS_PER_REVIEW, NewReview, NewSubscription, NoticeType, OutboxItem, ReviewLimits,
    ReviewState, Role, SubscriptionRefusal, TargetKind, TenantId, now_ms,
};

/// Runs every notification check against `c`.
pub(super) async fn run(c: &Catalog) {
    subscriptions_belong_to_their_writer_and_are_capped(c).await;
    events_queue_one_row_per_interested_subscription_except_the_writers_own(c).await;
    claims_are_exclusive_lapse_and_are_released(c).await;
    failures_back_the_target_off_and_gone_disables_it(c).await;
    concurrent_claimers_never_share_a_row(c.clone()).await;
    notify_keys_are_made_once(c).await;
    removing_the_review_removes_its_subscriptions_and_outbox(c).await;
    reminders_go_to_deciders_until_the_deadline_which_goes_to_all(c).await;
}

const LIMITS: ReviewLimits = ReviewLimits {
    max_links: 8,
    max_versions: 100,
    max_events: 10_000,
};

fn sub_id() -> String {
    format!("sub_{}{}", suffix(), &suffix()[..4])
}

fn digest() -> [u8; 32] {
    let mut d = [0u8; 32];
    let _ = getrandom::fill(&mut d);
    d
}

fn blob(name: &str) -> BlobRef {
    BlobRef {
        blob: format!("{name}-{}", suffix()),
        bytes: 10,
    }
}

/// A tenant with a review and one reviewer link (`link`).
async fn review(c: &Catalog, label: &str) -> (TenantId, String, String) {
    let t = ok(c.create_tenant(&new_tenant(label)).await, label).id;
    let now = now_ms();
    let new = NewReview {
        id: suffix(),
        owner_digest: digest(),
        created_at: now,
        expires_at: now + 3_600_000,
        digest: "d1".into(),
        blob: blob("v1"),
    };
    ok(c.create_review(&t, &new).await, label).unwrap_or_else(|e| panic!("created: refused {e:?}"));
    let link = suffix();
    ok(
        c.add_review_link(&t, &new.id, &link, Role::Reviewer, &digest(), now, LIMITS)
            .await,
        label,
    )
    .unwrap_or_else(|e| panic!("link added: refused {e:?}"));
    (t, new.id, link)
}

fn subscription<'a>(id: &'a str, writer: &'a str, events: i64) -> NewSubscription<'a> {
    NewSubscription {
        id,
        writer,
        kind: TargetKind::Webhook,
        target: "https://hooks.example.com/planshare",
        link_base: "https://planshare.example.com",
        events,
        now: now_ms(),
    }
}

async fn subscribe(c: &Catalog, t: &TenantId, review: &str, writer: &str, events: i64) -> String {
    let id = sub_id();
    ok(
        c.add_subscription(t, review, &subscription(&id, writer, events))
            .await,
        "subscribe",
    )
    .unwrap_or_else(|e| panic!("subscribed: refused {e:?}"));
    id
}

async fn claim_all(c: &Catalog, replica: &str) -> Vec<OutboxItem> {
    ok(
        c.claim_outbox(replica, now_ms(), 100, &HashSet::new())
            .await,
        "claim",
    )
}

async fn deliver(c: &Catalog, items: &[OutboxItem]) {
    for item in items {
        let attempt = Attempt {
            n: item.attempts + 1,
            at: now_ms(),
            status: Some(204),
            error: None,
            ms: 3,
        };
        ok(
            c.finish_attempt(item, &attempt, AttemptEnd::Delivered)
                .await,
            "deliver",
        );
    }
}

async fn subscriptions_belong_to_their_writer_and_are_capped(c: &Catalog) {
    let what = "subscriptions_belong_to_their_writer_and_are_capped";
    let (t, id, link) = review(c, "notify-subs").await;
    let mine = subscribe(c, &t, &id, &link, NoticeType::ALL_MASK).await;
    let owners = subscribe(c, &t, &id, "owner", NoticeType::Decision.bit()).await;

    let listed = ok(c.subscriptions(&t, &id, Some(&link)).await, what);
    assert_eq!(
        listed.iter().map(|s| s.id.as_str()).collect::<Vec<_>>(),
        [mine.as_str()],
        "{what}: a writer sees its own"
    );
    assert_eq!(listed[0].events, NoticeType::ALL_MASK, "{what}");
    let all = ok(c.subscriptions(&t, &id, None).await, what);
    assert_eq!(all.len(), 2, "{what}: the owner sees all");
    // Another writer cannot see or remove it; the owner can see it.
    assert!(
        ok(c.subscription(&t, &id, &owners, Some(&link)).await, what).is_none(),
        "{what}"
    );
    assert!(
        !ok(
            c.remove_subscription(&t, &id, &owners, Some(&link)).await,
            what
        ),
        "{what}: removed by another writer"
    );
    assert!(
        ok(c.subscription(&t, &id, &mine, None).await, what).is_some(),
        "{what}"
    );
    // Another tenant's view of the review is empty.
    let other = ok(c.create_tenant(&new_tenant("notify-other")).await, what).id;
    assert!(
        ok(c.subscriptions(&other, &id, None).await, what).is_empty(),
        "{what}"
    );
    assert!(matches!(
        c.add_subscription(&other, &id, &subscription(&sub_id(), "owner", 1))
            .await,
        Err(CatalogError::NotFound)
    ));
    // Malformed input never reaches the database.
    for bad in [
        NewSubscription {
            events: 0,
            ..subscription("sub_aaaaaaaaaaaaaaaa", "owner", 1)
        },
        NewSubscription {
            events: 1 << 10,
            ..subscription("sub_aaaaaaaaaaaaaaaa", "owner", 1)
        },
        subscription("sub_short", "owner", 1),
        NewSubscription {
            target: "",
            ..subscription("sub_aaaaaaaaaaaaaaaa", "owner", 1)
        },
    ] {
        assert!(
            matches!(
                c.add_subscription(&t, &id, &bad).await,
                Err(CatalogError::Invalid(_))
            ),
            "{what}: {bad:?}"
        );
    }
    // The same id twice is a conflict.
    assert!(matches!(
        c.add_subscription(&t, &id, &subscription(&mine, &link, 1))
            .await,
        Err(CatalogError::Conflict("subscription"))
    ));
    // The cap.
    for _ in 2..MAX_SUBSCRIPTIONS_PER_REVIEW {
        subscribe(c, &t, &id, &link, 1).await;
    }
    assert_eq!(
        ok(
            c.add_subscription(&t, &id, &subscription(&sub_id(), &link, 1))
                .await,
            what
        ),
        Err(SubscriptionRefusal::TooMany(MAX_SUBSCRIPTIONS_PER_REVIEW)),
        "{what}"
    );
    assert!(
        ok(
            c.remove_subscription(&t, &id, &mine, Some(&link)).await,
            what
        ),
        "{what}"
    );
    assert!(
        ok(c.delete_review(&t, &id).await, what).is_some(),
        "{what}: cleanup"
    );
}

async fn events_queue_one_row_per_interested_subscription_except_the_writers_own(c: &Catalog) {
    let what = "events_queue_one_row_per_interested_subscription_except_the_writers_own";
    let (t, id, link) = review(c, "notify-queue").await;
    let owner_all = subscribe(c, &t, &id, "owner", NoticeType::ALL_MASK).await;
    let reviewer_all = subscribe(c, &t, &id, &link, NoticeType::ALL_MASK).await;
    let reviewer_decisions = subscribe(c, &t, &id, &link, NoticeType::Decision.bit()).await;
    let now = now_ms();

    // The reviewer comments, with a sealed preview: the owner's
    // subscription gets it, the reviewer's own do not.
    let stored = ok(
        c.put_review_comments_sealed(
            &t,
            &id,
            &link,
            "Dana",
            1,
            None,
            &blob("c"),
            now,
            LIMITS,
            Some("c2VhbGVkLXByZXZpZXc"),
        )
        .await,
        what,
    )
    .unwrap_or_else(|e| panic!("stored: refused {e:?}"));
    let claimed = claim_all(c, "replica-queue").await;
    assert_eq!(claimed.len(), 1, "{what}: {claimed:?}");
    let item = &claimed[0];
    assert_eq!(
        (item.subscription.as_str(), item.notice, item.seq),
        (owner_all.as_str(), NoticeType::Comment, stored.event.seq),
        "{what}"
    );
    assert_eq!(item.kind, TargetKind::Webhook);
    assert_eq!(
        item.data,
        format!(
            r#"{{"review":"{id}","seq":{},"kind":"comments","version":1,"writer":{{"role":"reviewer","name":"Dana"}},"sealed":"c2VhbGVkLXByZXZpZXc"}}"#,
            stored.event.seq
        ),
        "{what}"
    );
    deliver(c, &claimed).await;

    // The owner decides: both of the reviewer's subscriptions want it.
    let decided = ok(
        c.decide_latest(&t, &id, ReviewState::ChangesRequested, None, now)
            .await,
        what,
    )
    .unwrap_or_else(|e| panic!("decided: refused {e:?}"));
    let mut claimed = claim_all(c, "replica-queue").await;
    claimed.sort_by(|a, b| a.subscription.cmp(&b.subscription));
    let mut want = vec![reviewer_all.clone(), reviewer_decisions.clone()];
    want.sort();
    assert_eq!(
        claimed
            .iter()
            .map(|i| i.subscription.clone())
            .collect::<Vec<_>>(),
        want,
        "{what}"
    );
    assert!(
        claimed
            .iter()
            .all(|i| i.notice == NoticeType::Decision && i.seq == decided.seq),
        "{what}"
    );
    assert!(
        claimed[0]
            .data
            .contains(r#""decision":"changes_requested","writer":{"role":"owner"}"#),
        "{what}: {}",
        claimed[0].data
    );
    deliver(c, &claimed).await;
    assert!(claim_all(c, "replica-queue").await.is_empty(), "{what}");

    // Each delivery is listed with its attempt.
    let listed = ok(c.deliveries(&t, &id, &owner_all, 10).await, what);
    assert_eq!(listed.len(), 1, "{what}");
    assert_eq!(listed[0].state, DeliveryState::Delivered, "{what}");
    assert_eq!(listed[0].attempts.len(), 1, "{what}");
    assert_eq!(listed[0].attempts[0].status, Some(204), "{what}");
    ok(c.delete_review(&t, &id).await, what);
}

async fn claims_are_exclusive_lapse_and_are_released(c: &Catalog) {
    let what = "claims_are_exclusive_lapse_and_are_released";
    let (t, id, link) = review(c, "notify-claims").await;
    let sub = subscribe(c, &t, &id, "owner", NoticeType::ALL_MASK).await;
    let now = now_ms();
    for n in 0..3 {
        ok(
            c.put_review_comments(&t, &id, &link, "Dana", 1, None, &blob("c"), now + n, LIMITS)
                .await,
            what,
        )
        .unwrap_or_else(|e| panic!("stored: refused {e:?}"));
    }
    // Two claims in one millisecond: the second answers only its own rows
    // (its lease equals the first's).
    let at = now_ms();
    let one = ok(
        c.claim_outbox("replica-ms", at, 1, &HashSet::new()).await,
        what,
    );
    let two = ok(
        c.claim_outbox("replica-ms", at, 10, &HashSet::new()).await,
        what,
    );
    assert_eq!((one.len(), two.len()), (1, 2), "{what}");
    assert!(
        two.iter().all(|i| i.id != one[0].id),
        "{what}: a row handed out twice"
    );
    ok(c.release_claims("replica-ms").await, what);
    let first = claim_all(c, "replica-a").await;
    assert_eq!(first.len(), 3, "{what}");
    assert!(
        first.windows(2).all(|w| w[0].seq < w[1].seq),
        "{what}: oldest first"
    );
    assert!(
        claim_all(c, "replica-b").await.is_empty(),
        "{what}: held rows are not claimed twice"
    );
    // A target this replica is busy with is left for later.
    let busy: HashSet<String> = [sub.clone()].into();
    ok(c.release_claims("replica-a").await, what);
    assert!(
        ok(c.claim_outbox("replica-a", now_ms(), 10, &busy).await, what).is_empty(),
        "{what}: busy target"
    );
    // A lapsed claim is anyone's.
    let again = claim_all(c, "replica-a").await;
    assert_eq!(again.len(), 3, "{what}");
    let later = now_ms() + crate::CLAIM_LEASE_MS + 1;
    let taken = ok(
        c.claim_outbox("replica-b", later, 100, &HashSet::new())
            .await,
        what,
    );
    assert_eq!(taken.len(), 3, "{what}: lapsed claims");
    assert!(
        !ok(
            c.renew_claim("replica-a", taken[0].id, now_ms()).await,
            what
        ),
        "{what}: a lost claim does not renew"
    );
    assert!(
        ok(
            c.renew_claim("replica-b", taken[0].id, now_ms()).await,
            what
        ),
        "{what}"
    );
    // A restarted replica gives back what it held.
    assert_eq!(ok(c.release_claims("replica-b").await, what), 3, "{what}");
    let back = claim_all(c, "replica-b").await;
    deliver(c, &back).await;
    assert!(claim_all(c, "replica-b").await.is_empty(), "{what}");
    // Finished rows are swept.
    assert!(
        ok(c.sweep_deliveries(now_ms() + 1_000, 1_000).await, what) >= 3,
        "{what}"
    );
    assert!(
        ok(c.deliveries(&t, &id, &sub, 10).await, what).is_empty(),
        "{what}"
    );
    ok(c.delete_review(&t, &id).await, what);
}

async fn failures_back_the_target_off_and_gone_disables_it(c: &Catalog) {
    let what = "failures_back_the_target_off_and_gone_disables_it";
    let (t, id, link) = review(c, "notify-fail").await;
    let sub = subscribe(c, &t, &id, "owner", NoticeType::ALL_MASK).await;
    let now = now_ms();
    let put = async |n: i64| {
        let b = blob("c");
        c.put_review_comments(&t, &id, &link, "Dana", 1, None, &b, now + n, LIMITS)
            .await
    };
    ok(put(0).await, what).unwrap_or_else(|e| panic!("stored: refused {e:?}"));
    ok(put(1).await, what).unwrap_or_else(|e| panic!("stored: refused {e:?}"));
    let claimed = claim_all(c, "replica-f").await;
    assert_eq!(claimed.len(), 2, "{what}");
    let retry_at = now_ms() + 60_000;
    let attempt = Attempt {
        n: 1,
        at: now_ms(),
        status: Some(503),
        error: Some("answered 503".into()),
        ms: 12,
    };
    ok(
        c.finish_attempt(&claimed[0], &attempt, AttemptEnd::RetryAt(retry_at))
            .await,
        what,
    );
    assert_eq!(
        ok(c.target_failures(&t, &id, &sub).await, what),
        1,
        "{what}"
    );
    // The target waits: its other row and a new one are not due.
    ok(put(2).await, what).unwrap_or_else(|e| panic!("stored: refused {e:?}"));
    assert!(claim_all(c, "replica-f").await.is_empty(), "{what}");
    let listed = ok(c.deliveries(&t, &id, &sub, 10).await, what);
    assert_eq!(listed.len(), 3, "{what}");
    assert!(
        listed
            .iter()
            .all(|d| d.state == DeliveryState::Pending && d.next_at == Some(retry_at)),
        "{what}: {listed:?}"
    );
    let failed = listed
        .iter()
        .find(|d| d.id == claimed[0].id)
        .unwrap_or_else(|| panic!("{what}: the failed row is not listed"));
    assert_eq!(failed.attempts.len(), 1, "{what}");
    assert_eq!(failed.attempts[0].error.as_deref(), Some("answered 503"));
    // When the back-off ends, all three are due again (the claimed one too).
    let due = ok(
        c.claim_outbox("replica-f", retry_at, 100, &HashSet::new())
            .await,
        what,
    );
    assert_eq!(due.len(), 3, "{what}");
    assert_eq!(due[0].attempts, 1, "{what}: attempts so far");
    // The target is gone: every row fails, the subscription is disabled and
    // gets no more rows.
    let gone = Attempt {
        n: 2,
        status: Some(410),
        error: Some("gone".into()),
        ..attempt
    };
    ok(
        c.finish_attempt(&due[0], &gone, AttemptEnd::Gone).await,
        what,
    );
    let subscription = ok(c.subscription(&t, &id, &sub, None).await, what)
        .unwrap_or_else(|| panic!("{what}: the subscription is gone"));
    assert!(subscription.disabled_at.is_some(), "{what}");
    ok(put(3).await, what).unwrap_or_else(|e| panic!("stored: refused {e:?}"));
    let listed = ok(c.deliveries(&t, &id, &sub, 10).await, what);
    assert_eq!(listed.len(), 3, "{what}: no row for the disabled target");
    assert!(
        listed.iter().all(|d| d.state == DeliveryState::Failed),
        "{what}: {listed:?}"
    );
    assert!(claim_all(c, "replica-f").await.is_empty(), "{what}");
    ok(c.delete_review(&t, &id).await, what);
}

async fn concurrent_claimers_never_share_a_row(c: Catalog) {
    let what = "concurrent_claimers_never_share_a_row";
    let (t, id, link) = review(&c, "notify-race").await;
    for _ in 0..8 {
        subscribe(&c, &t, &id, "owner", NoticeType::ALL_MASK).await;
    }
    let now = now_ms();
    for n in 0..5 {
        ok(
            c.put_review_comments(&t, &id, &link, "Dana", 1, None, &blob("c"), now + n, LIMITS)
                .await,
            what,
        )
        .unwrap_or_else(|e| panic!("stored: refused {e:?}"));
    }
    let claimers: Vec<_> = (0..4)
        .map(|n| {
            let c = c.clone();
            tokio::spawn(async move {
                let mut mine = Vec::new();
                for _ in 0..10 {
                    let got = c
                        .claim_outbox(&format!("racer-{n}"), now_ms(), 3, &HashSet::new())
                        .await
                        .unwrap_or_else(|e| panic!("claim: refused {e:?}"));
                    mine.extend(got.into_iter().map(|i| i.id));
                }
                mine
            })
        })
        .collect();
    let mut seen = HashSet::new();
    let mut total = 0;
    for claimer in claimers {
        for row in claimer
            .await
            .unwrap_or_else(|e| panic!("claimer: refused {e:?}"))
        {
            total += 1;
            assert!(seen.insert(row), "{what}: row {row} claimed twice");
        }
    }
    assert_eq!(total, 40, "{what}: 8 targets x 5 events");
    ok(c.delete_review(&t, &id).await, what);
}

async fn notify_keys_are_made_once(c: &Catalog) {
    let what = "notify_keys_are_made_once";
    let name = format!("test-key-{}", suffix());
    let first = ok(c.notify_key(&name, now_ms(), || "one".into()).await, what);
    let second = ok(c.notify_key(&name, now_ms(), || "two".into()).await, what);
    assert_eq!((first.as_str(), second.as_str()), ("one", "one"), "{what}");
}

async fn removing_the_review_removes_its_subscriptions_and_outbox(c: &Catalog) {
    let what = "removing_the_review_removes_its_subscriptions_and_outbox";
    let (t, id, link) = review(c, "notify-gone").await;
    let sub = subscribe(c, &t, &id, "owner", NoticeType::ALL_MASK).await;
    ok(
        c.put_review_comments(
            &t,
            &id,
            &link,
            "Dana",
            1,
            None,
            &blob("c"),
            now_ms(),
            LIMITS,
        )
        .await,
        what,
    )
    .unwrap_or_else(|e| panic!("stored: refused {e:?}"));
    assert!(ok(c.delete_review(&t, &id).await, what).is_some(), "{what}");
    assert!(
        ok(c.subscriptions(&t, &id, None).await, what).is_empty(),
        "{what}"
    );
    assert!(
        ok(c.deliveries(&t, &id, &sub, 10).await, what).is_empty(),
        "{what}"
    );
    assert!(claim_all(c, "replica-gone").await.is_empty(), "{what}");
}

async fn reminders_go_to_deciders_until_the_deadline_which_goes_to_all(c: &Catalog) {
    let what = "reminders_go_to_deciders_until_the_deadline_which_goes_to_all";
    let (t, id, reviewer) = review(c, "notify-remind").await;
    let approver = suffix();
    ok(
        c.add_review_link(
            &t,
            &id,
            &approver,
            Role::Approver,
            &digest(),
            now_ms(),
            LIMITS,
        )
        .await,
        what,
    )
    .unwrap_or_else(|e| panic!("{what}: refused {e:?}"));
    let owners = subscribe(c, &t, &id, "owner", NoticeType::ALL_MASK).await;
    let approvers = subscribe(c, &t, &id, &approver, NoticeType::ALL_MASK).await;
    let reviewers = subscribe(c, &t, &id, &reviewer, NoticeType::ALL_MASK).await;
    // Linking the approver queued nothing for these (they came later).
    assert!(claim_all(c, "replica-r").await.is_empty(), "{what}");
    let now = now_ms();
    let deadline = now + 600_000;
    ok(
        c.set_review_deadline(&t, &id, Some(deadline), Some(60_000), now)
            .await,
        what,
    );
    assert!(matches!(
        c.set_review_deadline(&t, &id, None, Some(1_000), now).await,
        Err(CatalogError::Invalid(_))
    ));
    let snapshot = ok(c.review_snapshot(&t, &id).await, what).unwrap_or_else(|| panic!("{what}"));
    assert_eq!(
        (snapshot.deadline, snapshot.remind_every),
        (Some(deadline), Some(60_000))
    );
    // Not due yet; then due: the approver's subscription only.
    assert_eq!(
        ok(c.queue_due_reminders(now + 1_000).await, what),
        0,
        "{what}"
    );
    assert_eq!(
        ok(c.queue_due_reminders(now + 61_000).await, what),
        1,
        "{what}"
    );
    assert_eq!(
        ok(c.queue_due_reminders(now + 61_000).await, what),
        0,
        "{what}: once"
    );
    let claimed = ok(
        c.claim_outbox("replica-r", now + 61_000, 100, &HashSet::new())
            .await,
        what,
    );
    assert_eq!(claimed.len(), 1, "{what}: {claimed:?}");
    assert_eq!(
        (
            claimed[0].subscription.as_str(),
            claimed[0].notice,
            claimed[0].seq
        ),
        (approvers.as_str(), NoticeType::Reminder, 0)
    );
    assert!(
        claimed[0]
            .data
            .contains(r#""kind":"reminder","round":1,"version":1"#),
        "{}",
        claimed[0].data
    );
    deliver(c, &claimed).await;
    // The deadline: every subscription, once; reminders stop.
    assert_eq!(ok(c.queue_due_reminders(deadline).await, what), 3, "{what}");
    assert_eq!(
        ok(c.queue_due_reminders(deadline + 120_000).await, what),
        0,
        "{what}"
    );
    let mut claimed = ok(
        c.claim_outbox("replica-r", deadline, 100, &HashSet::new())
            .await,
        what,
    );
    claimed.sort_by(|a, b| a.subscription.cmp(&b.subscription));
    let mut want = vec![owners, approvers, reviewers];
    want.sort();
    assert_eq!(
        claimed
            .iter()
            .map(|i| i.subscription.clone())
            .collect::<Vec<_>>(),
        want,
        "{what}"
    );
    assert!(
        claimed.iter().all(|i| i.notice == NoticeType::Deadline),
        "{what}"
    );
    deliver(c, &claimed).await;
    // A decided round is not reminded.
    ok(
        c.set_review_deadline(&t, &id, None, Some(60_000), now)
            .await,
        what,
    );
    ok(
        c.decide_latest(&t, &id, ReviewState::Approved, None, now)
            .await,
        what,
    )
    .unwrap_or_else(|e| panic!("{what}: refused {e:?}"));
    assert_eq!(
        ok(c.queue_due_reminders(now + 61_000).await, what),
        0,
        "{what}"
    );
    assert!(matches!(
        c.set_review_deadline(&t, "nosuchreview", None, None, now)
            .await,
        Err(CatalogError::NotFound)
    ));
    ok(c.delete_review(&t, &id).await, what);
}
