//! The conformance checks of what `planshare-server doctor` asks of the
//! catalog (`audit.rs`): every paste row of a tenant in id (byte) order,
//! the review blobs its rows name, its recorded usage beside what its rows
//! add up to, and the re-count that repairs it. Run by [`run`](super::run)
//! on every database.

use super::support::{DecideLatest, new_tenant, ok, suffix};
use super::{paste, usage_of};
use crate::{
    BlobRef, Catalog, CatalogError, NewReview, NewVersion, OWNER_WRITER, PasteRecord, Pushed,
    ReviewLimits, ReviewState, Role, TenantId, UsageCount, now_ms,
};

/// Runs every audit check against `c`.
pub(super) async fn run(c: &Catalog) {
    paste_rows_are_listed_in_byte_order_across_pages(c).await;
    paste_rows_after_clamps_its_limit(c).await;
    usage_agrees_after_records_and_forgets(c).await;
    a_reservation_without_a_row_is_a_mismatch_that_recount_fixes(c).await;
    a_release_without_a_forget_is_a_mismatch_that_recount_fixes(c).await;
    review_blobs_are_listed_and_counted_in_usage(c).await;
    a_recount_counts_review_blobs_too(c).await;
    usage_of_an_unknown_tenant_is_not_found(c).await;
    sweeps_keep_usage_agreeing(c).await;
    recounts_racing_writes_leave_usage_agreeing(c.clone()).await;
}

const LIMITS: ReviewLimits = ReviewLimits {
    max_links: 3,
    max_versions: 3,
    max_events: 10_000,
};

fn ids(list: &[PasteRecord]) -> Vec<&str> {
    list.iter().map(|p| p.id.as_str()).collect()
}

/// Every page of `t`'s paste rows of `limit` rows, following the last id.
async fn all_pages(c: &Catalog, t: &TenantId, limit: i64, what: &str) -> Vec<Vec<PasteRecord>> {
    let mut pages = Vec::new();
    let mut after = String::new();
    loop {
        let page = ok(c.paste_rows_after(t, &after, limit).await, what);
        let Some(last) = page.last() else {
            return pages;
        };
        after = last.id.clone();
        pages.push(page);
        assert!(pages.len() <= 100, "{what}: the pages never end");
    }
}

fn blob(name: &str, bytes: i64) -> BlobRef {
    BlobRef {
        blob: format!("{name}-{}", suffix()),
        bytes,
    }
}

fn sorted(mut blobs: Vec<BlobRef>) -> Vec<BlobRef> {
    blobs.sort_by(|a, b| (&a.blob, a.bytes).cmp(&(&b.blob, b.bytes)));
    blobs
}

fn new_review(now: i64, blob: &BlobRef) -> NewReview {
    let mut owner_digest = [0u8; 32];
    let _ = getrandom::fill(&mut owner_digest);
    NewReview {
        id: suffix(),
        owner_digest,
        created_at: now,
        expires_at: now + 3_600_000,
        digest: "d1".into(),
        blob: blob.clone(),
    }
}

async fn create_review(c: &Catalog, t: &TenantId, blob: &BlobRef, what: &str) -> String {
    let new = new_review(now_ms(), blob);
    if let Err(refusal) = ok(c.create_review(t, &new).await, what) {
        panic!("{what}: create refused: {refusal:?}");
    }
    new.id
}

/// Adds a reviewer link to review `id`, returning the link (its writer id).
async fn add_link(c: &Catalog, t: &TenantId, id: &str, what: &str) -> String {
    let link = suffix();
    let mut d = [0u8; 32];
    let _ = getrandom::fill(&mut d);
    let added = ok(
        c.add_review_link(t, id, &link, Role::Reviewer, &d, now_ms(), LIMITS)
            .await,
        what,
    );
    assert!(added.is_ok(), "{what}: {added:?}");
    link
}

/// Stores `writer`'s comment set on version `version` of review `id`,
/// returning the replaced set's blob, if any.
#[allow(clippy::too_many_arguments)]
async fn put_comments(
    c: &Catalog,
    t: &TenantId,
    id: &str,
    writer: &str,
    name: &str,
    version: i64,
    blob: &BlobRef,
    what: &str,
) -> Option<BlobRef> {
    ok(
        c.put_review_comments(t, id, writer, name, version, None, blob, now_ms(), LIMITS)
            .await,
        what,
    )
    .unwrap_or_else(|r| panic!("{what}: comments refused: {r:?}"))
    .replaced
}

/// `count_usage`, asserting what its rows add up to and that it agrees
/// with `usage()` as recorded.
async fn count(c: &Catalog, t: &TenantId, what: &str) -> UsageCount {
    let n = ok(c.count_usage(t).await, what);
    assert_eq!(
        usage_of(c, t).await,
        (n.recorded_bytes, n.recorded_pastes),
        "{what}: count_usage reports the recorded usage"
    );
    n
}

fn agreeing(bytes: i64, pastes: i64) -> UsageCount {
    UsageCount {
        recorded_bytes: bytes,
        recorded_pastes: pastes,
        counted_bytes: bytes,
        counted_pastes: pastes,
    }
}

async fn paste_rows_are_listed_in_byte_order_across_pages(c: &Catalog) {
    let what = "paste_rows_are_listed_in_byte_order_across_pages";
    let now = now_ms();
    let t = ok(c.create_tenant(&new_tenant("audit-rows")).await, what).id;
    let other = ok(c.create_tenant(&new_tenant("audit-rows-b")).await, what).id;
    // Byte order: upper case before lower case, digits before letters, a
    // multi-byte UTF-8 id after every ASCII one, a prefix before its
    // extensions; expired and burn-after-read rows are listed too.
    let mine = [
        paste("aaaaaa01", 1, now, now + 60_000, false),
        paste("AAAAAA01", 2, now, now + 60_000, false),
        paste("AAAAAA02", 3, now - 9_000, now - 1, false), // expired
        paste("AAAAAA0", 4, now, now + 60_000, true),
        paste("0zzzzz99", 5, now, now + 60_000, false),
        paste("Zzzzzz01", 6, now - 9_000, now, false), // expires_at <= now: expired
        paste("\u{e9}t\u{e9}0001", 7, now, now + 60_000, false),
        paste("aaaaaa01x", 8, now, now + 60_000, false),
        paste("b", 9, now, now + 60_000, false),
    ];
    for p in &mine {
        assert!(
            ok(c.record_paste(&t, p).await, what),
            "{what}: {} fits",
            p.id
        );
    }
    // The other tenant's rows interleave with ours and share an id.
    let theirs = [
        paste("AAAAAA01", 50, now, now + 60_000, false),
        paste("AAAAAA015", 51, now, now + 60_000, false),
        paste("aaaaaa00", 52, now, now + 60_000, false),
        paste("c", 53, now - 9_000, now - 1, false),
    ];
    for p in &theirs {
        assert!(
            ok(c.record_paste(&other, p).await, what),
            "{what}: {} fits",
            p.id
        );
    }
    let mut expected = mine.to_vec();
    expected.sort_by(|a, b| a.id.as_bytes().cmp(b.id.as_bytes()));
    assert_eq!(
        ids(&expected),
        [
            "0zzzzz99",
            "AAAAAA0",
            "AAAAAA01",
            "AAAAAA02",
            "Zzzzzz01",
            "aaaaaa01",
            "aaaaaa01x",
            "b",
            "\u{e9}t\u{e9}0001"
        ],
        "{what}: the order expected"
    );

    // All at once: every row, whole, in byte order.
    let all = ok(c.paste_rows_after(&t, "", 100).await, what);
    assert_eq!(all, expected, "{what}: one page");
    // In pages of every size the concatenation is the same, each page full
    // but the last.
    for limit in 1..=4 {
        let pages = all_pages(c, &t, limit, what).await;
        let size = usize::try_from(limit).unwrap_or(usize::MAX);
        assert_eq!(
            pages.len(),
            expected.len().div_ceil(size),
            "{what}: pages of {limit}"
        );
        for page in &pages[..pages.len() - 1] {
            assert_eq!(page.len(), size, "{what}: a full page of {limit}");
        }
        let joined: Vec<PasteRecord> = pages.into_iter().flatten().collect();
        assert_eq!(joined, expected, "{what}: pages of {limit}");
    }
    // Pages of 2, exactly.
    let page = ok(c.paste_rows_after(&t, "", 2).await, what);
    assert_eq!(ids(&page), ["0zzzzz99", "AAAAAA0"], "{what}");
    let page = ok(c.paste_rows_after(&t, "AAAAAA0", 2).await, what);
    assert_eq!(ids(&page), ["AAAAAA01", "AAAAAA02"], "{what}");
    let page = ok(c.paste_rows_after(&t, "AAAAAA02", 2).await, what);
    assert_eq!(ids(&page), ["Zzzzzz01", "aaaaaa01"], "{what}");
    // "AAAAAA01" < "aaaaaa01": a cursor between the two cases.
    let page = ok(c.paste_rows_after(&t, "AAAAAA01", 3).await, what);
    assert_eq!(ids(&page), ["AAAAAA02", "Zzzzzz01", "aaaaaa01"], "{what}");
    let page = ok(c.paste_rows_after(&t, "aaaaaa01", 3).await, what);
    assert_eq!(
        ids(&page),
        ["aaaaaa01x", "b", "\u{e9}t\u{e9}0001"],
        "{what}"
    );
    // A cursor that names no row starts after where it would be.
    let page = ok(c.paste_rows_after(&t, "AAAAAA015", 1).await, what);
    assert_eq!(ids(&page), ["AAAAAA02"], "{what}: a cursor between rows");
    let page = ok(c.paste_rows_after(&t, "a", 1).await, what);
    assert_eq!(ids(&page), ["aaaaaa01"], "{what}: a lower-case prefix");
    let page = ok(c.paste_rows_after(&t, "B", 1).await, what);
    assert_eq!(ids(&page), ["Zzzzzz01"], "{what}: \"B\" < \"Z\" < \"a\"");
    let page = ok(c.paste_rows_after(&t, "z", 5).await, what);
    assert_eq!(ids(&page), ["\u{e9}t\u{e9}0001"], "{what}: after ASCII");
    assert!(
        ok(c.paste_rows_after(&t, "\u{e9}t\u{e9}0001", 5).await, what).is_empty(),
        "{what}: past the last row"
    );

    // The other tenant's rows: only its own, in its own order.
    let listed = ok(c.paste_rows_after(&other, "", 100).await, what);
    let mut expected_other = theirs.to_vec();
    expected_other.sort_by(|a, b| a.id.as_bytes().cmp(b.id.as_bytes()));
    assert_eq!(listed, expected_other, "{what}: the other tenant's");
    assert_eq!(
        ids(&listed),
        ["AAAAAA01", "AAAAAA015", "aaaaaa00", "c"],
        "{what}"
    );
    assert_eq!(
        ok(c.paste_rows_after(&t, "AAAAAA01", 100).await, what)
            .iter()
            .find(|p| p.id == "AAAAAA015"),
        None,
        "{what}: the other tenant's row is not ours"
    );

    // A forgotten row is no longer listed; a deleted tenant has none.
    assert!(ok(c.forget_paste(&t, "AAAAAA01").await, what).is_some());
    let after = ok(c.paste_rows_after(&t, "", 100).await, what);
    assert_eq!(
        ids(&after),
        [
            "0zzzzz99",
            "AAAAAA0",
            "AAAAAA02",
            "Zzzzzz01",
            "aaaaaa01",
            "aaaaaa01x",
            "b",
            "\u{e9}t\u{e9}0001"
        ],
        "{what}: after a forget"
    );
    assert_eq!(
        ok(c.paste_rows_after(&other, "", 100).await, what),
        expected_other,
        "{what}: the other tenant's rows stay"
    );
    ok(c.delete_tenant(&t).await, what);
    assert!(
        ok(c.paste_rows_after(&t, "", 100).await, what).is_empty(),
        "{what}: a deleted tenant"
    );
}

async fn paste_rows_after_clamps_its_limit(c: &Catalog) {
    let what = "paste_rows_after_clamps_its_limit";
    let now = now_ms();
    let t = ok(c.create_tenant(&new_tenant("audit-limit")).await, what).id;
    let batch: Vec<(TenantId, PasteRecord)> = (0..12)
        .map(|i| {
            let p = paste(&format!("lim{i:04}"), i, now, now + 60_000, false);
            (t.clone(), p)
        })
        .collect();
    for r in ok(c.record_pastes(&batch).await, what) {
        assert!(ok(r, what), "{what}: fits");
    }
    for limit in [0, -1, i64::MIN] {
        let page = ok(c.paste_rows_after(&t, "", limit).await, what);
        assert_eq!(ids(&page), ["lim0000"], "{what}: limit {limit} is 1");
    }
    for limit in [12, 13, 10_000, 10_001, i64::MAX] {
        let page = ok(c.paste_rows_after(&t, "", limit).await, what);
        assert_eq!(page.len(), 12, "{what}: limit {limit}");
    }
    let unknown = TenantId::generate().unwrap_or_else(|e| panic!("{e}"));
    assert!(
        ok(c.paste_rows_after(&unknown, "", 10).await, what).is_empty(),
        "{what}: an unknown tenant"
    );
    assert!(
        ok(c.review_blobs(&unknown).await, what).is_empty(),
        "{what}: an unknown tenant"
    );
}

async fn usage_agrees_after_records_and_forgets(c: &Catalog) {
    let what = "usage_agrees_after_records_and_forgets";
    let now = now_ms();
    let t = ok(c.create_tenant(&new_tenant("audit-usage")).await, what).id;
    let other = ok(c.create_tenant(&new_tenant("audit-usage-b")).await, what).id;
    assert_eq!(count(c, &t, what).await, agreeing(0, 0), "{what}: new");
    assert!(count(c, &t, what).await.agrees());

    let rows = [
        paste("u1", 100, now, now + 60_000, false),
        paste("u2", 20, now, now + 60_000, true),
        paste("u3", 0, now, now + 60_000, false), // no bytes, still an entry
        paste("u4", 3, now - 9_000, now - 1, false), // expired, not yet swept
    ];
    for p in &rows {
        assert!(ok(c.record_paste(&t, p).await, what), "{what}: {}", p.id);
    }
    assert!(ok(c.record_paste(&other, &rows[0]).await, what));
    assert_eq!(count(c, &t, what).await, agreeing(123, 4), "{what}");
    assert_eq!(count(c, &other, what).await, agreeing(100, 1), "{what}");

    // Forgetting (a delete, a burn-after-read read) releases exactly the row.
    assert!(ok(c.forget_paste(&t, "u2").await, what).is_some());
    assert_eq!(count(c, &t, what).await, agreeing(103, 3), "{what}");
    assert!(ok(c.forget_paste(&t, "u2").await, what).is_none());
    assert!(ok(c.forget_paste(&t, "u3").await, what).is_some());
    assert_eq!(count(c, &t, what).await, agreeing(103, 2), "{what}");
    // A batch, a duplicate (refused) and one over nothing.
    let batch = vec![
        (t.clone(), paste("u5", 5, now, now + 60_000, false)),
        (t.clone(), paste("u6", 6, now, now + 60_000, false)),
    ];
    for r in ok(c.record_pastes(&batch).await, what) {
        assert!(ok(r, what), "{what}");
    }
    assert!(matches!(
        c.record_paste(&t, &paste("u5", 50, now, now + 60_000, false))
            .await,
        Err(CatalogError::Conflict("paste"))
    ));
    assert_eq!(count(c, &t, what).await, agreeing(114, 4), "{what}");

    // A re-count of agreeing usage returns it and changes nothing.
    assert_eq!(
        ok(c.recount_usage(&t).await, what),
        agreeing(114, 4),
        "{what}: recount"
    );
    assert_eq!(usage_of(c, &t).await, (114, 4), "{what}: unchanged");
    assert_eq!(count(c, &t, what).await, agreeing(114, 4), "{what}");
    assert_eq!(count(c, &other, what).await, agreeing(100, 1), "{what}");
    let rows = ok(c.paste_rows_after(&t, "", 100).await, what);
    assert_eq!(ids(&rows), ["u1", "u4", "u5", "u6"], "{what}");
    assert_eq!(rows.iter().map(|p| p.bytes).sum::<i64>(), 114, "{what}");
}

async fn a_reservation_without_a_row_is_a_mismatch_that_recount_fixes(c: &Catalog) {
    let what = "a_reservation_without_a_row_is_a_mismatch_that_recount_fixes";
    let now = now_ms();
    let t = ok(c.create_tenant(&new_tenant("audit-reserve")).await, what).id;
    let other = ok(c.create_tenant(&new_tenant("audit-reserve-b")).await, what).id;
    for p in [
        paste("r1", 30, now, now + 60_000, false),
        paste("r2", 12, now - 9_000, now - 1, false),
    ] {
        assert!(ok(c.record_paste(&t, &p).await, what));
    }
    assert!(ok(c.reserve(&other, 5).await, what), "{what}: other");
    assert_eq!(count(c, &t, what).await, agreeing(42, 2), "{what}");

    // A reservation whose paste was never indexed (a crash between the two).
    assert!(ok(c.reserve(&t, 7).await, what), "{what}: reserve");
    let before = UsageCount {
        recorded_bytes: 49,
        recorded_pastes: 3,
        counted_bytes: 42,
        counted_pastes: 2,
    };
    let n = count(c, &t, what).await;
    assert_eq!(n, before, "{what}: recorded = counted + 7 bytes, + 1 entry");
    assert!(!n.agrees(), "{what}: a mismatch");
    // Counting repairs nothing.
    assert_eq!(count(c, &t, what).await, before, "{what}: counted twice");
    assert_eq!(usage_of(c, &t).await, (49, 3), "{what}: still recorded");

    // The re-count returns the counts before, and sets usage to the rows.
    let returned = ok(c.recount_usage(&t).await, what);
    assert_eq!(
        returned, before,
        "{what}: recount returns the counts before"
    );
    assert_eq!(usage_of(c, &t).await, (42, 2), "{what}: repaired");
    let after = count(c, &t, what).await;
    assert!(after.agrees(), "{what}: {after:?}");
    assert_eq!(after, agreeing(42, 2), "{what}");
    assert_eq!(
        ok(c.recount_usage(&t).await, what),
        agreeing(42, 2),
        "{what}: a second recount finds nothing to do"
    );
    // The other tenant's (mismatched) usage is not touched.
    let theirs = count(c, &other, what).await;
    assert_eq!(
        theirs,
        UsageCount {
            recorded_bytes: 5,
            recorded_pastes: 1,
            counted_bytes: 0,
            counted_pastes: 0,
        },
        "{what}: the other tenant's"
    );
    // Usage goes on from the repaired value.
    assert!(ok(
        c.record_paste(&t, &paste("r3", 8, now, now + 60_000, false))
            .await,
        what
    ));
    assert!(ok(c.forget_paste(&t, "r1").await, what).is_some());
    assert_eq!(count(c, &t, what).await, agreeing(20, 2), "{what}");
    assert_eq!(
        ok(c.recount_usage(&other).await, what),
        theirs,
        "{what}: the other tenant's recount"
    );
    assert_eq!(count(c, &other, what).await, agreeing(0, 0), "{what}");
}

async fn a_release_without_a_forget_is_a_mismatch_that_recount_fixes(c: &Catalog) {
    let what = "a_release_without_a_forget_is_a_mismatch_that_recount_fixes";
    let now = now_ms();
    let t = ok(c.create_tenant(&new_tenant("audit-release")).await, what).id;
    for p in [
        paste("s1", 30, now, now + 60_000, false),
        paste("s2", 12, now, now + 60_000, false),
    ] {
        assert!(ok(c.record_paste(&t, &p).await, what));
    }
    // Usage released while the row stays: recorded below counted.
    ok(c.release(&t, 30).await, what);
    let before = UsageCount {
        recorded_bytes: 12,
        recorded_pastes: 1,
        counted_bytes: 42,
        counted_pastes: 2,
    };
    assert_eq!(count(c, &t, what).await, before, "{what}");
    assert_eq!(ok(c.recount_usage(&t).await, what), before, "{what}");
    assert_eq!(count(c, &t, what).await, agreeing(42, 2), "{what}");
}

async fn review_blobs_are_listed_and_counted_in_usage(c: &Catalog) {
    let what = "review_blobs_are_listed_and_counted_in_usage";
    let now = now_ms();
    let t = ok(c.create_tenant(&new_tenant("audit-review")).await, what).id;
    let other = ok(c.create_tenant(&new_tenant("audit-review-b")).await, what).id;
    assert!(
        ok(c.review_blobs(&t).await, what).is_empty(),
        "{what}: none yet"
    );
    assert!(ok(
        c.record_paste(&t, &paste("rp1", 9, now, now + 60_000, false))
            .await,
        what
    ));

    // A review: two versions, a reviewer's comment set (replaced once), the
    // owner's comment set, a decision with feedback.
    let v1 = blob("v1", 100);
    let id = create_review(c, &t, &v1, what).await;
    assert_eq!(
        ok(c.review_blobs(&t).await, what),
        std::slice::from_ref(&v1),
        "{what}"
    );
    assert_eq!(count(c, &t, what).await, agreeing(109, 2), "{what}");
    let v2 = blob("v2", 200);
    let pushed = ok(
        c.push_review_version(
            &t,
            &id,
            &NewVersion {
                parent: 1,
                digest: "d2",
                blob: &v2,
                progress: false,
            },
            now,
            LIMITS,
        )
        .await,
        what,
    );
    assert!(
        matches!(pushed, Ok(Pushed::Created { n: 2, .. })),
        "{what}: {pushed:?}"
    );
    let link = add_link(c, &t, &id, what).await;
    let first = blob("c", 30);
    assert_eq!(
        put_comments(c, &t, &id, &link, "Ann", 2, &first, what).await,
        None
    );
    let second = blob("c", 40);
    assert_eq!(
        put_comments(c, &t, &id, &link, "Ann", 2, &second, what).await,
        Some(first.clone()),
        "{what}: replaced"
    );
    // A revoked link's comment set stays, listed and counted.
    assert!(
        ok(c.revoke_review_link(&t, &id, &link, now).await, what).is_some(),
        "{what}: revoked"
    );
    let owners = blob("o", 15);
    assert_eq!(
        put_comments(c, &t, &id, OWNER_WRITER, "Owner", 1, &owners, what).await,
        None
    );
    let feedback = blob("f", 50);
    let decided = ok(
        c.decide_latest(&t, &id, ReviewState::Approved, Some(&feedback), now)
            .await,
        what,
    );
    assert!(decided.is_ok(), "{what}: {decided:?}");
    // A second review, decided without feedback: no feedback blob.
    let w1 = blob("w1", 7);
    let id2 = create_review(c, &t, &w1, what).await;
    let decided = ok(
        c.decide_latest(&t, &id2, ReviewState::ChangesRequested, None, now)
            .await,
        what,
    );
    assert!(decided.is_ok(), "{what}: {decided:?}");
    // The other tenant's review, on the same id.
    let theirs = blob("x1", 1000);
    let mut new = new_review(now, &theirs);
    new.id = id.clone();
    let created = ok(c.create_review(&other, &new).await, what);
    assert!(created.is_ok(), "{what}: {created:?}");

    let expected = sorted(vec![
        v1.clone(),
        v2.clone(),
        second.clone(),
        owners.clone(),
        feedback.clone(),
        w1.clone(),
    ]);
    assert_eq!(
        sorted(ok(c.review_blobs(&t).await, what)),
        expected,
        "{what}"
    );
    assert_eq!(ok(c.review_blobs(&other).await, what), [theirs], "{what}");
    // Usage: the paste row and the six blobs, each one entry of its bytes.
    let bytes = 9 + 100 + 200 + 40 + 15 + 50 + 7;
    assert_eq!(count(c, &t, what).await, agreeing(bytes, 7), "{what}");
    assert_eq!(count(c, &other, what).await, agreeing(1000, 1), "{what}");
    assert_eq!(
        ok(c.recount_usage(&t).await, what),
        agreeing(bytes, 7),
        "{what}: nothing to repair"
    );

    // Deleting the first review takes its five blobs out of both.
    let removed =
        ok(c.delete_review(&t, &id).await, what).unwrap_or_else(|| panic!("{what}: not removed"));
    assert_eq!(
        sorted(removed.blobs),
        sorted(vec![v1, v2, second, owners, feedback]),
        "{what}: the removed blobs"
    );
    assert_eq!(ok(c.review_blobs(&t).await, what), [w1], "{what}");
    assert_eq!(count(c, &t, what).await, agreeing(16, 2), "{what}");
    assert_eq!(count(c, &other, what).await, agreeing(1000, 1), "{what}");
}

async fn a_recount_counts_review_blobs_too(c: &Catalog) {
    let what = "a_recount_counts_review_blobs_too";
    let now = now_ms();
    let t = ok(c.create_tenant(&new_tenant("audit-rrecount")).await, what).id;
    let v1 = blob("v1", 64);
    let id = create_review(c, &t, &v1, what).await;
    let link = add_link(c, &t, &id, what).await;
    let set = blob("c", 11);
    put_comments(c, &t, &id, &link, "Bea", 1, &set, what).await;
    assert!(ok(
        c.record_paste(&t, &paste("q1", 5, now, now + 60_000, false))
            .await,
        what
    ));
    assert_eq!(count(c, &t, what).await, agreeing(80, 3), "{what}");

    assert!(ok(c.reserve(&t, 7).await, what));
    let before = UsageCount {
        recorded_bytes: 87,
        recorded_pastes: 4,
        counted_bytes: 80,
        counted_pastes: 3,
    };
    assert_eq!(count(c, &t, what).await, before, "{what}");
    assert_eq!(ok(c.recount_usage(&t).await, what), before, "{what}");
    assert_eq!(count(c, &t, what).await, agreeing(80, 3), "{what}");

    // Review writes after the repair keep usage agreeing: a withdrawn set
    // is released and no longer listed.
    let withdrawn = ok(
        c.delete_review_comments(&t, &id, &link, None, now).await,
        what,
    )
    .unwrap_or_else(|r| panic!("{what}: {r:?}"))
    .unwrap_or_else(|| panic!("{what}: nothing withdrawn"));
    assert_eq!(withdrawn.1, set, "{what}");
    assert_eq!(ok(c.review_blobs(&t).await, what), [v1], "{what}");
    assert_eq!(count(c, &t, what).await, agreeing(69, 2), "{what}");
}

async fn usage_of_an_unknown_tenant_is_not_found(c: &Catalog) {
    let what = "usage_of_an_unknown_tenant_is_not_found";
    let unknown = TenantId::generate().unwrap_or_else(|e| panic!("{e}"));
    let r = c.count_usage(&unknown).await;
    assert!(matches!(r, Err(CatalogError::NotFound)), "{what}: {r:?}");
    let r = c.recount_usage(&unknown).await;
    assert!(matches!(r, Err(CatalogError::NotFound)), "{what}: {r:?}");
    // A deleted tenant is unknown too.
    let t = ok(c.create_tenant(&new_tenant("audit-gone")).await, what).id;
    assert!(ok(
        c.record_paste(&t, &paste("g1", 3, 1, i64::MAX, false))
            .await,
        what
    ));
    assert_eq!(count(c, &t, what).await, agreeing(3, 1), "{what}");
    ok(c.delete_tenant(&t).await, what);
    let r = c.count_usage(&t).await;
    assert!(matches!(r, Err(CatalogError::NotFound)), "{what}: {r:?}");
    let r = c.recount_usage(&t).await;
    assert!(matches!(r, Err(CatalogError::NotFound)), "{what}: {r:?}");
    assert!(ok(c.paste_rows_after(&t, "", 10).await, what).is_empty());
    assert!(ok(c.review_blobs(&t).await, what).is_empty());
}

/// Re-counts while pastes are recorded and forgotten and review comment
/// sets stored: the re-count holds the usage row's lock, so no write falls
/// between its read of usage and its count of the rows, and usage agrees
/// at the end.
async fn recounts_racing_writes_leave_usage_agreeing(c: Catalog) {
    let what = "recounts_racing_writes_leave_usage_agreeing";
    let now = now_ms();
    let t = ok(c.create_tenant(&new_tenant("audit-race")).await, what).id;
    let id = create_review(&c, &t, &blob("v1", 10), what).await;
    let link = add_link(&c, &t, &id, what).await;
    let mut tasks = Vec::new();
    for i in 0..24_i64 {
        let (c, t) = (c.clone(), t.clone());
        tasks.push(tokio::spawn(async move {
            let p = paste(&format!("race{i:03}"), 100 + i, now, now + 60_000, false);
            assert!(ok(c.record_paste(&t, &p).await, what), "{what}: fits");
            if i % 3 == 0 {
                assert!(ok(c.forget_paste(&t, &p.id).await, what).is_some());
            }
        }));
    }
    for _ in 0..6 {
        let (c, t) = (c.clone(), t.clone());
        tasks.push(tokio::spawn(async move {
            ok(c.recount_usage(&t).await, what);
            ok(c.count_usage(&t).await, what);
        }));
    }
    {
        let (c, t, id) = (c.clone(), t.clone(), id.clone());
        tasks.push(tokio::spawn(async move {
            for n in 1..=4 {
                put_comments(&c, &t, &id, &link, "Cy", 1, &blob("c", n), what).await;
            }
        }));
    }
    for task in tasks {
        task.await.unwrap_or_else(|e| panic!("{what}: task: {e}"));
    }
    let n = count(&c, &t, what).await;
    let paste_bytes: i64 = (0..24_i64).filter(|i| i % 3 != 0).map(|i| 100 + i).sum();
    // 16 paste rows, version 1 (10 bytes) and the last comment set (4 bytes).
    assert_eq!(n, agreeing(paste_bytes + 14, 18), "{what}");
    assert_eq!(ok(c.recount_usage(&t).await, what), n, "{what}");
}

/// The expiry sweeps of pastes and of reviews remove rows and their usage
/// together.
async fn sweeps_keep_usage_agreeing(c: &Catalog) {
    let what = "sweeps_keep_usage_agreeing";
    let now = now_ms();
    let t = ok(c.create_tenant(&new_tenant("audit-sweep")).await, what).id;
    for p in [
        paste("e1", 10, now - 9_000, now - 1, false),
        paste("e2", 20, now - 9_000, now, true),
        paste("l1", 40, now - 9_000, now + 60_000, false),
    ] {
        assert!(ok(c.record_paste(&t, &p).await, what), "{what}: {}", p.id);
    }
    let live = blob("v1", 100);
    let live_id = create_review(c, &t, &live, what).await;
    let mut expired = new_review(now - 7_200_000, &blob("v1", 200));
    expired.expires_at = now - 1;
    let created = ok(c.create_review(&t, &expired).await, what);
    assert!(created.is_ok(), "{what}: {created:?}");
    let link = add_link(c, &t, &live_id, what).await;
    let set = blob("c", 3);
    put_comments(c, &t, &live_id, &link, "Dee", 1, &set, what).await;
    assert_eq!(count(c, &t, what).await, agreeing(373, 6), "{what}");
    assert_eq!(ok(c.review_blobs(&t).await, what).len(), 3, "{what}");

    // Other checks' expired rows may be swept too: sweep until none is left.
    while ok(c.sweep_expired(now, 100).await, what) > 0 {}
    while !ok(c.sweep_expired_reviews(now, 100).await, what).is_empty() {}
    assert_eq!(
        ids(&ok(c.paste_rows_after(&t, "", 100).await, what)),
        ["l1"],
        "{what}"
    );
    assert_eq!(
        sorted(ok(c.review_blobs(&t).await, what)),
        sorted(vec![live, set]),
        "{what}"
    );
    assert_eq!(count(c, &t, what).await, agreeing(143, 3), "{what}");
}
