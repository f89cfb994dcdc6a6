//! The store's directories walked and changed without following a symbolic
//! link.
//!
//! Below its root the store writes directories (namespaces, shards, the
//! quarantine) and regular files, nothing else. A symbolic link there was
//! put by someone else, and what it points to — outside the paste
//! directory or inside it — is not the store's: the sweep, a purge,
//! `planshare-server doctor` and `backup` must not read, move or delete
//! anything through it. Checking a path first (`symlink_metadata`) and then
//! using it leaves a window in which a directory can be swapped for a link,
//! so on Unix every directory here is opened with `O_DIRECTORY |
//! O_NOFOLLOW` and held open, and its entries are named relative to it
//! (`openat` with `O_NOFOLLOW`, `fstatat` with `AT_SYMLINK_NOFOLLOW`,
//! `renameat`, `unlinkat`, `linkat` without `AT_SYMLINK_FOLLOW`): no step
//! resolves a link below the root. The root itself is opened as configured
//! (a link the operator made the root is followed, as the server follows
//! it).
//!
//! What is left: an entry checked as a regular file and then swapped for a
//! link before it is unlinked loses the link, never the link's target.
//!
//! Elsewhere than Unix the same walk checks each entry's type as listed
//! (which does not follow a link either) before using its path, with the
//! window described above.

use std::ffi::{OsStr, OsString};
#[cfg(not(unix))]
use std::fs;
use std::fs::File;
use std::io;
#[cfg(unix)]
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::path::{Path, PathBuf};

#[cfg(unix)]
use rustix::fs::{AtFlags, CWD, Dir, FileType, Mode, OFlags};
#[cfg(unix)]
use rustix::io::Errno;

use super::noatime::NoAtime;

/// What a directory entry is, as listed (a link is not followed to say).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryType {
    /// A directory.
    Dir,
    /// A regular file.
    File,
    /// A symbolic link.
    Symlink,
    /// Anything else (a FIFO, a socket, a device).
    Other,
}

/// The error of an operation that met a symbolic link where it expected a
/// directory or a regular file, and did not follow it. Wrapped in an
/// [`io::Error`]; [`not_followed`] finds it.
#[derive(Debug)]
pub struct NotFollowed {
    /// The link.
    pub path: PathBuf,
}

impl std::fmt::Display for NotFollowed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} is a symbolic link: not followed",
            self.path.display()
        )
    }
}

impl std::error::Error for NotFollowed {}

/// The link an error met, if it is a [`NotFollowed`].
pub fn not_followed(error: &io::Error) -> Option<&Path> {
    error
        .get_ref()
        .and_then(|e| e.downcast_ref::<NotFollowed>())
        .map(|n| n.path.as_path())
}

fn refused(path: PathBuf) -> io::Error {
    io::Error::other(NotFollowed { path })
}

/// An entry's type, inode and times, from the entry itself (not from what
/// a link points to).
#[derive(Clone, Copy, Debug)]
#[cfg_attr(not(unix), allow(dead_code))]
pub(crate) struct EntryStat {
    pub(crate) kind: EntryType,
    /// Its inode (0 where the platform has none to give).
    pub(crate) ino: u64,
    /// Its modification time, Unix ms (a paste file's expiry).
    pub(crate) modified_ms: u64,
    /// Its inode change time, Unix ms.
    pub(crate) changed_ms: u64,
}

/// A directory of the store, opened without following a link (see the
/// module's documentation), with its path for messages and locks.
#[derive(Debug)]
pub(crate) struct OpenDir {
    #[cfg(unix)]
    fd: std::os::fd::OwnedFd,
    path: PathBuf,
    /// Its names below the root (empty for the root itself).
    rel: Vec<OsString>,
}

#[cfg(unix)]
const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

#[cfg(unix)]
fn entry_type(t: FileType) -> Option<EntryType> {
    match t {
        FileType::Directory => Some(EntryType::Dir),
        FileType::RegularFile => Some(EntryType::File),
        FileType::Symlink => Some(EntryType::Symlink),
        FileType::Unknown => None,
        _ => Some(EntryType::Other),
    }
}

/// `stat`'s fields as this crate uses them. Their integer types differ
/// from one target to the next (`c_ulong` here, `u64` there), hence the
/// conversions that are no-ops on some.
#[cfg(unix)]
#[allow(clippy::useless_conversion, clippy::unnecessary_fallible_conversions)]
fn entry_stat(st: &rustix::fs::Stat) -> EntryStat {
    let ms = |secs, nsecs| {
        let secs = u64::try_from(secs).unwrap_or(0);
        let nsecs = u64::try_from(nsecs).unwrap_or(0);
        secs.saturating_mul(1000).saturating_add(nsecs / 1_000_000)
    };
    EntryStat {
        kind: entry_type(FileType::from_raw_mode(st.st_mode.into())).unwrap_or(EntryType::Other),
        ino: u64::try_from(st.st_ino).unwrap_or(0),
        modified_ms: ms(st.st_mtime, st.st_mtime_nsec),
        changed_ms: ms(st.st_ctime, st.st_ctime_nsec),
    }
}

#[cfg(unix)]
impl OpenDir {
    /// Opens the root at `path` (following a link there: it is the
    /// operator's configuration).
    pub(crate) fn root(path: &Path) -> io::Result<OpenDir> {
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        Ok(OpenDir {
            fd: rustix::fs::openat(CWD, path, flags, Mode::empty())?,
            path: path.to_path_buf(),
            rel: Vec::new(),
        })
    }

    /// Opens the directory `name` of this one; a link there is refused
    /// ([`NotFollowed`]), as is anything that is not a directory
    /// (`NotADirectory`).
    pub(crate) fn subdir(&self, name: &OsStr) -> io::Result<OpenDir> {
        match rustix::fs::openat(&self.fd, name, DIR_FLAGS, Mode::empty()) {
            Ok(fd) => Ok(self.child(fd, name)),
            Err(e) => Err(self.refusal(name, e)),
        }
    }

    /// [`subdir`](Self::subdir), creating it first if it is missing
    /// (and making its new entry durable).
    pub(crate) fn subdir_or_create(&self, name: &OsStr) -> io::Result<OpenDir> {
        match rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(0o777)) {
            Ok(()) => self.sync()?,
            Err(Errno::EXIST) => {}
            Err(e) => return Err(e.into()),
        }
        self.subdir(name)
    }

    fn child(&self, fd: std::os::fd::OwnedFd, name: &OsStr) -> OpenDir {
        let mut rel = self.rel.clone();
        rel.push(name.to_owned());
        OpenDir {
            fd,
            path: self.path.join(name),
            rel,
        }
    }

    /// The error for `name` after `error`: [`NotFollowed`] when `name` is
    /// a link (`O_NOFOLLOW` says `ELOOP` on Linux, other errors elsewhere:
    /// asking the entry itself is what they agree on).
    fn refusal(&self, name: &OsStr, error: Errno) -> io::Error {
        match self.stat(name) {
            Ok(st) if st.kind == EntryType::Symlink => refused(self.path.join(name)),
            _ => error.into(),
        }
    }

    /// The entries, `.` and `..` left out, each with its type as listed
    /// (asked of the entry itself, never of a link's target, where the
    /// filesystem does not list types).
    pub(crate) fn entries(&self) -> io::Result<Vec<(OsString, EntryType)>> {
        let mut out = Vec::new();
        for entry in Dir::read_from(&self.fd)? {
            let entry = entry?;
            let bytes = entry.file_name().to_bytes();
            if bytes == b"." || bytes == b".." {
                continue;
            }
            let name = OsStr::from_bytes(bytes).to_owned();
            let kind = match entry_type(entry.file_type()) {
                Some(kind) => kind,
                None => match self.stat(&name) {
                    Ok(st) => st.kind,
                    // Gone since it was listed.
                    Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                    Err(e) => return Err(e),
                },
            };
            out.push((name, kind));
        }
        Ok(out)
    }

    /// The entry `name` itself (a link's own, not its target's).
    pub(crate) fn stat(&self, name: &OsStr) -> io::Result<EntryStat> {
        let st = rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW)?;
        Ok(entry_stat(&st))
    }

    /// Opens the regular file `name` for reading — without updating its
    /// access time where allowed ([`NoAtime`]). A link is refused
    /// ([`NotFollowed`]); so is anything else that is not a regular file
    /// (opened without blocking, so a FIFO put there does not hang the
    /// walk).
    pub(crate) fn open_file(&self, name: &OsStr, noatime: &NoAtime) -> io::Result<File> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let open = |flags| rustix::fs::openat(&self.fd, name, flags, Mode::empty());
        #[cfg(target_os = "linux")]
        let opened = if noatime.refused() {
            open(flags)
        } else {
            match open(flags | OFlags::NOATIME) {
                Err(Errno::PERM) => {
                    noatime.refuse();
                    open(flags)
                }
                other => other,
            }
        };
        #[cfg(not(target_os = "linux"))]
        let opened = {
            let _ = noatime;
            open(flags)
        };
        let file = File::from(opened.map_err(|e| self.refusal(name, e))?);
        if !file.metadata()?.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a regular file", self.path.join(name).display()),
            ));
        }
        Ok(file)
    }

    /// Removes the entry `name` (a link itself, never its target).
    pub(crate) fn unlink(&self, name: &OsStr) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(&self.fd, name, AtFlags::empty())?)
    }

    /// Removes the empty directory `name` (a link is not one).
    pub(crate) fn remove_dir(&self, name: &OsStr) -> io::Result<()> {
        Ok(rustix::fs::unlinkat(&self.fd, name, AtFlags::REMOVEDIR)?)
    }

    /// Renames the entry `name` to `to_name` in `to`, never replacing
    /// an entry there (where the filesystem can promise that; the
    /// callers pick names that are free).
    pub(crate) fn rename(&self, name: &OsStr, to: &OpenDir, to_name: &OsStr) -> io::Result<()> {
        #[cfg(target_os = "linux")]
        match rustix::fs::renameat_with(
            &self.fd,
            name,
            &to.fd,
            to_name,
            rustix::fs::RenameFlags::NOREPLACE,
        ) {
            Err(Errno::INVAL | Errno::NOSYS) => {}
            other => return Ok(other?),
        }
        Ok(rustix::fs::renameat(&self.fd, name, &to.fd, to_name)?)
    }

    /// A second name `to_name` in `to` for the entry `name` (a link is
    /// linked itself, not its target); fails if `to_name` is taken.
    pub(crate) fn link(&self, name: &OsStr, to: &OpenDir, to_name: &OsStr) -> io::Result<()> {
        Ok(rustix::fs::linkat(
            &self.fd,
            name,
            &to.fd,
            to_name,
            AtFlags::empty(),
        )?)
    }

    /// What the link `name` says (the link is read, not followed).
    pub(crate) fn read_link(&self, name: &OsStr) -> io::Result<PathBuf> {
        let target = rustix::fs::readlinkat(&self.fd, name, Vec::new())?;
        Ok(PathBuf::from(OsString::from_vec(target.into_bytes())))
    }

    /// Makes this directory's entries durable.
    pub(crate) fn sync(&self) -> io::Result<()> {
        Ok(rustix::fs::fsync(&self.fd)?)
    }
}

// Elsewhere than Unix: the same operations by path, each entry's type
// checked (without following a link) before it is used.

#[cfg(not(unix))]
fn entry_type(t: fs::FileType) -> EntryType {
    if t.is_symlink() {
        EntryType::Symlink
    } else if t.is_dir() {
        EntryType::Dir
    } else if t.is_file() {
        EntryType::File
    } else {
        EntryType::Other
    }
}

#[cfg(not(unix))]
impl OpenDir {
    pub(crate) fn root(path: &Path) -> io::Result<OpenDir> {
        if !fs::metadata(path)?.is_dir() {
            return Err(io::ErrorKind::NotADirectory.into());
        }
        Ok(OpenDir {
            path: path.to_path_buf(),
            rel: Vec::new(),
        })
    }

    pub(crate) fn subdir(&self, name: &OsStr) -> io::Result<OpenDir> {
        let path = self.path.join(name);
        match entry_type(fs::symlink_metadata(&path)?.file_type()) {
            EntryType::Dir => {}
            EntryType::Symlink => return Err(refused(path)),
            _ => return Err(io::ErrorKind::NotADirectory.into()),
        }
        let mut rel = self.rel.clone();
        rel.push(name.to_owned());
        Ok(OpenDir { path, rel })
    }

    pub(crate) fn entries(&self) -> io::Result<Vec<(OsString, EntryType)>> {
        let mut out = Vec::new();
        for entry in fs::read_dir(&self.path)? {
            let entry = entry?;
            out.push((entry.file_name(), entry_type(entry.file_type()?)));
        }
        Ok(out)
    }

    pub(crate) fn stat(&self, name: &OsStr) -> io::Result<EntryStat> {
        let meta = fs::symlink_metadata(self.path.join(name))?;
        let ms = |t: io::Result<std::time::SystemTime>| {
            t.ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
                .unwrap_or(0)
        };
        Ok(EntryStat {
            kind: entry_type(meta.file_type()),
            ino: 0,
            modified_ms: ms(meta.modified()),
            // No inode change time here: the modification time stands in.
            changed_ms: ms(meta.modified()),
        })
    }

    pub(crate) fn open_file(&self, name: &OsStr, noatime: &NoAtime) -> io::Result<File> {
        let path = self.path.join(name);
        match self.stat(name)?.kind {
            EntryType::File => {}
            EntryType::Symlink => return Err(refused(path)),
            _ => return Err(io::ErrorKind::InvalidInput.into()),
        }
        noatime.open(&path)
    }

    pub(crate) fn unlink(&self, name: &OsStr) -> io::Result<()> {
        fs::remove_file(self.path.join(name))
    }

    pub(crate) fn remove_dir(&self, name: &OsStr) -> io::Result<()> {
        fs::remove_dir(self.path.join(name))
    }

    pub(crate) fn sync(&self) -> io::Result<()> {
        File::open(&self.path)?.sync_all()
    }
}

impl OpenDir {
    /// Its path (for messages and the store's per-key locks).
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Its names below the root, outermost first.
    #[cfg_attr(not(unix), allow(dead_code))]
    pub(crate) fn rel(&self) -> &[OsString] {
        &self.rel
    }
}

/// Reads the whole regular file `name` of `dir` (refusing a link).
pub(crate) fn read_all(dir: &OpenDir, name: &OsStr, noatime: &NoAtime) -> io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    let mut file: File = dir.open_file(name, noatime)?;
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}
