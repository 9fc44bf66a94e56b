//! The file-system watcher: inotify on every folder of every participant's
//! checkout and of the repository's git dir, debounced, feeding
//! [`GuardEngine`] with the paths that changed, per participant.
//!
//! One thread and one table: each watch descriptor maps to the root it
//! belongs to and its folder relative to that root (a few dozen bytes a
//! folder, where a general watcher keeps two absolute paths and two hash
//! entries; a long-lived `owt lsp` watches thousands of folders). A folder
//! created or moved in is watched at once and reported as changed, so the
//! engine looks at whatever landed in it before its watch existed; a lost
//! event queue (`IN_Q_OVERFLOW`) re-scans every participant.
//!
//! Routing: a path inside a checkout goes to that participant (ignored
//! untracked paths change nothing and cost a lookup); `HEAD` of a checkout's
//! git dir, and any ref (`refs/**`, `packed-refs`) go to
//! [`GuardEngine::on_refs_changed`] (a moved base branch concerns everyone);
//! objects, index and lock files are not looked at (the working state is
//! the files; the guard itself writes objects).
//!
//! Invariants: this is the only module that feeds file-system events to an
//! engine ([`super::journal`] keeps them for a host, sharing [`Inotify`]);
//! the engine lock is held only while applying one debounced batch; dropping
//! the [`GuardWatcher`] stops the watcher and joins its thread.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use std::collections::HashMap;
use std::ffi::{CString, OsStr};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

use super::engine::{GuardEngine, GuardUpdate};
use super::GuardError;

/// A good debounce for editors and agents: a save or a burst of tool
/// writes lands in one batch.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(50);

/// The longest a burst of events is held back.
const MAX_BATCH_WAIT: Duration = Duration::from_millis(500);

/// Watches every participant of an engine; see the module doc.
pub struct GuardWatcher {
    /// Written to on drop: the thread's signal to stop.
    stop: Option<OwnedFd>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for GuardWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardWatcher").finish_non_exhaustive()
    }
}

struct Roots {
    common_dir: PathBuf,
    /// (participant, checkout, git dir)
    checkouts: Vec<(String, PathBuf, PathBuf)>,
}

enum Target {
    Paths(String, PathBuf),
    Refs(Option<String>),
}

impl Roots {
    fn route(&self, path: &Path) -> Option<Target> {
        // Git dirs first: the main checkout's `.git` is inside its folder.
        for (id, _, git_dir) in &self.checkouts {
            if let Ok(rel) = path.strip_prefix(git_dir) {
                if rel == Path::new("HEAD") {
                    return Some(Target::Refs(Some(id.clone())));
                }
            }
        }
        if let Ok(rel) = path.strip_prefix(&self.common_dir) {
            let rel = rel.to_string_lossy();
            if rel.ends_with(".lock") {
                return None;
            }
            if rel == "packed-refs" || rel.starts_with("refs/") {
                return Some(Target::Refs(None));
            }
            return None;
        }
        self.checkouts
            .iter()
            .filter(|(_, root, _)| path.starts_with(root))
            .max_by_key(|(_, root, _)| root.as_os_str().len())
            .and_then(|(id, root, _)| {
                let rel = path.strip_prefix(root).ok()?;
                let first = rel.components().next()?;
                (first.as_os_str() != ".git").then(|| Target::Paths(id.clone(), rel.to_path_buf()))
            })
    }
}

/// What a watch reports: changes to a folder's entries and to the files in
/// it (as `notify`'s inotify backend watched).
const MASK: u32 = libc::IN_ATTRIB
    | libc::IN_CREATE
    | libc::IN_DELETE
    | libc::IN_CLOSE_WRITE
    | libc::IN_MODIFY
    | libc::IN_MOVED_FROM
    | libc::IN_MOVED_TO
    | libc::IN_DELETE_SELF
    | libc::IN_MOVE_SELF
    | libc::IN_ONLYDIR;

/// Which subfolders of a recursive root are left unwatched (relative to
/// the root).
pub(super) type SkipFolder = Box<dyn Fn(&Path) -> bool + Send>;

/// A watched root.
struct Root {
    path: PathBuf,
    /// Whether its subfolders are watched.
    recursive: bool,
    skip: Option<SkipFolder>,
}

/// The inotify instance and its table.
pub(super) struct Inotify {
    pub(super) fd: OwnedFd,
    roots: Vec<Root>,
    /// Watch descriptor → (index into `roots`, folder relative to it, as a
    /// range of `names`).
    watches: HashMap<i32, (u16, std::ops::Range<u32>)>,
    /// Every watched folder's relative path, one after another (one
    /// allocation, not one a folder; rebuilt when removed folders leave
    /// more than half of it unused).
    names: Vec<u8>,
    live_bytes: usize,
}

/// One event, resolved to a path.
pub(super) enum Seen {
    Path(PathBuf),
    /// The kernel dropped events: nothing can be trusted but a re-scan.
    Overflow,
}

impl Inotify {
    pub(super) fn new() -> Result<Inotify, GuardError> {
        // SAFETY: no pointers; the result is checked.
        let fd = unsafe { libc::inotify_init1(libc::IN_CLOEXEC | libc::IN_NONBLOCK) };
        if fd < 0 {
            return Err(watch_error("starting inotify"));
        }
        Ok(Inotify {
            // SAFETY: a fresh descriptor nobody else owns.
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            roots: Vec::new(),
            watches: HashMap::new(),
            names: Vec::new(),
            live_bytes: 0,
        })
    }

    /// Watches `root` (and, when `recursive`, every folder below it).
    pub(super) fn add_root(&mut self, root: &Path, recursive: bool) -> Result<(), GuardError> {
        self.add_root_skipping(root, recursive, None)
    }

    /// As [`Inotify::add_root`], leaving the subfolders `skip` names (and
    /// everything below them) unwatched, now and when they appear later.
    pub(super) fn add_root_skipping(
        &mut self,
        root: &Path,
        recursive: bool,
        skip: Option<SkipFolder>,
    ) -> Result<(), GuardError> {
        let index = u16::try_from(self.roots.len())
            .map_err(|_| GuardError::Internal("too many watched roots".into()))?;
        self.roots.push(Root {
            path: root.to_path_buf(),
            recursive,
            skip,
        });
        if !self.add_folder(index, Path::new(""))? {
            return Err(GuardError::Io {
                path: root.to_path_buf(),
                error: std::io::Error::last_os_error(),
            });
        }
        Ok(())
    }

    /// Watches the folder `rel` of root `index` and, for a recursive root,
    /// its subfolders. False when the folder itself could not be watched
    /// (gone already). Running out of watches is an error.
    fn add_folder(&mut self, index: u16, rel: &Path) -> Result<bool, GuardError> {
        let root = &self.roots[usize::from(index)];
        if !rel.as_os_str().is_empty() && root.skip.as_ref().is_some_and(|skip| skip(rel)) {
            return Ok(false);
        }
        let abs = if rel.as_os_str().is_empty() {
            root.path.clone()
        } else {
            root.path.join(rel)
        };
        let recursive = root.recursive;
        let Ok(c_path) = CString::new(abs.as_os_str().as_bytes()) else {
            return Ok(false);
        };
        // SAFETY: a valid descriptor and a NUL-terminated path.
        let wd = unsafe { libc::inotify_add_watch(self.fd.as_raw_fd(), c_path.as_ptr(), MASK) };
        if wd < 0 {
            let e = std::io::Error::last_os_error();
            return match e.raw_os_error() {
                Some(libc::ENOSPC) | Some(libc::ENOMEM) => Err(GuardError::Io {
                    path: abs,
                    error: std::io::Error::new(
                        e.kind(),
                        format!("{e} (raise fs.inotify.max_user_watches to watch more folders)"),
                    ),
                }),
                _ => Ok(false),
            };
        }
        let bytes = rel.as_os_str().as_bytes();
        let start = self.names.len();
        self.names.extend_from_slice(bytes);
        // Paths are far shorter than 4 GiB in all; saturate rather than wrap.
        let range = u32::try_from(start).unwrap_or(u32::MAX)
            ..u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        self.live_bytes += bytes.len();
        if let Some((_, old)) = self.watches.insert(wd, (index, range)) {
            self.live_bytes -= old.len();
        }
        if recursive {
            if let Ok(entries) = std::fs::read_dir(&abs) {
                for entry in entries.flatten() {
                    if entry.file_type().is_ok_and(|t| t.is_dir()) {
                        self.add_folder(index, &rel.join(entry.file_name()))?;
                    }
                }
            }
        }
        Ok(true)
    }

    /// Reads every event queued now (never blocks) into `out`, watching
    /// folders that appeared under recursive roots.
    pub(super) fn read(&mut self, out: &mut Vec<Seen>) {
        let mut buf = [0u8; 16 * 1024];
        loop {
            // SAFETY: a valid descriptor and buffer; non-blocking.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                return;
            }
            let n = n as usize;
            let head = std::mem::size_of::<libc::inotify_event>();
            let mut at = 0;
            while at + head <= n {
                // SAFETY: the kernel wrote a whole event header here; read
                // unaligned since the buffer is bytes.
                let event: libc::inotify_event =
                    unsafe { std::ptr::read_unaligned(buf[at..].as_ptr().cast()) };
                let name_len = event.len as usize;
                let name_bytes = &buf[(at + head).min(n)..(at + head + name_len).min(n)];
                at += head + name_len;
                let name = OsStr::from_bytes(
                    &name_bytes[..name_bytes
                        .iter()
                        .position(|b| *b == 0)
                        .unwrap_or(name_bytes.len())],
                );
                self.one(&event, name, out);
            }
        }
    }

    fn one(&mut self, event: &libc::inotify_event, name: &OsStr, out: &mut Vec<Seen>) {
        if event.mask & libc::IN_Q_OVERFLOW != 0 {
            out.push(Seen::Overflow);
            return;
        }
        if event.mask & libc::IN_IGNORED != 0 {
            if let Some((_, range)) = self.watches.remove(&event.wd) {
                self.live_bytes -= range.len();
                self.compact();
            }
            return;
        }
        let Some((index, range)) = self.watches.get(&event.wd) else {
            return;
        };
        let rel = &self.names[range.start as usize..range.end as usize];
        let (index, rel) = (*index, PathBuf::from(OsStr::from_bytes(rel)));
        let rel = if name.is_empty() { rel } else { rel.join(name) };
        let is_new_folder = event.mask & libc::IN_ISDIR != 0
            && event.mask & (libc::IN_CREATE | libc::IN_MOVED_TO) != 0;
        if is_new_folder && self.roots[usize::from(index)].recursive {
            if let Err(e) = self.add_folder(index, &rel) {
                tracing::warn!("conflict guard: {e}");
            }
        }
        out.push(Seen::Path(self.roots[usize::from(index)].path.join(rel)));
    }
}

impl Inotify {
    /// Drops the names of removed watches once they are most of `names`.
    fn compact(&mut self) {
        if self.names.len() < 4096 || self.live_bytes * 2 > self.names.len() {
            return;
        }
        let mut names = Vec::with_capacity(self.live_bytes);
        for (_, range) in self.watches.values_mut() {
            let start = names.len();
            names.extend_from_slice(&self.names[range.start as usize..range.end as usize]);
            *range = u32::try_from(start).unwrap_or(u32::MAX)
                ..u32::try_from(names.len()).unwrap_or(u32::MAX);
        }
        self.names = names;
    }
}

pub(super) fn watch_error(context: &str) -> GuardError {
    GuardError::Io {
        path: PathBuf::from(context),
        error: std::io::Error::last_os_error(),
    }
}

/// Waits until `fd` or `stop` is readable, or `timeout` passes (`None`:
/// forever). Returns (events ready, stop asked).
pub(super) fn wait(fd: i32, stop: i32, timeout: Option<Duration>) -> (bool, bool) {
    let mut fds = [
        libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: stop,
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    let ms = timeout.map_or(-1, |t| {
        i32::try_from(t.as_millis()).unwrap_or(i32::MAX).max(1)
    });
    // SAFETY: two valid pollfds.
    let rc = unsafe { libc::poll(fds.as_mut_ptr(), 2, ms) };
    if rc <= 0 {
        return (false, false);
    }
    (fds[0].revents != 0, fds[1].revents != 0)
}

impl GuardWatcher {
    pub fn start(
        engine: Arc<Mutex<GuardEngine>>,
        debounce: Duration,
        mut on_update: impl FnMut(&GuardEngine, &GuardUpdate) + Send + 'static,
    ) -> Result<GuardWatcher, GuardError> {
        let roots = {
            let engine = engine
                .lock()
                .map_err(|_| GuardError::Internal("the engine lock is poisoned".into()))?;
            let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
            Roots {
                common_dir: canon(&engine.common_dir()),
                checkouts: engine
                    .watch_roots()
                    .into_iter()
                    .map(|(id, root, git_dir)| (id, canon(&root), canon(&git_dir)))
                    .collect(),
            }
        };
        let mut inotify = Inotify::new()?;
        for (_, root, _) in &roots.checkouts {
            inotify.add_root(root, true)?;
        }
        let covered = roots
            .checkouts
            .iter()
            .any(|(_, root, _)| roots.common_dir.starts_with(root));
        if !covered {
            inotify.add_root(&roots.common_dir, true)?;
        }
        for (_, _, git_dir) in &roots.checkouts {
            if !git_dir.starts_with(&roots.common_dir) {
                inotify.add_root(git_dir, false)?;
            }
        }
        let mut pipe = [0; 2];
        // SAFETY: a valid array of two descriptors; the result is checked.
        if unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return Err(watch_error("creating the watcher's stop pipe"));
        }
        // SAFETY: fresh descriptors nobody else owns.
        let (stop_rx, stop_tx) =
            unsafe { (OwnedFd::from_raw_fd(pipe[0]), OwnedFd::from_raw_fd(pipe[1])) };
        let thread = std::thread::Builder::new()
            .name("owt-guard-watch".into())
            .spawn(move || {
                let mut seen = Vec::new();
                loop {
                    let (ready, stop) = wait(inotify.fd.as_raw_fd(), stop_rx.as_raw_fd(), None);
                    if stop {
                        return;
                    }
                    if !ready {
                        continue;
                    }
                    // A batch: until `debounce` passes with no event, or
                    // MAX_BATCH_WAIT in all.
                    seen.clear();
                    inotify.read(&mut seen);
                    let started = Instant::now();
                    loop {
                        let (ready, stop) =
                            wait(inotify.fd.as_raw_fd(), stop_rx.as_raw_fd(), Some(debounce));
                        if stop {
                            return;
                        }
                        if !ready {
                            break;
                        }
                        inotify.read(&mut seen);
                        if started.elapsed() > MAX_BATCH_WAIT {
                            break;
                        }
                    }
                    apply(&engine, &roots, seen.drain(..), &mut on_update);
                }
            })
            .map_err(|source| GuardError::Io {
                path: PathBuf::from("owt-guard-watch"),
                error: source,
            })?;
        Ok(GuardWatcher {
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }
}

/// Routes one debounced batch and applies it to the engine.
fn apply(
    engine: &Mutex<GuardEngine>,
    roots: &Roots,
    seen: impl Iterator<Item = Seen>,
    on_update: &mut impl FnMut(&GuardEngine, &GuardUpdate),
) {
    let mut paths: BTreeMap<String, BTreeSet<PathBuf>> = BTreeMap::new();
    let mut refs: BTreeSet<Option<String>> = BTreeSet::new();
    let mut overflow = false;
    for event in seen {
        match event {
            Seen::Overflow => overflow = true,
            Seen::Path(path) => match roots.route(&path) {
                Some(Target::Paths(id, rel)) => {
                    paths.entry(id).or_default().insert(rel);
                }
                Some(Target::Refs(id)) => {
                    refs.insert(id);
                }
                None => {}
            },
        }
    }
    if paths.is_empty() && refs.is_empty() && !overflow {
        return;
    }
    let Ok(mut engine) = engine.lock() else {
        return;
    };
    let mut batch = GuardUpdate::default();
    let mut results = Vec::new();
    if overflow {
        tracing::warn!(
            "conflict guard: the kernel dropped file events; re-scanning every checkout"
        );
        let ids: Vec<String> = engine.participants().map(|p| p.id.clone()).collect();
        for id in &ids {
            results.push(engine.rescan(id));
        }
    } else {
        let everyone = refs.contains(&None);
        let ref_ids: Vec<String> = if everyone {
            engine.participants().map(|p| p.id.clone()).collect()
        } else {
            refs.into_iter().flatten().collect()
        };
        for id in &ref_ids {
            results.push(engine.on_refs_changed(id));
        }
        for (id, set) in &paths {
            let list: Vec<PathBuf> = set.iter().cloned().collect();
            results.push(engine.on_paths_changed(id, &list));
        }
    }
    for result in results {
        match result {
            Ok(update) => {
                batch.participants.extend(update.participants);
                batch.pairs.extend(update.pairs);
                batch.changed_pairs.extend(update.changed_pairs);
                batch.elapsed += update.elapsed;
            }
            Err(e) => tracing::warn!("conflict guard update failed: {e}"),
        }
    }
    if !batch.participants.is_empty() {
        on_update(&engine, &batch);
    }
}

impl Drop for GuardWatcher {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            // SAFETY: a valid descriptor and one byte.
            unsafe { libc::write(stop.as_raw_fd(), b"x".as_ptr().cast(), 1) };
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
