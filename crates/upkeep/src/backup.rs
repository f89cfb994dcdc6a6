//! `planshare-server backup DIR`: a consistent copy of the self-hosted
//! default (fs store, SQLite catalog) taken while the server serves.
//!
//! The catalog is copied first, through SQLite's online copy (`VACUUM
//! INTO`: the catalog as of one moment), then the paste files. A paste the
//! copied catalog names was stored before that moment (a create is
//! acknowledged only once its file and its row are both written), so its
//! file is in the copy unless it was deleted, burnt or expired meanwhile.
//! Files written after the catalog's moment may be in the copy too,
//! without their rows; `doctor` reports those and leaves them be.
//!
//! `DIR` is laid out as the data directory is: the catalog and the paste
//! directory at the same places relative to it (`catalog.sqlite` and
//! `pastes/` by default; with upstream's `PASTE_DATA_DIR`, the pastes at
//! the top). Restoring is pointing the same setting at `DIR` (or copying
//! it into place) and starting the server; `doctor` then checks it. A
//! catalog or paste directory configured outside the data directory is
//! copied to `catalog.sqlite` and `pastes/`.
//!
//! Nothing is copied through a symbolic link (the store writes none): a
//! namespace directory, a shard or a file that is a link is skipped and
//! named in the report, and what it points to is neither read nor copied
//! (each directory is walked held open without following links, and each
//! file opened with `O_NOFOLLOW`, so one swapped for a link meanwhile is
//! not followed either).

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, bail};
use paste_store::{FsEntry, FsEntryKind, FsStore, StoreConfig, StoreKind, not_followed};
use tenancy::CatalogConfig;

/// What a backup copied.
#[derive(Clone, Debug)]
pub struct BackupReport {
    /// The catalog's copy.
    pub catalog: PathBuf,
    /// The paste directory's copy.
    pub pastes: PathBuf,
    /// Paste files and review blobs copied.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Files that went away between being listed and being copied
    /// (deleted, burnt or expired meanwhile).
    pub vanished: u64,
    /// Symbolic links met where the store keeps namespaces, shards and
    /// files, skipped: not followed, so what they point to is not in the
    /// copy (an operator must look at them).
    pub symlinks: Vec<PathBuf>,
    /// Seconds it took.
    pub elapsed_secs: f64,
}

/// Backs up the fs store `store` configures and the SQLite catalog
/// `catalog` configures into `dest`, a new or empty directory, laid out as
/// `data_dir` (the server's data directory) is.
pub async fn run(
    store: &StoreConfig,
    catalog: &CatalogConfig,
    data_dir: &Path,
    dest: &Path,
) -> anyhow::Result<BackupReport> {
    let started = Instant::now();
    if store.kind != StoreKind::Fs {
        bail!(
            "backup copies the fs store; store.kind is {:?} (back up Redis or the bucket with their own tools)",
            store.kind
        );
    }
    if !catalog.url.starts_with("sqlite:") {
        bail!("backup copies a SQLite catalog; this one is on PostgreSQL (use pg_dump)");
    }
    std::fs::create_dir_all(dest).with_context(|| format!("cannot create {}", dest.display()))?;
    if std::fs::read_dir(dest)?.next().is_some() {
        bail!(
            "{} is not empty: back up into a new directory",
            dest.display()
        );
    }
    let store_root = std::fs::canonicalize(&store.fs.path)
        .with_context(|| format!("the paste directory {}", store.fs.path.display()))?;
    if std::fs::canonicalize(dest)?.starts_with(&store_root) {
        bail!("the backup directory cannot be inside the paste directory");
    }

    let catalog_file = sqlite_file(&catalog.url);
    let catalog = tenancy::Catalog::open(catalog)
        .await
        .context("cannot open the tenant catalog")?;
    let catalog_copy = dest.join(
        catalog_file
            .as_deref()
            .and_then(|f| f.strip_prefix(data_dir).ok())
            .filter(|rel| !rel.as_os_str().is_empty())
            .unwrap_or(Path::new("catalog.sqlite")),
    );
    let store_copy = dest.join(
        store
            .fs
            .path
            .strip_prefix(data_dir)
            .unwrap_or(Path::new("pastes")),
    );
    if let Some(parent) = catalog_copy.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let copied = catalog.backup_sqlite(&catalog_copy).await;
    catalog.close().await;
    copied.context("cannot copy the catalog")?;

    let store = FsStore::open_for_inspection(&store.fs).context("cannot open the fs store")?;
    let dest_owned = store_copy.clone();
    let copied = tokio::task::spawn_blocking(move || copy_files(&store, &dest_owned))
        .await
        .context("the copy task failed")??;
    paste_store::sync_filesystem(dest).context("cannot flush the backup to disk")?;
    Ok(BackupReport {
        catalog: catalog_copy,
        pastes: store_copy,
        files: copied.files,
        bytes: copied.bytes,
        vanished: copied.vanished,
        symlinks: copied.symlinks,
        elapsed_secs: started.elapsed().as_secs_f64(),
    })
}

/// The database file of a `sqlite:` catalog URL.
fn sqlite_file(url: &str) -> Option<PathBuf> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))?;
    let path = rest.split('?').next().unwrap_or(rest);
    (!path.is_empty()).then(|| PathBuf::from(path))
}

/// What [`copy_files`] did.
#[derive(Default)]
struct Copied {
    files: u64,
    bytes: u64,
    vanished: u64,
    symlinks: Vec<PathBuf>,
}

/// Copies every paste file and review blob (not temporary files, not the
/// quarantine) into `dest`, keeping each file's modification time (its
/// expiry, which the store's sweep reads). Links are skipped and listed.
fn copy_files(store: &FsStore, dest: &Path) -> anyhow::Result<Copied> {
    let mut copied = Copied::default();
    for namespace in store.namespace_dirs()? {
        match namespace.kind {
            FsEntryKind::Directory => {}
            // Beside the pastes the root may hold the catalog and what else
            // the operator keeps there (upstream's layout): only a link
            // named as a namespace is one the store would have walked.
            FsEntryKind::Symlink if paste_store::Namespace::parse(&namespace.name).is_ok() => {
                copied.symlinks.push(namespace.path);
                continue;
            }
            _ => continue,
        }
        let Some(shards) = listing(store, &namespace, &mut copied)? else {
            continue;
        };
        for shard in shards {
            match shard.kind {
                FsEntryKind::Directory => {}
                FsEntryKind::Symlink => {
                    copied.symlinks.push(shard.path);
                    continue;
                }
                _ => continue,
            }
            let Some(entries) = listing(store, &shard, &mut copied)? else {
                continue;
            };
            let shard_dest = dest.join(&namespace.name).join(&shard.name);
            let mut made = false;
            for entry in entries {
                match entry.kind {
                    FsEntryKind::Paste(_) | FsEntryKind::ReviewBlob(_) => {}
                    FsEntryKind::Symlink => {
                        copied.symlinks.push(entry.path);
                        continue;
                    }
                    _ => continue,
                }
                if !made {
                    std::fs::create_dir_all(&shard_dest)?;
                    made = true;
                }
                match copy_one(store, &entry, &shard_dest.join(&entry.name)) {
                    Ok(n) => {
                        copied.files += 1;
                        copied.bytes += n;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => copied.vanished += 1,
                    // Made a link since the shard was listed.
                    Err(e) if not_followed(&e).is_some() => copied.symlinks.push(entry.path),
                    Err(e) => {
                        return Err(e)
                            .with_context(|| format!("cannot copy {}", entry.path.display()));
                    }
                }
            }
        }
    }
    Ok(copied)
}

/// The entries of the directory `dir`; `None` when it went away or is no
/// longer a directory (made a link since it was listed: recorded).
fn listing(
    store: &FsStore,
    dir: &FsEntry,
    copied: &mut Copied,
) -> anyhow::Result<Option<Vec<FsEntry>>> {
    match store.entries_of(dir) {
        Ok(entries) => Ok(Some(entries)),
        Err(e) if not_followed(&e).is_some() => {
            copied.symlinks.push(dir.path.clone());
            Ok(None)
        }
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::NotADirectory
            ) =>
        {
            Ok(None)
        }
        Err(e) => Err(e).with_context(|| format!("cannot list {}", dir.path.display())),
    }
}

/// Copies the regular file `entry` (opened without following a link) to
/// `to`, a new file, with the source's modification time.
fn copy_one(store: &FsStore, entry: &FsEntry, to: &Path) -> std::io::Result<u64> {
    let mut source = store.open_entry(entry)?;
    let modified = source.metadata()?.modified()?;
    let mut copy = std::fs::File::create_new(to)?;
    let n = std::io::copy(&mut source, &mut copy)?;
    copy.set_modified(modified)?;
    Ok(n)
}
