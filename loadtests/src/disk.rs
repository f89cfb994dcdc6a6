//! Bytes on disk of the fs store: the files under a planshare data directory,
//! without the SQLite catalog and the store's temporary files.
//!
//! The fs store keeps one file per paste under `<data dir>/pastes/`; the
//! catalog (`catalog.sqlite` and its `-wal`, `-shm` and `-journal` companions)
//! lies next to it. Everything else under the data directory is counted, so a
//! change of the store's layout (another directory, an index file) is still
//! measured, not silently left out.

use anyhow::Context as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::Path;

/// Sizes of the files counted under a directory.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DiskUsage {
    /// Regular files counted.
    pub files: u64,
    /// Sum of their lengths (`st_size`).
    pub apparent_bytes: u64,
    /// Sum of the space allocated to them (`st_blocks × 512`).
    pub allocated_bytes: u64,
}

/// Whether a file of this name is left out: the SQLite catalog and its
/// companions, and the store's temporary files (`.tmp-…`, a create in flight
/// or the readiness probe's).
pub fn excluded(name: &str) -> bool {
    name.starts_with("catalog.sqlite") || name.starts_with(".tmp-")
}

/// Sums the regular files under `dir` (recursively; symbolic links are not
/// followed), except those [`excluded`] by name.
pub fn usage(dir: &Path) -> anyhow::Result<DiskUsage> {
    let mut total = DiskUsage::default();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries =
            std::fs::read_dir(&dir).with_context(|| format!("listing {}", dir.display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("listing {}", dir.display()))?;
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path)
                .with_context(|| format!("reading the metadata of {}", path.display()))?;
            if meta.is_dir() {
                pending.push(path);
            } else if meta.is_file() && !excluded(&entry.file_name().to_string_lossy()) {
                total.files += 1;
                total.apparent_bytes += meta.size();
                total.allocated_bytes += meta.blocks() * 512;
            }
        }
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_paste_files_but_not_the_catalog() -> anyhow::Result<()> {
        let dir = tempfile::tempdir()?;
        let shard = dir.path().join("pastes").join("default").join("ab");
        std::fs::create_dir_all(&shard)?;
        std::fs::write(shard.join("ab01"), vec![b'x'; 1000])?;
        std::fs::write(shard.join("ab02"), vec![b'y'; 24])?;
        std::fs::write(shard.join(".tmp-ab03-1-00"), vec![b'z'; 99])?;
        for name in ["catalog.sqlite", "catalog.sqlite-wal", "catalog.sqlite-shm"] {
            std::fs::write(dir.path().join(name), vec![0u8; 4096])?;
        }
        let usage = usage(dir.path())?;
        assert_eq!(usage.files, 2);
        assert_eq!(usage.apparent_bytes, 1024);
        // Two files of at most one block each (0 on a file system that packs
        // tiny files into the inode).
        assert!(usage.allocated_bytes <= 2 * 64 * 1024, "{usage:?}");
        assert!(excluded("catalog.sqlite-journal"));
        assert!(!excluded("pastes"));
        Ok(())
    }
}
