//! The inotify instance of the guard's watcher and of a host's journal
//! (a [`Queue`] of the platform layer: inotify on Linux), and its table: each watch descriptor maps to the root it belongs to and
//! its folder relative to that root (see the parent module's doc).

use std::collections::HashMap;
use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::io_error;
use crate::platform::watch::{Change, Mask, Queue, WatchError};
use crate::GuardError;

/// Which subfolders of a recursive root are left unwatched (relative to
/// the root).
pub(crate) type SkipFolder = Box<dyn Fn(&Path) -> bool + Send>;

/// A watched root.
struct Root {
    path: PathBuf,
    /// Whether its subfolders are watched.
    recursive: bool,
    skip: Option<SkipFolder>,
}

/// The inotify instance and its table.
pub(crate) struct Inotify {
    queue: Queue,
    table: Table,
    /// Whether the last event read finished a file: see [`Inotify::settled`].
    settled: bool,
}

/// What each watch descriptor stands for.
#[derive(Default)]
struct Table {
    roots: Vec<Root>,
    /// Every watch, sorted by descriptor: the kernel hands them out in
    /// increasing order, so adding one appends (12 bytes a folder, where a
    /// hash map of the same took 34 at 64 checkouts of 1,000 folders).
    /// A removed watch stays as a tombstone until [`Table::compact`].
    watches: Vec<Watch>,
    /// Removed watches still in `watches`.
    tombstones: usize,
    /// Every watched folder's relative path, one after another (one
    /// allocation, not one a folder; rebuilt when removed folders leave
    /// more than half of it unused).
    names: Vec<u8>,
    live_bytes: usize,
    /// Per device: whether its folders' link counts count their subfolders
    /// (see [`Table::may_hold_folders`]).
    exact_link_counts: HashMap<u64, bool>,
}

/// One watch descriptor: the root it belongs to and its folder relative to
/// that root (a range of [`Table::names`]).
#[derive(Clone, Copy)]
struct Watch {
    wd: i32,
    /// Index into [`Table::roots`]; [`REMOVED`] once the watch is gone.
    root: u16,
    len: u16,
    start: u32,
}

/// [`Watch::root`] of a removed watch.
const REMOVED: u16 = u16::MAX;

impl Watch {
    fn range(&self) -> std::ops::Range<usize> {
        self.start as usize..self.start as usize + usize::from(self.len)
    }
}

/// One event, resolved to a path.
pub(crate) enum Seen {
    Path(PathBuf),
    /// The kernel dropped events: nothing can be trusted but a re-scan.
    Overflow,
}

impl Inotify {
    pub(crate) fn new() -> Result<Inotify, GuardError> {
        let queue = Queue::new().map_err(|e| io_error("starting inotify", e))?;
        Ok(Inotify {
            queue,
            table: Table::default(),
            settled: false,
        })
    }

    /// Watches `root` (and, when `recursive`, every folder below it).
    pub(crate) fn add_root(&mut self, root: &Path, recursive: bool) -> Result<(), GuardError> {
        self.add_root_skipping(root, recursive, None)
    }

    /// As [`Inotify::add_root`], leaving the subfolders `skip` names (and
    /// everything below them) unwatched, now and when they appear later.
    pub(crate) fn add_root_skipping(
        &mut self,
        root: &Path,
        recursive: bool,
        skip: Option<SkipFolder>,
    ) -> Result<(), GuardError> {
        let table = &mut self.table;
        let index = u16::try_from(table.roots.len())
            .ok()
            .filter(|&i| i != REMOVED)
            .ok_or_else(|| GuardError::Internal("too many watched roots".into()))?;
        table.roots.push(Root {
            path: root.to_path_buf(),
            recursive,
            skip,
        });
        match table.add_folder(&self.queue, index, Path::new(""))? {
            Ok(()) => Ok(()),
            Err(error) => Err(GuardError::Io {
                path: root.to_path_buf(),
                error,
            }),
        }
    }

    /// Gives back what the table reserved beyond what it holds: call once
    /// every root is added (a long-lived watcher keeps the table).
    pub(crate) fn shrink_to_fit(&mut self) {
        self.table.watches.shrink_to_fit();
        self.table.names.shrink_to_fit();
    }

    /// Reads every event queued now (never blocks) into `out`, watching
    /// folders that appeared under recursive roots.
    /// Whether the last event [`Inotify::read`] saw finished a file (closed
    /// after writing, or moved into place): a save or a tool's write is
    /// then complete, where after any other event more of the same burst
    /// is likely to follow.
    pub(crate) fn settled(&self) -> bool {
        self.settled
    }

    pub(crate) fn read(&mut self, out: &mut Vec<Seen>) {
        let (queue, table, settled) = (&self.queue, &mut self.table, &mut self.settled);
        queue.read(|wd, change, name| {
            *settled = !change.is_dir() && change.finished();
            table.one(queue, wd, change, name, out);
        });
    }

    /// The descriptor to poll: readable when changes are queued.
    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.queue.as_fd()
    }
}

impl Table {
    /// Watches the folder `rel` of root `index` and, for a recursive root,
    /// its subfolders. `Ok(Err(_))` when the folder itself could not be
    /// watched (gone already); running out of watches is an error.
    fn add_folder(
        &mut self,
        queue: &Queue,
        index: u16,
        rel: &Path,
    ) -> Result<std::io::Result<()>, GuardError> {
        let root = &self.roots[usize::from(index)];
        if !rel.as_os_str().is_empty() && root.skip.as_ref().is_some_and(|skip| skip(rel)) {
            return Ok(Err(std::io::ErrorKind::NotFound.into()));
        }
        let abs = if rel.as_os_str().is_empty() {
            root.path.clone()
        } else {
            root.path.join(rel)
        };
        let recursive = root.recursive;
        let wd = match queue.add_watch(&abs, Mask::FOLDER) {
            Ok(wd) => wd,
            Err(WatchError::Exhausted(e)) => {
                return Err(GuardError::Io {
                    path: abs,
                    error: std::io::Error::new(
                        e.kind(),
                        format!("{e} (raise fs.inotify.max_user_watches to watch more folders)"),
                    ),
                });
            }
            Err(WatchError::Folder(e)) => return Ok(Err(e)),
        };
        self.insert(wd, index, rel.as_os_str().as_bytes());
        if recursive && self.may_hold_folders(&abs) {
            if let Ok(entries) = std::fs::read_dir(&abs) {
                for entry in entries.flatten() {
                    if entry.file_type().is_ok_and(|t| t.is_dir()) {
                        // A subfolder gone already is no error.
                        let _gone = self.add_folder(queue, index, &rel.join(entry.file_name()))?;
                    }
                }
            }
        }
        Ok(Ok(()))
    }

    /// Whether the folder at `abs` may have subfolders. On a file system
    /// whose folders' link counts are exact (ext2/3/4, XFS, tmpfs), a
    /// folder with two links (its name and its own `.`) has none, and is
    /// not listed: a checkout's leaf folders hold nearly all of its files,
    /// so watching 64 checkouts of 100k files lists ~800 folders each
    /// instead of reading 6.4 million names. A subfolder created after the
    /// folder's watch was added is reported by that watch (and watched
    /// then); one created before the link count was read counts in it.
    /// Elsewhere (btrfs and overlayfs count no subfolders) every folder is
    /// listed.
    fn may_hold_folders(&mut self, abs: &Path) -> bool {
        use std::os::unix::fs::MetadataExt;
        let Ok(meta) = std::fs::symlink_metadata(abs) else {
            return true;
        };
        let exact = *self
            .exact_link_counts
            .entry(meta.dev())
            .or_insert_with(|| crate::platform::fs::exact_link_counts(abs));
        !(exact && meta.nlink() == 2)
    }

    fn one(&mut self, queue: &Queue, wd: i32, change: Change, name: &OsStr, out: &mut Vec<Seen>) {
        if change.overflow() {
            out.push(Seen::Overflow);
            return;
        }
        if change.ignored() {
            self.remove(wd);
            return;
        }
        let Some(watch) = self.find(wd).map(|i| self.watches[i]) else {
            return;
        };
        let index = watch.root;
        let rel = PathBuf::from(OsStr::from_bytes(&self.names[watch.range()]));
        let rel = if name.is_empty() { rel } else { rel.join(name) };
        let is_new_folder = change.is_dir() && change.appeared();
        if is_new_folder && self.roots[usize::from(index)].recursive {
            if let Err(e) = self.add_folder(queue, index, &rel) {
                tracing::warn!("conflict guard: {e}");
            }
        }
        out.push(Seen::Path(self.roots[usize::from(index)].path.join(rel)));
    }

    /// The index in `watches` of the live watch `wd`.
    fn find(&self, wd: i32) -> Option<usize> {
        self.watches
            .binary_search_by_key(&wd, |w| w.wd)
            .ok()
            .filter(|&i| self.watches[i].root != REMOVED)
    }

    /// Records the watch `wd` of the folder `rel` of root `index` (a watch
    /// added again for the same folder keeps its descriptor: replaced).
    fn insert(&mut self, wd: i32, index: u16, rel: &[u8]) {
        let start = self.names.len();
        self.names.extend_from_slice(rel);
        self.live_bytes += rel.len();
        // Paths are far shorter than 4 GiB in all, and a path than 64 KiB;
        // saturate rather than wrap.
        let watch = Watch {
            wd,
            root: index,
            len: u16::try_from(rel.len()).unwrap_or(u16::MAX),
            start: u32::try_from(start).unwrap_or(u32::MAX),
        };
        match self.watches.binary_search_by_key(&wd, |w| w.wd) {
            Ok(i) => {
                let old = std::mem::replace(&mut self.watches[i], watch);
                if old.root == REMOVED {
                    self.tombstones -= 1;
                } else {
                    self.live_bytes -= usize::from(old.len);
                }
            }
            // Nearly always the end (descriptors only wrap after 2^31).
            Err(i) => self.watches.insert(i, watch),
        }
    }

    /// Forgets the watch `wd` (the kernel removed it).
    fn remove(&mut self, wd: i32) {
        if let Some(i) = self.find(wd) {
            self.live_bytes -= usize::from(self.watches[i].len);
            self.watches[i].root = REMOVED;
            self.tombstones += 1;
            self.compact();
        }
    }

    /// Drops removed watches and their names once they are most of the
    /// table.
    fn compact(&mut self) {
        if self.tombstones >= 1024 && self.tombstones * 2 > self.watches.len() {
            self.watches.retain(|w| w.root != REMOVED);
            self.tombstones = 0;
        }
        if self.names.len() < 4096 || self.live_bytes * 2 > self.names.len() {
            return;
        }
        let mut names = Vec::with_capacity(self.live_bytes);
        for watch in self.watches.iter_mut().filter(|w| w.root != REMOVED) {
            let start = names.len();
            names.extend_from_slice(&self.names[watch.range()]);
            watch.start = u32::try_from(start).unwrap_or(u32::MAX);
        }
        self.names = names;
    }
}

#[cfg(test)]
mod table_tests {
    use super::{Table, REMOVED};

    fn table() -> Table {
        Table::default()
    }

    fn name(t: &Table, wd: i32) -> Option<(u16, String)> {
        let w = t.watches[t.find(wd)?];
        Some((
            w.root,
            String::from_utf8(t.names[w.range()].to_vec()).unwrap(),
        ))
    }

    #[test]
    fn watches_are_found_replaced_removed_and_compacted() {
        let mut t = table();
        for wd in 1..=3000 {
            t.insert(wd, (wd % 3) as u16, format!("src/m{wd:04}").as_bytes());
        }
        // Out of order (descriptors wrapped) and a folder watched again.
        t.insert(0, 7, b"first");
        t.insert(42, 9, b"again");
        assert_eq!(name(&t, 0), Some((7, "first".into())));
        assert_eq!(name(&t, 42), Some((9, "again".into())));
        assert_eq!(name(&t, 2999), Some((2, "src/m2999".into())));
        assert_eq!(name(&t, 3001), None);
        assert!(t.watches.windows(2).all(|w| w[0].wd < w[1].wd), "sorted");
        for wd in 1..=2000 {
            t.remove(wd);
        }
        assert_eq!(name(&t, 1500), None, "removed");
        t.remove(1500);
        assert_eq!(name(&t, 2001), Some((0, "src/m2001".into())));
        assert_eq!(name(&t, 0), Some((7, "first".into())));
        let live = t.watches.iter().filter(|w| w.root != REMOVED).count();
        assert_eq!(live, 1001);
        assert_eq!(t.watches.len(), live + t.tombstones);
        assert!(
            t.watches.len() < 3001 && t.tombstones < 1024,
            "compacted once most were removed"
        );
        assert_eq!(t.live_bytes, 1000 * 9 + 5);
        assert!(t.names.len() < 2 * t.live_bytes, "names rebuilt");
        // Added after the compaction: still in order.
        t.insert(5000, 1, b"late");
        assert_eq!(name(&t, 5000), Some((1, "late".into())));
        assert_eq!(name(&t, 2500), Some((1, "src/m2500".into())));
    }
}
