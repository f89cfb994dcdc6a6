//! The fs store as the doctor (and `backup`) sees it: its entries listed
//! in key order, a record's head read without its payload, and the repairs
//! that are safe while a server (another process) serves the same
//! directory.
//!
//! Order: namespaces, their shards and a shard's files are each sorted by
//! name. A file name is the lower-case hex of the id's bytes and a shard
//! the hex of its first two, so within a namespace pastes come in the byte
//! order of their ids — the order the catalog lists its rows in, which lets
//! the doctor compare the two side by side in bounded memory.
//!
//! The repairs move or remove a file only if it is still the file that was
//! checked: the server holds its per-key locks in its own process, so a
//! repair renames the file out of the way first and compares the inode of
//! what it moved with the one it checked; a file put there meanwhile is
//! moved back.
//!
//! Symbolic links: the store writes none, so one below the root is listed
//! as [`FsEntryKind::Symlink`] (for the doctor to report) and never
//! followed. Each entry carries the directory it was listed in, held open
//! without following a link (`nofollow.rs` beside this file); reading and repairing
//! name the entry relative to it, so a directory swapped for a link after
//! the listing is not followed either (the operation fails with
//! [`NotFollowed`]).

use std::ffi::{OsStr, OsString};
use std::fs;
use std::io::{self, Read as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::nofollow::{EntryType, OpenDir};
use super::{FsStore, TMP_PREFIX, blocking, random_u64};
use crate::inventory::{
    EntryKind, InventoryEntry, Page, RecordHead, StoreInventory, TopLevel, check_whole, head_of,
    page_after,
};
use crate::{Namespace, PasteId, PasteKey, RECORD_HEADER_LEN, RecordProblem, StoreError};

pub use super::QUARANTINE_DIR;
pub use super::nofollow::{NotFollowed, not_followed};

/// One directory entry: of the root, of a namespace directory or of a
/// shard.
#[derive(Clone, Debug)]
pub struct FsEntry {
    /// Its path.
    pub path: PathBuf,
    /// Its name (lossily made text, for comparing and reporting).
    pub name: String,
    /// What it is.
    pub kind: FsEntryKind,
    /// Its name as listed (what operations on it use).
    os_name: OsString,
    /// The directory it was listed in, held open.
    dir: Arc<OpenDir>,
}

/// What an entry is: a directory, a link, or a regular file by what its
/// name says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FsEntryKind {
    /// A paste's record.
    Paste(PasteId),
    /// A review blob's record.
    ReviewBlob(PasteId),
    /// A put's temporary file, with the time it was created (from its name).
    Temporary(Option<u64>),
    /// A directory.
    Directory,
    /// A symbolic link, whatever its name: never followed.
    Symlink,
    /// A file with a name the store never writes, or neither a regular
    /// file, a directory nor a link (a FIFO, a socket, a device).
    Unknown,
}

/// The first bytes of a file (up to a record header) and its length.
#[derive(Clone, Debug)]
pub struct FileHead {
    /// Up to [`RECORD_HEADER_LEN`] bytes.
    pub head: Vec<u8>,
    /// The file's length.
    pub len: u64,
    /// Its inode: what a repair compares to act only on the file checked.
    pub ino: u64,
}

/// A link in the quarantine's directories: its namespace (none for the
/// quarantine directory itself), its path and what it points to.
pub type QuarantineLink = (Option<String>, PathBuf, Option<PathBuf>);

/// An entry's own inode and change time (a link's own, not its target's).
#[derive(Clone, Copy, Debug)]
pub struct EntryMeta {
    /// What it is now (it may have changed since it was listed).
    pub is_file: bool,
    /// Whether it is now a symbolic link.
    pub is_symlink: bool,
    /// Its inode.
    pub ino: u64,
    /// Its inode change time, Unix ms.
    pub changed_ms: u64,
}

impl FsStore {
    /// The root's entries, sorted by name (the quarantine directory left
    /// out: see [`quarantine_links`](Self::quarantine_links)).
    pub fn namespace_dirs(&self) -> io::Result<Vec<FsEntry>> {
        let root = Arc::new(OpenDir::root(self.root())?);
        let mut out = listing(&root)?;
        out.retain(|e| e.name != QUARANTINE_DIR);
        Ok(out)
    }

    /// The entries of the directory `dir` (a namespace directory: its
    /// shards; a shard: its files), sorted by name. `dir` is opened without
    /// following a link: if it is one (now), the error is [`NotFollowed`].
    pub fn entries_of(&self, dir: &FsEntry) -> io::Result<Vec<FsEntry>> {
        listing(&Arc::new(dir.dir.subdir(&dir.os_name)?))
    }

    /// The symbolic links at the quarantine directory's top levels: the
    /// directory itself, its namespace directories and their shards (where
    /// [`quarantine`](Self::quarantine) would move a file into, which it
    /// refuses to do through a link), each with its namespace and what it
    /// points to (where that can be read).
    pub fn quarantine_links(&self) -> io::Result<Vec<QuarantineLink>> {
        let root = OpenDir::root(self.root())?;
        let name = OsStr::new(QUARANTINE_DIR);
        let quarantine = match root.subdir(name) {
            Ok(dir) => dir,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) if not_followed(&e).is_some() => {
                let target = root.read_link(name).ok();
                return Ok(vec![(None, root.path().join(name), target)]);
            }
            // A file where the quarantine belongs: not a link.
            Err(e) if e.kind() == io::ErrorKind::NotADirectory => return Ok(Vec::new()),
            Err(e) => return Err(e),
        };
        let mut out = Vec::new();
        let mut namespaces = quarantine.entries()?;
        namespaces.sort_by(|a, b| a.0.cmp(&b.0));
        for (ns, kind) in namespaces {
            let ns_text = ns.to_string_lossy().into_owned();
            let link = |dir: &OpenDir, name: &OsStr| {
                (
                    Some(ns_text.clone()),
                    dir.path().join(name),
                    dir.read_link(name).ok(),
                )
            };
            match kind {
                EntryType::Symlink => out.push(link(&quarantine, &ns)),
                EntryType::Dir => {
                    let dir = match quarantine.subdir(&ns) {
                        Ok(dir) => dir,
                        Err(e) if not_followed(&e).is_some() => {
                            out.push(link(&quarantine, &ns));
                            continue;
                        }
                        Err(_) => continue,
                    };
                    let mut shards = dir.entries()?;
                    shards.sort_by(|a, b| a.0.cmp(&b.0));
                    for (shard, kind) in shards {
                        if kind == EntryType::Symlink {
                            out.push(link(&dir, &shard));
                        }
                    }
                }
                EntryType::File | EntryType::Other => {}
            }
        }
        Ok(out)
    }

    /// The file of `key` as an entry of its shard (opened without following
    /// a link on the way: one there is [`NotFollowed`]), for the
    /// operations on entries; whether the file exists is not checked.
    pub fn record_entry(&self, key: &PasteKey) -> io::Result<FsEntry> {
        let (dir, file) = key.fs_location();
        let mut at = OpenDir::root(self.root())?;
        for part in dir.split('/') {
            at = at.subdir(OsStr::new(part))?;
        }
        let os_name = OsString::from(&file);
        Ok(FsEntry {
            path: at.path().join(&os_name),
            kind: kind_of(&file),
            name: file,
            os_name,
            dir: Arc::new(at),
        })
    }

    /// Where the file of `key` is (whether or not it exists).
    pub fn path_of(&self, key: &PasteKey) -> PathBuf {
        let (dir, file) = self.inner.paths(key);
        dir.join(file)
    }

    /// Whether the file of `key` is certainly not stored: it, its shard or
    /// its namespace directory is missing. A link on the way is not
    /// followed, and means "not known to be missing" (`false`).
    pub fn is_absent(&self, key: &PasteKey) -> bool {
        let (dir, file) = key.fs_location();
        let missing = |e: &io::Error| e.kind() == io::ErrorKind::NotFound;
        let mut at = match OpenDir::root(self.root()) {
            Ok(root) => root,
            Err(_) => return false,
        };
        for part in dir.split('/') {
            at = match at.subdir(OsStr::new(part)) {
                Ok(next) => next,
                Err(e) => return missing(&e),
            };
        }
        at.stat(OsStr::new(&file)).is_err_and(|e| missing(&e))
    }

    /// The entry's own inode and change time, as it is now.
    pub fn entry_meta(&self, entry: &FsEntry) -> io::Result<EntryMeta> {
        let st = entry.dir.stat(&entry.os_name)?;
        Ok(EntryMeta {
            is_file: st.kind == EntryType::File,
            is_symlink: st.kind == EntryType::Symlink,
            ino: st.ino,
            changed_ms: st.changed_ms,
        })
    }

    /// What the link `entry` says (read from the link, not followed).
    pub fn link_target(&self, entry: &FsEntry) -> io::Result<PathBuf> {
        entry.dir.read_link(&entry.os_name)
    }

    /// Opens the regular file `entry` for reading. A link is refused
    /// ([`NotFollowed`]), as is anything that is not a regular file.
    pub fn open_entry(&self, entry: &FsEntry) -> io::Result<fs::File> {
        entry.dir.open_file(&entry.os_name, &self.inner.noatime)
    }

    /// The head and length of the file `entry`.
    pub fn read_head(&self, entry: &FsEntry) -> io::Result<FileHead> {
        use std::os::unix::fs::MetadataExt as _;
        let file = self.open_entry(entry)?;
        let meta = file.metadata()?;
        let mut head = Vec::with_capacity(RECORD_HEADER_LEN);
        file.take(RECORD_HEADER_LEN as u64).read_to_end(&mut head)?;
        Ok(FileHead {
            head,
            len: meta.len(),
            ino: meta.ino(),
        })
    }

    /// The whole file `entry` (for checks that need the payload).
    pub fn read_whole(&self, entry: &FsEntry) -> io::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        self.open_entry(entry)?.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// Moves the file `entry` (inode `ino`, as checked) of a shard to the
    /// quarantine directory, keeping its namespace and shard in the path;
    /// returns where it went, or `None` when the file there is no longer
    /// the one checked (it is left in place). The quarantine's directories
    /// are opened (made where missing) without following a link: one there
    /// fails the move with [`NotFollowed`], and nothing is moved.
    pub fn quarantine(&self, entry: &FsEntry, ino: u64) -> io::Result<Option<PathBuf>> {
        let [ns, shard] = entry.dir.rel() else {
            return Err(io::Error::other("the file is not in a shard"));
        };
        let root = OpenDir::root(self.root())?;
        let dest_dir = root
            .subdir_or_create(OsStr::new(QUARANTINE_DIR))?
            .subdir_or_create(ns)?
            .subdir_or_create(shard)?;
        let mut dest = entry.os_name.clone();
        if dest_dir.stat(&dest).is_ok() {
            dest.push(format!("-{:016x}", random_u64().map_err(io::Error::other)?));
        }
        if !move_if_same(&entry.dir, &entry.os_name, &dest_dir, &dest, ino)? {
            return Ok(None);
        }
        dest_dir.sync()?;
        entry.dir.sync()?;
        Ok(Some(dest_dir.path().join(dest)))
    }

    /// Removes the file `entry` if it is still inode `ino` (the one
    /// checked); `false` when another file took its place (left alone).
    pub fn remove_checked(&self, entry: &FsEntry, ino: u64) -> io::Result<bool> {
        let aside = OsString::from(format!(
            "{TMP_PREFIX}doctor-{}-{:016x}",
            crate::now_ms(),
            random_u64().map_err(io::Error::other)?
        ));
        if !move_if_same(&entry.dir, &entry.os_name, &entry.dir, &aside, ino)? {
            return Ok(false);
        }
        entry.dir.unlink(&aside)?;
        entry.dir.sync()?;
        Ok(true)
    }
}

/// The shard a paste or review blob with id `id` is kept in (the hex of its
/// first two characters).
pub fn shard_of(id: &PasteId) -> String {
    id.as_str()
        .bytes()
        .take(2)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The entries of `dir`, sorted by name, each classified.
fn listing(dir: &Arc<OpenDir>) -> io::Result<Vec<FsEntry>> {
    let mut names = dir.entries()?;
    names.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(names
        .into_iter()
        .map(|(os_name, kind)| {
            let name = os_name.to_string_lossy().into_owned();
            FsEntry {
                path: dir.path().join(&os_name),
                kind: match kind {
                    EntryType::File => kind_of(&name),
                    EntryType::Dir => FsEntryKind::Directory,
                    EntryType::Symlink => FsEntryKind::Symlink,
                    EntryType::Other => FsEntryKind::Unknown,
                },
                name,
                os_name,
                dir: dir.clone(),
            }
        })
        .collect())
}

/// Flushes everything written to the filesystem that holds `path` (one
/// `syncfs(2)` on Linux; elsewhere `sync(2)` is not available to us, so the
/// directory itself is flushed).
pub fn sync_filesystem(path: &Path) -> io::Result<()> {
    let dir = fs::File::open(path)?;
    #[cfg(target_os = "linux")]
    {
        rustix::fs::syncfs(&dir)?;
    }
    dir.sync_all()
}

/// What a shard entry called `name` is.
fn kind_of(name: &str) -> FsEntryKind {
    if let Some(rest) = name.strip_prefix(TMP_PREFIX) {
        // `.tmp-<file>-<created ms>-<random>`
        let created = rest.rsplit('-').nth(1).and_then(|ms| ms.parse().ok());
        return FsEntryKind::Temporary(created);
    }
    let (blob, hex) = match name.strip_prefix('r') {
        Some(hex) => (true, hex),
        None => (false, name),
    };
    let Some(id) = id_of_hex(hex) else {
        return FsEntryKind::Unknown;
    };
    if blob {
        FsEntryKind::ReviewBlob(id)
    } else {
        FsEntryKind::Paste(id)
    }
}

/// The id whose lower-case hex is `hex`, if it is one.
fn id_of_hex(hex: &str) -> Option<PasteId> {
    if !hex.len().is_multiple_of(2) || hex.bytes().any(|b| b.is_ascii_uppercase()) {
        return None;
    }
    let bytes = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect::<Option<Vec<u8>>>()?;
    PasteId::parse(std::str::from_utf8(&bytes).ok()?).ok()
}

/// Renames `from` (in `from_dir`) to `to` (in `to_dir`) and keeps it
/// there only if it is inode `ino`; otherwise it is put back (or, if
/// something took its name meanwhile, left at `to` with an error saying
/// so). Neither name is followed if it is a link: a link renamed by
/// mistake is a link moved back, its target never touched.
fn move_if_same(
    from_dir: &OpenDir,
    from: &OsStr,
    to_dir: &OpenDir,
    to: &OsStr,
    ino: u64,
) -> io::Result<bool> {
    from_dir.rename(from, to_dir, to)?;
    if to_dir.stat(to)?.ino == ino {
        return Ok(true);
    }
    match to_dir.link(to, from_dir, from) {
        Ok(()) => {
            to_dir.unlink(to)?;
            Ok(false)
        }
        Err(e) => Err(io::Error::new(
            e.kind(),
            format!(
                "a file put at {} while it was being repaired could not be put back (it is at {}): {e}",
                from_dir.path().join(from).display(),
                to_dir.path().join(to).display()
            ),
        )),
    }
}

/// The fs store's listing ([`StoreInventory`]): the walk the doctor
/// makes, in the same order — namespaces, shards and files by name, links
/// never followed — with a cursor naming the last entry listed
/// (`<namespace>/<shard>/<file>`, relative to the root), so a page starts
/// where the last one ended without holding the rest. A link, a file where
/// a directory belongs or the other way round, a record in a shard it does
/// not belong to, and a name the store never writes are listed as unknown
/// (a link's target is never read); the quarantine and temporary files
/// are not listed. The root may hold what the operator keeps beside the
/// pastes (the SQLite catalog, in upstream's layout): those are unknown
/// names at the top.
#[async_trait::async_trait]
impl StoreInventory for FsStore {
    fn backend(&self) -> &'static str {
        "fs"
    }

    fn location(&self, key: &PasteKey) -> String {
        self.path_of(key).display().to_string()
    }

    async fn namespaces(
        &self,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Page<TopLevel>, StoreError> {
        let store = self.clone();
        let sorted = blocking(move || {
            let dirs = store
                .namespace_dirs()
                .map_err(|e| StoreError::unavailable("cannot list the paste directory", e))?;
            Ok(dirs
                .into_iter()
                .filter_map(|entry| {
                    let top = match (&entry.kind, Namespace::parse(&entry.name)) {
                        (FsEntryKind::Temporary(_), _) => return None,
                        (FsEntryKind::Directory, Ok(ns)) => TopLevel::Namespace(ns),
                        _ => TopLevel::Unknown(entry.path.display().to_string()),
                    };
                    Some((entry.name, top))
                })
                .collect::<Vec<_>>())
        })
        .await?;
        let (items, next) = page_after(&sorted, after, limit);
        Ok(Page {
            items: items.into_iter().map(|(_, top)| top).collect(),
            next,
        })
    }

    async fn entries(
        &self,
        namespace: Option<&Namespace>,
        cursor: Option<&str>,
        limit: usize,
    ) -> Result<Page<InventoryEntry>, StoreError> {
        let store = self.clone();
        let namespace = namespace.cloned();
        let cursor: Vec<String> = cursor
            .map(|c| c.split('/').map(str::to_owned).collect())
            .unwrap_or_default();
        blocking(move || {
            store
                .entries_page(namespace.as_ref(), &cursor, limit.max(1))
                .map_err(|e| StoreError::unavailable("cannot list the paste directory", e))
        })
        .await
    }

    async fn contains(&self, keys: &[PasteKey]) -> Result<Vec<bool>, StoreError> {
        let store = self.clone();
        let keys = keys.to_vec();
        // A link on the way is not followed: not known to be missing.
        blocking(move || Ok(keys.iter().map(|key| !store.is_absent(key)).collect())).await
    }

    async fn check_payload(
        &self,
        entry: &InventoryEntry,
    ) -> Result<Option<Result<(), RecordProblem>>, StoreError> {
        let Some(key) = entry.kind.key().cloned() else {
            return Ok(None);
        };
        let store = self.clone();
        blocking(move || {
            let (dir, file) = key.fs_location();
            let read = (|| {
                let mut at = OpenDir::root(store.root())?;
                for part in dir.split('/') {
                    at = at.subdir(OsStr::new(part))?;
                }
                super::nofollow::read_all(&at, OsStr::new(&file), &store.inner.noatime)
            })();
            match read {
                Ok(bytes) => Ok(Some(check_whole(&bytes))),
                // Gone, or made a link (not followed) since it was listed.
                Err(e) if e.kind() == io::ErrorKind::NotFound || not_followed(&e).is_some() => {
                    Ok(None)
                }
                Err(e) => Err(StoreError::unavailable("cannot read a paste file", e)),
            }
        })
        .await
    }
}

/// A name the fs walk lists, with its path below the root as names.
struct Leaf {
    rel: Vec<String>,
    entry: FsEntry,
    kind: EntryKind,
}

impl FsStore {
    /// Up to `limit` entries after `cursor` (a path below the root as
    /// names; empty: from the start), in the walk's order.
    fn entries_page(
        &self,
        namespace: Option<&Namespace>,
        cursor: &[String],
        limit: usize,
    ) -> io::Result<Page<InventoryEntry>> {
        // One leaf more than asked: whether there is a next page.
        let mut leaves: Vec<Leaf> = Vec::new();
        let wanted = limit + 1;
        for top in self.namespace_dirs()? {
            if leaves.len() >= wanted {
                break;
            }
            let ns = match (&top.kind, Namespace::parse(&top.name)) {
                (FsEntryKind::Directory, Ok(ns)) => ns,
                (FsEntryKind::Temporary(_), _) => continue,
                _ => {
                    let rel = vec![top.name.clone()];
                    if namespace.is_none() && after(&rel, cursor) {
                        leaves.push(Leaf {
                            rel,
                            entry: top,
                            kind: EntryKind::Unknown,
                        });
                    }
                    continue;
                }
            };
            if namespace.is_some_and(|only| *only != ns) || !may_hold(&[&top.name], cursor) {
                continue;
            }
            let shards = match self.entries_of(&top) {
                Ok(shards) => shards,
                // Gone, or made a link, since the root was listed.
                Err(e) if gone(&e) => continue,
                Err(e) => return Err(e),
            };
            for shard in shards {
                if leaves.len() >= wanted {
                    break;
                }
                if !may_hold(&[&top.name, &shard.name], cursor) {
                    continue;
                }
                if shard.kind != FsEntryKind::Directory {
                    let rel = vec![top.name.clone(), shard.name.clone()];
                    if after(&rel, cursor) {
                        leaves.push(Leaf {
                            rel,
                            entry: shard,
                            kind: EntryKind::Unknown,
                        });
                    }
                    continue;
                }
                let files = match self.entries_of(&shard) {
                    Ok(files) => files,
                    Err(e) if gone(&e) => continue,
                    Err(e) => return Err(e),
                };
                for file in files {
                    if leaves.len() >= wanted {
                        break;
                    }
                    let rel = vec![top.name.clone(), shard.name.clone(), file.name.clone()];
                    if !after(&rel, cursor) {
                        continue;
                    }
                    let in_place = |id: &PasteId| shard_of(id) == shard.name;
                    let kind = match &file.kind {
                        FsEntryKind::Temporary(_) => continue,
                        FsEntryKind::Paste(id) if in_place(id) => {
                            EntryKind::Paste(PasteKey::new(ns.clone(), id.clone()))
                        }
                        FsEntryKind::ReviewBlob(id) if in_place(id) => {
                            EntryKind::ReviewBlob(PasteKey::review_blob(ns.clone(), id.clone()))
                        }
                        _ => EntryKind::Unknown,
                    };
                    leaves.push(Leaf {
                        rel,
                        entry: file,
                        kind,
                    });
                }
            }
        }
        let more = leaves.len() > limit;
        leaves.truncate(limit);
        let next = more
            .then(|| leaves.last().map(|leaf| leaf.rel.join("/")))
            .flatten();
        let mut items = Vec::with_capacity(leaves.len());
        for Leaf { entry, kind, .. } in leaves {
            let name = entry.path.display().to_string();
            if kind == EntryKind::Unknown {
                items.push(InventoryEntry {
                    name,
                    kind,
                    record: None,
                });
                continue;
            }
            match self.read_head(&entry) {
                Ok(head) => items.push(InventoryEntry {
                    name,
                    kind,
                    record: Some(head_of(&head.head, head.len, Some(head.ino.to_string()))),
                }),
                // Removed since it was listed (a delete, a burn, the sweep).
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                // Made a link since it was listed: not read.
                Err(e) if not_followed(&e).is_some() => items.push(InventoryEntry {
                    name,
                    kind: EntryKind::Unknown,
                    record: None,
                }),
                // One file the process cannot read fails no listing.
                Err(e) => items.push(InventoryEntry {
                    name,
                    kind,
                    record: Some(RecordHead {
                        len: 0,
                        header: Err(RecordProblem::Unreadable(e.to_string())),
                        tag: None,
                    }),
                }),
            }
        }
        Ok(Page { items, next })
    }
}

/// Whether a listing error means the directory is no longer there to list.
fn gone(e: &io::Error) -> bool {
    not_followed(e).is_some()
        || matches!(
            e.kind(),
            io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
        )
}

/// Whether the leaf at `rel` comes after `cursor` in the walk's order.
fn after(rel: &[String], cursor: &[String]) -> bool {
    cursor.is_empty() || rel > cursor
}

/// Whether the directory at `dir` may hold leaves after `cursor`: it does
/// not sort before the cursor's directory at its depth.
fn may_hold(dir: &[&String], cursor: &[String]) -> bool {
    let depth = dir.len().min(cursor.len());
    let dir: Vec<&str> = dir.iter().map(|s| s.as_str()).collect();
    let cut: Vec<&str> = cursor[..depth].iter().map(String::as_str).collect();
    dir[..depth] >= cut[..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_say_what_an_entry_is() {
        let id = PasteId::parse("AbCd1234").unwrap();
        let hex: String = "AbCd1234".bytes().map(|b| format!("{b:02x}")).collect();
        assert_eq!(kind_of(&hex), FsEntryKind::Paste(id.clone()));
        assert_eq!(kind_of(&format!("r{hex}")), FsEntryKind::ReviewBlob(id));
        assert_eq!(
            kind_of(&format!(".tmp-{hex}-1700000000000-00000000000000ff")),
            FsEntryKind::Temporary(Some(1_700_000_000_000))
        );
        assert_eq!(kind_of(".tmp-garbage"), FsEntryKind::Temporary(None));
        for odd in ["", "abc", "ABCD", "zz", "2f2e2e2f", "7A7A7A7A7A7A7A7A"] {
            assert_eq!(kind_of(odd), FsEntryKind::Unknown, "{odd}");
        }
    }
}
