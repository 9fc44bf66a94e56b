//! The work journal: what a session host keeps so that a full guard scan of
//! its worktree need not look at every file (what git's fsmonitor does for
//! `git status`).
//!
//! A journal lives as long as its session host. It holds a *baseline* — the
//! paths that may differ from HEAD when it last walked the worktree (the
//! same walk as [`WorkState::scan_full`]), with the index and HEAD that walk
//! was made against — and every path written, created, moved or deleted in
//! the worktree since that walk began (inotify). Asked, it answers both;
//! every path named in neither still matches its index entry, and so HEAD.
//! The guard then evaluates only those paths instead of walking the
//! checkout: the cost of a full recompute for a live agent grows with what
//! the agent changed, not with the size of the repository.
//!
//! The baseline is only offered while it can be trusted, and is walked
//! anew (once things are quiet for [`SETTLE`]) when that is lost:
//! - the index or HEAD changed (a commit, `git add`, a reset, a checkout);
//! - a `.gitignore` changed (a file ignored before may count now);
//! - the kernel dropped events (`IN_Q_OVERFLOW`), or more than
//!   [`MAX_TOUCHED`] paths were touched;
//! - the checkout's folder or its git dir was itself deleted or moved.
//!   Walking then fails until it is back: the journal lets go of what it
//!   held and tries again less and less often (at most every two minutes).
//!
//! Before answering, the journal reads every event the kernel has queued:
//! a write that returned before the question is in the answer. The asker
//! still checks the index and HEAD it sees against the answer's (a commit
//! may land between the two) and walks the checkout itself on any doubt.
//!
//! Folders that are ignored and hold nothing tracked (`target/`,
//! `node_modules/`) are not watched: what happens in them never counts,
//! and they would use up the user's inotify watches.
//!
//! Not seen (as with git's fsmonitor): writes through a shared `mmap`, and
//! changes to ignore rules outside the worktree (`info/exclude`,
//! `core.excludesFile`) until the next walk.
//!
//! Invariants: the journal reads the worktree and its git dir and writes
//! nothing; its lock is never held during a walk.
//!
//! [`WorkState::scan_full`]: super::snapshot::WorkState::scan_full

use std::collections::BTreeSet;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use owt_protocol::host::JournalView;

use super::snapshot::WorkState;
use super::source::index_id;
use super::watch::{self, Inotify, Seen, SkipFolder};
use super::GuardError;

/// Quiet time after the index or HEAD changed before the worktree is
/// walked again (a `git add` and a `git commit` in a row make one walk).
pub const SETTLE: Duration = Duration::from_millis(100);

/// Wait before trying again after a walk failed; doubled after each
/// failure in a row, up to [`RETRY_MAX`] (a checkout deleted under its
/// host fails every time). Shorter in unit tests.
const RETRY: Duration = Duration::from_millis(if cfg!(test) { 20 } else { 5_000 });
const RETRY_MAX: Duration = Duration::from_millis(if cfg!(test) { 200 } else { 120_000 });

/// Touched paths kept at most; past this a walk is cheaper than the list.
/// (A few dozen in unit tests, so that the limit is crossed there.)
pub const MAX_TOUCHED: usize = if cfg!(test) { 48 } else { 20_000 };

/// A worktree's journal; see the module doc. Dropping it stops its thread.
pub struct Journal {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for Journal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Journal")
            .field("worktree", &self.shared.worktree)
            .finish_non_exhaustive()
    }
}

struct Shared {
    worktree: PathBuf,
    git_dir: PathBuf,
    state: Mutex<State>,
    /// Notified whenever [`State::generation`] grows.
    changed: Condvar,
    /// The thread's control pipe: [`WAKE`] (look at the state again) or
    /// [`STOP`].
    control: OwnedFd,
}

const WAKE: u8 = b'w';
const STOP: u8 = b'x';

fn signal(shared: &Shared, byte: u8) {
    crate::platform::pipe::send_wake(&shared.control, byte);
}

struct Baseline {
    index: String,
    head_tree: Option<String>,
    paths: Vec<String>,
}

struct State {
    inotify: Inotify,
    baseline: Option<Baseline>,
    /// Paths (relative to the worktree) touched since the current
    /// inotify instance began, which is before the baseline's walk.
    touched: BTreeSet<String>,
    /// The baseline cannot be trusted; a walk is due at this time.
    due: Option<Instant>,
    /// Walks made (tests and logs).
    walks: u64,
    /// Walks failed in a row since the last that succeeded.
    failures: u32,
    /// Grows whenever what [`Journal::view`] answers may have changed (an
    /// event read, a walk begun or ended): see [`Journal::wait_change`].
    generation: u64,
}

fn lock(shared: &Shared) -> MutexGuard<'_, State> {
    shared
        .state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Journal {
    /// Starts the journal of the checkout containing `dir`: watches it,
    /// then walks it once in the background. Fails when `dir` is not in a
    /// non-bare repository or inotify refuses.
    pub fn start(dir: &Path) -> Result<Journal, GuardError> {
        let repo = git2::Repository::discover(dir)?;
        let worktree = repo
            .workdir()
            .map(Path::to_path_buf)
            .ok_or_else(|| GuardError::Bare(dir.to_path_buf()))?;
        let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let worktree = canon(&worktree);
        let git_dir = canon(repo.path());
        drop(repo);
        let inotify = watch_checkout(&worktree, &git_dir)?;
        let (control_rx, control_tx) = crate::platform::pipe::cloexec_nonblocking()
            .map_err(|e| watch::io_error("creating the journal's control pipe", e))?;
        let shared = Arc::new(Shared {
            worktree,
            git_dir,
            state: Mutex::new(State {
                inotify,
                baseline: None,
                touched: BTreeSet::new(),
                // Walk at once.
                due: Some(Instant::now()),
                walks: 0,
                failures: 0,
                generation: 0,
            }),
            changed: Condvar::new(),
            control: control_tx,
        });
        let thread_shared = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("owt-journal".into())
            .spawn(move || run(&thread_shared, &control_rx))
            .map_err(|source| GuardError::Io {
                path: PathBuf::from("owt-journal"),
                error: source,
            })?;
        Ok(Journal {
            shared,
            thread: Some(thread),
        })
    }

    /// The paths that may differ from HEAD, with the index and HEAD they
    /// hold for; `ready: false` (and no paths) while a walk is due or
    /// under way.
    pub fn view(&self) -> JournalView {
        let head_tree = head_tree(&self.shared.git_dir);
        let mut state = lock(&self.shared);
        // Events read here are gone from the descriptor the thread polls:
        // if they call for a walk, the thread must be told.
        drain(&self.shared, &mut state);
        let mut view = JournalView::not_ready();
        if let Some(base) = state.baseline.as_ref().filter(|_| state.due.is_none()) {
            if base.head_tree == head_tree && base.index == index_id(&self.shared.git_dir) {
                let mut paths: BTreeSet<&String> = base.paths.iter().collect();
                paths.extend(state.touched.iter());
                view = JournalView {
                    ready: true,
                    index: base.index.clone(),
                    head_tree: base.head_tree.clone(),
                    paths: paths.into_iter().cloned().collect(),
                };
            } else {
                // HEAD moved without an index write (`git reset --soft`, a
                // branch ref moved by hand; refs are not watched).
                mark_stale(&mut state);
            }
        }
        let wake = state.due.is_some();
        drop(state);
        if wake {
            signal(&self.shared, WAKE);
        }
        view
    }

    /// Walks made so far (the first one included).
    pub fn walks(&self) -> u64 {
        lock(&self.shared).walks
    }

    /// Walks failed in a row (0 after one succeeded), and the touched
    /// paths held: what a journal whose checkout is gone keeps.
    #[cfg(test)]
    pub(crate) fn failing(&self) -> (u32, usize) {
        let state = lock(&self.shared);
        (state.failures, state.touched.len())
    }

    /// Waits until the journal changed since `seen` (a generation this
    /// returned before; 0 at first), at most `timeout` (`None`: as long as
    /// it takes); returns the generation now. A change is an event read
    /// (a path written, the index or HEAD moved) or a walk begun or ended:
    /// what [`Journal::view`] answers may differ.
    pub fn wait_change(&self, seen: u64, timeout: Option<Duration>) -> u64 {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut state = lock(&self.shared);
        while state.generation == seen {
            state = match deadline {
                None => self
                    .shared
                    .changed
                    .wait(state)
                    .unwrap_or_else(|p| p.into_inner()),
                Some(deadline) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    self.shared
                        .changed
                        .wait_timeout(state, left)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
            };
        }
        state.generation
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        signal(&self.shared, STOP);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// HEAD's tree, read from the files (`None` while unborn or unreadable).
fn head_tree(git_dir: &Path) -> Option<String> {
    let repo = git2::Repository::open(git_dir).ok()?;
    let tree = repo.head().ok()?.peel_to_tree().ok()?.id();
    Some(tree.to_string())
}

/// A fresh inotify instance on the worktree (ignored folders holding
/// nothing tracked left out) and, for the index and HEAD, its git dir.
fn watch_checkout(worktree: &Path, git_dir: &Path) -> Result<Inotify, GuardError> {
    let mut inotify = Inotify::new()?;
    inotify.add_root_skipping(worktree, true, Some(skip_folder(worktree)?))?;
    inotify.add_root(git_dir, false)?;
    inotify.shrink_to_fit();
    Ok(inotify)
}

/// `.git`, and folders the ignore rules exclude that hold no tracked file
/// (in HEAD or in the index, as of now; a `.gitignore` change re-makes the
/// watches). Kept for the journal's life (new folders are asked about):
/// the folders holding tracked files as one sorted buffer, and no
/// repository handle (opened again for a folder the index does not know).
fn skip_folder(worktree: &Path) -> Result<SkipFolder, GuardError> {
    let repo = git2::Repository::open(worktree)?;
    // A standalone copy, dropped here: the repository's own would stay
    // loaded for as long as the repository.
    let index = git2::Index::open(&repo.path().join("index")).ok();
    drop(repo);
    let mut tracked: BTreeSet<String> = BTreeSet::new();
    if let Some(index) = &index {
        for entry in index.iter() {
            let Ok(path) = std::str::from_utf8(&entry.path) else {
                continue;
            };
            let mut dir = path;
            while let Some(slash) = dir.rfind('/') {
                dir = &dir[..slash];
                if tracked.contains(dir) {
                    break;
                }
                tracked.insert(dir.to_string());
            }
        }
    }
    drop(index);
    let tracked = FolderSet::new(tracked.iter().map(String::as_str));
    let worktree = worktree.to_path_buf();
    Ok(Box::new(move |rel: &Path| {
        if rel.file_name().is_some_and(|n| n == ".git") {
            return true;
        }
        let Some(text) = rel.to_str() else {
            return false;
        };
        if tracked.contains(text) {
            return false;
        }
        let Ok(repo) = git2::Repository::open(&worktree) else {
            return false;
        };
        if !repo
            .is_path_ignored(Path::new(&format!("{text}/")))
            .unwrap_or(false)
        {
            return false;
        }
        // Anything tracked below it? (HEAD can hold what the index no
        // longer does: a staged deletion.)
        let in_head = repo
            .head()
            .ok()
            .and_then(|h| h.peel_to_tree().ok())
            .is_some_and(|t| t.get_path(rel).is_ok());
        !in_head
    }))
}

/// Sorted, distinct folder names in one buffer (a set of `String`s took
/// ~50 bytes a folder more).
struct FolderSet {
    names: String,
    /// Where each name ends in `names`.
    ends: Vec<u32>,
}

impl FolderSet {
    fn new<'a>(sorted: impl IntoIterator<Item = &'a str>) -> FolderSet {
        let mut set = FolderSet {
            names: String::new(),
            ends: Vec::new(),
        };
        for name in sorted {
            set.names.push_str(name);
            set.ends.push(set.names.len() as u32);
        }
        set.names.shrink_to_fit();
        set.ends.shrink_to_fit();
        set
    }

    fn get(&self, i: usize) -> &str {
        let start = i.checked_sub(1).map_or(0, |j| self.ends[j] as usize);
        &self.names[start..self.ends[i] as usize]
    }

    fn contains(&self, name: &str) -> bool {
        let (mut lo, mut hi) = (0, self.ends.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.get(mid).cmp(name) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return true,
            }
        }
        false
    }
}

/// What the journal answers may have changed: wakes [`Journal::wait_change`].
fn changed(shared: &Shared, state: &mut State) {
    state.generation += 1;
    shared.changed.notify_all();
}

/// The baseline is lost; walk once nothing more happened for [`SETTLE`].
fn mark_stale(state: &mut State) {
    state.due = Some(Instant::now() + SETTLE);
}

/// Reads every queued event into the journal.
fn drain(shared: &Shared, state: &mut State) {
    let mut seen = Vec::new();
    state.inotify.read(&mut seen);
    if !seen.is_empty() {
        changed(shared, state);
    }
    for event in seen {
        match event {
            Seen::Overflow => {
                tracing::warn!("journal: the kernel dropped file events; walking again");
                mark_stale(state);
            }
            Seen::Path(path) => {
                // An event on the git dir or the checkout's folder itself
                // (deleted, moved away): its watches are gone, so is the
                // baseline's ground.
                let root_itself = |rel: &Path| rel.as_os_str().is_empty();
                if let Ok(rel) = path.strip_prefix(&shared.git_dir) {
                    if rel == Path::new("index") || rel == Path::new("HEAD") || root_itself(rel) {
                        mark_stale(state);
                    }
                    continue;
                }
                let Ok(rel) = path.strip_prefix(&shared.worktree) else {
                    continue;
                };
                if root_itself(rel) {
                    mark_stale(state);
                    continue;
                }
                if rel
                    .components()
                    .next()
                    .is_some_and(|c| c.as_os_str() == ".git")
                {
                    continue;
                }
                if rel.file_name().is_some_and(|n| n == ".gitignore") {
                    mark_stale(state);
                }
                if state.touched.len() >= MAX_TOUCHED {
                    mark_stale(state);
                    continue;
                }
                state.touched.insert(rel.to_string_lossy().into_owned());
            }
        }
    }
}

/// The journal's thread: applies events as they come and walks again when
/// the baseline is lost and things have settled.
fn run(shared: &Shared, control: &OwnedFd) {
    loop {
        let (fd, due) = {
            let state = lock(shared);
            let due = state
                .due
                .map(|at| at.saturating_duration_since(Instant::now()));
            // A copy of the descriptor: a walk may replace the instance
            // while this thread waits on it.
            (state.inotify.fd().try_clone_to_owned(), due)
        };
        if due == Some(Duration::ZERO) {
            walk(shared);
            // The walk went deep (libgit2); the wait is a few frames.
            crate::platform::allocator::release_stack();
            continue;
        }
        let signalled = match &fd {
            Ok(fd) => watch::wait(fd.as_fd(), control.as_fd(), due).1,
            Err(e) => {
                tracing::warn!("journal: {e}; looking again in {RETRY:?}");
                let due = due.map_or(RETRY, |due| due.min(RETRY));
                watch::wait(control.as_fd(), control.as_fd(), Some(due)).1
            }
        };
        if signalled {
            let mut bytes = [0u8; 64];
            let n = crate::platform::pipe::take_wakes(control, &mut bytes);
            if bytes[..n].contains(&STOP) {
                return;
            }
        }
        drain(shared, &mut lock(shared));
    }
}

/// Makes a new baseline: a fresh inotify instance first (so every write
/// from now on is either seen by the walk or in `touched`), then the walk.
fn walk(shared: &Shared) {
    let inotify = match watch_checkout(&shared.worktree, &shared.git_dir) {
        Ok(inotify) => inotify,
        Err(e) => return failed(shared, lock(shared), "watching", &e),
    };
    {
        let mut state = lock(shared);
        if state.failures > 0 {
            tracing::info!("journal: watching {} again", shared.worktree.display());
        }
        state.inotify = inotify;
        state.touched.clear();
        state.baseline = None;
        state.due = None;
        state.walks += 1;
        changed(shared, &mut state);
    }
    let head = head_tree(&shared.git_dir);
    let index = index_id(&shared.git_dir);
    let started = Instant::now();
    let paths = WorkState::open(&shared.worktree, "HEAD").and_then(|mut work| work.candidates());
    // The walk's index copy and tables are freed now; give the pages back
    // (a host lives as long as its agent).
    crate::platform::allocator::trim();
    let mut state = lock(shared);
    drain(shared, &mut state);
    match paths {
        Ok(paths) if state.due.is_none() => {
            tracing::debug!(
                "journal: walked {} in {:?}: {} paths",
                shared.worktree.display(),
                started.elapsed(),
                paths.len()
            );
            state.failures = 0;
            state.baseline = Some(Baseline {
                index,
                head_tree: head,
                paths,
            });
        }
        // The index or HEAD moved during the walk: the next one is due.
        Ok(_) => {}
        Err(e) => return failed(shared, state, "walking", &e),
    }
    changed(shared, &mut state);
}

/// A walk failed (most often: the checkout was deleted under its host):
/// nothing is offered, nothing is held — the touched paths, the old
/// watches, the pages they took — and the next try waits longer each time
/// in a row. Said once in the log, not at every try.
fn failed(shared: &Shared, mut state: MutexGuard<'_, State>, what: &str, error: &GuardError) {
    let wait = RETRY
        .saturating_mul(1 << state.failures.min(16))
        .min(RETRY_MAX);
    if state.failures == 0 {
        tracing::warn!(
            "journal: {what} {}: {error}; trying again in {wait:?}, then less often (at most every {RETRY_MAX:?})",
            shared.worktree.display()
        );
    } else {
        tracing::debug!("journal: {what} {}: {error}", shared.worktree.display());
    }
    state.failures = state.failures.saturating_add(1);
    state.due = Some(Instant::now() + wait);
    state.baseline = None;
    state.touched = BTreeSet::new();
    if let Ok(empty) = Inotify::new() {
        state.inotify = empty;
    }
    changed(shared, &mut state);
    drop(state);
    crate::platform::allocator::trim();
}

#[cfg(test)]
mod folder_set_tests {
    use super::FolderSet;

    #[test]
    fn a_folder_set_holds_exactly_its_names() {
        let names = ["a", "a/b", "a/b/c", "b", "d05/d0123", "z"];
        let set = FolderSet::new(names);
        for name in names {
            assert!(set.contains(name), "{name}");
        }
        for name in ["", "a/", "a/b/c/d", "aa", "c", "d05", "d05/d012", "zz"] {
            assert!(!set.contains(name), "{name}");
        }
        assert!(!FolderSet::new([]).contains(""));
    }
}
