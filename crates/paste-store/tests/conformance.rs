//! Every backend this crate builds runs the same conformance suite: memory
//! and fs always, Redis and S3 against the real servers `scripts/test`
//! starts (a missing one fails under CI).

// Helpers outside `#[test]` functions unwrap too: a failed step is a failed test.
#![allow(clippy::unwrap_used)]

use paste_store::conformance::{self, env};
use paste_store::{FsConfig, FsSync, StoreConfig, StoreKind};

async fn open(config: StoreConfig) -> std::sync::Arc<dyn paste_store::PasteStore> {
    paste_store::open(&config).await.unwrap()
}

#[tokio::test]
async fn memory_backend_conforms() {
    conformance::run(
        open(StoreConfig {
            kind: StoreKind::Memory,
            ..StoreConfig::default()
        })
        .await,
    )
    .await;
}

/// The metrics wrapper changes no answer of the store it wraps.
#[tokio::test]
async fn an_instrumented_store_conforms() {
    let inner = open(StoreConfig {
        kind: StoreKind::Memory,
        ..StoreConfig::default()
    })
    .await;
    conformance::run(paste_store::instrument::Instrumented::wrap(inner)).await;
}

/// Both ways of flushing (group commit and one `fsync` per file) give the
/// same store.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fs_backend_conforms() {
    for sync in [FsSync::Batch, FsSync::File] {
        let dir = tempfile::tempdir().unwrap();
        let fs = FsConfig {
            path: dir.path().join("pastes"),
            sync,
            ..FsConfig::default()
        };
        conformance::run(
            open(StoreConfig {
                kind: StoreKind::Fs,
                fs,
                ..StoreConfig::default()
            })
            .await,
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn redis_backend_conforms() {
    let Some(redis) = env::redis() else { return };
    conformance::run(
        open(StoreConfig {
            kind: StoreKind::Redis,
            redis,
            ..StoreConfig::default()
        })
        .await,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn s3_backend_conforms() {
    let Some(s3) = env::s3() else { return };
    conformance::run(
        open(StoreConfig {
            kind: StoreKind::S3,
            s3,
            ..StoreConfig::default()
        })
        .await,
    )
    .await;
}

/// The memory store's listing (it holds only what puts wrote: no foreign
/// value can be planted in it).
#[tokio::test]
async fn memory_inventory_conforms() {
    conformance::inventory(&paste_store::MemoryStore::new(), None).await;
}

/// Files the fs store never writes, written beside its own.
struct FsPlant(paste_store::FsStore);

#[async_trait::async_trait]
impl conformance::Plant for FsPlant {
    async fn record(&self, key: &paste_store::PasteKey, bytes: &[u8]) {
        let path = self.0.path_of(key);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    async fn stray_in(&self, namespace: &paste_store::Namespace) -> String {
        let shard = self.0.root().join(namespace.as_str()).join("6162");
        std::fs::create_dir_all(&shard).unwrap();
        let path = shard.join("not-a-paste");
        std::fs::write(&path, b"x").unwrap();
        path.display().to_string()
    }
    async fn stray_at_top(&self) -> String {
        let path = self.0.root().join("Not A Namespace");
        std::fs::write(&path, b"x").unwrap();
        path.display().to_string()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fs_inventory_conforms() {
    let dir = tempfile::tempdir().unwrap();
    let store = paste_store::FsStore::open(&FsConfig {
        path: dir.path().join("pastes"),
        ..FsConfig::default()
    })
    .await
    .unwrap();
    conformance::inventory(&store, Some(&FsPlant(store.clone()))).await;
}
