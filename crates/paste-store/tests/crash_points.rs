//! What an interrupted write leaves behind. Each fail point stops the fs
//! backend's write path at one step, skipping every later step (clean-up
//! included), as a crash there would. A fresh store over the same directory
//! then stands for the restarted process.
//!
//! Fail points are process-global, so this file holds the only test that
//! uses them and it runs the points one after another.

// Helpers outside `#[test]` functions unwrap too: a failed step is a failed test.
#![allow(clippy::unwrap_used)]

use std::path::Path;

use paste_store::conformance::{fresh_key, paste};
use paste_store::{FsConfig, FsStore, FsSync, PasteStore, StoreError};

async fn open(root: &Path, sync: FsSync) -> FsStore {
    FsStore::open(&FsConfig {
        path: root.to_path_buf(),
        first_sweep_delay_secs: 3600,
        stale_tmp_secs: 0,
        sync,
        ..FsConfig::default()
    })
    .await
    .unwrap()
}

fn count_files(root: &Path) -> (usize, usize) {
    let (mut finals, mut tmps) = (0, 0);
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if entry.file_name().to_string_lossy().starts_with(".tmp-") {
                tmps += 1;
            } else {
                finals += 1;
            }
        }
    }
    (finals, tmps)
}

#[tokio::test]
async fn an_interrupted_write_is_all_or_nothing() {
    let scenario = fail::FailScenario::setup();
    for sync in [FsSync::Batch, FsSync::File] {
        interrupted_writes(sync).await;
    }
    failed_group_flushes().await;
    scenario.teardown();
}

async fn interrupted_writes(sync: FsSync) {
    let text = "Xc6xCsJAEATQX1kmhc0h2KYTbbRRUEmRpDiSlRy57IW7jSLiv4umEKznzTBPjMiR0W4YPQ8satUFoaO3UkklWUYn5ZFWOa3".repeat(50);
    // (point, the paste is visible after the restart)
    let points = [
        ("fs::after_tmp_create", false),
        ("fs::after_tmp_write", false),
        ("fs::after_tmp_fsync", false),
        ("fs::after_link", true),
        ("fs::after_dir_fsync", true),
    ];
    for (point, committed) in points {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), sync).await;
        let key = fresh_key("default");
        fail::cfg(point, "return").unwrap();
        let put = store.put_if_absent(&key, paste(&text, 60_000)).await;
        fail::remove(point);
        assert!(
            matches!(put, Err(StoreError::Internal { .. })),
            "{sync:?} {point}: {put:?}"
        );
        drop(store);

        let restarted = open(dir.path(), sync).await;
        match restarted.get(&key).await {
            Ok(got) => {
                assert!(
                    committed,
                    "{sync:?} {point}: paste visible before its commit point"
                );
                assert_eq!(
                    got.payload.to_text(),
                    text,
                    "{sync:?} {point}: visible paste is complete"
                );
            }
            Err(StoreError::NotFound) => {
                assert!(!committed, "{sync:?} {point}: committed paste lost")
            }
            Err(e) => panic!("{sync:?} {point}: {e:?}"),
        }
        // The id can never be overwritten once committed, and is free otherwise.
        let again = restarted.put_if_absent(&key, paste("other", 60_000)).await;
        assert_eq!(
            again.is_ok(),
            !committed,
            "{sync:?} {point}: second put {again:?}"
        );

        // The sweep removes leftover temporary files and nothing else.
        restarted.sweep_now().await.unwrap();
        let (finals, tmps) = count_files(dir.path());
        assert_eq!((finals, tmps), (1, 0), "{sync:?} {point}");
    }
}

/// Group commit: a `syncfs` that fails — the one meant to make the data
/// durable, or the one for the directory entry after the link — fails the
/// put with `Unavailable` and leaves nothing visible or behind; the store
/// then works again.
async fn failed_group_flushes() {
    // "off" lets that many flushes through before the failing one.
    for (schedule, stage) in [("return", "data"), ("1*off->return", "directory entry")] {
        let dir = tempfile::tempdir().unwrap();
        let store = open(dir.path(), FsSync::Batch).await;
        let key = fresh_key("default");
        fail::cfg("fs::syncfs", schedule).unwrap();
        let put = store.put_if_absent(&key, paste("AAAA", 60_000)).await;
        fail::remove("fs::syncfs");
        assert!(
            matches!(put, Err(StoreError::Unavailable { .. })),
            "failed flush of the {stage}: {put:?}"
        );
        assert!(
            matches!(store.get(&key).await, Err(StoreError::NotFound)),
            "failed flush of the {stage}: the paste is visible"
        );
        assert_eq!(count_files(dir.path()), (0, 0), "{stage}");

        store
            .put_if_absent(&key, paste("BBBB", 60_000))
            .await
            .unwrap();
        assert_eq!(store.get(&key).await.unwrap().payload.to_text(), "BBBB");
    }
}
