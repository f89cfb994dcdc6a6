//! The Redis backend against the real Redis `scripts/test` provides
//! (`PLANSHARE_TEST_REDIS_URL`; skipped locally without it, required in CI):
//! what it makes of values it did not write whole.
#![cfg(feature = "redis")]
// Helpers outside `#[test]` functions unwrap too: a failed step is a failed test.
#![allow(clippy::unwrap_used)]

use paste_store::conformance::{self, env, fresh_key, paste};
use paste_store::{PasteKey, RedisConfig, StoreConfig, StoreError, StoreKind};

/// Writes `bytes` under `key`'s Redis key as is, expiring in an hour.
fn set_raw(config: &RedisConfig, key: &PasteKey, bytes: &[u8]) {
    let redis_key = format!("{}{}:{}", config.key_prefix, key.namespace(), key.id());
    let mut conn = redis::Client::open(config.url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    redis::cmd("SET")
        .arg(redis_key)
        .arg(bytes)
        .arg("PX")
        .arg(3_600_000)
        .query::<()>(&mut conn)
        .unwrap();
}

/// A value that is not a whole record — garbage, empty, a record cut short
/// — reads as damaged (not absent, not an internal error), and deleting it
/// works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_values_read_as_damaged_and_can_be_deleted() {
    let Some(config) = env::redis() else { return };
    let store = paste_store::open(&StoreConfig {
        kind: StoreKind::Redis,
        redis: config.clone(),
        ..StoreConfig::default()
    })
    .await
    .unwrap();
    let stored = paste("abc", 3_600_000);
    // The record as the backend writes it, to cut short.
    let probe = fresh_key("default");
    store.put_if_absent(&probe, stored.clone()).await.unwrap();
    let redis_key = format!("{}{}:{}", config.key_prefix, probe.namespace(), probe.id());
    let mut conn = redis::Client::open(config.url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let record: Vec<u8> = redis::cmd("GET").arg(&redis_key).query(&mut conn).unwrap();
    store.delete(&probe).await.unwrap();

    let cases: [(&str, Vec<u8>, bool); 3] = [
        ("garbage", b"{\"data\":\"abc\"}".to_vec(), false),
        ("empty", Vec::new(), false),
        ("truncated", record[..record.len() - 1].to_vec(), true),
    ];
    for (what, bytes, header_holds) in cases {
        let key = fresh_key("default");
        set_raw(&config, &key, &bytes);
        match store.get(&key).await {
            Err(StoreError::Damaged { header, .. }) => {
                assert_eq!(header.is_some(), header_holds, "{what}");
                if let Some(header) = header {
                    assert_eq!(header.delete_token, stored.delete_token, "{what}");
                }
            }
            other => panic!("{what}: {other:?}"),
        }
        store.delete(&key).await.unwrap();
        assert!(
            matches!(store.get(&key).await, Err(StoreError::NotFound)),
            "{what}"
        );
    }
}

/// Keys the Redis store never writes, set beside its own (expiring in an
/// hour, so the shared test server is left as found).
struct RedisPlant(RedisConfig);

impl RedisPlant {
    fn set(&self, name: &str, bytes: &[u8]) {
        let mut conn = redis::Client::open(self.0.url.as_str())
            .unwrap()
            .get_connection()
            .unwrap();
        redis::cmd("SET")
            .arg(name)
            .arg(bytes)
            .arg("PX")
            .arg(3_600_000)
            .query::<()>(&mut conn)
            .unwrap();
    }
}

#[async_trait::async_trait]
impl conformance::Plant for RedisPlant {
    async fn record(&self, key: &PasteKey, bytes: &[u8]) {
        set_raw(&self.0, key, bytes);
    }
    async fn stray_in(&self, namespace: &paste_store::Namespace) -> String {
        let name = format!("{}{namespace}:not:a:paste", self.0.key_prefix);
        self.set(&name, b"x");
        name
    }
    async fn stray_at_top(&self) -> String {
        let name = format!("{}stray-key", self.0.key_prefix);
        self.set(&name, b"x");
        name
    }
}

/// The Redis store's listing, in a key prefix of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_inventory_conforms() {
    let Some(config) = env::redis() else { return };
    let store = paste_store::RedisStore::open(&config).await.unwrap();
    conformance::inventory(&store, Some(&RedisPlant(config.clone()))).await;
    // Leave the shared server as found (the planted keys expire by themselves).
    let mut conn = redis::Client::open(config.url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}*", config.key_prefix))
        .query(&mut conn)
        .unwrap();
    if !keys.is_empty() {
        redis::cmd("DEL").arg(keys).query::<u64>(&mut conn).unwrap();
    }
}
