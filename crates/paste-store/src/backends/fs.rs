//! Filesystem backend: one immutable file per paste under a sharded directory.
//!
//! Layout: `<root>/<namespace>/<shard>/<hex id>` (see `PasteKey::fs_location`).
//! A file is a record (`crate::record`: a 64-byte header, then the payload); its
//! modification time is set to the expiry so the sweep can find expired
//! pastes from directory metadata alone.
//!
//! Write path (`put_if_absent`), in this order:
//! 1. create `.tmp-<file>-<created ms>-<random>` in the shard with `O_EXCL`;
//! 2. write the record, set mtime, make the file durable;
//! 3. `link(2)` it to the final name — fails with `EEXIST` instead of
//!    replacing, so a put never clobbers;
//! 4. unlink the temporary name and make the shard directory durable.
//!
//! "Durable" is `store.fs.sync` ([`FsSync`]): with `file`, an `fsync` of the
//! file (2.) and of the directory (4.) on the blocking pool; with `batch`
//! (the default), group commit — the steps run on a write thread and a
//! commit thread, and one `syncfs(2)` serves every put that reached step 2
//! or 4 since the previous one (see [`commit`]).
//!
//! A crash before 3 leaves only an invisible temporary file (removed by the
//! sweep once stale); after 3 the complete record is in place. Readers open
//! the final name only, so they never see a partial record.
//!
//! Read path: a read whose file is already in memory — its directory entries
//! in the dentry cache (`openat2` with `RESOLVE_CACHED`) and its data in the
//! page cache (`preadv2` with `RWF_NOWAIT`) — is served on the calling task,
//! which cannot block on the disk that way; anything else (a cold cache, an
//! absent file, an error) goes to the blocking pool as before. Handing each
//! read to the pool cost more CPU than the read itself (two thread wake-ups).
//! Both paths open with `O_NOATIME`: the mtime is the expiry, in the future,
//! so under `relatime` every read would otherwise dirty the inode with a new
//! access time and cost a disk write (see [`NoAtime`]).
//!
//! Expired files are removed only by the background sweep (and by a put that
//! finds an expired file in its way), each under a per-key lock with a
//! re-check, so removing an expired file can never remove a fresh one put in
//! its place. Start-up only checks the root; it never walks the tree.

use std::fs::{self, File, OpenOptions};
use std::hash::{Hash, Hasher};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

#[cfg(target_os = "linux")]
mod commit;
#[cfg(unix)]
pub mod inventory;
mod noatime;
mod nofollow;

use self::noatime::NoAtime;
use self::nofollow::{EntryType, OpenDir};
use crate::record;
use crate::{
    FsConfig, FsSync, Namespace, OpenError, PasteKey, PasteStore, StoreError, StoredPaste, now_ms,
};

const LOCK_STRIPES: usize = 256;
/// Where `planshare-server doctor --repair` moves damaged files, under the
/// root (a namespace cannot start with a dot, so no tenant's directory is
/// ever called this).
pub const QUARANTINE_DIR: &str = ".quarantine";
const TMP_PREFIX: &str = ".tmp-";

/// Pastes as files under a root directory.
#[derive(Debug, Clone)]
pub struct FsStore {
    inner: Arc<Inner>,
    /// The write and commit threads of [`FsSync::Batch`] (closed when the
    /// last clone of the store is dropped); `None`: each put flushes its own
    /// file and directory on the blocking pool.
    #[cfg(target_os = "linux")]
    committer: Option<Arc<commit::Committer>>,
}

#[derive(Debug)]
struct Inner {
    root: PathBuf,
    config: FsConfig,
    /// Serialises the removal of a file with the re-check that it is expired.
    locks: Box<[Mutex<()>]>,
    /// The filesystem (`st_dev`) of the root: group commit flushes that one.
    #[cfg(target_os = "linux")]
    root_dev: u64,
    /// Whether reads may leave the access time alone.
    noatime: NoAtime,
}

impl FsStore {
    /// Opens (creating if needed) the store at `config.path` and starts the
    /// background sweep on the current Tokio runtime.
    pub async fn open(config: &FsConfig) -> Result<Self, OpenError> {
        if config.path.as_os_str().is_empty() {
            return Err(OpenError::Config("store.fs.path is empty".into()));
        }
        let root = config.path.clone();
        fs::create_dir_all(&root).map_err(|source| OpenError::Io {
            what: format!("the paste directory {}", root.display()),
            source,
        })?;
        #[cfg(target_os = "linux")]
        let root_dev = {
            use std::os::unix::fs::MetadataExt;
            fs::metadata(&root)
                .map_err(|source| OpenError::Io {
                    what: format!("the paste directory {}", root.display()),
                    source,
                })?
                .dev()
        };
        let inner = Arc::new(Inner {
            root,
            config: config.clone(),
            locks: (0..LOCK_STRIPES).map(|_| Mutex::new(())).collect(),
            #[cfg(target_os = "linux")]
            root_dev,
            noatime: NoAtime::default(),
        });
        spawn_sweeper(Arc::downgrade(&inner));
        #[cfg(target_os = "linux")]
        let committer = match config.sync {
            FsSync::Batch => Some(Arc::new(commit::Committer::start(inner.clone()).map_err(
                |source| OpenError::Io {
                    what: "the fs store's commit thread".into(),
                    source,
                },
            )?)),
            FsSync::File => None,
        };
        #[cfg(not(target_os = "linux"))]
        if config.sync == FsSync::Batch {
            tracing::info!("store.fs.sync = \"batch\" needs Linux (syncfs); using \"file\"");
        }
        Ok(FsStore {
            inner,
            #[cfg(target_os = "linux")]
            committer,
        })
    }

    /// Opens the store at `config.path` to look at, not to serve: no
    /// background sweep and no commit thread, and the root is not created
    /// (a missing root is an error). For `planshare-server doctor`, which
    /// may run beside a server using the same directory.
    pub fn open_for_inspection(config: &FsConfig) -> Result<Self, OpenError> {
        let root = config.path.clone();
        let meta = fs::metadata(&root).map_err(|source| OpenError::Io {
            what: format!("the paste directory {}", root.display()),
            source,
        })?;
        #[cfg(target_os = "linux")]
        let root_dev = std::os::unix::fs::MetadataExt::dev(&meta);
        #[cfg(not(target_os = "linux"))]
        let _ = meta;
        Ok(FsStore {
            inner: Arc::new(Inner {
                root,
                config: FsConfig {
                    sync: FsSync::File,
                    ..config.clone()
                },
                locks: (0..LOCK_STRIPES).map(|_| Mutex::new(())).collect(),
                #[cfg(target_os = "linux")]
                root_dev,
                noatime: NoAtime::default(),
            }),
            #[cfg(target_os = "linux")]
            committer: None,
        })
    }

    /// The root directory.
    pub fn root(&self) -> &Path {
        &self.inner.root
    }

    /// Runs one sweep now: deletes expired pastes and stale temporary files.
    /// Returns the number of files removed.
    pub async fn sweep_now(&self) -> Result<u64, StoreError> {
        let inner = self.inner.clone();
        blocking(move || inner.sweep()).await
    }
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| StoreError::Internal {
            reason: "fs worker task failed".into(),
            source: Some(Box::new(e)),
        })?
}

#[async_trait::async_trait]
impl PasteStore for FsStore {
    fn backend(&self) -> &'static str {
        "fs"
    }

    async fn put_if_absent(&self, key: &PasteKey, paste: StoredPaste) -> Result<(), StoreError> {
        #[cfg(target_os = "linux")]
        if let Some(committer) = &self.committer {
            return committer.put(key.clone(), paste).await;
        }
        let inner = self.inner.clone();
        let key = key.clone();
        blocking(move || inner.put(&key, &paste)).await
    }

    async fn get(&self, key: &PasteKey) -> Result<StoredPaste, StoreError> {
        if let Some(paste) = self.inner.get_from_memory(key) {
            return Ok(paste);
        }
        let inner = self.inner.clone();
        let key = key.clone();
        blocking(move || inner.get(&key)).await
    }

    async fn delete(&self, key: &PasteKey) -> Result<(), StoreError> {
        let inner = self.inner.clone();
        let key = key.clone();
        blocking(move || inner.delete(&key)).await
    }

    async fn health(&self) -> Result<(), StoreError> {
        let inner = self.inner.clone();
        blocking(move || inner.health()).await
    }

    async fn purge_namespace(&self, namespace: &Namespace) -> Result<u64, StoreError> {
        let inner = self.inner.clone();
        let namespace = namespace.clone();
        blocking(move || inner.purge(&namespace)).await
    }
}

/// Returns early with an injected failure when the named fail point is active
/// (feature `failpoints`). The early return skips every later step, including
/// clean-up, exactly as a crash at that point would.
macro_rules! crash_point {
    ($name:literal) => {
        fail::fail_point!($name, |_| Err(StoreError::internal(concat!(
            "injected crash at ",
            $name
        ))));
    };
}

/// A put between its steps: the temporary file written, the final name
/// to link it to.
#[derive(Debug)]
struct Pending {
    dir: PathBuf,
    file: String,
    tmp: PathBuf,
    target: PathBuf,
}

/// The last step of a put, once its directory entry is durable: nothing
/// left to do but answer (a crash point for the durability tests).
fn acknowledge() -> Result<(), StoreError> {
    crash_point!("fs::after_dir_fsync");
    Ok(())
}

impl Inner {
    fn paths(&self, key: &PasteKey) -> (PathBuf, String) {
        let (dir, file) = key.fs_location();
        (self.root.join(dir), file)
    }

    fn lock_for(&self, dir: &Path, file: &str) -> std::sync::MutexGuard<'_, ()> {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        dir.hash(&mut h);
        file.hash(&mut h);
        let stripe = usize::try_from(h.finish() % LOCK_STRIPES as u64).unwrap_or(0);
        self.locks[stripe]
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Writes `paste` to a new temporary file in its shard (not yet flushed)
    /// and returns it, still open, with where it goes.
    fn write_tmp(
        &self,
        key: &PasteKey,
        paste: &StoredPaste,
    ) -> Result<(Pending, File), StoreError> {
        let (dir, file) = self.paths(key);
        let target = dir.join(&file);
        let tmp = dir.join(format!(
            "{TMP_PREFIX}{file}-{}-{:016x}",
            now_ms(),
            random_u64()?
        ));
        let (header, body) = record::encode_parts(paste);

        let mut f = match create_new(&tmp) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                self.create_shard_dirs(&dir)?;
                create_new(&tmp)
            }
            other => other,
        }
        .map_err(|e| io_unavailable("cannot create a file in the paste directory", e))?;
        crash_point!("fs::after_tmp_create");

        let written = write_all_parts(
            &mut f,
            &mut [io::IoSlice::new(&header), io::IoSlice::new(body)],
        )
        .and_then(|()| f.set_modified(system_time(paste.expires_at)));
        if let Err(e) = written {
            drop(f);
            let _ = fs::remove_file(&tmp);
            return Err(io_unavailable("cannot write the paste file", e));
        }
        crash_point!("fs::after_tmp_write");
        let pending = Pending {
            dir,
            file,
            tmp,
            target,
        };
        Ok((pending, f))
    }

    /// The blocking part of a [`FsSync::Batch`] put: the temporary file
    /// written and closed, for the commit thread to flush and link. A file
    /// that landed on another filesystem than the root (a volume mounted
    /// inside the paste directory) is not covered by the root's `syncfs`: that
    /// put is finished here with `fsync`s instead, and `None` returned.
    #[cfg(target_os = "linux")]
    fn write_tmp_for_batch(
        &self,
        key: &PasteKey,
        paste: &StoredPaste,
    ) -> Result<Option<Pending>, StoreError> {
        use std::os::unix::fs::MetadataExt;

        let (pending, f) = self.write_tmp(key, paste)?;
        match f.metadata() {
            Ok(m) if m.dev() == self.root_dev => Ok(Some(pending)),
            _ => {
                // Not covered by the root's syncfs: the shard directories may
                // be new and unflushed too.
                let ns_dir = pending.dir.parent().unwrap_or(&self.root);
                for dir in [self.root.as_path(), ns_dir] {
                    if let Err(e) = sync_dir(dir) {
                        drop(f);
                        let _ = fs::remove_file(&pending.tmp);
                        return Err(io_unavailable(
                            "cannot flush the paste directory to disk",
                            e,
                        ));
                    }
                }
                self.put_written(&pending, f).map(|()| None)
            }
        }
    }

    /// A whole put with `fsync` of the file and of its directory
    /// ([`FsSync::File`]).
    fn put(&self, key: &PasteKey, paste: &StoredPaste) -> Result<(), StoreError> {
        let (pending, f) = self.write_tmp(key, paste)?;
        self.put_written(&pending, f)
    }

    /// The rest of a [`FsSync::File`] put once its temporary file is written.
    fn put_written(&self, pending: &Pending, f: File) -> Result<(), StoreError> {
        if let Err(e) = f.sync_all() {
            // After a failed fsync the page cache state is unknown: never retry
            // the fsync and report success; drop the file and fail the put.
            drop(f);
            let _ = fs::remove_file(&pending.tmp);
            return Err(io_unavailable("cannot flush the paste file to disk", e));
        }
        drop(f);
        self.link_flushed(pending)?;
        if let Err(e) = sync_dir(&pending.dir) {
            // Not durable, so not acknowledged; take it back out of view.
            let _ = fs::remove_file(&pending.target);
            return Err(io_unavailable(
                "cannot flush the paste directory to disk",
                e,
            ));
        }
        acknowledge()
    }

    /// Links a temporary file whose data is durable to its final name and
    /// removes the temporary name. The new name is not durable yet.
    fn link_flushed(&self, pending: &Pending) -> Result<(), StoreError> {
        crash_point!("fs::after_tmp_fsync");
        let Pending {
            dir,
            file,
            tmp,
            target,
        } = pending;
        let linked = match fs::hard_link(tmp, target) {
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                self.replace_if_expired(dir, file, tmp, target)
            }
            Err(e) => Err(io_unavailable("cannot link the paste file into place", e)),
            Ok(()) => Ok(()),
        };
        if let Err(e) = linked {
            let _ = fs::remove_file(tmp);
            return Err(e);
        }
        crash_point!("fs::after_link");

        let _ = fs::remove_file(tmp); // a leftover is swept later
        Ok(())
    }

    /// Slow path of a put that found a file at its target: if that file is
    /// expired, remove it and link again, under the key's lock.
    fn replace_if_expired(
        &self,
        dir: &Path,
        file: &str,
        tmp: &Path,
        target: &Path,
    ) -> Result<(), StoreError> {
        let _guard = self.lock_for(dir, file);
        let existing = read_record(&self.noatime, target);
        match existing {
            _ if record::is_expired(&existing, now_ms()) => {
                remove_if_exists(target)
                    .map_err(|e| io_unavailable("cannot remove an expired paste", e))?;
            }
            Ok(_) => return Err(StoreError::AlreadyExists),
            Err(StoreError::NotFound) => {}
            // A damaged file (not known to be expired) is left alone: it is
            // deleted by a DELETE of its paste, or by an operator.
            Err(StoreError::Damaged { .. }) => return Err(StoreError::AlreadyExists),
            Err(e) => return Err(e),
        }
        match fs::hard_link(tmp, target) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(StoreError::AlreadyExists),
            Err(e) => Err(io_unavailable("cannot link the paste file into place", e)),
        }
    }

    /// Creates `<root>/<namespace>/<shard>` and makes the new entries durable:
    /// with `fsync`s of their parents, or — under group commit — by the
    /// `syncfs` that must cover the paste's own data before it is linked, so
    /// a fresh store does not pay a serial `fsync` per new shard.
    /// The root itself must exist: a missing root (an unmounted volume, a
    /// deleted directory) is an outage, not something to paper over.
    fn create_shard_dirs(&self, shard: &Path) -> Result<(), StoreError> {
        let flush_now = !self.group_commit();
        let ns_dir = shard.parent().unwrap_or(&self.root);
        for (dir, parent) in [(ns_dir, self.root.as_path()), (shard, ns_dir)] {
            match fs::create_dir(dir) {
                Ok(()) if flush_now => sync_dir(parent)
                    .map_err(|e| io_unavailable("cannot flush the paste directory to disk", e))?,
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => {}
                Err(e) => return Err(io_unavailable("cannot create the paste directory", e)),
            }
        }
        Ok(())
    }

    /// Whether puts are flushed by the commit thread's `syncfs`
    /// ([`FsSync::Batch`] on Linux).
    fn group_commit(&self) -> bool {
        cfg!(target_os = "linux") && self.config.sync == FsSync::Batch
    }

    fn get(&self, key: &PasteKey) -> Result<StoredPaste, StoreError> {
        let (dir, file) = self.paths(key);
        let path = dir.join(&file);
        let read = match read_record(&self.noatime, &path) {
            Err(StoreError::NotFound) => return Err(self.missing(key)),
            // The log names the file an operator has to look at.
            Err(StoreError::Damaged { reason, header }) => Err(StoreError::Damaged {
                reason: format!("{reason}: {}", path.display()),
                header,
            }),
            other => other,
        };
        if record::is_expired(&read, now_ms()) {
            return Err(StoreError::NotFound);
        }
        read
    }

    /// [`get`](Self::get) without blocking: `Some` for a live paste whose
    /// directory entries and data are all in the kernel's caches, `None` for
    /// anything else (not cached, absent, expired, damaged, an error, not
    /// Linux), which the blocking path then answers.
    fn get_from_memory(&self, key: &PasteKey) -> Option<StoredPaste> {
        let (dir, file) = self.paths(key);
        let bytes = read_cached(&self.noatime, &dir.join(file))?;
        let paste = record::decode_owned(bytes).ok()?;
        (!paste.is_expired_at(now_ms())).then_some(paste)
    }

    /// Why the file of `key` is missing: moved aside by `doctor --repair`
    /// (damaged: the read answers so, not "not found"), else
    /// [`not_found_or_outage`](Self::not_found_or_outage).
    fn missing(&self, key: &PasteKey) -> StoreError {
        let (dir, file) = key.fs_location();
        let quarantined = self.root.join(QUARANTINE_DIR).join(dir).join(file);
        if fs::symlink_metadata(&quarantined).is_ok() {
            return StoreError::damaged(format!(
                "damaged, moved aside by planshare-server doctor: {}",
                quarantined.display()
            ));
        }
        self.not_found_or_outage()
    }

    /// A missing file means "not found" only while the root is there.
    fn not_found_or_outage(&self) -> StoreError {
        match fs::metadata(&self.root) {
            Ok(m) if m.is_dir() => StoreError::NotFound,
            Ok(_) => StoreError::unavailable(
                "the paste directory is not a directory",
                io::Error::from(io::ErrorKind::NotADirectory),
            ),
            Err(e) => io_unavailable("the paste directory is missing", e),
        }
    }

    fn delete(&self, key: &PasteKey) -> Result<(), StoreError> {
        let (dir, file) = self.paths(key);
        let _guard = self.lock_for(&dir, &file);
        match fs::remove_file(dir.join(&file)) {
            Ok(()) => sync_dir(&dir)
                .map_err(|e| io_unavailable("cannot flush the paste directory to disk", e)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => match self.not_found_or_outage() {
                StoreError::NotFound => Ok(()),
                outage => Err(outage),
            },
            Err(e) => Err(io_unavailable("cannot delete the paste file", e)),
        }
    }

    fn health(&self) -> Result<(), StoreError> {
        let probe = self
            .root
            .join(format!("{TMP_PREFIX}health-{:016x}", random_u64()?));
        let result = create_new(&probe).and_then(|mut f| f.write_all(b"ok"));
        let _ = fs::remove_file(&probe);
        result.map_err(|e| io_unavailable("the paste directory is not writable", e))
    }

    /// Removes the directory of `namespace` with every paste in it: each
    /// file under its key's lock (a put racing the purge either lands
    /// before, and is removed, or after), then the emptied shards and the
    /// namespace directory, and makes the removal durable.
    ///
    /// A symbolic link met on the way (the namespace directory, a shard, a
    /// file) is not followed and not removed ([`nofollow`]): it was not put
    /// there by the store, and what it points to is not a deleted tenant's
    /// paste to delete. Each is logged for an operator to look at; the
    /// directories holding one stay.
    fn purge(&self, namespace: &Namespace) -> Result<u64, StoreError> {
        let root = OpenDir::root(&self.root)
            .map_err(|e| io_unavailable("cannot open the paste directory", e))?;
        let name = std::ffi::OsStr::new(namespace.fs_dir());
        let ns = match root.subdir(name) {
            Ok(ns) => ns,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(e) if nofollow::not_followed(&e).is_some() => {
                purge_met_link(&root.path().join(name));
                return Ok(0);
            }
            Err(e) => return Err(io_unavailable("cannot list a namespace to purge", e)),
        };
        let shards = ns
            .entries()
            .map_err(|e| io_unavailable("cannot list a namespace to purge", e))?;
        let mut removed = 0;
        for (shard_name, kind) in shards {
            if kind == EntryType::Symlink {
                purge_met_link(&ns.path().join(&shard_name));
                continue;
            }
            let shard = match ns.subdir(&shard_name) {
                Ok(shard) => shard,
                Err(e) if nofollow::not_followed(&e).is_some() => {
                    purge_met_link(&ns.path().join(&shard_name));
                    continue;
                }
                Err(e) => return Err(io_unavailable("cannot list a shard to purge", e)),
            };
            let entries = shard
                .entries()
                .map_err(|e| io_unavailable("cannot list a shard to purge", e))?;
            for (file, kind) in entries {
                if kind == EntryType::Symlink {
                    purge_met_link(&shard.path().join(&file));
                    continue;
                }
                let file_str = file.to_string_lossy();
                let _guard = self.lock_for(shard.path(), &file_str);
                match shard.unlink(&file) {
                    Ok(()) => removed += u64::from(!file_str.starts_with(TMP_PREFIX)),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(io_unavailable("cannot remove a purged paste", e)),
                }
            }
            shard
                .sync()
                .map_err(|e| io_unavailable("cannot sync a purged shard", e))?;
            // A put may have linked a file in meanwhile: it is removed by
            // the next purge (the catalog keeps asking until one finds none).
            if let Err(e) = ns.remove_dir(&shard_name)
                && e.kind() != io::ErrorKind::NotFound
            {
                tracing::debug!(error = %e, "a purged shard is not empty yet");
            }
        }
        if let Err(e) = root.remove_dir(name)
            && e.kind() != io::ErrorKind::NotFound
        {
            tracing::debug!(error = %e, "a purged namespace is not empty yet");
        }
        root.sync()
            .map_err(|e| io_unavailable("cannot sync the paste directory", e))?;
        Ok(removed)
    }

    /// Walks every shard once, removing expired pastes and stale temporary
    /// files. Only regular files are removed, and no symbolic link is
    /// followed ([`nofollow`]): a link where a shard, a namespace or a file
    /// belongs is left for `planshare-server doctor` to report, and what it
    /// points to — outside the paste directory or not — is never read or
    /// deleted by the sweep.
    fn sweep(&self) -> Result<u64, StoreError> {
        let now = now_ms();
        let stale_before = now.saturating_sub(self.config.stale_tmp_secs.saturating_mul(1000));
        let mut removed = 0;
        let root = OpenDir::root(&self.root)
            .map_err(|e| io_unavailable("cannot list the paste directory", e))?;
        let namespaces = root
            .entries()
            .map_err(|e| io_unavailable("cannot list the paste directory", e))?;
        for (name, kind) in namespaces {
            match kind {
                // At the root, only the health probe's leftovers are ours.
                EntryType::File => {
                    self.remove_stale_tmp(&root, &name, stale_before, &mut removed);
                    continue;
                }
                // Quarantined files are the operator's to look at, not
                // expired pastes (a namespace cannot start with a dot).
                EntryType::Dir if !name.to_string_lossy().starts_with('.') => {}
                EntryType::Dir | EntryType::Symlink | EntryType::Other => continue,
            }
            let Ok(ns) = root.subdir(&name) else {
                continue;
            };
            let Ok(shards) = ns.entries() else {
                continue;
            };
            for (shard, kind) in shards {
                if kind != EntryType::Dir {
                    continue;
                }
                if let Ok(shard) = ns.subdir(&shard) {
                    removed += self.sweep_shard(&shard, now, stale_before);
                }
            }
        }
        Ok(removed)
    }

    fn sweep_shard(&self, dir: &OpenDir, now: u64, stale_before: u64) -> u64 {
        let Ok(entries) = dir.entries() else {
            return 0;
        };
        let mut removed = 0;
        for (name, kind) in entries {
            if kind != EntryType::File {
                continue;
            }
            let Some(text) = name.to_str() else {
                continue;
            };
            if text.starts_with(TMP_PREFIX) {
                self.remove_stale_tmp(dir, &name, stale_before, &mut removed);
                continue;
            }
            // The mtime is the expiry; confirm from the record under the lock.
            let mtime = dir.stat(&name).ok().map(|st| st.modified_ms);
            if mtime.is_some_and(|t| t < now) {
                let _guard = self.lock_for(dir.path(), text);
                let read = match nofollow::read_all(dir, &name, &self.noatime) {
                    Ok(bytes) => record::decode_owned(bytes),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => Err(StoreError::NotFound),
                    Err(e) => Err(io_unavailable("cannot read the paste file", e)),
                };
                if record::is_expired(&read, now) && dir.unlink(&name).is_ok() {
                    removed += 1;
                }
            }
        }
        removed
    }

    fn remove_stale_tmp(
        &self,
        dir: &OpenDir,
        name: &std::ffi::OsStr,
        stale_before: u64,
        removed: &mut u64,
    ) {
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(TMP_PREFIX)) else {
            return;
        };
        // `.tmp-<file>-<created ms>-<random>` or `.tmp-health-<random>`
        let created = rest
            .rsplit('-')
            .nth(1)
            .and_then(|ms| ms.parse::<u64>().ok())
            .unwrap_or(0);
        if created <= stale_before && dir.unlink(name).is_ok() {
            *removed += 1;
        }
    }
}

/// Logs a symbolic link a purge did not follow (nor remove).
fn purge_met_link(path: &Path) {
    tracing::warn!(
        path = %path.display(),
        "a symbolic link in a purged namespace: not followed and not removed; an operator must look at it"
    );
}

fn spawn_sweeper(inner: Weak<Inner>) {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        tracing::warn!("no Tokio runtime: the fs store's background sweep is off");
        return;
    };
    let Some(config) = inner.upgrade().map(|i| i.config.clone()) else {
        return;
    };
    runtime.spawn(async move {
        let mut delay = Duration::from_secs(config.first_sweep_delay_secs);
        loop {
            tokio::time::sleep(delay).await;
            delay = Duration::from_secs(config.sweep_interval_secs.max(1));
            let Some(inner) = inner.upgrade() else { return };
            match blocking(move || inner.sweep()).await {
                Ok(0) => {}
                Ok(removed) => tracing::info!(removed, "fs store sweep removed expired pastes"),
                Err(error) => tracing::warn!(%error, "fs store sweep failed"),
            }
        }
    });
}

fn create_new(path: &Path) -> io::Result<File> {
    OpenOptions::new().write(true).create_new(true).open(path)
}

/// Writes all of `parts` in order (the record's header and payload, without
/// joining them into one buffer first).
fn write_all_parts(f: &mut File, mut parts: &mut [io::IoSlice<'_>]) -> io::Result<()> {
    while !parts.is_empty() {
        match f.write_vectored(parts) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => io::IoSlice::advance_slices(&mut parts, n),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

fn remove_if_exists(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        other => other,
    }
}

fn read_record(noatime: &NoAtime, path: &Path) -> Result<StoredPaste, StoreError> {
    let mut bytes = Vec::new();
    match noatime
        .open(path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
    {
        Ok(_) => record::decode_owned(bytes),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(StoreError::NotFound),
        Err(e) => Err(io_unavailable("cannot read the paste file", e)),
    }
}

/// The largest file [`read_cached`] reads; bigger ones go to the pool.
#[cfg(target_os = "linux")]
const CACHED_READ_MAX: u64 = 16 << 20;

/// The whole file at `path` if it can be read without waiting for a disk:
/// the path resolves from the dentry cache alone and the data is in the page
/// cache. `None` otherwise — including on kernels without `openat2` (before
/// 5.12: remembered, so it is asked once).
#[cfg(target_os = "linux")]
fn read_cached(noatime: &NoAtime, path: &Path) -> Option<Vec<u8>> {
    use std::sync::atomic::{AtomicBool, Ordering};

    use rustix::fs::{CWD, Mode, OFlags, ResolveFlags, fstat, openat2};
    use rustix::io::{Errno, ReadWriteFlags, preadv2};

    static UNSUPPORTED: AtomicBool = AtomicBool::new(false);
    if UNSUPPORTED.load(Ordering::Relaxed) {
        return None;
    }
    let open = |flags: OFlags| openat2(CWD, path, flags, Mode::empty(), ResolveFlags::CACHED);
    let flags = OFlags::RDONLY | OFlags::CLOEXEC;
    let opened = if noatime.refused() {
        open(flags)
    } else {
        // As in `NoAtime::open`: no access-time update, where allowed.
        match open(flags | OFlags::NOATIME) {
            Err(Errno::PERM) => {
                noatime.refuse();
                open(flags)
            }
            other => other,
        }
    };
    let fd = match opened {
        Ok(fd) => fd,
        Err(Errno::NOSYS | Errno::INVAL) => {
            UNSUPPORTED.store(true, Ordering::Relaxed);
            return None;
        }
        Err(_) => return None,
    };
    let size = u64::try_from(fstat(&fd).ok()?.st_size).ok()?;
    if size > CACHED_READ_MAX {
        return None;
    }
    let mut bytes = vec![0u8; usize::try_from(size).ok()?];
    // One read of the exact size; a short read (the file changed, or part of
    // it is not cached) hands the whole read to the blocking path.
    let read = preadv2(
        &fd,
        &mut [io::IoSliceMut::new(&mut bytes)],
        0,
        ReadWriteFlags::NOWAIT,
    )
    .ok()?;
    (read == bytes.len()).then_some(bytes)
}

#[cfg(not(target_os = "linux"))]
fn read_cached(_noatime: &NoAtime, _path: &Path) -> Option<Vec<u8>> {
    None
}

fn io_unavailable(reason: &'static str, e: io::Error) -> StoreError {
    StoreError::unavailable(reason, e)
}

fn random_u64() -> Result<u64, StoreError> {
    let mut b = [0u8; 8];
    getrandom::fill(&mut b).map_err(|_| StoreError::internal("the OS random source failed"))?;
    Ok(u64::from_le_bytes(b))
}

fn system_time(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::{fresh_key, paste};

    async fn store(root: &Path) -> FsStore {
        FsStore::open(&FsConfig {
            path: root.to_path_buf(),
            first_sweep_delay_secs: 3600,
            ..FsConfig::default()
        })
        .await
        .unwrap()
    }

    /// The non-blocking read gives what the blocking read gives, or leaves
    /// the answer to it: never a different paste, never a false absence.
    #[tokio::test]
    async fn reads_from_memory_agree_with_the_blocking_path() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path()).await;
        for text in [
            "q1YqULJSKkktLlGyUiooyk8pTS5RBMmEAg",
            "not base64 at all",
            "",
        ] {
            let key = fresh_key("default");
            let stored = paste(text, 60_000);
            store.put_if_absent(&key, stored.clone()).await.unwrap();
            let slow = store.inner.get(&key).unwrap();
            assert_eq!(slow, stored);
            let fast = store.inner.get_from_memory(&key);
            // Just written, so cached: Linux serves it without blocking.
            if cfg!(target_os = "linux") {
                assert_eq!(fast.as_ref(), Some(&stored), "{text:?}");
            } else {
                assert_eq!(fast, None);
            }
            assert_eq!(store.get(&key).await.unwrap(), stored);
        }

        // Absent, expired, damaged: declined here, answered by the pool.
        let absent = fresh_key("default");
        assert_eq!(store.inner.get_from_memory(&absent), None);
        assert!(matches!(
            store.get(&absent).await,
            Err(StoreError::NotFound)
        ));

        let expired = fresh_key("default");
        let (dir_path, file) = store.inner.paths(&expired);
        std::fs::create_dir_all(&dir_path).unwrap();
        std::fs::write(dir_path.join(&file), record::encode(&paste("AA", -1))).unwrap();
        assert_eq!(store.inner.get_from_memory(&expired), None);
        assert!(matches!(
            store.get(&expired).await,
            Err(StoreError::NotFound)
        ));

        let damaged = fresh_key("default");
        store
            .put_if_absent(&damaged, paste("AA", 60_000))
            .await
            .unwrap();
        let (dir_path, file) = store.inner.paths(&damaged);
        std::fs::write(dir_path.join(file), b"not a record").unwrap();
        assert_eq!(store.inner.get_from_memory(&damaged), None);
        assert!(matches!(
            store.get(&damaged).await,
            Err(StoreError::Damaged { .. })
        ));
    }

    #[tokio::test]
    async fn reads_leave_the_access_time_alone() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path()).await;
        let key = fresh_key("default");
        let stored = paste("q1YqULJSKkktLlGyUiooyk8pTS5RBMmEAg", 60_000);
        store.put_if_absent(&key, stored.clone()).await.unwrap();
        let (dir_path, file) = store.inner.paths(&key);
        let path = dir_path.join(file);
        // An access time long past: under `relatime` any ordinary read would
        // now update it (it is older than the mtime, the future expiry).
        let long_ago = UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_times(fs::FileTimes::new().set_accessed(long_ago))
            .unwrap();
        let accessed = || fs::metadata(&path).unwrap().accessed().unwrap();
        assert_eq!(accessed(), long_ago);

        assert_eq!(store.inner.get(&key).unwrap(), stored);
        assert_eq!(accessed(), long_ago, "the blocking read set the atime");
        if cfg!(target_os = "linux") {
            assert_eq!(store.inner.get_from_memory(&key), Some(stored.clone()));
            assert_eq!(accessed(), long_ago, "the read from memory set the atime");
        }
        assert_eq!(store.get(&key).await.unwrap(), stored);
        assert_eq!(accessed(), long_ago);

        // The control: on this file system an ordinary read does update it
        // (unless it is mounted `noatime`, where there is nothing to show).
        fs::read(&path).unwrap();
        if accessed() == long_ago {
            eprintln!("{}: mounted without access times", dir.path().display());
        }
    }

    /// Files this process does not own: `O_NOATIME` is refused, and the
    /// reads still succeed, through both paths.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn files_of_another_owner_are_read_all_the_same() {
        use rustix::thread::{CapabilitySet, capabilities, set_capabilities};

        let dir = tempfile::tempdir().unwrap();
        let store = store(dir.path()).await;
        let key = fresh_key("default");
        let stored = paste("q1YqULJSKkktLlGyUiooyk8pTS5RBMmEAg", 60_000);
        store.put_if_absent(&key, stored.clone()).await.unwrap();
        // The owner's reads are not refused.
        assert_eq!(store.inner.get(&key).unwrap(), stored);
        assert!(!store.inner.noatime.refused());

        let (dir_path, file) = store.inner.paths(&key);
        let caps = capabilities(None).unwrap().effective;
        if !caps.contains(CapabilitySet::CHOWN | CapabilitySet::FOWNER) {
            eprintln!("without CAP_CHOWN a file cannot be given away: owner's reads checked only");
            return;
        }
        // Give the file away, then read it from a thread without
        // CAP_FOWNER (capabilities are per thread on Linux): still root, so
        // it may read everything, but it does not own the file.
        std::os::unix::fs::chown(dir_path.join(file), Some(65534), Some(65534)).unwrap();
        let inner = store.inner.clone();
        let read = std::thread::spawn(move || {
            let mut sets = capabilities(None).unwrap();
            sets.effective.remove(CapabilitySet::FOWNER);
            set_capabilities(None, sets).unwrap();
            let from_memory = inner.get_from_memory(&key);
            let blocking = inner.get(&key).unwrap();
            (from_memory, blocking)
        })
        .join()
        .unwrap();
        assert_eq!(read, (Some(stored.clone()), stored));
        assert!(store.inner.noatime.refused());
    }
}
