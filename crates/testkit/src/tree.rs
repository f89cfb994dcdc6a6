//! What a directory tree holds, for tests that must show nothing in it was
//! touched (outside directories a symbolic link points to, say).

use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// One entry: its path, kind (`"dir"`, `"file"` or `"link"`), bytes (a
/// link's: its target; a directory's: none) and modification time.
pub type TreeEntry = (PathBuf, &'static str, Vec<u8>, SystemTime);

/// Everything under `dir` as it stands, links not followed, sorted by
/// path. Two equal snapshots: nothing under `dir` was removed, moved,
/// rewritten or added.
pub fn snapshot(dir: &Path) -> Vec<TreeEntry> {
    let fail = |what: &str, path: &Path, e: std::io::Error| -> ! {
        panic!("{what} {}: {e}", path.display())
    };
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| fail("read_dir", &dir, e));
        for entry in entries.flatten() {
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path).unwrap_or_else(|e| fail("stat", &path, e));
            let modified = meta.modified().unwrap_or_else(|e| fail("mtime", &path, e));
            let (kind, bytes) = if meta.is_symlink() {
                let target =
                    std::fs::read_link(&path).unwrap_or_else(|e| fail("readlink", &path, e));
                ("link", target.as_os_str().as_bytes().to_vec())
            } else if meta.is_dir() {
                stack.push(path.clone());
                ("dir", Vec::new())
            } else {
                (
                    "file",
                    std::fs::read(&path).unwrap_or_else(|e| fail("read", &path, e)),
                )
            };
            out.push((path, kind, bytes, modified));
        }
    }
    out.sort();
    out
}
