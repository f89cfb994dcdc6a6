//! Every backend this crate builds runs the same conformance suite.

// Helpers outside `#[test]` functions unwrap too: a failed step is a failed test.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use paste_store::{FsConfig, StoreConfig, StoreKind, conformance};

#[tokio::test]
async fn memory_backend_conforms() {
    let store = paste_store::open(&StoreConfig {
        kind: StoreKind::Memory,
        ..StoreConfig::default()
    })
    .await
    .unwrap();
    conformance::run(store).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fs_backend_conforms() {
    let dir = tempfile::tempdir().unwrap();
    let store = paste_store::open(&StoreConfig {
        kind: StoreKind::Fs,
        fs: FsConfig {
            path: dir.path().join("pastes"),
            ..FsConfig::default()
        },
    })
    .await
    .unwrap();
    conformance::run(Arc::clone(&store)).await;
}
