//! The behaviour every [`PasteStore`] backend must show. A backend's test calls
//! [`run`] with a fresh store; each check uses keys of its own, so the suite can
//! share a store with other tests.

use std::sync::Arc;

use crate::{
    DeleteTokenDigest, Namespace, PasteId, PasteKey, PasteStore, Payload, StoreError, StoredPaste,
    now_ms,
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
