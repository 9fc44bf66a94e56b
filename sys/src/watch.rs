//! Watching folders for changes, inotify-shaped on every system: a
//! [`Queue`] with a readable descriptor to poll, one watch per folder
//! (the changes to its entries and to the files in it), each change
//! reported as (watch, [`Change`], entry name). The guard's watcher and a
//! host's journal keep their table of watches over this
//! (`guard::watch::Inotify`), and `owt remote serve` watches the store's
//! folder with it.
//!
//! Linux: inotify, unchanged (its speed on large checkouts is in
//! bench/results.md). macOS: kqueue through the `notify` crate, emulating
//! the same shape (see `kqueue.rs`); compiled here, never run here.

#[cfg(target_os = "linux")]
mod inotify;
#[cfg(target_os = "linux")]
pub use inotify::{Change, Mask, Queue};

#[cfg(not(target_os = "linux"))]
mod kqueue;
#[cfg(not(target_os = "linux"))]
pub use kqueue::{Change, Mask, Queue};

/// Why a folder could not be watched.
#[derive(Debug)]
pub enum WatchError {
    /// The system's limit on watches (or its memory for them) is reached:
    /// watching more needs the limit raised.
    Exhausted(std::io::Error),
    /// This folder could not be watched (gone already, unreadable).
    Folder(std::io::Error),
}
