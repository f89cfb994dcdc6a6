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
use paste_store::{FsConfig, FsStore, PasteStore, StoreError};

async fn open(root: &Path) -> FsStore {
    FsStore::open(&FsConfig {
        path: root.to_path_buf(),
        first_sweep_delay_secs: 3600,
        stale_tmp_secs: 0,
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
        let store = open(dir.path()).await;
        let key = fresh_key("default");
        fail::cfg(point, "return").unwrap();
        let put = store.put_if_absent(&key, paste(&text, 60_000)).await;
        fail::remove(point);
        assert!(
            matches!(put, Err(StoreError::Internal { .. })),
            "{point}: {put:?}"
        );
        drop(store);

        let restarted = open(dir.path()).await;
        match restarted.get(&key).await {
            Ok(got) => {
                assert!(committed, "{point}: paste visible before its commit point");
                assert_eq!(
                    got.payload.to_text(),
                    text,
                    "{point}: visible paste is complete"
                );
            }
            Err(StoreError::NotFound) => assert!(!committed, "{point}: committed paste lost"),
            Err(e) => panic!("{point}: {e:?}"),
        }
        // The id can never be overwritten once committed, and is free otherwise.
        let again = restarted.put_if_absent(&key, paste("other", 60_000)).await;
        assert_eq!(again.is_ok(), !committed, "{point}: second put {again:?}");

        // The sweep removes leftover temporary files and nothing else.
        restarted.sweep_now().await.unwrap();
        let (finals, tmps) = count_files(dir.path());
        assert_eq!((finals, tmps), (1, 0), "{point}");
    }
    scenario.teardown();
}
