//! The Linux backend of [`super::Queue`]: an inotify instance (through
//! rustix, no `unsafe`), close-on-exec and non-blocking.

use std::ffi::OsStr;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::inotify::{self, ReadFlags, WatchFlags};
use rustix::io::Errno;

use super::WatchError;

/// What a watch reports.
#[derive(Clone, Copy)]
pub struct Mask(WatchFlags);

impl Mask {
    /// Changes to a folder's entries and to the files in it, and the
    /// folder's own removal (as `notify`'s inotify backend watched).
    pub const FOLDER: Mask = Mask(
        WatchFlags::ATTRIB
            .union(WatchFlags::CREATE)
            .union(WatchFlags::DELETE)
            .union(WatchFlags::CLOSE_WRITE)
            .union(WatchFlags::MODIFY)
            .union(WatchFlags::MOVED_FROM)
            .union(WatchFlags::MOVED_TO)
            .union(WatchFlags::DELETE_SELF)
            .union(WatchFlags::MOVE_SELF)
            .union(WatchFlags::ONLYDIR),
    );
    /// Writes to the folder's files and files created or moved in.
    pub const WRITES: Mask = Mask(
        WatchFlags::MODIFY
            .union(WatchFlags::CLOSE_WRITE)
            .union(WatchFlags::MOVED_TO)
            .union(WatchFlags::CREATE),
    );
}

/// One change, as the kernel reported it.
#[derive(Clone, Copy)]
pub struct Change(ReadFlags);

impl Change {
    /// The kernel dropped changes: only a re-scan can be trusted.
    pub fn overflow(self) -> bool {
        self.0.contains(ReadFlags::QUEUE_OVERFLOW)
    }
    /// The watch is gone (its folder removed or unmounted).
    pub fn ignored(self) -> bool {
        self.0.contains(ReadFlags::IGNORED)
    }
    /// The entry is a folder.
    pub fn is_dir(self) -> bool {
        self.0.contains(ReadFlags::ISDIR)
    }
    /// The entry was created, or moved in.
    pub fn appeared(self) -> bool {
        self.0.intersects(ReadFlags::CREATE | ReadFlags::MOVED_TO)
    }
    /// A file was finished: closed after writing, or moved into place.
    pub fn finished(self) -> bool {
        self.0
            .intersects(ReadFlags::CLOSE_WRITE | ReadFlags::MOVED_TO)
    }
}

/// An inotify instance.
pub struct Queue {
    fd: OwnedFd,
}

impl Queue {
    pub fn new() -> std::io::Result<Queue> {
        let fd = inotify::init(inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK)?;
        Ok(Queue { fd })
    }

    /// Watches the folder `path`; its watch descriptor (the same folder
    /// watched again keeps its descriptor).
    pub fn add_watch(&self, path: &Path, mask: Mask) -> Result<i32, WatchError> {
        inotify::add_watch(&self.fd, path, mask.0).map_err(|e| {
            if e == Errno::NOSPC || e == Errno::NOMEM {
                WatchError::Exhausted(e.into())
            } else {
                WatchError::Folder(e.into())
            }
        })
    }

    /// Hands every change queued now to `each` (never blocks).
    pub fn read(&self, mut each: impl FnMut(i32, Change, &OsStr)) {
        let mut buf = [MaybeUninit::<u8>::uninit(); 16 * 1024];
        let mut reader = inotify::Reader::new(&self.fd, &mut buf);
        loop {
            let event = match reader.next() {
                Ok(event) => event,
                Err(Errno::INTR) => continue,
                // `AGAIN`: nothing more queued.
                Err(_) => return,
            };
            let name = event
                .file_name()
                .map(|name| OsStr::from_bytes(name.to_bytes()))
                .unwrap_or_default();
            each(event.wd(), Change(event.events()), name);
        }
    }
}

impl AsFd for Queue {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
