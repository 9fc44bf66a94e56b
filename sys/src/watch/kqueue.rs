//! The macOS backend of [`super::Queue`]: kqueue through `notify`'s
//! kqueue watcher, emulating inotify's shape. Each watched folder gets a
//! number; the folder and the files directly in it are watched
//! (kqueue watches single files, and a folder's own event names no
//! entry), files that appear later are watched by `notify` itself. Each
//! change is mapped back to (folder's number, entry name) and queued; a
//! byte written to a pipe makes [`Queue`]'s descriptor readable. kqueue
//! says nothing of a file being finished, so no change is
//! [`Change::finished`] (a burst then waits out the whole debounce).
//! Compiled for macOS here; never run here (docs/platforms.md).

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use notify::event::{CreateKind, EventKind, ModifyKind};
use notify::{KqueueWatcher, RecursiveMode, Watcher};

use super::WatchError;

/// What a watch reports: kqueue has one set of events for every watch.
#[derive(Clone, Copy)]
pub struct Mask(());

impl Mask {
    pub const FOLDER: Mask = Mask(());
    pub const WRITES: Mask = Mask(());
}

const OVERFLOW: u8 = 1;
const IGNORED: u8 = 2;
const IS_DIR: u8 = 4;
const APPEARED: u8 = 8;

/// One change.
#[derive(Clone, Copy)]
pub struct Change(u8);

impl Change {
    pub fn overflow(self) -> bool {
        self.0 & OVERFLOW != 0
    }
    pub fn ignored(self) -> bool {
        self.0 & IGNORED != 0
    }
    pub fn is_dir(self) -> bool {
        self.0 & IS_DIR != 0
    }
    pub fn appeared(self) -> bool {
        self.0 & APPEARED != 0
    }
    pub fn finished(self) -> bool {
        false
    }
}

/// The watched folders and the changes not read yet.
#[derive(Default)]
struct Shared {
    folders: HashMap<PathBuf, i32>,
    next: i32,
    pending: Vec<(i32, Change, OsString)>,
}

/// A kqueue watcher, its folders and its wake-up pipe.
pub struct Queue {
    watcher: Mutex<KqueueWatcher>,
    shared: Arc<Mutex<Shared>>,
    wake_rx: OwnedFd,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Queue {
    pub fn new() -> std::io::Result<Queue> {
        let (wake_rx, wake_tx) = super::super::pipe::cloexec_nonblocking()?;
        let shared = Arc::new(Mutex::new(Shared::default()));
        let seen = Arc::clone(&shared);
        let wake = std::fs::File::from(wake_tx);
        let handler = move |event: notify::Result<notify::Event>| {
            queue_event(&mut lock(&seen), event);
            let _ = std::io::Write::write(&mut &wake, &[1]);
        };
        let watcher = KqueueWatcher::new(handler, notify::Config::default())
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(Queue {
            watcher: Mutex::new(watcher),
            shared,
            wake_rx,
        })
    }

    /// Watches the folder `path` and the files in it; its number.
    pub fn add_watch(&self, path: &Path, _mask: Mask) -> Result<i32, WatchError> {
        if !path.is_dir() {
            return Err(WatchError::Folder(std::io::Error::other("not a folder")));
        }
        let mut watcher = lock(&self.watcher);
        watcher
            .watch(path, RecursiveMode::NonRecursive)
            .map_err(to_watch_error)?;
        if let Ok(entries) = std::fs::read_dir(path) {
            for entry in entries.flatten() {
                if entry.file_type().is_ok_and(|t| t.is_file()) {
                    // A file gone already is no error.
                    let _ = watcher.watch(&entry.path(), RecursiveMode::NonRecursive);
                }
            }
        }
        let mut shared = lock(&self.shared);
        if let Some(&wd) = shared.folders.get(path) {
            return Ok(wd);
        }
        shared.next += 1;
        let wd = shared.next;
        shared.folders.insert(path.to_path_buf(), wd);
        Ok(wd)
    }

    /// Hands every change queued now to `each` (never blocks).
    pub fn read(&self, mut each: impl FnMut(i32, Change, &OsStr)) {
        let mut drain = [0u8; 256];
        while rustix::io::read(&self.wake_rx, &mut drain).is_ok_and(|n| n > 0) {}
        let pending = std::mem::take(&mut lock(&self.shared).pending);
        for (wd, change, name) in pending {
            each(wd, change, &name);
        }
    }
}

impl AsFd for Queue {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.wake_rx.as_fd()
    }
}

fn to_watch_error(e: notify::Error) -> WatchError {
    match e.kind {
        notify::ErrorKind::Io(io) if io.raw_os_error() == Some(libc::EMFILE) => {
            WatchError::Exhausted(io)
        }
        notify::ErrorKind::MaxFilesWatch => {
            WatchError::Exhausted(std::io::Error::other("too many files watched"))
        }
        notify::ErrorKind::Io(io) => WatchError::Folder(io),
        other => WatchError::Folder(std::io::Error::other(format!("{other:?}"))),
    }
}

/// Maps one of `notify`'s events onto the watched folders.
fn queue_event(shared: &mut Shared, event: notify::Result<notify::Event>) {
    let Ok(event) = event else {
        shared.pending.push((0, Change(OVERFLOW), OsString::new()));
        return;
    };
    let bits = match event.kind {
        EventKind::Create(CreateKind::Folder) => APPEARED | IS_DIR,
        EventKind::Create(_) | EventKind::Modify(ModifyKind::Name(_)) => APPEARED,
        _ => 0,
    };
    let removed = matches!(event.kind, EventKind::Remove(_));
    for path in event.paths {
        let bits = if path.is_dir() { bits | IS_DIR } else { bits };
        if let Some(&wd) = shared.folders.get(&path) {
            shared.pending.push((wd, Change(bits), OsString::new()));
            if removed {
                shared.folders.remove(&path);
                shared.pending.push((wd, Change(IGNORED), OsString::new()));
            }
            continue;
        }
        let (Some(parent), Some(name)) = (path.parent(), path.file_name()) else {
            continue;
        };
        if let Some(&wd) = shared.folders.get(parent) {
            shared.pending.push((wd, Change(bits), name.to_os_string()));
        }
    }
}
