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

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, bail};
use paste_store::{FsEntryKind, FsStore, StoreKind};

use crate::Settings;

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
    /// Seconds it took.
    pub elapsed_secs: f64,
}

/// Backs up the fs store and SQLite catalog of `settings` into `dest`, a
/// new or empty directory.
pub async fn run(settings: &Settings, dest: &Path) -> anyhow::Result<BackupReport> {
    let started = Instant::now();
    if settings.store.kind != StoreKind::Fs {
        bail!(
            "backup copies the fs store; store.kind is {:?} (back up Redis or the bucket with their own tools)",
            settings.store.kind
        );
    }
    if !settings.catalog.url.starts_with("sqlite:") {
        bail!("backup copies a SQLite catalog; this one is on PostgreSQL (use pg_dump)");
    }
    std::fs::create_dir_all(dest).with_context(|| format!("cannot create {}", dest.display()))?;
    if std::fs::read_dir(dest)?.next().is_some() {
        bail!(
            "{} is not empty: back up into a new directory",
            dest.display()
        );
    }
    let store_root = std::fs::canonicalize(&settings.store.fs.path)
        .with_context(|| format!("the paste directory {}", settings.store.fs.path.display()))?;
    if std::fs::canonicalize(dest)?.starts_with(&store_root) {
        bail!("the backup directory cannot be inside the paste directory");
    }

    let catalog = tenancy::Catalog::open(&settings.catalog)
        .await
        .context("cannot open the tenant catalog")?;
    let data_dir = &settings.server.data_dir;
    let catalog_file = sqlite_file(&settings.catalog.url);
    let catalog_copy = dest.join(
        catalog_file
            .as_deref()
            .and_then(|f| f.strip_prefix(data_dir).ok())
            .filter(|rel| !rel.as_os_str().is_empty())
            .unwrap_or(Path::new("catalog.sqlite")),
    );
    let store_copy = dest.join(
        settings
            .store
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

    let store =
        FsStore::open_for_inspection(&settings.store.fs).context("cannot open the fs store")?;
    let dest_owned = store_copy.clone();
    let (files, bytes, vanished) =
        tokio::task::spawn_blocking(move || copy_files(&store, &dest_owned))
            .await
            .context("the copy task failed")??;
    paste_store::sync_filesystem(dest).context("cannot flush the backup to disk")?;
    Ok(BackupReport {
        catalog: catalog_copy,
        pastes: store_copy,
        files,
        bytes,
        vanished,
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

/// Copies every paste file and review blob (not temporary files, not the
/// quarantine) into `dest`, keeping each file's modification time (its
/// expiry, which the store's sweep reads).
fn copy_files(store: &FsStore, dest: &Path) -> anyhow::Result<(u64, u64, u64)> {
    let (mut files, mut bytes, mut vanished) = (0, 0, 0);
    for (namespace, is_dir) in store.namespace_dirs()? {
        if !is_dir {
            continue;
        }
        for shard in store.shard_dirs(&namespace)? {
            let entries = match store.shard_entries(&namespace, &shard) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotADirectory => continue,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e).context(format!("cannot list {namespace}/{shard}")),
            };
            let shard_dest = dest.join(&namespace).join(&shard);
            let mut made = false;
            for entry in entries {
                if !matches!(
                    entry.kind,
                    FsEntryKind::Paste(_) | FsEntryKind::ReviewBlob(_)
                ) {
                    continue;
                }
                if !made {
                    std::fs::create_dir_all(&shard_dest)?;
                    made = true;
                }
                let Some(name) = entry.path.file_name() else {
                    continue;
                };
                match copy_one(&entry.path, &shard_dest.join(name)) {
                    Ok(n) => {
                        files += 1;
                        bytes += n;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => vanished += 1,
                    Err(e) => {
                        return Err(e)
                            .with_context(|| format!("cannot copy {}", entry.path.display()));
                    }
                }
            }
        }
    }
    Ok((files, bytes, vanished))
}

fn copy_one(from: &Path, to: &Path) -> std::io::Result<u64> {
    let source = std::fs::File::open(from)?;
    let modified = source.metadata()?.modified()?;
    let n = std::fs::copy(from, to)?;
    std::fs::File::options()
        .write(true)
        .open(to)?
        .set_modified(modified)?;
    Ok(n)
}
