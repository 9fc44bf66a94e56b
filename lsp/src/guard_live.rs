//! The live Conflict Guard of `owt lsp`: one engine over every session's
//! worktree and the editor's checkout, its watcher, the unsaved buffers
//! handed to it, and the diagnostics published from what it recomputes.
//!
//! The watcher applies a debounced batch of file changes to the engine on
//! its own thread and, still holding the engine, records the guard's facts
//! (the git facts its snapshots show go to the git refresher, their one
//! writer) and takes a [`GuardDelta`] of what the batch recomputed, which
//! it sends to the owner. The owner applies the delta to its
//! [`GuardView`] and re-renders the diagnostics of the paths it touched:
//! no second lock, no full report per change. Unsaved buffers are handed
//! to the engine by the owner, which takes the delta in the same lock.
//! The engine computes first and is published at once; the watcher makes
//! its watches meanwhile on its own thread (seconds at 64 checkouts of
//! 100k files), then reads every participant again (through the hosts'
//! journals) so that what was written (or a ref that moved) before a
//! folder's watch existed reaches the engine right after, as one batch.
//!
//! The pull-request watcher's conflict pass (every `[pr] poll_interval`)
//! takes the engine's pairs over the files on disk ([`pair_source`])
//! instead of computing a second engine.
//!
//! Invariants: the engine is locked by the watcher for one batch, by the
//! owner for one `set_overrides` and by the pull-request watcher for one
//! copy of its pairs, never longer; publications go
//! through the ordered [`super::outbox::Outbox`]; the engine is restarted
//! (new epoch) when sessions come or go.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tower_lsp_server::ls_types::*;

use super::convert::{path_to_uri, uri_to_path};
use super::diagnostics;
use super::event::Event;
use super::git_refresher::GitPoke;
use super::guard_slot::{self, Slot};
use super::guard_view::{Applied, GuardDelta, GuardView};
use super::outbox::Outgoing;
use super::state::State;
use owt_core::guard::{GuardEngine, GuardUpdate, GuardWatcher, YOU};
use owt_core::ops::guard::SnapshotGitFact;
use owt_core::ops::pr_monitor::PairSource;
use owt_core::ops::{self, Context};

/// How long the watcher collects file events before updating the guard.
const GUARD_DEBOUNCE: Duration = Duration::from_millis(20);
/// How long keystrokes are coalesced before the guard sees the buffers.
const OVERRIDES_DELAY: Duration = Duration::from_millis(25);

/// The guard's part of the owner's state.
pub struct GuardLive {
    running: Option<Running>,
    /// Who "you" are: `you` (the main checkout) or the session whose
    /// worktree the editor opened.
    me: String,
    /// The checkout the editor shows.
    my_root: Option<PathBuf>,
    view: GuardView,
    /// When the unsaved buffers are next handed to the guard.
    pub overrides_due: Option<Instant>,
    /// Engines started so far.
    epochs: u64,
    /// The running engine as other threads see it ([`Slot`]).
    slot: Arc<Mutex<Slot>>,
}

impl Default for GuardLive {
    fn default() -> Self {
        GuardLive {
            running: None,
            me: YOU.to_string(),
            my_root: None,
            view: GuardView::default(),
            overrides_due: None,
            epochs: 0,
            slot: Arc::new(Mutex::new(Slot::Starting)),
        }
    }
}

/// A started engine and its watcher.
struct Running {
    engine: Arc<Mutex<GuardEngine>>,
    /// Counts updates under the engine lock (see [`GuardDelta`]).
    generation: Arc<AtomicU64>,
    epoch: u64,
    _watcher: GuardWatcher,
    members: Vec<(String, PathBuf)>,
}

impl GuardLive {
    /// Starts (or restarts, when sessions came or went) the guard; the git
    /// facts of its first snapshots when it started (the session views take
    /// them, then the unsaved buffers are handed to it:
    /// [`super::owner::Owner::ensure_guard`]).
    pub fn ensure(&mut self, state: &mut State) -> Option<Vec<SnapshotGitFact>> {
        let ctx = state.ctx.as_ref()?;
        let members: Vec<(String, PathBuf)> = state
            .sessions
            .iter()
            // Remote sessions take part through their fetched snapshots.
            .filter(|s| s.remote.is_some() || Path::new(&s.worktree).is_dir())
            .map(|s| (s.name.clone(), PathBuf::from(&s.worktree)))
            .collect();
        if self.running.as_ref().is_some_and(|r| r.members == members) {
            return None;
        }
        (self.me, self.my_root) = whoami(state, ctx);
        self.running = None;
        self.set_slot(Slot::Starting);
        let Some((engine, git_facts)) = start_engine(state, ctx) else {
            self.set_slot(Slot::Off);
            return None;
        };
        self.epochs += 1;
        let epoch = self.epochs;
        let generation = Arc::new(AtomicU64::new(1));
        let mut full = GuardDelta::full(&engine, epoch, 1);
        full.git = git_facts;
        let engine = Arc::new(Mutex::new(engine));
        let on_update = watcher_callback(state, &ctx.home, epoch, generation.clone());
        let on_watched = {
            let tx = state.tx.clone();
            move |watched: Result<(), owt_core::guard::GuardError>| {
                let _ = tx.send(Event::GuardWatched(
                    epoch,
                    watched.map_err(|e| e.to_string()),
                ));
            }
        };
        match GuardWatcher::start_watching(engine.clone(), GUARD_DEBOUNCE, on_update, on_watched) {
            Ok(watcher) => {
                self.set_slot(Slot::Live(engine.clone(), watcher.flusher()));
                self.running = Some(Running {
                    engine,
                    generation,
                    epoch,
                    _watcher: watcher,
                    members,
                });
                let me = self.me.clone();
                let git = std::mem::take(&mut full.git);
                let applied = self.view.apply(full, &me);
                self.publish(state, applied);
                Some(git)
            }
            Err(e) => {
                self.watch_failed(state, &e.to_string());
                None
            }
        }
    }

    /// The watcher of engine `epoch` made its watches (the git refresher is
    /// told), or could not: the guard is not live (tried again when sessions
    /// come or go).
    pub fn on_watched(&mut self, state: &State, epoch: u64, watched: Result<(), String>) {
        if self.running.as_ref().is_none_or(|r| r.epoch != epoch) {
            return;
        }
        match watched {
            Ok(()) => {
                if let Some(git) = &state.git {
                    git.poke(GitPoke::Watched(true));
                }
            }
            Err(error) => {
                self.running = None;
                self.watch_failed(state, &error);
            }
        }
    }

    fn watch_failed(&self, state: &State, error: &str) {
        self.set_slot(Slot::Off);
        tracing::warn!("watching the worktrees failed: {error}");
        state.outbox.show_message(
            MessageType::WARNING,
            format!("owt: Conflict Guard is not live (watching the worktrees failed: {error}); `owt guard` still works"),
        );
    }

    fn set_slot(&self, slot: Slot) {
        if let Ok(mut shared) = self.slot.lock() {
            *shared = slot;
        }
    }

    /// Lets go of the symbol index's parse trees not used for
    /// [`owt_core::guard::symbols::KEPT_IDLE`]; whether any went. Skipped
    /// while the watcher holds the engine (it is busy, not idle).
    pub fn drop_idle_trees(&self) -> bool {
        let Some(running) = &self.running else {
            return false;
        };
        match running.engine.try_lock() {
            Ok(mut engine) => engine.drop_idle_trees(owt_core::guard::symbols::KEPT_IDLE),
            Err(_) => false,
        }
    }

    /// Where the pull-request watcher's conflict pass takes the guard's
    /// pairs ([`guard_slot::pair_source`]).
    pub fn pair_source(&self) -> PairSource {
        guard_slot::pair_source(self.slot.clone())
    }

    /// The running engine as other threads see it (the pull-request
    /// watcher's conflict pass, `owt guard`'s queries).
    pub fn slot(&self) -> Arc<Mutex<Slot>> {
        self.slot.clone()
    }

    /// A delta from the watcher: the sessions it saw change (their review
    /// comments may be addressed now) and the git facts its snapshots show,
    /// for [`super::owner::Owner::on_guard_delta`]; `None` when the delta is
    /// of an engine no longer running.
    pub fn on_delta(
        &mut self,
        state: &mut State,
        mut delta: GuardDelta,
    ) -> Option<(Vec<String>, Vec<SnapshotGitFact>)> {
        let current = self.running.as_ref().map(|r| r.epoch);
        if current != Some(delta.epoch) {
            return None;
        }
        let me = self.me.clone();
        let git = std::mem::take(&mut delta.git);
        let changed: Vec<String> = delta
            .participants
            .iter()
            .map(|(id, _)| id.clone())
            .collect();
        let applied = self.view.apply(delta, &me);
        self.publish(state, applied);
        Some((changed, git))
    }

    /// A buffer opened, changed or closed: hand the unsaved text to the guard
    /// soon (coalescing bursts of keystrokes).
    pub fn buffers_changed(&mut self) {
        if self.overrides_due.is_none() {
            self.overrides_due = Some(Instant::now() + OVERRIDES_DELAY);
        }
    }

    /// Hands the unsaved buffers of my checkout to the guard and publishes
    /// what that changed.
    pub fn apply_overrides(&mut self, state: &mut State) {
        self.overrides_due = None;
        let Some(running) = &self.running else {
            return;
        };
        let overrides: BTreeMap<PathBuf, String> = self.open_texts(state).into_iter().collect();
        let delta = running
            .engine
            .lock()
            .map_err(|_| "the guard engine lock is poisoned".to_string())
            .and_then(|mut engine| {
                let update = engine
                    .set_overrides(&self.me, overrides)
                    .map_err(|e| e.to_string())?;
                Ok((!update.participants.is_empty()).then(|| {
                    let generation = running.generation.fetch_add(1, Ordering::SeqCst) + 1;
                    GuardDelta::of(&engine, &update, running.epoch, generation)
                }))
            });
        match delta {
            Ok(Some(delta)) => {
                let me = self.me.clone();
                let applied = self.view.apply(delta, &me);
                self.publish(state, applied);
            }
            // Nothing moved for the guard, but a buffer's version may have,
            // or a document opened (its awareness hints).
            Ok(None) if awareness(state) => self.publish(
                state,
                Applied {
                    paths: Some(BTreeSet::new()),
                    new_conflicts: Vec::new(),
                },
            ),
            Ok(None) => self.republish_versions(state),
            Err(e) => tracing::warn!("handing unsaved buffers to the guard failed: {e}"),
        }
    }

    /// Re-renders every diagnostic (they name each agent's status).
    pub fn republish_all(&self, state: &mut State) {
        self.publish(
            state,
            Applied {
                paths: None,
                new_conflicts: Vec::new(),
            },
        );
    }

    /// Publishes again, for their current version, the open documents whose
    /// diagnostics went out for an older one: a client that checks versions
    /// (Helix) drops a publication for an older version of its buffer, and
    /// would never see the same diagnostics again.
    fn republish_versions(&self, state: &mut State) {
        let Some(my_root) = &self.my_root else {
            return;
        };
        let stale: std::collections::BTreeSet<String> = state
            .published
            .guard
            .iter()
            .filter(|(uri, (version, _))| {
                state
                    .docs
                    .get(*uri)
                    .is_some_and(|doc| *version != Some(doc.version))
            })
            .filter_map(|(uri, _)| {
                let path = uri_to_path(uri)?;
                let path = std::fs::canonicalize(&path).unwrap_or(path);
                Some(
                    path.strip_prefix(my_root)
                        .ok()?
                        .to_string_lossy()
                        .into_owned(),
                )
            })
            .collect();
        if !stale.is_empty() {
            self.publish(
                state,
                Applied {
                    paths: Some(stale),
                    new_conflicts: Vec::new(),
                },
            );
        }
    }

    /// Stops the guard and clears every diagnostic it published.
    pub fn stop(&mut self, state: &mut State) {
        self.running = None;
        self.set_slot(Slot::Off);
        for (uri, _) in std::mem::take(&mut state.published.guard) {
            let diags = state.published.with_comments(&uri, Vec::new());
            state.outbox.send(Outgoing::Diagnostics(uri, diags, None));
        }
    }

    /// The open documents of my checkout, by path.
    fn open_texts(&self, state: &State) -> HashMap<PathBuf, String> {
        let Some(root) = &self.my_root else {
            return HashMap::new();
        };
        state
            .docs
            .iter()
            .filter_map(|(uri, doc)| {
                let path = uri_to_path(uri)?;
                let path = std::fs::canonicalize(&path).unwrap_or(path);
                path.starts_with(root).then(|| (path, doc.text.clone()))
            })
            .collect()
    }

    /// Announces new conflicts and publishes the diagnostics of the paths
    /// `applied` names that differ from what was last published (empty lists
    /// for documents whose diagnostics went away).
    fn publish(&self, state: &mut State, applied: Applied) {
        if self.running.is_none() {
            return;
        }
        for pair in &applied.new_conflicts {
            state.outbox.show_message(
                MessageType::WARNING,
                format!(
                    "owt: {} and {} now conflict in {}",
                    pair.a,
                    pair.b,
                    pair.conflicting_paths.join(", ")
                ),
            );
        }
        let (Some(ctx), Some(my_root)) = (&state.ctx, &self.my_root) else {
            return;
        };
        let open = self.open_texts(state);
        let awareness = awareness(state);
        // Awareness hints follow every participant's changes: every open
        // document is looked at again (a few diffs).
        let mut applied = applied;
        if awareness {
            if let Some(paths) = applied.paths.as_mut() {
                paths.extend(open.keys().filter_map(|path| {
                    Some(path.strip_prefix(my_root).ok()?.to_str()?.to_string())
                }));
            }
        }
        let mut next = diagnostics::diagnostics(&diagnostics::Inputs {
            guard: &self.view,
            repo: ctx.repo.git2(),
            me: &self.me,
            my_root,
            sessions: &state.sessions,
            open: &open,
            severities: state.options.severities.as_ref(),
            related: state.related_supported,
            only: applied.paths.as_ref(),
            awareness,
        });
        let scope: Option<HashSet<Uri>> = applied.paths.as_ref().map(|paths| {
            paths
                .iter()
                .filter_map(|path| path_to_uri(&my_root.join(path)))
                .collect()
        });
        let published = &mut state.published.guard;
        let mut to_send: Vec<(Uri, Vec<Diagnostic>)> = Vec::new();
        for (uri, (_, old)) in published.iter() {
            let in_scope = scope.as_ref().is_none_or(|scope| scope.contains(uri));
            if in_scope && !next.contains_key(uri) && !old.is_empty() {
                to_send.push((uri.clone(), Vec::new()));
            }
        }
        for (uri, diags) in next.drain() {
            let version = state.docs.get(&uri).map(|d| d.version);
            // Also when only the version moved (see [`republish_versions`]).
            if published.get(&uri) != Some(&(version, diags.clone())) {
                to_send.push((uri.clone(), diags.clone()));
            }
            published.insert(uri, (version, diags));
        }
        for (uri, diags) in &to_send {
            if diags.is_empty() {
                published.remove(uri);
            }
        }
        published.retain(|_, (_, d)| !d.is_empty());
        for (uri, diags) in to_send {
            let version = state.docs.get(&uri).map(|d| d.version);
            let diags = state.published.with_comments(&uri, diags);
            state
                .outbox
                .send(Outgoing::Diagnostics(uri, diags, version));
        }
    }
}

/// Who "you" are: the session whose worktree holds the workspace root (and
/// that worktree), or the human in the main checkout.
fn whoami(state: &State, ctx: &Context) -> (String, Option<PathBuf>) {
    let root = state
        .root
        .clone()
        .map(|r| std::fs::canonicalize(&r).unwrap_or(r));
    let mine = root.as_ref().and_then(|root| {
        state
            .sessions
            .iter()
            .filter(|s| root.starts_with(&s.worktree))
            .max_by_key(|s| s.worktree.len())
    });
    match mine {
        Some(s) => (s.name.clone(), Some(PathBuf::from(&s.worktree))),
        None => (YOU.to_string(), Some(ctx.repo.main_root().to_path_buf())),
    }
}

/// A new engine over the sessions, computed (the git refresher told
/// nobody watches until the watcher's watches are made), and the git facts
/// its snapshots show, recorded with the guard's facts; `None`, logged,
/// when it cannot start.
fn start_engine(state: &State, ctx: &Context) -> Option<(GuardEngine, Vec<SnapshotGitFact>)> {
    let poke = |message: GitPoke| {
        if let Some(git) = &state.git {
            git.poke(message);
        }
    };
    poke(GitPoke::Watched(false));
    let started = std::time::Instant::now();
    let computed = ops::guard::engine(ctx).and_then(|mut engine| {
        let opened = started.elapsed();
        // Verdicts first; the watcher adds the symbols (names in messages,
        // `semantic` notes) as its first update.
        engine.full_recompute_verdicts()?;
        tracing::debug!(
            "conflict guard computed: checkouts opened in {opened:?}, verdicts by {:?}",
            started.elapsed()
        );
        Ok(engine)
    });
    let engine = match computed {
        Ok(computed) => computed,
        Err(e) => {
            tracing::warn!("the conflict guard could not start: {e:#}");
            return None;
        }
    };
    let git_facts = match ops::guard::record_facts(&ctx.store, &engine, None) {
        Ok(git_facts) => {
            poke(GitPoke::Facts(git_facts.clone()));
            git_facts
        }
        Err(e) => {
            tracing::warn!("recording guard facts failed: {e:#}");
            Vec::new()
        }
    };
    Some((engine, git_facts))
}

/// What the watcher does after each batch, on its thread, holding the
/// engine: record the guard's facts and send the owner the delta.
fn watcher_callback(
    state: &State,
    home: &Path,
    epoch: u64,
    generation: Arc<AtomicU64>,
) -> impl FnMut(&GuardEngine, &GuardUpdate) + Send + 'static {
    let tx = state.tx.clone();
    let git = state.git.as_ref().map(|git| git.sender());
    let mut store = owt_core::store::Store::open(home).ok();
    move |engine, update| {
        let generation = generation.fetch_add(1, Ordering::SeqCst) + 1;
        let mut git_facts = Vec::new();
        if let Some(store) = store.as_mut() {
            // A moved HEAD changes the commits ahead even when the working
            // state (and so every pair) stayed the same.
            let changed: BTreeSet<String> = update
                .participants
                .iter()
                .chain(&update.heads_moved)
                .cloned()
                .collect();
            match ops::guard::record_facts(store, engine, Some(&changed)) {
                Ok(facts) => {
                    if let Some(git) = &git {
                        let _ = git.send(GitPoke::Facts(facts.clone()));
                    }
                    git_facts = facts;
                }
                Err(e) => tracing::warn!("recording guard facts failed: {e:#}"),
            }
        }
        let mut delta = GuardDelta::of(engine, update, epoch, generation);
        delta.git = git_facts;
        let _ = tx.send(Event::GuardChanged(Box::new(delta)));
    }
}

/// Whether awareness hints are on (`initializationOptions.awareness`, else
/// `[guard] awareness`).
fn awareness(state: &State) -> bool {
    state.options.awareness.unwrap_or_else(|| {
        state
            .ctx
            .as_ref()
            .is_none_or(|ctx| ctx.config.config.guard.awareness)
    })
}
