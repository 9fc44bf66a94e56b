//! The file-system watcher: `notify` (inotify on Linux) on every
//! participant's checkout and on the repository's git dir, debounced, feeding
//! [`GuardEngine`] with the paths that changed, per participant.
//!
//! Routing: a path inside a checkout goes to that participant (ignored
//! untracked paths change nothing and cost a lookup); `HEAD` of a checkout's
//! git dir, and any ref (`refs/**`, `packed-refs`) go to
//! [`GuardEngine::on_refs_changed`] (a moved base branch concerns everyone);
//! objects, index and lock files are not looked at (the working state is
//! the files; the guard itself writes objects).
//!
//! Invariants: this is the only module that receives file-system events;
//! the engine lock is held only while applying one debounced batch; dropping
//! the [`GuardWatcher`] stops the watcher and joins its thread.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use notify::{RecommendedWatcher, RecursiveMode, Watcher};

use super::engine::{GuardEngine, GuardUpdate};
use super::GuardError;

/// A good debounce for editors and agents: a save or a burst of tool
/// writes lands in one batch.
pub const DEFAULT_DEBOUNCE: Duration = Duration::from_millis(50);

/// The longest a burst of events is held back.
const MAX_BATCH_WAIT: Duration = Duration::from_millis(500);

/// Watches every participant of an engine; see the module doc.
pub struct GuardWatcher {
    watcher: Option<RecommendedWatcher>,
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

impl GuardWatcher {
    /// Starts watching every participant of `engine` (as it is now). After
    /// each debounced batch the engine is updated and `on_update` is called
    /// with it, still locked (record facts there, or notify an editor).
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
        let (tx, rx) = mpsc::channel::<notify::Result<notify::Event>>();
        let mut watcher = notify::recommended_watcher(move |event| {
            let _ = tx.send(event);
        })?;
        for (_, root, _) in &roots.checkouts {
            watcher.watch(root, RecursiveMode::Recursive)?;
        }
        let covered = roots
            .checkouts
            .iter()
            .any(|(_, root, _)| roots.common_dir.starts_with(root));
        if !covered {
            watcher.watch(&roots.common_dir, RecursiveMode::Recursive)?;
        }
        for (_, _, git_dir) in &roots.checkouts {
            if !git_dir.starts_with(&roots.common_dir) {
                watcher.watch(git_dir, RecursiveMode::NonRecursive)?;
            }
        }
        let thread = std::thread::Builder::new()
            .name("owt-guard-watch".into())
            .spawn(move || {
                while let Ok(first) = rx.recv() {
                    let mut paths: BTreeMap<String, BTreeSet<PathBuf>> = BTreeMap::new();
                    let mut refs: BTreeSet<Option<String>> = BTreeSet::new();
                    let mut add = |event: notify::Result<notify::Event>| {
                        let Ok(event) = event else { return };
                        if matches!(event.kind, notify::EventKind::Access(_)) {
                            return;
                        }
                        for path in event.paths {
                            match roots.route(&path) {
                                Some(Target::Paths(id, rel)) => {
                                    paths.entry(id).or_default().insert(rel);
                                }
                                Some(Target::Refs(id)) => {
                                    refs.insert(id);
                                }
                                None => {}
                            }
                        }
                    };
                    add(first);
                    let started = Instant::now();
                    loop {
                        match rx.recv_timeout(debounce) {
                            Ok(event) => add(event),
                            Err(mpsc::RecvTimeoutError::Timeout) => break,
                            Err(mpsc::RecvTimeoutError::Disconnected) => return,
                        }
                        if started.elapsed() > MAX_BATCH_WAIT {
                            break;
                        }
                    }
                    if paths.is_empty() && refs.is_empty() {
                        continue;
                    }
                    let Ok(mut engine) = engine.lock() else {
                        return;
                    };
                    let mut batch = GuardUpdate::default();
                    let everyone = refs.contains(&None);
                    let ref_ids: Vec<String> = if everyone {
                        engine.participants().map(|p| p.id.clone()).collect()
                    } else {
                        refs.into_iter().flatten().collect()
                    };
                    let mut results = Vec::new();
                    for id in &ref_ids {
                        results.push(engine.on_refs_changed(id));
                    }
                    for (id, set) in &paths {
                        let list: Vec<PathBuf> = set.iter().cloned().collect();
                        results.push(engine.on_paths_changed(id, &list));
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
            })
            .map_err(|source| GuardError::Io {
                path: PathBuf::from("owt-guard-watch"),
                source,
            })?;
        Ok(GuardWatcher {
            watcher: Some(watcher),
            thread: Some(thread),
        })
    }
}

impl Drop for GuardWatcher {
    fn drop(&mut self) {
        // Dropping the notify watcher drops the event sender, which ends
        // the thread's loop.
        self.watcher.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
