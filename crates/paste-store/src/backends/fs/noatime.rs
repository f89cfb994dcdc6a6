//! Reading the store's files without updating their access times (see
//! [`NoAtime`]).

use std::fs::File;
#[cfg(target_os = "linux")]
use std::fs::OpenOptions;
use std::io;
use std::path::Path;

/// Reading paste files without updating their access times.
///
/// A paste file's mtime is its expiry, in the future, so under `relatime`
/// (the usual mount default: the atime is updated while it is older than
/// the mtime) every read would update the atime — dirtying the inode, which
/// the kernel then writes back to disk: a disk write per read. `O_NOATIME`
/// is allowed only to the file's owner (the server, which wrote it) or a
/// process with `CAP_FOWNER`. Where it is refused (`EPERM`: files written
/// by another user), the file is opened as usual, and from then on this
/// store does not ask again.
#[derive(Debug, Default)]
pub(super) struct NoAtime {
    refused: std::sync::atomic::AtomicBool,
}

impl NoAtime {
    /// Opens `path` for reading, with `O_NOATIME` where allowed.
    #[cfg(target_os = "linux")]
    pub(super) fn open(&self, path: &Path) -> io::Result<File> {
        use std::os::unix::fs::OpenOptionsExt as _;

        if !self.refused() {
            let flag = i32::try_from(rustix::fs::OFlags::NOATIME.bits()).unwrap_or(0);
            match OpenOptions::new().read(true).custom_flags(flag).open(path) {
                Err(e) if e.raw_os_error() == Some(rustix::io::Errno::PERM.raw_os_error()) => {
                    self.refuse();
                }
                other => return other,
            }
        }
        File::open(path)
    }

    #[cfg(not(target_os = "linux"))]
    pub(super) fn open(&self, path: &Path) -> io::Result<File> {
        File::open(path)
    }

    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(super) fn refused(&self) -> bool {
        self.refused.load(std::sync::atomic::Ordering::Relaxed)
    }

    #[cfg_attr(not(target_os = "linux"), allow(dead_code))]
    pub(super) fn refuse(&self) {
        if !self
            .refused
            .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            tracing::info!(
                "the paste files are not owned by this process: reads update their access times"
            );
        }
    }
}
