//! Behaviour specific to the fs backend: the bytes it keeps, what an
//! interrupted write leaves behind, the sweep, and outages.

// Helpers outside `#[test]` functions unwrap too: a failed step is a failed test.
#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};

use paste_store::conformance::{fresh_key, paste};
use paste_store::{FsConfig, FsStore, PasteStore, StoreError};

async fn open(root: &Path) -> FsStore {
    FsStore::open(&FsConfig {
        path: root.to_path_buf(),
        first_sweep_delay_secs: 3600,
        ..FsConfig::default()
    })
    .await
    .unwrap()
}

fn files_under(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path);
            }
        }
    }
    out
}

#[tokio::test]
async fn canonical_base64url_is_stored_as_decoded_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path()).await;
    let text: String = "Xc6xCsJAEATQ".repeat(1000);
    let key = fresh_key("default");
    store
        .put_if_absent(&key, paste(&text, 60_000))
        .await
        .unwrap();
    let files = files_under(dir.path());
    assert_eq!(files.len(), 1, "{files:?}");
    let on_disk = std::fs::metadata(&files[0]).unwrap().len();
    assert_eq!(on_disk, 64 + (text.len() as u64) * 3 / 4);
    assert_eq!(store.get(&key).await.unwrap().payload.to_text(), text);
}

#[tokio::test]
async fn files_live_under_namespace_and_shard_and_nothing_else_is_left() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path()).await;
    let key = fresh_key("team-a");
    store
        .put_if_absent(&key, paste("abc", 60_000))
        .await
        .unwrap();
    store.health().await.unwrap();
    let files = files_under(dir.path());
    assert_eq!(files.len(), 1, "only the paste file remains: {files:?}");
    let rel = files[0].strip_prefix(dir.path()).unwrap();
    let parts: Vec<_> = rel.iter().map(|p| p.to_str().unwrap().to_owned()).collect();
    assert_eq!(parts[0], "team-a");
    assert_eq!(parts.len(), 3);
    assert!(
        parts[2]
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    );
}

#[tokio::test]
async fn sweep_removes_expired_pastes_and_keeps_live_ones() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path()).await;
    let live = fresh_key("default");
    let expired = fresh_key("default");
    store
        .put_if_absent(&live, paste("live", 60_000))
        .await
        .unwrap();
    store
        .put_if_absent(&expired, paste("gone", -5_000))
        .await
        .unwrap();
    assert_eq!(files_under(dir.path()).len(), 2);
    assert_eq!(store.sweep_now().await.unwrap(), 1);
    assert_eq!(files_under(dir.path()).len(), 1);
    assert_eq!(store.get(&live).await.unwrap().payload.to_text(), "live");
    assert!(matches!(
        store.get(&expired).await,
        Err(StoreError::NotFound)
    ));
}

#[tokio::test]
async fn sweep_removes_stale_temporary_files_only() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path()).await;
    let key = fresh_key("default");
    store.put_if_absent(&key, paste("x", 60_000)).await.unwrap();
    let shard = files_under(dir.path())[0].parent().unwrap().to_path_buf();
    let stale = shard.join(".tmp-6162636465666768-1000-00000000000000ff");
    let fresh = shard.join(format!(
        ".tmp-6162636465666768-{}-00000000000000fe",
        paste_store::now_ms()
    ));
    std::fs::write(&stale, b"partial").unwrap();
    std::fs::write(&fresh, b"in flight").unwrap();
    assert_eq!(store.sweep_now().await.unwrap(), 1);
    assert!(!stale.exists());
    assert!(
        fresh.exists(),
        "a write that may still be running is left alone"
    );
}

/// A truncated, empty or garbled file is damaged — not a missing paste (as
/// a garbled expiry or flag would make it) and not an internal error — and
/// deleting it works.
#[tokio::test]
async fn damaged_files_read_as_damaged_and_can_be_deleted() {
    type Damage = fn(&[u8]) -> Vec<u8>;
    let damages: [(&str, Damage, bool); 5] = [
        ("truncated", |b| b[..b.len() - 1].to_vec(), true),
        ("cut inside the header", |b| b[..40].to_vec(), false),
        ("empty", |_| Vec::new(), false),
        ("not a record", |_| b"{\"data\":\"abc\"}".to_vec(), false),
        (
            // The expiry zeroed: without a check it reads as long expired.
            "garbled expiry",
            |b| {
                let mut b = b.to_vec();
                b[16..24].fill(0);
                b
            },
            false,
        ),
    ];
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path()).await;
    for (what, damage, header_holds) in damages {
        let key = fresh_key("default");
        let stored = paste("abc", 60_000);
        store.put_if_absent(&key, stored.clone()).await.unwrap();
        let name: String = key
            .id()
            .as_str()
            .bytes()
            .map(|b| format!("{b:02x}"))
            .collect();
        let file = files_under(dir.path())
            .into_iter()
            .find(|f| f.file_name().is_some_and(|n| *n == *name))
            .unwrap();
        let bytes = std::fs::read(&file).unwrap();
        std::fs::write(&file, damage(&bytes)).unwrap();
        match store.get(&key).await {
            Err(StoreError::Damaged { header, .. }) => {
                assert_eq!(header.is_some(), header_holds, "{what}");
                if let Some(header) = header {
                    assert_eq!(header.expires_at, stored.expires_at, "{what}");
                    assert_eq!(header.delete_token, stored.delete_token, "{what}");
                }
            }
            other => panic!("{what}: {other:?}"),
        }
        // A put never replaces it; a delete does.
        let put = store.put_if_absent(&key, paste("new", 60_000)).await;
        assert!(
            matches!(put, Err(StoreError::AlreadyExists)),
            "{what}: {put:?}"
        );
        store.delete(&key).await.unwrap();
        assert!(!file.exists(), "{what}");
        assert!(
            matches!(store.get(&key).await, Err(StoreError::NotFound)),
            "{what}"
        );
    }
}

/// A damaged file whose header still holds and says it expired reads as
/// expired, and the sweep removes it.
#[tokio::test]
async fn a_damaged_file_past_its_expiry_is_swept() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path()).await;
    let key = fresh_key("default");
    // Written already expired (a second ago), as the sweep would find it.
    store
        .put_if_absent(&key, paste("abc", -1000))
        .await
        .unwrap();
    let file = files_under(dir.path())[0].clone();
    let bytes = std::fs::read(&file).unwrap();
    let mtime = std::fs::metadata(&file).unwrap().modified().unwrap();
    std::fs::write(&file, &bytes[..bytes.len() - 1]).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    assert!(matches!(store.get(&key).await, Err(StoreError::NotFound)));
    assert_eq!(store.sweep_now().await.unwrap(), 1);
    assert!(!file.exists());
}

#[tokio::test]
async fn a_replaced_data_directory_is_an_outage_not_a_404() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("pastes");
    let store = open(&root).await;
    let key = fresh_key("default");
    store
        .put_if_absent(&key, paste("abc", 60_000))
        .await
        .unwrap();

    // Running as root defeats permission bits, so break the directory itself:
    // move it away and put a plain file in its place.
    std::fs::rename(&root, dir.path().join("moved")).unwrap();
    std::fs::write(&root, b"not a directory").unwrap();
    for result in [
        store.get(&key).await.map(|_| ()),
        store.get(&fresh_key("default")).await.map(|_| ()),
        store
            .put_if_absent(&fresh_key("default"), paste("x", 60_000))
            .await,
        store
            .put_if_absent(&fresh_key("other-ns"), paste("x", 60_000))
            .await,
        store.delete(&key).await,
        store.health().await,
    ] {
        assert!(
            matches!(result, Err(StoreError::Unavailable { .. })),
            "{result:?}"
        );
    }

    // A missing directory is an outage too (e.g. an unmounted volume).
    std::fs::remove_file(&root).unwrap();
    assert!(matches!(
        store.get(&key).await,
        Err(StoreError::Unavailable { .. })
    ));
    assert!(matches!(
        store.health().await,
        Err(StoreError::Unavailable { .. })
    ));

    // And it recovers by itself once the directory is back.
    std::fs::rename(dir.path().join("moved"), &root).unwrap();
    store.health().await.unwrap();
    assert_eq!(store.get(&key).await.unwrap().payload.to_text(), "abc");
}

#[tokio::test]
async fn start_up_does_not_walk_the_tree() {
    // A directory that cannot be listed would fail a walk; opening must not care.
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path()).await;
    for _ in 0..50 {
        store
            .put_if_absent(&fresh_key("default"), paste("x", 60_000))
            .await
            .unwrap();
    }
    drop(store);
    let ns = dir.path().join("default");
    let shards: Vec<_> = std::fs::read_dir(&ns)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    // Replace every shard directory by a file: a tree walk would error on each.
    for shard in &shards {
        std::fs::rename(shard, shard.with_extension("moved")).unwrap();
        std::fs::write(shard, b"x").unwrap();
    }
    let started = std::time::Instant::now();
    let reopened = open(dir.path()).await;
    reopened.health().await.unwrap();
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
}

/// Group commit under concurrency: every acknowledged put is complete under
/// its final name, the flushes were shared, and nothing temporary is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_puts_share_flushes_and_all_land() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path()).await;
    let mut puts = tokio::task::JoinSet::new();
    for i in 0..300 {
        let store = store.clone();
        puts.spawn(async move {
            let key = fresh_key("default");
            let text = format!("{i:04}").repeat(100 + i);
            store.put_if_absent(&key, paste(&text, 60_000)).await?;
            Ok::<_, StoreError>((key, text))
        });
    }
    while let Some(joined) = puts.join_next().await {
        let (key, text) = joined.unwrap().unwrap();
        assert_eq!(store.get(&key).await.unwrap().payload.to_text(), text);
    }
    let files = files_under(dir.path());
    assert_eq!(files.len(), 300);
    assert!(files.iter().all(|f| {
        !f.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(".tmp-")
    }));
}

/// A put whose caller stops waiting (a client gone, a timeout) still runs
/// to its end — it never stops between writing and linking — and dropping
/// the store lets the write and commit threads finish what they hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_abandoned_put_still_completes() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path()).await;
    let keys: Vec<_> = (0..20).map(|_| fresh_key("default")).collect();
    for key in &keys {
        // Polled once (handed over), then dropped.
        let mut put = store.put_if_absent(key, paste("AAAA", 60_000));
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(put.as_mut().poll(&mut cx).is_pending());
        drop(put);
    }
    drop(store);
    let reopened = open(dir.path()).await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    for key in &keys {
        loop {
            match reopened.get(key).await {
                Ok(got) => {
                    assert_eq!(got.payload.to_text(), "AAAA");
                    break;
                }
                Err(StoreError::NotFound) if std::time::Instant::now() < deadline => {
                    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
                }
                other => panic!("{other:?}"),
            }
        }
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while files_under(dir.path()).iter().any(|f| {
        f.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with(".tmp-")
    }) {
        assert!(std::time::Instant::now() < deadline, "temporary files left");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Everything under `dir` as it stands, links not followed: each entry's
/// kind, bytes (a link's: its target) and modification time. Two equal
/// snapshots: nothing under `dir` was removed, moved, rewritten or added.
fn snapshot(dir: &Path) -> Vec<(PathBuf, &'static str, Vec<u8>, std::time::SystemTime)> {
    use std::os::unix::ffi::OsStrExt as _;
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let modified = meta.modified().unwrap();
            let (kind, bytes) = if meta.is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                ("link", target.as_os_str().as_bytes().to_vec())
            } else if meta.is_dir() {
                stack.push(path.clone());
                ("dir", Vec::new())
            } else {
                ("file", std::fs::read(&path).unwrap())
            };
            out.push((path, kind, bytes, modified));
        }
    }
    out.sort();
    out
}

/// Files outside the store, laid out as one of its shards: a paste expired
/// long ago (its mtime, the expiry, in the past), a stale temporary file,
/// and a lone expired record for links to single files. Returns the
/// directory holding them all and the shard directory.
async fn outside_files(outside: &Path, key: &paste_store::PasteKey) -> PathBuf {
    let elsewhere = open(&outside.join("store")).await;
    elsewhere
        .put_if_absent(key, paste("expired, outside", -3_600_000))
        .await
        .unwrap();
    let file = files_under(&outside.join("store"))[0].clone();
    let shard = file.parent().unwrap().to_path_buf();
    std::fs::write(
        shard.join(".tmp-6162636465666768-1000-00000000000000ff"),
        b"stale, outside",
    )
    .unwrap();
    std::fs::copy(&file, outside.join("lone-expired")).unwrap();
    let mtime = std::fs::metadata(&file).unwrap().modified().unwrap();
    std::fs::File::options()
        .write(true)
        .open(outside.join("lone-expired"))
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    std::fs::write(outside.join("lone-stale"), b"stale, outside").unwrap();
    shard
}

/// The sweep never follows a symbolic link: not a shard directory that is
/// a link to a directory outside the store (whose expired paste and stale
/// temporary file it would otherwise delete), not a namespace that is one,
/// not a file named as a paste or a temporary file that is one. Links and
/// their targets are left as they are (the doctor reports them); the
/// store's own expired paste beside them is still removed.
#[cfg(unix)]
#[tokio::test]
async fn the_sweep_follows_no_symbolic_link() {
    use std::os::unix::fs::symlink;

    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path()).await;
    let outside = tempfile::tempdir().unwrap();
    // The outside paste lands in the same namespace and shard as a paste of
    // this store would, so a sweep that follows the link finds it expired.
    let own = fresh_key("team-a");
    store
        .put_if_absent(&own, paste("expired, inside", -3_600_000))
        .await
        .unwrap();
    let own_file = files_under(dir.path())[0].clone();
    let shard = own_file.parent().unwrap().to_path_buf();
    let outside_shard = outside_files(outside.path(), &fresh_key("team-a")).await;

    // A shard directory that is a link (named as shards are: four hex digits).
    symlink(&outside_shard, dir.path().join("team-a/ffff")).unwrap();
    // A namespace that is a link to the outside store's namespace.
    symlink(
        outside.path().join("store/team-a"),
        dir.path().join("team-b"),
    )
    .unwrap();
    // In a real shard: a paste-named link and a stale-temporary-named link.
    let name: String = fresh_key("team-a")
        .id()
        .as_str()
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect();
    symlink(outside.path().join("lone-expired"), shard.join(&name)).unwrap();
    symlink(
        outside.path().join("lone-stale"),
        shard.join(".tmp-6162636465666768-1000-00000000000000aa"),
    )
    .unwrap();
    // At the root: a temporary-named link (the health probe's leftovers are swept there).
    symlink(
        outside.path().join("lone-stale"),
        dir.path().join(".tmp-health-00000000000000ab"),
    )
    .unwrap();

    let before = snapshot(outside.path());
    assert_eq!(
        store.sweep_now().await.unwrap(),
        1,
        "only the store's own expired paste"
    );
    assert!(!own_file.exists());
    assert_eq!(
        snapshot(outside.path()),
        before,
        "the sweep changed files outside the store"
    );
    for link in [
        dir.path().join("team-a/ffff"),
        dir.path().join("team-b"),
        shard.join(&name),
        shard.join(".tmp-6162636465666768-1000-00000000000000aa"),
        dir.path().join(".tmp-health-00000000000000ab"),
    ] {
        assert!(
            std::fs::symlink_metadata(&link).unwrap().is_symlink(),
            "{} was removed",
            link.display()
        );
    }
}

/// Purging a deleted tenant's namespace never follows a symbolic link: a
/// namespace directory that is a link, a shard that is one, a paste-named
/// file that is one. The store's own files in the namespace are removed;
/// what the links point to is left whole (and the links stay for an
/// operator to look at).
#[cfg(unix)]
#[tokio::test]
async fn purging_a_namespace_follows_no_symbolic_link() {
    use std::os::unix::fs::symlink;

    let dir = tempfile::tempdir().unwrap();
    let store = open(dir.path()).await;
    let outside = tempfile::tempdir().unwrap();
    let own = fresh_key("team-a");
    store
        .put_if_absent(&own, paste("inside", 60_000))
        .await
        .unwrap();
    let own_file = files_under(dir.path())[0].clone();
    let shard = own_file.parent().unwrap().to_path_buf();
    let outside_shard = outside_files(outside.path(), &fresh_key("team-a")).await;
    symlink(&outside_shard, dir.path().join("team-a/ffff")).unwrap();
    let name: String = fresh_key("team-a")
        .id()
        .as_str()
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect();
    symlink(outside.path().join("lone-expired"), shard.join(&name)).unwrap();
    symlink(
        outside.path().join("store/team-a"),
        dir.path().join("team-b"),
    )
    .unwrap();

    let before = snapshot(outside.path());
    let team_a = paste_store::Namespace::parse("team-a").unwrap();
    let team_b = paste_store::Namespace::parse("team-b").unwrap();
    assert_eq!(store.purge_namespace(&team_a).await.unwrap(), 1);
    assert_eq!(store.purge_namespace(&team_b).await.unwrap(), 0);
    assert!(!own_file.exists());
    assert_eq!(
        snapshot(outside.path()),
        before,
        "the purge changed files outside the store"
    );
    for link in [
        dir.path().join("team-a/ffff"),
        shard.join(&name),
        dir.path().join("team-b"),
    ] {
        assert!(
            std::fs::symlink_metadata(&link).unwrap().is_symlink(),
            "{} was removed",
            link.display()
        );
    }
}

/// The fs listing, one entry a page: every file once, in the walk's
/// order (namespaces, shards, files by name), resuming across shards and
/// namespaces; links and records out of their shard listed as unknown,
/// never read; temporary files and the quarantine left out.
#[cfg(unix)]
#[tokio::test]
async fn the_fs_listing_resumes_anywhere_and_follows_no_link() {
    use paste_store::{EntryKind, StoreInventory as _};
    use std::os::unix::fs::symlink;

    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("pastes");
    let store = open(&root).await;
    let mut keys = Vec::new();
    for ns in ["list-a", "list-b"] {
        for _ in 0..3 {
            let key = fresh_key(ns);
            store
                .put_if_absent(&key, paste("x", 3_600_000))
                .await
                .unwrap();
            keys.push(key);
        }
    }
    // A link named as a paste, beside a real one; a shard that is a link;
    // a record in a shard it does not belong to; a temporary file; the
    // quarantine.
    let outside = dir.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret"), b"not the store's").unwrap();
    let real = store.path_of(&keys[0]);
    let shard = real.parent().unwrap().to_path_buf();
    let linked_file = shard.join("4c696e6b65643031");
    symlink(outside.join("secret"), &linked_file).unwrap();
    let linked_shard = root.join("list-a").join("ffff");
    symlink(&outside, &linked_shard).unwrap();
    let misplaced = root.join("list-b").join("0000").join("4c696e6b65643032");
    std::fs::create_dir_all(misplaced.parent().unwrap()).unwrap();
    std::fs::copy(&real, &misplaced).unwrap();
    std::fs::write(shard.join(".tmp-x-1-00"), b"half").unwrap();
    std::fs::create_dir_all(root.join(".quarantine/list-a/0000")).unwrap();
    std::fs::write(root.join(".quarantine/list-a/0000/6161616161616161"), b"x").unwrap();

    let mut listed = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let page = store.entries(None, cursor.as_deref(), 1).await.unwrap();
        assert!(page.items.len() <= 1, "{page:?}");
        listed.extend(page.items);
        match page.next {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let names: Vec<&str> = listed.iter().map(|e| e.name.as_str()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(names, sorted, "in order, each once");
    for key in &keys {
        let entry = listed
            .iter()
            .find(|e| e.kind == EntryKind::Paste(key.clone()))
            .unwrap_or_else(|| panic!("{key:?} not listed: {names:?}"));
        assert!(entry.record.as_ref().unwrap().header.is_ok());
    }
    for odd in [&linked_file, &linked_shard, &misplaced] {
        let entry = listed
            .iter()
            .find(|e| e.name == odd.display().to_string())
            .unwrap_or_else(|| panic!("{} not listed: {names:?}", odd.display()));
        assert_eq!((&entry.kind, &entry.record), (&EntryKind::Unknown, &None));
    }
    assert_eq!(listed.len(), keys.len() + 3, "{names:?}");
    // A namespace's own listing holds its entries only.
    let ns = keys[3].namespace().clone();
    let own = store.entries(Some(&ns), None, 100).await.unwrap();
    assert_eq!(own.next, None);
    assert_eq!(own.items.len(), 4, "three pastes and the misplaced record");
}
