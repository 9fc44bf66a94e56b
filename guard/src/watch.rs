//! The file-system watcher: inotify on every folder of every participant's
//! checkout and of the repository's git dir, debounced, feeding
//! [`GuardEngine`] with the paths that changed, per participant.
//!
//! One thread and one table: each watch descriptor maps to the root it
//! belongs to and its folder relative to that root (12 bytes and the
//! relative path a folder, in a sorted table, where a general watcher keeps
//! two absolute paths and two hash entries; a long-lived `owt lsp` watches
//! 65,000 folders at 64 checkouts of 100k files). A folder
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

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};

use super::engine::{GuardEngine, GuardUpdate};
use super::GuardError;

mod flush;
mod inotify;
use flush::FlushRx;
pub use flush::Flusher;
pub(super) use inotify::{Inotify, Seen, SkipFolder};

/// A good debounce for editors and agents: a save or a burst of tool
/// writes lands in one batch.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(50);

/// How long a batch waits for more once its last event finished a file
/// ([`Inotify::settled`]), when that is shorter than the debounce: a burst
/// (a checkout, a save by rename, several files written in a row) keeps
/// its events closer together than this, and a lone write is applied
/// without waiting out the whole debounce.
const SETTLE: Duration = Duration::from_millis(3);

/// The longest a burst of events is held back.
const MAX_BATCH_WAIT: Duration = Duration::from_millis(500);

/// Watches every participant of an engine; see the module doc.
pub struct GuardWatcher {
    /// Written to on drop: the thread's signal to stop.
    stop: Option<OwnedFd>,
    thread: Option<JoinHandle<()>>,
    flusher: Flusher,
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
    /// What watching `engine`'s participants takes: their checkouts and git
    /// dirs, and the repository's common dir.
    fn of(engine: &GuardEngine) -> Roots {
        let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        Roots {
            common_dir: canon(&engine.common_dir()),
            checkouts: engine
                .watch_roots()
                .into_iter()
                .map(|(id, root, git_dir)| (id, canon(&root), canon(&git_dir)))
                .collect(),
        }
    }

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

/// A system call that failed while `context`.
pub(super) fn io_error(context: &str, e: impl Into<std::io::Error>) -> GuardError {
    GuardError::Io {
        path: PathBuf::from(context),
        error: e.into(),
    }
}

/// Waits until `fd` or `stop` is readable, or `timeout` passes (`None`:
/// forever). Returns (events ready, stop asked).
pub(super) fn wait(
    fd: BorrowedFd<'_>,
    stop: BorrowedFd<'_>,
    timeout: Option<Duration>,
) -> (bool, bool) {
    // At least a millisecond: a zero timeout would spin.
    let timeout = timeout.map(|t| t.max(Duration::from_millis(1)));
    match crate::platform::poll::wait_readable([fd, stop], timeout) {
        Ok([events, stop]) => (events, stop),
        Err(_) => (false, false),
    }
}

/// What [`Watching::run`] waits for.
struct Woken {
    ready: bool,
    stopped: bool,
    flush: bool,
}

/// Waits until events are queued, `stop` or a flush is asked, or
/// `timeout` passes (`None`: forever).
fn wait_run(
    fd: BorrowedFd<'_>,
    stop: BorrowedFd<'_>,
    flush: &FlushRx,
    timeout: Option<Duration>,
) -> Woken {
    // At least a millisecond: a zero timeout would spin.
    let timeout = timeout.map(|t| t.max(Duration::from_millis(1)));
    match crate::platform::poll::wait_readable([fd, stop, flush.fd()], timeout) {
        Ok([ready, stopped, flush]) => Woken {
            ready,
            stopped,
            flush,
        },
        Err(_) => Woken {
            ready: false,
            stopped: false,
            flush: false,
        },
    }
}

/// Whether `fd` is readable now (no wait).
fn readable(fd: BorrowedFd<'_>) -> bool {
    crate::platform::poll::wait_readable([fd], Some(Duration::ZERO)).is_ok_and(|[ready]| ready)
}

/// A watcher whose watches are in place but whose thread has not started:
/// what changes from now on waits in the kernel's queue until
/// [`Watching::start`]. Lets a caller watch before it computes an engine
/// from scratch, so that nothing written during that computation is
/// missed (the events reach the engine once it runs).
pub struct Watching {
    roots: Roots,
    inotify: Inotify,
}

impl std::fmt::Debug for Watching {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watching").finish_non_exhaustive()
    }
}

impl Watching {
    /// Watches every checkout of `engine`'s participants (added, not yet
    /// computed is fine) and the repository's git dir.
    pub fn new(engine: &GuardEngine) -> Result<Watching, GuardError> {
        Watching::of(Roots::of(engine), None)?.ok_or_else(|| GuardError::Internal("stopped".into()))
    }

    /// The watches of `roots`; `None` when `stop` became readable first
    /// (looked at between checkouts).
    fn of(roots: Roots, stop: Option<BorrowedFd<'_>>) -> Result<Option<Watching>, GuardError> {
        let mut inotify = Inotify::new()?;
        for (_, root, _) in &roots.checkouts {
            if stop.is_some_and(readable) {
                return Ok(None);
            }
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
        inotify.shrink_to_fit();
        Ok(Some(Watching { roots, inotify }))
    }

    /// Starts the thread that applies the changes to `engine` (the one the
    /// watches were made for), every batch of which is handed to
    /// `on_update`; first the symbols an engine computed by
    /// [`GuardEngine::full_recompute_verdicts`] owes (one update), then the
    /// changes queued since [`Watching::new`].
    pub fn start(
        self,
        engine: Arc<Mutex<GuardEngine>>,
        debounce: Duration,
        mut on_update: impl FnMut(&GuardEngine, &GuardUpdate) + Send + 'static,
    ) -> Result<GuardWatcher, GuardError> {
        let (stop_rx, stop_tx) = crate::platform::pipe::cloexec()
            .map_err(|e| io_error("creating the watcher's stop pipe", e))?;
        let (flusher, flush_rx) = flush::pair()?;
        let thread = std::thread::Builder::new()
            .name("owt-guard-watch".into())
            .spawn(move || {
                complete_symbols(&engine, &mut on_update);
                self.run(
                    &engine,
                    (stop_rx.as_fd(), &flush_rx),
                    debounce,
                    &mut on_update,
                );
            })
            .map_err(spawn_error)?;
        Ok(GuardWatcher {
            stop: Some(stop_tx),
            thread: Some(thread),
            flusher,
        })
    }

    /// The watcher's loop: debounced batches applied to `engine`, until
    /// `stop` is readable; a flush asked applies at once what is queued.
    fn run(
        mut self,
        engine: &Mutex<GuardEngine>,
        (stop, flush): (BorrowedFd<'_>, &FlushRx),
        debounce: Duration,
        on_update: &mut impl FnMut(&GuardEngine, &GuardUpdate),
    ) {
        let inotify = &mut self.inotify;
        let mut seen = Vec::new();
        loop {
            let woken = wait_run(inotify.fd(), stop, flush, None);
            if woken.stopped {
                return;
            }
            if woken.flush {
                let ticket = flush.take();
                inotify.read(&mut seen);
                apply(engine, &self.roots, seen.drain(..), on_update);
                flush.done(ticket);
                continue;
            }
            if !woken.ready {
                continue;
            }
            // A batch: until `debounce` passes with no event (SETTLE after
            // an event that finished a file), or MAX_BATCH_WAIT in all, or
            // a flush is asked (the batch goes now, the flush next turn).
            seen.clear();
            inotify.read(&mut seen);
            let started = Instant::now();
            loop {
                let quiet = if inotify.settled() {
                    debounce.min(SETTLE)
                } else {
                    debounce
                };
                let woken = wait_run(inotify.fd(), stop, flush, Some(quiet));
                if woken.stopped {
                    return;
                }
                if woken.flush || !woken.ready {
                    break;
                }
                inotify.read(&mut seen);
                if started.elapsed() > MAX_BATCH_WAIT {
                    break;
                }
            }
            apply(engine, &self.roots, seen.drain(..), on_update);
        }
    }
}

fn spawn_error(source: std::io::Error) -> GuardError {
    GuardError::Io {
        path: PathBuf::from("owt-guard-watch"),
        error: source,
    }
}

impl GuardWatcher {
    /// [`Watching::new`] and [`Watching::start`] at once: for an engine
    /// already computed, whatever changed before this call was seen.
    pub fn start(
        engine: Arc<Mutex<GuardEngine>>,
        debounce: Duration,
        on_update: impl FnMut(&GuardEngine, &GuardUpdate) + Send + 'static,
    ) -> Result<GuardWatcher, GuardError> {
        let watching = {
            let engine = engine
                .lock()
                .map_err(|_| GuardError::Internal("the engine lock is poisoned".into()))?;
            Watching::new(&engine)?
        };
        watching.start(engine, debounce, on_update)
    }

    /// Watches an engine already computed, making the watches on the
    /// watcher's own thread: the engine is usable at once, where making
    /// them first (reading every folder of every checkout) takes seconds
    /// at 64 checkouts of 100k files. Once they are made, every
    /// participant is read again (a live host's journal answers for its
    /// checkout) so that nothing written before its folder's watch existed
    /// is missed, handed to `on_update` as one batch when anything changed;
    /// then `watched` is told, and changes flow as with
    /// [`GuardWatcher::start`]. Watching failed (out of inotify watches):
    /// `watched` gets the error and the thread ends.
    pub fn start_watching(
        engine: Arc<Mutex<GuardEngine>>,
        debounce: Duration,
        mut on_update: impl FnMut(&GuardEngine, &GuardUpdate) + Send + 'static,
        watched: impl FnOnce(Result<(), GuardError>) + Send + 'static,
    ) -> Result<GuardWatcher, GuardError> {
        let roots = {
            let engine = engine
                .lock()
                .map_err(|_| GuardError::Internal("the engine lock is poisoned".into()))?;
            Roots::of(&engine)
        };
        let (stop_rx, stop_tx) = crate::platform::pipe::cloexec()
            .map_err(|e| io_error("creating the watcher's stop pipe", e))?;
        let (flusher, flush_rx) = flush::pair()?;
        let thread = std::thread::Builder::new()
            .name("owt-guard-watch".into())
            .spawn(move || {
                let started = Instant::now();
                let watching = match Watching::of(roots, Some(stop_rx.as_fd())) {
                    Ok(Some(watching)) => watching,
                    Ok(None) => return,
                    Err(e) => return watched(Err(e)),
                };
                let made = started.elapsed();
                complete_symbols(&engine, &mut on_update);
                if let Ok(mut locked) = engine.lock() {
                    let results = rescan_everyone(&mut locked);
                    hand_over(&locked, results, &mut on_update);
                }
                tracing::debug!(
                    "conflict guard: watches made in {made:?}, caught up by {:?}",
                    started.elapsed()
                );
                watched(Ok(()));
                watching.run(
                    &engine,
                    (stop_rx.as_fd(), &flush_rx),
                    debounce,
                    &mut on_update,
                );
            })
            .map_err(spawn_error)?;
        Ok(GuardWatcher {
            stop: Some(stop_tx),
            thread: Some(thread),
            flusher,
        })
    }

    /// Asks this watcher to apply what is queued now ([`Flusher::flush`]).
    pub fn flusher(&self) -> Flusher {
        self.flusher.clone()
    }
}

/// What [`GuardEngine::full_recompute_verdicts`] held back, computed on
/// the watcher's thread before its first batch (the queued changes wait
/// behind it) and handed to `on_update` like a batch when it changed a
/// pair or a base conflict.
fn complete_symbols(
    engine: &Mutex<GuardEngine>,
    on_update: &mut impl FnMut(&GuardEngine, &GuardUpdate),
) {
    let Ok(mut engine) = engine.lock() else {
        return;
    };
    if !engine.symbols_owed() {
        return;
    }
    match engine.complete_symbols() {
        Ok(update)
            if update.changed_pairs.is_empty() && update.changed_base_conflicts.is_empty() => {}
        Ok(update) => on_update(&engine, &update),
        Err(e) => tracing::warn!("the guard's symbols: {e}"),
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
    let mut results = Vec::new();
    if overflow {
        tracing::warn!(
            "conflict guard: the kernel dropped file events; re-scanning every checkout"
        );
        results = rescan_everyone(&mut engine);
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
    hand_over(&engine, results, on_update);
}

/// Every participant's checkout, HEAD and refs read again.
fn rescan_everyone(engine: &mut GuardEngine) -> Vec<Result<GuardUpdate, GuardError>> {
    let ids: Vec<String> = engine.participants().map(|p| p.id.clone()).collect();
    ids.iter().map(|id| engine.rescan(id)).collect()
}

/// One batch of `results` to `on_update`, when anything changed.
fn hand_over(
    engine: &GuardEngine,
    results: Vec<Result<GuardUpdate, GuardError>>,
    on_update: &mut impl FnMut(&GuardEngine, &GuardUpdate),
) {
    let mut batch = GuardUpdate::default();
    for result in results {
        match result {
            Ok(update) => {
                for id in update.participants {
                    if !batch.participants.contains(&id) {
                        batch.participants.push(id);
                    }
                }
                batch.heads_moved.extend(update.heads_moved);
                batch.pairs.extend(update.pairs);
                batch.changed_pairs.extend(update.changed_pairs);
                batch.elapsed += update.elapsed;
            }
            Err(e) => tracing::warn!("conflict guard update failed: {e}"),
        }
    }
    if !batch.participants.is_empty() || !batch.heads_moved.is_empty() {
        on_update(engine, &batch);
    }
}

impl Drop for GuardWatcher {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            crate::platform::pipe::send_wake(&stop, b'x');
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
