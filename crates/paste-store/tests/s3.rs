//! The S3 backend against a real S3-compatible server (moto in CI; see
//! `scripts/test`), plus the failure modes that need no server at all.
//!
//! The server's endpoint comes from `PLANSHARE_TEST_S3_ENDPOINT`
//! (e.g. `http://127.0.0.1:5000`) and credentials from the standard AWS
//! variables (`AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test` for moto).
//! Without the endpoint the server tests are skipped locally and fail in CI.
//! Every test works in a fresh bucket of its own.
#![cfg(feature = "s3")]
// Helpers outside `#[test]` functions unwrap too: a failed step is a failed test.
#![allow(clippy::unwrap_used, clippy::print_stderr)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_s3::Client;
use aws_sdk_s3::config::{Region, RequestChecksumCalculation, ResponseChecksumValidation};
use aws_sdk_s3::primitives::ByteStream;
use paste_store::conformance::{self, fresh_key, paste};
use paste_store::{OpenError, PasteStore, S3Config, StoreConfig, StoreError, StoreKind};

const HOUR: i64 = 3_600_000;

/// The S3 test server's endpoint, or `None` when the test should be skipped.
fn endpoint() -> Option<String> {
    match std::env::var("PLANSHARE_TEST_S3_ENDPOINT") {
        Ok(endpoint) if !endpoint.is_empty() => {
            assert!(
                std::env::var_os("AWS_ACCESS_KEY_ID").is_some(),
                "PLANSHARE_TEST_S3_ENDPOINT is set but AWS_ACCESS_KEY_ID is not: \
                 set AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test for the test server"
            );
            Some(endpoint)
        }
        _ if std::env::var_os("CI").is_some() => {
            panic!("PLANSHARE_TEST_S3_ENDPOINT is not set: scripts/test starts an S3 server")
        }
        _ => {
            eprintln!(
                "skipped: PLANSHARE_TEST_S3_ENDPOINT is not set (start an S3 server, e.g. \
                 moto_server, and point it there to run the S3 tests)"
            );
            None
        }
    }
}

/// A fresh, empty bucket on the test server: the store's config and a raw
/// SDK client for looking at (and tampering with) the objects directly.
struct Bucket {
    config: S3Config,
    client: Client,
}

impl Bucket {
    async fn create(endpoint: String) -> Self {
        let config = S3Config {
            endpoint,
            bucket: format!("planshare-test-{}", random_hex()),
            prefix: "pastes/".into(),
            force_path_style: true,
            ..S3Config::default()
        };
        let client = raw_client(&config).await;
        client
            .create_bucket()
            .bucket(&config.bucket)
            .send()
            .await
            .unwrap();
        Bucket { config, client }
    }

    async fn store(&self) -> Arc<dyn PasteStore> {
        open_s3(self.config.clone()).await.unwrap()
    }

    async fn raw_bytes(&self, key: &str) -> (Vec<u8>, Option<String>) {
        let out = self
            .client
            .get_object()
            .bucket(&self.config.bucket)
            .key(key)
            .send()
            .await
            .unwrap();
        let etag = out.e_tag().map(str::to_owned);
        (out.body.collect().await.unwrap().to_vec(), etag)
    }

    async fn put_raw(&self, key: &str, bytes: Vec<u8>) {
        self.client
            .put_object()
            .bucket(&self.config.bucket)
            .key(key)
            .body(ByteStream::from(bytes))
            .send()
            .await
            .unwrap();
    }
}

async fn raw_client(config: &S3Config) -> Client {
    let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(Region::new(config.region.clone()))
        .endpoint_url(config.endpoint.clone())
        .load()
        .await;
    Client::from_conf(
        aws_sdk_s3::config::Builder::from(&sdk)
            .force_path_style(true)
            .request_checksum_calculation(RequestChecksumCalculation::WhenRequired)
            .response_checksum_validation(ResponseChecksumValidation::WhenRequired)
            .build(),
    )
}

async fn open_s3(s3: S3Config) -> Result<Arc<dyn PasteStore>, OpenError> {
    paste_store::open(&StoreConfig {
        kind: StoreKind::S3,
        s3,
        ..StoreConfig::default()
    })
    .await
}

fn random_hex() -> String {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b).unwrap();
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn object_key(key: &paste_store::PasteKey) -> String {
    format!("pastes/{}/{}", key.namespace(), key.id())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn s3_backend_conforms() {
    let Some(endpoint) = endpoint() else { return };
    let bucket = Bucket::create(endpoint).await;
    let store = bucket.store().await;
    assert_eq!(store.backend(), "s3");
    conformance::run(store).await;
}

/// Objects the S3 store never writes, put beside its own.
struct S3Plant<'a>(&'a Bucket);

#[async_trait::async_trait]
impl conformance::Plant for S3Plant<'_> {
    async fn record(&self, key: &paste_store::PasteKey, bytes: &[u8]) {
        self.0.put_raw(&object_key(key), bytes.to_vec()).await;
    }
    async fn stray_in(&self, namespace: &paste_store::Namespace) -> String {
        let name = format!("pastes/{namespace}/not/a/paste");
        self.0.put_raw(&name, b"x".to_vec()).await;
        name
    }
    async fn stray_at_top(&self) -> String {
        let name = "pastes/stray-object".to_owned();
        self.0.put_raw(&name, b"x".to_vec()).await;
        name
    }
}

/// The S3 store's listing, in a fresh bucket.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn s3_inventory_conforms() {
    let Some(endpoint) = endpoint() else { return };
    let bucket = Bucket::create(endpoint).await;
    let store = paste_store::S3Store::open(&bucket.config).await.unwrap();
    conformance::inventory(&store, Some(&S3Plant(&bucket))).await;
}

#[tokio::test]
async fn a_collision_leaves_the_original_byte_identical() {
    let Some(endpoint) = endpoint() else { return };
    let bucket = Bucket::create(endpoint).await;
    let store = bucket.store().await;
    let key = fresh_key("default");
    store
        .put_if_absent(&key, paste("original", HOUR))
        .await
        .unwrap();
    let before = bucket.raw_bytes(&object_key(&key)).await;

    for _ in 0..3 {
        let second = store.put_if_absent(&key, paste("intruder", HOUR)).await;
        assert!(
            matches!(second, Err(StoreError::AlreadyExists)),
            "{second:?}"
        );
    }
    let after = bucket.raw_bytes(&object_key(&key)).await;
    assert_eq!(before.0, after.0, "the stored bytes changed");
    assert_eq!(
        before.1, after.1,
        "the ETag changed: the object was rewritten"
    );
    assert_eq!(store.get(&key).await.unwrap().payload.to_text(), "original");
}

#[tokio::test]
async fn an_expired_object_reads_as_not_found_while_it_still_exists() {
    let Some(endpoint) = endpoint() else { return };
    let bucket = Bucket::create(endpoint).await;
    let store = bucket.store().await;
    let key = fresh_key("default");
    store
        .put_if_absent(&key, paste("stale", -1_000))
        .await
        .unwrap();
    let got = store.get(&key).await;
    assert!(matches!(got, Err(StoreError::NotFound)), "{got:?}");
    // Expiry is enforced on read, not by deleting the object.
    let (bytes, _) = bucket.raw_bytes(&object_key(&key)).await;
    assert!(!bytes.is_empty());
}

#[tokio::test]
async fn objects_carry_their_expiry_as_metadata_and_expires_header() {
    let Some(endpoint) = endpoint() else { return };
    let bucket = Bucket::create(endpoint).await;
    let store = bucket.store().await;
    let key = fresh_key("default");
    let p = paste("with metadata", HOUR);
    store.put_if_absent(&key, p.clone()).await.unwrap();
    let head = bucket
        .client
        .head_object()
        .bucket(&bucket.config.bucket)
        .key(object_key(&key))
        .send()
        .await
        .unwrap();
    let expires_at = p.expires_at.to_string();
    assert_eq!(
        head.metadata().and_then(|m| m.get("expires-at")),
        Some(&expires_at)
    );
    let expires = head.expires_string().unwrap_or_default();
    let parsed = aws_sdk_s3::primitives::DateTime::from_str(
        expires,
        aws_sdk_s3::primitives::DateTimeFormat::HttpDate,
    )
    .unwrap();
    // The HTTP date has whole seconds.
    assert_eq!(parsed.secs(), i64::try_from(p.expires_at / 1000).unwrap());
}

#[tokio::test]
async fn damaged_or_oversized_objects_are_damaged_left_alone_by_puts_and_deletable() {
    let Some(endpoint) = endpoint() else { return };
    let bucket = Bucket::create(endpoint).await;
    let store = bucket.store().await;

    let garbage = fresh_key("default");
    bucket
        .put_raw(&object_key(&garbage), b"{\"not\":\"a record\"}".to_vec())
        .await;
    let got = store.get(&garbage).await;
    assert!(
        matches!(got, Err(StoreError::Damaged { header: None, .. })),
        "{got:?}"
    );
    let put = store.put_if_absent(&garbage, paste("x", HOUR)).await;
    assert!(matches!(put, Err(StoreError::AlreadyExists)), "{put:?}");
    let (bytes, _) = bucket.raw_bytes(&object_key(&garbage)).await;
    assert_eq!(bytes, b"{\"not\":\"a record\"}");
    store.delete(&garbage).await.unwrap();
    assert!(matches!(
        store.get(&garbage).await,
        Err(StoreError::NotFound)
    ));

    // Empty, and a record cut short (its header still holds).
    let stored = paste("abc", HOUR);
    let truncated = fresh_key("default");
    store
        .put_if_absent(&truncated, stored.clone())
        .await
        .unwrap();
    let (record, _) = bucket.raw_bytes(&object_key(&truncated)).await;
    bucket
        .put_raw(&object_key(&truncated), record[..record.len() - 1].to_vec())
        .await;
    match store.get(&truncated).await {
        Err(StoreError::Damaged {
            header: Some(header),
            ..
        }) => assert_eq!(header.delete_token, stored.delete_token),
        other => panic!("truncated: {other:?}"),
    }
    let empty = fresh_key("default");
    bucket.put_raw(&object_key(&empty), Vec::new()).await;
    let got = store.get(&empty).await;
    assert!(
        matches!(got, Err(StoreError::Damaged { header: None, .. })),
        "{got:?}"
    );
    for key in [&truncated, &empty] {
        store.delete(key).await.unwrap();
        assert!(matches!(store.get(key).await, Err(StoreError::NotFound)));
    }

    // One byte over the largest record (64 MiB payload + 64-byte header).
    let huge = fresh_key("default");
    bucket
        .put_raw(&object_key(&huge), vec![0u8; 64 * 1024 * 1024 + 65])
        .await;
    let started = Instant::now();
    let got = store.get(&huge).await;
    match got {
        Err(StoreError::Damaged { reason, .. }) => assert!(reason.contains("maximum"), "{reason}"),
        other => panic!("oversized object: {other:?}"),
    }
    eprintln!("oversized object refused in {:?}", started.elapsed());
    // Free the test server's memory.
    store.delete(&huge).await.unwrap();
}

#[tokio::test]
async fn a_missing_bucket_is_unavailable_never_not_found() {
    let Some(endpoint) = endpoint() else { return };
    let config = S3Config {
        endpoint,
        bucket: format!("planshare-missing-{}", random_hex()),
        ..S3Config::default()
    };
    let store = open_s3(config).await.unwrap();
    let key = fresh_key("default");
    for (what, result) in [
        ("get", store.get(&key).await.map(|_| ())),
        ("put", store.put_if_absent(&key, paste("x", HOUR)).await),
        ("delete", store.delete(&key).await),
        ("health", store.health().await),
    ] {
        match result {
            Err(StoreError::Unavailable {
                reason,
                retry_after,
                ..
            }) => {
                assert_eq!(reason, "the S3 bucket does not exist", "{what}");
                assert_eq!(retry_after, Some(Duration::from_secs(1)), "{what}");
            }
            other => panic!("{what} on a missing bucket: {other:?}"),
        }
    }
}

/// Needs no server: the endpoint is a loopback port nobody listens on.
#[tokio::test]
async fn an_unreachable_endpoint_is_unavailable_within_the_operation_timeout() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    }; // closed again here
    let config = S3Config {
        endpoint: format!("http://127.0.0.1:{port}"),
        bucket: "planshare-unreachable".into(),
        attempt_timeout_ms: 500,
        operation_timeout_ms: 2_000,
        max_attempts: 3,
        ..S3Config::default()
    };
    let bound = Duration::from_millis(config.operation_timeout_ms) + Duration::from_secs(1);

    let started = Instant::now();
    let store = open_s3(config).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "opening must not contact S3 (took {:?})",
        started.elapsed()
    );

    let key = fresh_key("default");
    for what in ["get", "put", "delete", "health"] {
        let started = Instant::now();
        let result = match what {
            "get" => store.get(&key).await.map(|_| ()),
            "put" => store.put_if_absent(&key, paste("x", HOUR)).await,
            "delete" => store.delete(&key).await,
            _ => store.health().await,
        };
        let took = started.elapsed();
        assert!(
            matches!(result, Err(StoreError::Unavailable { .. })),
            "{what}: {result:?}"
        );
        assert!(took <= bound, "{what} took {took:?}, more than {bound:?}");
        eprintln!("{what} against a closed port after {took:?}: {result:?}");
    }
}

#[tokio::test]
async fn opening_without_a_bucket_names_the_setting() {
    match open_s3(S3Config::default()).await {
        Err(OpenError::Config(msg)) => {
            assert!(msg.contains("PLANSHARE_S3_BUCKET"), "{msg}");
            assert!(msg.contains("store.s3.bucket"), "{msg}");
        }
        other => panic!("open without a bucket: {other:?}"),
    }
}
