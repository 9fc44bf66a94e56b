//! Files and folders opened relative to a folder without following a link
//! (`openat` with `O_NOFOLLOW`, `mkdirat`: what owt-core's `safe_fs` walks
//! a checkout with), a file opened without blocking on a FIFO, a blocking
//! advisory lock, and what a file system says of itself (read-only, free
//! space, whether it keeps exact folder link counts).

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;

const FOLDER: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::CLOEXEC);

/// Opens the folder `path` (following links: the root a walk starts from).
pub fn open_folder(path: &Path) -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(path, FOLDER, Mode::empty())?)
}

/// Opens the folder `name` in `dir`, refusing a link (see
/// [`is_link_refused`]; a link or a file where the folder should be fails
/// with `ENOTDIR`).
pub fn open_folder_in(dir: impl AsFd, name: &OsStr) -> io::Result<OwnedFd> {
    Ok(rustix::fs::openat(
        dir,
        name,
        FOLDER | OFlags::NOFOLLOW,
        Mode::empty(),
    )?)
}

/// Makes the folder `name` in `dir`, with permission bits `mode` (less the
/// umask); an `AlreadyExists` error when something has that name.
pub fn make_folder_in(dir: impl AsFd, name: &OsStr, mode: u32) -> io::Result<()> {
    Ok(rustix::fs::mkdirat(
        dir,
        name,
        Mode::from_raw_mode(mode as _),
    )?)
}

/// Opens the file `name` in `dir` for writing, creating it with permission
/// bits `mode` (less the umask) when missing, never through a link and
/// without blocking on a FIFO (one without a reader fails: see
/// [`is_fifo_without_reader`]). Nothing is truncated.
pub fn open_for_writing_in(dir: impl AsFd, name: &OsStr, mode: u32) -> io::Result<File> {
    let flags =
        OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(dir, name, flags, Mode::from_raw_mode(mode as _))?;
    Ok(File::from(fd))
}

/// Opens the file `name` in `dir` for reading, never through a link and
/// without blocking on a FIFO.
pub fn open_for_reading_in(dir: impl AsFd, name: &OsStr) -> io::Result<File> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    Ok(File::from(rustix::fs::openat(
        dir,
        name,
        flags,
        Mode::empty(),
    )?))
}

/// Opens `path` for reading (following links) without blocking on a
/// FIFO.
pub fn open_for_reading_nonblocking(path: &Path) -> io::Result<File> {
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
    Ok(File::from(rustix::fs::open(path, flags, Mode::empty())?))
}

/// Whether `e` is a no-follow open refusing a link (`ELOOP`).
pub fn is_link_refused(e: &io::Error) -> bool {
    e.raw_os_error() == Some(Errno::LOOP.raw_os_error())
}

/// Whether `e` says a folder was needed (`ENOTDIR`: with a no-follow open
/// of a folder, a link or a file has the name).
pub fn is_not_a_folder(e: &io::Error) -> bool {
    e.raw_os_error() == Some(Errno::NOTDIR.raw_os_error())
}

/// Whether `e` is a non-blocking open for writing of a FIFO that has no
/// reader (`ENXIO`).
pub fn is_fifo_without_reader(e: &io::Error) -> bool {
    e.raw_os_error() == Some(Errno::NXIO.raw_os_error())
}

/// Takes an exclusive advisory lock (`flock`) on `file`, waiting for it;
/// it is let go by [`unlock`] or when the file is closed.
pub fn lock_exclusive(file: &File) -> io::Result<()> {
    Ok(rustix::fs::flock(
        file,
        rustix::fs::FlockOperation::LockExclusive,
    )?)
}

/// Lets go of the advisory lock on `file`.
pub fn unlock(file: &File) -> io::Result<()> {
    Ok(rustix::fs::flock(file, rustix::fs::FlockOperation::Unlock)?)
}

/// What the file system holding a folder says of itself.
#[derive(Debug, Clone, Copy)]
pub struct Space {
    /// Mounted read-only.
    pub read_only: bool,
    /// Bytes free for an unprivileged user.
    pub free_bytes: u64,
}

/// The file system holding `path`: read-only, free space (`statvfs`).
pub fn space(path: &Path) -> io::Result<Space> {
    let st = rustix::fs::statvfs(path)?;
    Ok(Space {
        read_only: st.f_flag.contains(rustix::fs::StatVfsMountFlags::RDONLY),
        #[allow(clippy::useless_conversion, clippy::unnecessary_cast)]
        free_bytes: (st.f_bavail as u64).saturating_mul(st.f_frsize as u64),
    })
}

/// Whether this process's real user may write to `path` (`access(W_OK)`).
pub fn writable_by_me(path: &Path) -> bool {
    rustix::fs::access(path, rustix::fs::Access::WRITE_OK).is_ok()
}

/// Whether the file system holding `path` keeps a folder's link count at
/// 2 + its number of subfolders (ext2/3/4, XFS, tmpfs: what GNU find's
/// leaf optimization trusts), by the file system's magic number
/// (`statfs`); `false` for any other (or when `statfs` fails).
pub fn exact_link_counts(path: &Path) -> bool {
    const EXT: u64 = 0xEF53;
    const XFS: u64 = 0x5846_5342;
    const TMPFS: u64 = 0x0102_1994;
    rustix::fs::statfs(path).is_ok_and(|fs| {
        #[allow(clippy::useless_conversion, clippy::unnecessary_cast)]
        let kind = fs.f_type as u64;
        matches!(kind, EXT | XFS | TMPFS)
    })
}
