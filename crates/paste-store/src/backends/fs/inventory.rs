//! The fs store as the doctor sees it: its files listed in key order, a
//! record's head read without its payload, and the repairs that are safe
//! while a server (another process) serves the same directory.
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

use std::fs;
use std::io::{self, Read as _};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use super::{FsStore, TMP_PREFIX, random_u64, sync_dir};
use crate::{PasteId, PasteKey, RECORD_HEADER_LEN};

pub use super::QUARANTINE_DIR;

/// One directory entry of a shard.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FsEntry {
    /// Its path.
    pub path: PathBuf,
    /// What its name says it is.
    pub kind: FsEntryKind,
}

/// What a shard entry's name says it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FsEntryKind {
    /// A paste's record.
    Paste(PasteId),
    /// A review blob's record.
    ReviewBlob(PasteId),
    /// A put's temporary file, with the time it was created (from its name).
    Temporary(Option<u64>),
    /// A name the store never writes (or a directory).
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

impl FsStore {
    /// The root's entries, sorted, each with whether it is a directory
    /// (the quarantine directory left out).
    pub fn namespace_dirs(&self) -> io::Result<Vec<(String, bool)>> {
        let mut out = Vec::new();
        for entry in fs::read_dir(self.root())? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == QUARANTINE_DIR {
                continue;
            }
            out.push((name, entry.file_type()?.is_dir()));
        }
        out.sort();
        Ok(out)
    }

    /// The shard directories of namespace directory `namespace`, sorted.
    pub fn shard_dirs(&self, namespace: &str) -> io::Result<Vec<String>> {
        let mut out = Vec::new();
        for entry in fs::read_dir(self.root().join(namespace))? {
            out.push(entry?.file_name().to_string_lossy().into_owned());
        }
        out.sort();
        Ok(out)
    }

    /// The entries of one shard, sorted by name.
    pub fn shard_entries(&self, namespace: &str, shard: &str) -> io::Result<Vec<FsEntry>> {
        let dir = self.root().join(namespace).join(shard);
        let mut names = Vec::new();
        for entry in fs::read_dir(&dir)? {
            let entry = entry?;
            let is_file = entry.file_type()?.is_file();
            names.push((entry.file_name().to_string_lossy().into_owned(), is_file));
        }
        names.sort();
        Ok(names
            .into_iter()
            .map(|(name, is_file)| FsEntry {
                kind: if is_file {
                    kind_of(&name)
                } else {
                    FsEntryKind::Unknown
                },
                path: dir.join(name),
            })
            .collect())
    }

    /// Where the file of `key` is (whether or not it exists).
    pub fn path_of(&self, key: &PasteKey) -> PathBuf {
        let (dir, file) = self.inner.paths(key);
        dir.join(file)
    }

    /// The head and length of the file at `path`.
    pub fn read_head(&self, path: &Path) -> io::Result<FileHead> {
        let file = self.inner.noatime.open(path)?;
        let meta = file.metadata()?;
        let mut head = Vec::with_capacity(RECORD_HEADER_LEN);
        file.take(RECORD_HEADER_LEN as u64).read_to_end(&mut head)?;
        Ok(FileHead {
            head,
            len: meta.len(),
            ino: meta.ino(),
        })
    }

    /// The whole file at `path` (for checks that need the payload).
    pub fn read_whole(&self, path: &Path) -> io::Result<Vec<u8>> {
        let mut bytes = Vec::new();
        self.inner.noatime.open(path)?.read_to_end(&mut bytes)?;
        Ok(bytes)
    }

    /// Moves the file at `path` (inode `ino`, as checked) to the quarantine
    /// directory, keeping its namespace and shard in the path; returns
    /// where it went, or `None` when the file there is no longer the one
    /// checked (it is left in place).
    pub fn quarantine(&self, path: &Path, ino: u64) -> io::Result<Option<PathBuf>> {
        let relative = path
            .strip_prefix(self.root())
            .map_err(|_| io::Error::other("the file is not under the paste directory"))?;
        let mut dest = self.root().join(QUARANTINE_DIR).join(relative);
        let Some(dir) = dest.parent().map(Path::to_path_buf) else {
            return Err(io::Error::other("a quarantine path without a directory"));
        };
        fs::create_dir_all(&dir)?;
        if dest.exists() {
            let name = dest
                .file_name()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            dest = dir.join(format!(
                "{name}-{:016x}",
                random_u64().map_err(io::Error::other)?
            ));
        }
        if !move_if_same(path, &dest, ino)? {
            return Ok(None);
        }
        sync_dir(&dir)?;
        if let Some(parent) = path.parent() {
            sync_dir(parent)?;
        }
        Ok(Some(dest))
    }

    /// Removes the file at `path` if it is still inode `ino` (the one
    /// checked); `false` when another file took its place (left alone).
    pub fn remove_checked(&self, path: &Path, ino: u64) -> io::Result<bool> {
        let Some(dir) = path.parent() else {
            return Err(io::Error::other("a file without a directory"));
        };
        let aside = dir.join(format!(
            "{TMP_PREFIX}doctor-{}-{:016x}",
            crate::now_ms(),
            random_u64().map_err(io::Error::other)?
        ));
        if !move_if_same(path, &aside, ino)? {
            return Ok(false);
        }
        fs::remove_file(&aside)?;
        sync_dir(dir)?;
        Ok(true)
    }
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

/// Renames `from` to `to` and keeps it there only if it is inode `ino`;
/// otherwise it is put back (or, if something took its name meanwhile,
/// left at `to` with an error saying so).
fn move_if_same(from: &Path, to: &Path, ino: u64) -> io::Result<bool> {
    fs::rename(from, to)?;
    if fs::metadata(to)?.ino() == ino {
        return Ok(true);
    }
    match fs::hard_link(to, from) {
        Ok(()) => {
            fs::remove_file(to)?;
            Ok(false)
        }
        Err(e) => Err(io::Error::new(
            e.kind(),
            format!(
                "a file put at {} while it was being repaired could not be put back (it is at {}): {e}",
                from.display(),
                to.display()
            ),
        )),
    }
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
