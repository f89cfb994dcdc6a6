//! The behaviour every [`PasteStore`] backend must show. A backend's test calls
//! [`run`] with a fresh store; each check uses keys of its own, so the suite can
//! share a store with other tests. Its listing ([`StoreInventory`]) is checked
//! by [`inventory`], on a store of its own (the first check is of an empty one).

use std::sync::Arc;

use crate::{
    DeleteTokenDigest, EntryKind, KeyKind, Namespace, Page, PasteId, PasteKey, PasteStore, Payload,
    RecordProblem, StoreError, StoreInventory, StoredPaste, TopLevel, now_ms,
};

/// Runs every check against `store`, panicking with the check's name on failure.
pub async fn run(store: Arc<dyn PasteStore>) {
    put_then_get_returns_the_same_paste(&*store).await;
    put_if_absent_never_overwrites(&*store).await;
    expired_pastes_read_as_not_found(&*store).await;
    an_expired_paste_can_be_replaced(&*store).await;
    delete_is_idempotent(&*store).await;
    concurrent_puts_of_one_key_have_exactly_one_winner(store.clone()).await;
    empty_and_five_mib_values_round_trip(&*store).await;
    namespaces_never_see_each_others_keys(&*store).await;
    purging_a_namespace_removes_all_of_it_and_nothing_else(&*store).await;
    review_blobs_and_pastes_of_one_id_are_apart(&*store).await;
    health_is_ok(&*store).await;
}

/// A key in `ns` with a fresh random id.
pub fn fresh_key(ns: &str) -> PasteKey {
    let ns = Namespace::parse(ns).unwrap_or_else(|e| panic!("bad namespace {ns:?}: {e}"));
    let id = PasteId::generate(16).unwrap_or_else(|e| panic!("id generation failed: {e}"));
    PasteKey::new(ns, id)
}

/// A paste of `text` that expires `ttl_ms` from now (negative: already expired).
pub fn paste(text: &str, ttl_ms: i64) -> StoredPaste {
    let now = now_ms();
    StoredPaste {
        payload: Payload::from_text(text.to_owned()),
        created_at: now,
        expires_at: now.saturating_add_signed(ttl_ms),
        delete_token: Some(DeleteTokenDigest::of("token")),
        burn_after_read: false,
    }
}

const HOUR: i64 = 3_600_000;

fn ok<T>(r: Result<T, StoreError>, what: &str) -> T {
    r.unwrap_or_else(|e| panic!("{what}: unexpected error {e:?}"))
}

async fn put_then_get_returns_the_same_paste(store: &dyn PasteStore) {
    for text in ["q1YqULJSKkktLlGyUiooyk8pTS5RBMmEAg", "not base64 ✓", "AA=="] {
        let key = fresh_key("conformance");
        let p = paste(text, HOUR);
        ok(store.put_if_absent(&key, p.clone()).await, "put");
        let got = ok(store.get(&key).await, "get after put");
        assert_eq!(got, p, "put_then_get_returns_the_same_paste");
        assert_eq!(got.payload.to_text(), text, "text round trip");
    }
    // Every flag survives the round trip.
    let key = fresh_key("conformance");
    let p = StoredPaste {
        burn_after_read: true,
        delete_token: None,
        ..paste("q1YqULJSKkktLlGyUiooyk8pTS5RBMmEAg", HOUR)
    };
    ok(store.put_if_absent(&key, p.clone()).await, "put burn");
    assert_eq!(
        ok(store.get(&key).await, "get burn"),
        p,
        "burn-after-read flag round trip"
    );
}

async fn put_if_absent_never_overwrites(store: &dyn PasteStore) {
    let key = fresh_key("conformance");
    ok(
        store.put_if_absent(&key, paste("first", HOUR)).await,
        "first put",
    );
    let second = store.put_if_absent(&key, paste("second", HOUR)).await;
    assert!(
        matches!(second, Err(StoreError::AlreadyExists)),
        "put_if_absent_never_overwrites: second put gave {second:?}"
    );
    let got = ok(store.get(&key).await, "get after refused put");
    assert_eq!(
        got.payload.to_text(),
        "first",
        "put_if_absent_never_overwrites"
    );
}

async fn expired_pastes_read_as_not_found(store: &dyn PasteStore) {
    let key = fresh_key("conformance");
    ok(
        store.put_if_absent(&key, paste("old", -1_000)).await,
        "put expired",
    );
    let got = store.get(&key).await;
    assert!(
        matches!(got, Err(StoreError::NotFound)),
        "expired_pastes_read_as_not_found: got {got:?}"
    );
    let missing = store.get(&fresh_key("conformance")).await;
    assert!(
        matches!(missing, Err(StoreError::NotFound)),
        "absent key: {missing:?}"
    );
}

async fn an_expired_paste_can_be_replaced(store: &dyn PasteStore) {
    let key = fresh_key("conformance");
    ok(
        store.put_if_absent(&key, paste("old", -1_000)).await,
        "put expired",
    );
    ok(
        store.put_if_absent(&key, paste("new", HOUR)).await,
        "put over expired",
    );
    let got = ok(store.get(&key).await, "get replaced");
    assert_eq!(
        got.payload.to_text(),
        "new",
        "an_expired_paste_can_be_replaced"
    );
}

async fn delete_is_idempotent(store: &dyn PasteStore) {
    let key = fresh_key("conformance");
    ok(store.delete(&key).await, "delete absent");
    ok(store.put_if_absent(&key, paste("x", HOUR)).await, "put");
    ok(store.delete(&key).await, "delete present");
    let got = store.get(&key).await;
    assert!(
        matches!(got, Err(StoreError::NotFound)),
        "get after delete: {got:?}"
    );
    ok(store.delete(&key).await, "delete again");
    ok(
        store.put_if_absent(&key, paste("again", HOUR)).await,
        "put after delete",
    );
}

async fn concurrent_puts_of_one_key_have_exactly_one_winner(store: Arc<dyn PasteStore>) {
    for round in 0..5 {
        let key = fresh_key("conformance");
        // Half the rounds race over an expired value, which takes the slow path.
        if round % 2 == 1 {
            ok(
                store.put_if_absent(&key, paste("expired", -1_000)).await,
                "put expired",
            );
        }
        let tasks: Vec<_> = (0..16)
            .map(|i| {
                let (store, key) = (store.clone(), key.clone());
                tokio::spawn(async move {
                    let r = store
                        .put_if_absent(&key, paste(&format!("writer-{i}"), HOUR))
                        .await;
                    (i, r)
                })
            })
            .collect();
        let mut winners = Vec::new();
        for t in tasks {
            let (i, r) = t.await.unwrap_or_else(|e| panic!("task panicked: {e}"));
            match r {
                Ok(()) => winners.push(i),
                Err(StoreError::AlreadyExists) => {}
                Err(e) => panic!("concurrent put failed: {e:?}"),
            }
        }
        assert_eq!(winners.len(), 1, "exactly one winner, got {winners:?}");
        let got = ok(store.get(&key).await, "get after race");
        assert_eq!(
            got.payload.to_text(),
            format!("writer-{}", winners[0]),
            "the winner's value is stored"
        );
    }
}

async fn empty_and_five_mib_values_round_trip(store: &dyn PasteStore) {
    let big_b64: String = (0..5 * 1024 * 1024)
        .map(|i: usize| {
            char::from(
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                    [(i * 7 + i / 64) % 64],
            )
        })
        .collect();
    let big_text = "é".repeat(5 * 1024 * 1024 / 2);
    for text in [String::new(), big_b64, big_text] {
        let key = fresh_key("conformance");
        ok(
            store.put_if_absent(&key, paste(&text, HOUR)).await,
            "put sized value",
        );
        let got = ok(store.get(&key).await, "get sized value");
        assert!(
            got.payload.to_text() == text,
            "value of {} bytes round trips",
            text.len()
        );
    }
}

async fn namespaces_never_see_each_others_keys(store: &dyn PasteStore) {
    let a = fresh_key("tenant-a");
    let b = PasteKey::new(
        Namespace::parse("tenant-b").unwrap_or_else(|e| panic!("{e}")),
        a.id().clone(),
    );
    ok(
        store.put_if_absent(&a, paste("a's paste", HOUR)).await,
        "put a",
    );
    let got = store.get(&b).await;
    assert!(
        matches!(got, Err(StoreError::NotFound)),
        "b reads a's id: {got:?}"
    );
    ok(store.delete(&b).await, "b deletes a's id");
    assert_eq!(
        ok(store.get(&a).await, "a after b's delete")
            .payload
            .to_text(),
        "a's paste"
    );
    ok(
        store.put_if_absent(&b, paste("b's paste", HOUR)).await,
        "b puts the same id",
    );
    assert_eq!(
        ok(store.get(&a).await, "a after b's put").payload.to_text(),
        "a's paste"
    );
    assert_eq!(
        ok(store.get(&b).await, "b's own").payload.to_text(),
        "b's paste"
    );
}

async fn purging_a_namespace_removes_all_of_it_and_nothing_else(store: &dyn PasteStore) {
    let what = "purging_a_namespace_removes_all_of_it_and_nothing_else";
    // Namespaces of this run only (the store may be shared), one the other's prefix.
    let tag = fresh_key("x").id().as_str().to_ascii_lowercase();
    let gone = format!("purge-{tag}");
    let kept = [format!("purge-{tag}x"), format!("purge-{tag}-b")];
    let mut gone_keys = Vec::new();
    for i in 0..25 {
        let key = fresh_key(&gone);
        ok(
            store
                .put_if_absent(&key, paste(&format!("gone {i}"), HOUR))
                .await,
            what,
        );
        gone_keys.push(key);
    }
    let kept_keys: Vec<_> = kept.iter().map(|ns| fresh_key(ns)).collect();
    for key in &kept_keys {
        ok(store.put_if_absent(key, paste("kept", HOUR)).await, what);
    }
    let namespace = gone_keys[0].namespace().clone();
    assert_eq!(
        ok(store.purge_namespace(&namespace).await, what),
        25,
        "{what}: count"
    );
    for key in &gone_keys {
        assert!(
            matches!(store.get(key).await, Err(StoreError::NotFound)),
            "{what}: a purged paste is still readable"
        );
    }
    for key in &kept_keys {
        assert_eq!(
            ok(store.get(key).await, what).payload.to_text(),
            "kept",
            "{what}"
        );
    }
    // Idempotent, and the namespace can be written again afterwards.
    assert_eq!(
        ok(store.purge_namespace(&namespace).await, what),
        0,
        "{what}: again"
    );
    let again = fresh_key(&gone);
    ok(store.put_if_absent(&again, paste("new", HOUR)).await, what);
    assert_eq!(ok(store.get(&again).await, what).payload.to_text(), "new");
    ok(store.purge_namespace(&namespace).await, what);
    for key in &kept_keys {
        ok(store.delete(key).await, what);
    }
}

async fn review_blobs_and_pastes_of_one_id_are_apart(store: &dyn PasteStore) {
    let what = "review_blobs_and_pastes_of_one_id_are_apart";
    let tag = fresh_key("x").id().as_str().to_ascii_lowercase();
    let paste_key = fresh_key(&format!("blobs-{tag}"));
    let blob_key = PasteKey::review_blob(paste_key.namespace().clone(), paste_key.id().clone());
    // A blob where no paste is: the paste id reads nothing.
    ok(
        store.put_if_absent(&blob_key, paste("blob", HOUR)).await,
        what,
    );
    assert!(
        matches!(store.get(&paste_key).await, Err(StoreError::NotFound)),
        "{what}: a paste id reached a review blob"
    );
    // A paste of the same id is another value; deleting one keeps the other.
    ok(
        store.put_if_absent(&paste_key, paste("paste", HOUR)).await,
        what,
    );
    assert_eq!(
        ok(store.get(&blob_key).await, what).payload.to_text(),
        "blob"
    );
    assert_eq!(
        ok(store.get(&paste_key).await, what).payload.to_text(),
        "paste"
    );
    ok(store.delete(&paste_key).await, what);
    assert_eq!(
        ok(store.get(&blob_key).await, what).payload.to_text(),
        "blob"
    );
    // A purge of the namespace takes the blobs with it.
    ok(
        store.put_if_absent(&paste_key, paste("paste", HOUR)).await,
        what,
    );
    assert_eq!(
        ok(store.purge_namespace(paste_key.namespace()).await, what),
        2,
        "{what}: purge count"
    );
    assert!(
        matches!(store.get(&blob_key).await, Err(StoreError::NotFound)),
        "{what}: a purged review blob is still readable"
    );
}

async fn health_is_ok(store: &dyn PasteStore) {
    ok(store.health().await, "health");
}

/// Values the store would never write, written under its feet, for the
/// inventory checks (a test of one backend provides it).
#[async_trait::async_trait]
pub trait Plant: Send + Sync {
    /// Stores `bytes` as they are (no record made of them) where the value
    /// of `key` is kept, expiring within the hour where the store can say so.
    async fn record(&self, key: &PasteKey, bytes: &[u8]);
    /// Stores a value in `namespace` under a name the store never writes;
    /// the name a listing gives it.
    async fn stray_in(&self, namespace: &Namespace) -> String;
    /// Stores a value at the store's top under a name that is no
    /// namespace; the name a listing gives it.
    async fn stray_at_top(&self) -> String;
}

/// Runs the [`StoreInventory`] checks against `store`, which must be
/// fresh (nothing stored yet: the first check is of an empty store).
/// `plant`: how to store what the store never writes (`None` for a
/// backend that cannot hold such a value, the memory store).
pub async fn inventory<S: PasteStore + StoreInventory>(store: &S, plant: Option<&dyn Plant>) {
    an_empty_store_lists_nothing(store).await;
    let tag = fresh_key("x").id().as_str().to_ascii_lowercase();
    let namespaces = [
        format!("inv-{tag}-a"),
        format!("inv-{tag}-b"),
        format!("inv-{tag}-c"),
    ];
    let stored = entries_come_a_page_at_a_time(store, &namespaces).await;
    namespaces_of_several_tenants_are_listed_once_in_order(store, &namespaces, &stored).await;
    if let Some(plant) = plant {
        foreign_records_are_listed_with_their_problem(store, plant, &namespaces[0]).await;
        names_the_store_never_writes_are_listed_as_unknown(store, plant, &namespaces[1]).await;
    }
}

/// Every page of a listing, by `next` (panics past 10 000 pages).
async fn all_pages<T, F, Fut>(what: &str, mut page: F) -> (Vec<T>, usize)
where
    F: FnMut(Option<String>) -> Fut,
    Fut: Future<Output = Result<Page<T>, StoreError>>,
{
    let mut items = Vec::new();
    let mut cursor = None;
    for pages in 1..=10_000 {
        let got = ok(page(cursor.take()).await, what);
        items.extend(got.items);
        match got.next {
            Some(next) => cursor = Some(next),
            None => return (items, pages),
        }
    }
    panic!("{what}: the listing never ended");
}

async fn an_empty_store_lists_nothing<S: StoreInventory>(store: &S) {
    let what = "an_empty_store_lists_nothing";
    let (tops, _) = all_pages(
        what,
        |c| async move { store.namespaces(c.as_deref(), 10).await },
    )
    .await;
    assert_eq!(tops, Vec::new(), "{what}: namespaces");
    let (entries, _) = all_pages(what, |c| async move {
        store.entries(None, c.as_deref(), 10).await
    })
    .await;
    assert_eq!(entries, Vec::new(), "{what}: entries");
    let ns = Namespace::parse("nothing-here").unwrap_or_else(|e| panic!("{e}"));
    let (entries, _) = all_pages(what, |c| {
        let ns = ns.clone();
        async move { store.entries(Some(&ns), c.as_deref(), 10).await }
    })
    .await;
    assert_eq!(entries, Vec::new(), "{what}: entries of a namespace");
}

/// Stores 5 pastes and 2 review blobs in the first namespace and one
/// paste in each of the others; lists the first 3 entries a page. The
/// keys stored, with their payloads' stored lengths.
async fn entries_come_a_page_at_a_time<S: PasteStore + StoreInventory>(
    store: &S,
    namespaces: &[String; 3],
) -> Vec<(PasteKey, u64)> {
    let what = "entries_come_a_page_at_a_time";
    let mut stored = Vec::new();
    for (n, ns) in namespaces.iter().enumerate() {
        for i in 0..if n == 0 { 7 } else { 1 } {
            let key = fresh_key(ns);
            let key = if i >= 5 {
                PasteKey::review_blob(key.namespace().clone(), key.id().clone())
            } else {
                key
            };
            let p = paste(&format!("entry {n}.{i}"), HOUR);
            let len = p.payload.stored_len() as u64;
            ok(store.put_if_absent(&key, p).await, what);
            stored.push((key, len));
        }
    }
    let first = stored[0].0.namespace().clone();
    let (listed, pages) = all_pages(what, |c| {
        let first = first.clone();
        async move { store.entries(Some(&first), c.as_deref(), 3).await }
    })
    .await;
    assert!(
        pages >= 2,
        "{what}: 7 entries, 3 a page, in {pages} page(s)"
    );
    let mut seen = std::collections::BTreeMap::new();
    for entry in listed {
        let key = entry
            .kind
            .key()
            .unwrap_or_else(|| panic!("{what}: an unknown name {:?}", entry.name))
            .clone();
        assert_eq!(
            entry.name,
            store.location(&key),
            "{what}: the name of {key:?}"
        );
        match (&entry.kind, key.kind()) {
            (EntryKind::Paste(_), KeyKind::Paste)
            | (EntryKind::ReviewBlob(_), KeyKind::ReviewBlob) => {}
            (kind, _) => panic!("{what}: {key:?} listed as {kind:?}"),
        }
        let head = entry
            .record
            .unwrap_or_else(|| panic!("{what}: no record head for {key:?}"));
        let info = head
            .header
            .unwrap_or_else(|p| panic!("{what}: a whole record read as {p:?}"));
        seen.insert(
            key.object_key(""),
            (info.payload_len, info.format, head.len),
        );
    }
    let expected: std::collections::BTreeMap<_, _> = stored[..7]
        .iter()
        .map(|(key, len)| {
            (
                key.object_key(""),
                (
                    *len,
                    crate::RECORD_FORMAT,
                    *len + crate::RECORD_HEADER_LEN as u64,
                ),
            )
        })
        .collect();
    assert_eq!(seen, expected, "{what}: every entry once, with its head");
    let present = ok(
        store
            .contains(&[
                stored[0].0.clone(),
                fresh_key(&namespaces[0]),
                stored[5].0.clone(),
            ])
            .await,
        what,
    );
    assert_eq!(present, [true, false, true], "{what}: contains");
    stored
}

async fn namespaces_of_several_tenants_are_listed_once_in_order<S: StoreInventory>(
    store: &S,
    namespaces: &[String; 3],
    stored: &[(PasteKey, u64)],
) {
    let what = "namespaces_of_several_tenants_are_listed_once_in_order";
    let (tops, pages) = all_pages(
        what,
        |c| async move { store.namespaces(c.as_deref(), 2).await },
    )
    .await;
    let names: Vec<String> = tops
        .iter()
        .map(|top| match top {
            TopLevel::Namespace(ns) => ns.as_str().to_owned(),
            TopLevel::Unknown(name) => panic!("{what}: an unknown name {name:?}"),
        })
        .collect();
    assert_eq!(&names[..], &namespaces[..], "{what}: in {pages} page(s)");
    assert!(
        pages >= 2,
        "{what}: 3 namespaces, 2 a page, in {pages} page(s)"
    );
    // The whole store: every namespace's entries.
    let (all, _) = all_pages(what, |c| async move {
        store.entries(None, c.as_deref(), 4).await
    })
    .await;
    let mut listed: Vec<String> = all
        .iter()
        .filter_map(|e| e.kind.key().map(|k| k.object_key("")))
        .collect();
    listed.sort();
    listed.dedup();
    let mut expected: Vec<String> = stored.iter().map(|(key, _)| key.object_key("")).collect();
    expected.sort();
    assert_eq!(listed, expected, "{what}: the whole store");
    // One namespace: its own entries only.
    let second = stored[7].0.namespace().clone();
    let (own, _) = all_pages(what, |c| {
        let second = second.clone();
        async move { store.entries(Some(&second), c.as_deref(), 4).await }
    })
    .await;
    let own: Vec<String> = own
        .iter()
        .filter_map(|e| e.kind.key().map(|k| k.object_key("")))
        .collect();
    assert_eq!(own, [stored[7].0.object_key("")], "{what}: one namespace");
}

async fn foreign_records_are_listed_with_their_problem<S: StoreInventory>(
    store: &S,
    plant: &dyn Plant,
    namespace: &str,
) {
    let what = "foreign_records_are_listed_with_their_problem";
    let record = crate::encode_record(&paste("héllo", HOUR));
    let mut future = record.clone();
    future[3] = b'2';
    let mut not_utf8 = record.clone();
    let last = not_utf8.len() - 1;
    not_utf8[last] = 0xff;
    let cases: [(&str, Vec<u8>); 3] = [
        ("future", future),
        ("truncated", record[..10].to_vec()),
        ("not_utf8", not_utf8),
    ];
    let mut keys = Vec::new();
    for (_, bytes) in &cases {
        let key = fresh_key(namespace);
        plant.record(&key, bytes).await;
        keys.push(key);
    }
    let ns = keys[0].namespace().clone();
    let (listed, _) = all_pages(what, |c| {
        let ns = ns.clone();
        async move { store.entries(Some(&ns), c.as_deref(), 100).await }
    })
    .await;
    let find = |key: &PasteKey| {
        listed
            .iter()
            .find(|e| e.kind.key() == Some(key))
            .unwrap_or_else(|| panic!("{what}: {key:?} not listed"))
    };
    let future = find(&keys[0]);
    let head = future
        .record
        .clone()
        .unwrap_or_else(|| panic!("{what}: no head"));
    assert_eq!(
        head.header,
        Err(RecordProblem::UnknownFormat('2')),
        "{what}: future"
    );
    assert_eq!(
        ok(store.check_payload(future).await, what),
        Some(Err(RecordProblem::UnknownFormat('2'))),
        "{what}: future, read whole"
    );
    let truncated = find(&keys[1])
        .record
        .clone()
        .unwrap_or_else(|| panic!("{what}: no head"));
    assert_eq!(
        (truncated.header, truncated.len),
        (Err(RecordProblem::TruncatedHeader(10)), 10),
        "{what}: truncated"
    );
    // The header checks out; only reading the payload finds the damage.
    let not_utf8 = find(&keys[2]);
    let head = not_utf8
        .record
        .clone()
        .unwrap_or_else(|| panic!("{what}: no head"));
    assert!(
        head.header.is_ok_and(|info| info.text),
        "{what}: not_utf8 head"
    );
    assert_eq!(
        ok(store.check_payload(not_utf8).await, what),
        Some(Err(RecordProblem::NotUtf8)),
        "{what}: not_utf8, read whole"
    );
    // The healthy entries of the namespace still read as whole records.
    for entry in listed
        .iter()
        .filter(|e| e.kind.key().is_some_and(|k| !keys.contains(k)))
    {
        assert_eq!(
            ok(store.check_payload(entry).await, what),
            Some(Ok(())),
            "{what}: {}",
            entry.name
        );
    }
}

async fn names_the_store_never_writes_are_listed_as_unknown<S: StoreInventory>(
    store: &S,
    plant: &dyn Plant,
    namespace: &str,
) {
    let what = "names_the_store_never_writes_are_listed_as_unknown";
    let ns = Namespace::parse(namespace).unwrap_or_else(|e| panic!("{e}"));
    let inside = plant.stray_in(&ns).await;
    let top = plant.stray_at_top().await;
    let (listed, _) = all_pages(what, |c| {
        let ns = ns.clone();
        async move { store.entries(Some(&ns), c.as_deref(), 100).await }
    })
    .await;
    let stray = listed
        .iter()
        .find(|e| e.name == inside)
        .unwrap_or_else(|| panic!("{what}: {inside:?} not listed in {listed:?}"));
    assert_eq!(
        (&stray.kind, &stray.record),
        (&EntryKind::Unknown, &None),
        "{what}"
    );
    assert!(
        listed
            .iter()
            .filter(|e| e.kind != EntryKind::Unknown)
            .count()
            == 1,
        "{what}: the namespace's own entry is still listed: {listed:?}"
    );
    let (tops, _) = all_pages(what, |c| async move {
        store.namespaces(c.as_deref(), 100).await
    })
    .await;
    assert!(
        tops.contains(&TopLevel::Unknown(top.clone())),
        "{what}: {top:?} not in {tops:?}"
    );
    assert!(
        tops.contains(&TopLevel::Namespace(ns.clone())),
        "{what}: {tops:?}"
    );
    let (all, _) = all_pages(what, |c| async move {
        store.entries(None, c.as_deref(), 100).await
    })
    .await;
    for name in [&inside, &top] {
        assert!(
            all.iter()
                .any(|e| &e.name == name && e.kind == EntryKind::Unknown),
            "{what}: {name:?} not listed as unknown in the whole store"
        );
    }
}

/// Backend settings for tests, from the environment `scripts/test` sets up.
///
/// `PLANSHARE_TEST_REDIS_URL` (e.g. `redis://127.0.0.1:6379`) and
/// `PLANSHARE_TEST_S3_ENDPOINT` + `PLANSHARE_TEST_S3_BUCKET` name the real
/// servers. When one is missing, a test of that backend fails under CI
/// (`CI` set) and is skipped with a message elsewhere — never silently.
pub mod env {
    use crate::{RedisConfig, S3Config};

    /// A Redis configuration with a key prefix of its own, or `None` (skip)
    /// outside CI when no test Redis is configured.
    pub fn redis() -> Option<RedisConfig> {
        let url = required("PLANSHARE_TEST_REDIS_URL", "Redis")?;
        Some(RedisConfig {
            url,
            key_prefix: format!("planshare-test:{}:", unique()),
            ..RedisConfig::default()
        })
    }

    /// An S3 configuration with an object prefix of its own in the test
    /// bucket, or `None` (skip) outside CI when no test S3 server is configured.
    pub fn s3() -> Option<S3Config> {
        let endpoint = required("PLANSHARE_TEST_S3_ENDPOINT", "an S3 server")?;
        let bucket =
            std::env::var("PLANSHARE_TEST_S3_BUCKET").unwrap_or_else(|_| "planshare-test".into());
        Some(S3Config {
            endpoint,
            bucket,
            prefix: format!("test-{}/", unique()),
            ..S3Config::default()
        })
    }

    fn required(var: &str, what: &str) -> Option<String> {
        match std::env::var(var) {
            Ok(value) if !value.is_empty() => Some(value),
            _ if std::env::var_os("CI").is_some() => panic!(
                "{var} is not set: the tests need {what}; run them through scripts/test, which starts one"
            ),
            _ => {
                #[expect(clippy::print_stderr, reason = "a skipped backend test says so")]
                {
                    eprintln!(
                        "skipping: {var} is not set (scripts/test starts {what} and sets it)"
                    );
                }
                None
            }
        }
    }

    fn unique() -> String {
        let mut bytes = [0u8; 8];
        let _ = getrandom::fill(&mut bytes);
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }
}
