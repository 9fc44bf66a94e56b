//! [`GuardEngine`]: owns every participant's working state, changes and
//! every pair's levels, and keeps them current incrementally.
//!
//! A change of one participant (paths written, HEAD or refs moved, editor
//! buffers) re-snapshots only that participant; when its snapshot or merge
//! base actually changed, its changes are re-diffed and only the pairs it is
//! part of are recomputed. Subscribers get a [`GuardUpdate`] per change.
//!
//! Invariants: the engine never watches anything itself (that is
//! [`super::watch`]) and never touches the store (that is `ops::guard`);
//! results are a function of the snapshots.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use git2::{Oid, Repository};
use globset::{Glob, GlobSet, GlobSetBuilder};
use owt_protocol::guard::{BaseConflict, GuardPair, GuardReport};

use super::changes::{self, Change};
use super::levels::{self, Side};
use super::snapshot::WorkState;
use super::source::JournalSource;
use super::tree::{self, RawChange};
use super::verdict::{self, Caches, Landing};
use super::GuardError;
use crate::store::now_ms;

mod full;
mod query;

/// The id (and name) of the human's own checkout.
pub const YOU: &str = "you";

/// Someone whose working state the guard compares: a session's worktree, or
/// the human's checkout.
#[derive(Debug, Clone)]
pub struct Participant {
    /// Unique among participants: the session name, or [`YOU`].
    pub id: String,
    /// The store's session id, for facts (`None` for the human).
    pub session_id: Option<i64>,
    pub worktree: PathBuf,
    pub base_branch: String,
    /// Where a full scan asks for the checkout's work journal before
    /// walking it (a session host; see [`super::journal`]).
    pub journal: Option<Arc<dyn JournalSource>>,
}

/// What one engine call changed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GuardUpdate {
    /// Participants whose snapshot or merge base changed.
    pub participants: Vec<String>,
    /// Participants whose HEAD moved (a commit of what was already in the
    /// working state moves HEAD and nothing else: no pair changes, but the
    /// commits ahead of the base do).
    pub heads_moved: Vec<String>,
    /// Pairs recomputed (`(a, b)` ids), whether or not their level changed.
    pub pairs: Vec<(String, String)>,
    /// Pairs whose report changed.
    pub changed_pairs: Vec<(String, String)>,
    /// Participants whose conflict with their base appeared, changed or
    /// went away.
    pub changed_base_conflicts: Vec<String>,
    pub elapsed: Duration,
}

struct State {
    participant: Participant,
    work: WorkState,
    changes: Vec<Change>,
    /// The tree diff the changes came from.
    raw: Arc<Vec<RawChange>>,
    /// `(snapshot, merge base)` the changes were computed for.
    computed_for: Option<(Oid, Option<Oid>)>,
    /// The state merged into its base's tip.
    landing: Option<Landing>,
    /// `(snapshot, HEAD, base tip)` the landing was computed for.
    landed_for: Option<(Oid, Option<Oid>, Option<Oid>)>,
    base_conflict: Option<BaseConflict>,
    computed_at: i64,
}

/// The incremental Conflict Guard.
pub struct GuardEngine {
    repo: Repository,
    ignore: GlobSet,
    states: BTreeMap<String, State>,
    pairs: BTreeMap<(String, String), Option<GuardPair>>,
    caches: Caches,
    /// Pairs and base conflicts were computed with the symbol index held
    /// back ([`GuardEngine::full_recompute_verdicts`]): their symbols and
    /// `semantic` notes are owed ([`GuardEngine::complete_symbols`]).
    symbols_owed: bool,
    subscribers: Vec<mpsc::Sender<GuardUpdate>>,
}

impl std::fmt::Debug for GuardEngine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GuardEngine")
            .field("repo", &self.repo.path())
            .field("participants", &self.states.keys().collect::<Vec<_>>())
            .finish()
    }
}

/// Compiles `[guard] ignore` globs (`*` does not cross `/`; `**` does).
pub fn ignore_set(globs: &[String]) -> Result<GlobSet, GuardError> {
    let mut builder = GlobSetBuilder::new();
    for glob in globs {
        builder.add(
            globset::GlobBuilder::new(glob)
                .literal_separator(true)
                .build()?,
        );
        if !glob.contains('/') {
            // A bare `Cargo.lock` or `*.lock` matches in any folder.
            builder.add(Glob::new(&format!("**/{glob}"))?);
        }
    }
    Ok(builder.build()?)
}

impl GuardEngine {
    /// An engine for the repository containing `dir`, with no participants.
    pub fn new(dir: &Path, ignore_globs: &[String]) -> Result<GuardEngine, GuardError> {
        // Every entry the guard puts in a tree comes from the object
        // database or was just written: skip libgit2's per-entry existence
        // check (a read per entry on every tree write). This is a
        // process-wide libgit2 option; it only drops a validation.
        git2::opts::strict_object_creation(false);
        // Nor re-hash every object read to check it against its id (as
        // git does not, outside `fsck`): the guard reads the snapshots'
        // loose trees and blobs again and again, and that SHA-1 (with
        // collision detection) was ~5% of a full recompute's CPU time.
        git2::opts::strict_hash_verification(false);
        let found = Repository::discover(dir)?;
        let repo = Repository::open(found.commondir())?;
        // The engine never uses an index, but libgit2 reads one to look up
        // attributes (the merge driver of each path a content merge
        // touches): the main checkout's index, read once and kept for the
        // engine's lifetime (about 130 bytes per file: 6.6 MB on 50,000
        // files). An empty in-memory index leaves the checked-out
        // `.gitattributes` files and `info/attributes` as the sources.
        repo.set_index(&mut git2::Index::new()?)?;
        Ok(GuardEngine {
            repo,
            ignore: ignore_set(ignore_globs)?,
            states: BTreeMap::new(),
            pairs: BTreeMap::new(),
            caches: Caches::default(),
            symbols_owed: false,
            subscribers: Vec::new(),
        })
    }

    pub fn repo(&self) -> &Repository {
        &self.repo
    }

    /// Adds (or replaces) a participant; it is scanned by the next
    /// [`GuardEngine::full_recompute`] or [`GuardEngine::rescan`].
    pub fn add_participant(&mut self, participant: Participant) -> Result<(), GuardError> {
        let mut work = WorkState::open(&participant.worktree, &participant.base_branch)?;
        work.journal = participant.journal.clone();
        self.insert_state(participant, work);
        Ok(())
    }

    /// Puts `participant` in place of any earlier one of its id, with
    /// nothing computed yet.
    fn insert_state(&mut self, participant: Participant, work: WorkState) {
        self.remove_participant(&participant.id);
        self.states.insert(
            participant.id.clone(),
            State {
                participant,
                work,
                changes: Vec::new(),
                raw: Arc::default(),
                computed_for: None,
                landing: None,
                landed_for: None,
                base_conflict: None,
                computed_at: 0,
            },
        );
    }

    /// Adds (or replaces) a participant with no checkout here — a session
    /// on a remote — whose working state is the snapshot commit at
    /// `snapshot_ref` (tree = snapshot, parent = its HEAD), fetched into
    /// this repository. Its `worktree` is ignored; it is re-read on
    /// [`GuardEngine::on_refs_changed`] (a fetch moves the ref).
    pub fn add_snapshot_participant(
        &mut self,
        mut participant: Participant,
        snapshot_ref: &str,
    ) -> Result<(), GuardError> {
        let work =
            WorkState::open_pinned(self.repo.path(), snapshot_ref, &participant.base_branch)?;
        participant.worktree = PathBuf::new();
        participant.journal = None;
        self.insert_state(participant, work);
        Ok(())
    }

    pub fn remove_participant(&mut self, id: &str) {
        self.states.remove(id);
        self.pairs.retain(|(a, b), _| a != id && b != id);
    }

    pub fn participants(&self) -> impl Iterator<Item = &Participant> {
        self.states.values().map(|s| &s.participant)
    }

    /// The participant whose checkout contains `path` (the deepest one).
    pub fn participant_for_path(&self, path: &Path) -> Option<&str> {
        self.states
            .values()
            .filter(|s| s.work.pinned.is_none() && path.starts_with(&s.work.worktree))
            .max_by_key(|s| s.work.worktree.as_os_str().len())
            .map(|s| s.participant.id.as_str())
    }

    /// Checkouts and git dirs of every participant (for the watcher).
    pub fn watch_roots(&self) -> Vec<(String, PathBuf, PathBuf)> {
        self.states
            .values()
            .filter(|s| s.work.pinned.is_none())
            .map(|s| {
                (
                    s.participant.id.clone(),
                    s.work.worktree.clone(),
                    s.work.git_dir(),
                )
            })
            .collect()
    }

    /// The repository's common git dir.
    pub fn common_dir(&self) -> PathBuf {
        self.repo.path().to_path_buf()
    }

    /// A receiver of every future [`GuardUpdate`].
    pub fn subscribe(&mut self) -> mpsc::Receiver<GuardUpdate> {
        let (tx, rx) = mpsc::channel();
        self.subscribers.push(tx);
        rx
    }

    /// Turns the symbol index (enclosing symbols in messages, the
    /// `semantic` level) on or off (on by default); takes effect for the
    /// pairs computed from then on (`recompute_pairs` for all of them).
    pub fn set_symbols(&mut self, on: bool) {
        self.caches.symbols.enabled = on;
    }

    /// Whether the symbol index parses old versions around the lines
    /// asked only (`symbols::regions`, the default) or whole (to compare
    /// the two in tests and benchmarks).
    pub fn set_symbol_regions(&mut self, on: bool) {
        self.caches.symbols.regions = on;
    }

    /// Keeps the symbols of the blobs the index parses on disk, under
    /// `home` (`$OWT_HOME`), and reads them from there before parsing a
    /// blob ([`super::symbols::DiskCache`]); `None`: in memory only (the
    /// default).
    pub fn set_symbol_cache(&mut self, home: Option<&Path>) {
        self.caches.symbols.disk = home.map(super::symbols::DiskCache::new);
    }

    /// Keeps a commit-graph of the repository under `home` (`$OWT_HOME`)
    /// for git's walks of its history, when the repository has none of its
    /// own ([`super::commit_graph`]); `None`: none (the default).
    pub fn set_commit_graph(&mut self, home: Option<&Path>) {
        self.caches.graph = home
            .and_then(|home| super::commit_graph::CommitGraph::for_repo(home, self.repo.path()));
        self.caches.own_graph =
            home.and_then(|_| super::commit_graph::own_reader(self.repo.path()));
    }

    /// Re-scans one participant's whole checkout (after it was added, or
    /// when events may have been lost); a HEAD that moved is in
    /// `heads_moved`, as from [`Self::on_refs_changed`].
    pub fn rescan(&mut self, id: &str) -> Result<GuardUpdate, GuardError> {
        // The full scan reads HEAD, the index and the refs again too.
        self.reread(id, WorkState::scan_full)
    }

    /// Paths in a participant's checkout changed on disk (relative to it, or
    /// absolute inside it; folders are expanded).
    pub fn on_paths_changed(
        &mut self,
        id: &str,
        paths: &[PathBuf],
    ) -> Result<GuardUpdate, GuardError> {
        let started = Instant::now();
        self.state_mut(id)?.work.refresh_paths(paths)?;
        self.settle(id, started)
    }

    /// A participant's HEAD, index or refs changed (a commit, a checkout, a
    /// reset, its base branch moved).
    pub fn on_refs_changed(&mut self, id: &str) -> Result<GuardUpdate, GuardError> {
        self.reread(id, WorkState::refresh_refs)
    }

    /// Reads a participant's checkout again with `read` and settles it; a
    /// HEAD that moved meanwhile is in `heads_moved`.
    fn reread(
        &mut self,
        id: &str,
        read: impl FnOnce(&mut WorkState) -> Result<bool, GuardError>,
    ) -> Result<GuardUpdate, GuardError> {
        let started = Instant::now();
        let work = &mut self.state_mut(id)?.work;
        let head_before = work.head;
        read(work)?;
        let moved = work.head != head_before;
        let mut update = self.settle(id, started)?;
        if moved {
            update.heads_moved.push(id.to_string());
        }
        Ok(update)
    }

    /// Replaces a participant's unsaved editor buffers (path relative to its
    /// checkout, or absolute inside it → full text). An empty map clears
    /// them.
    pub fn set_overrides(
        &mut self,
        id: &str,
        overrides: BTreeMap<PathBuf, String>,
    ) -> Result<GuardUpdate, GuardError> {
        let started = Instant::now();
        let state = self.state_mut(id)?;
        let root = state.work.worktree.clone();
        let overrides = overrides
            .into_iter()
            .map(|(path, text)| {
                let rel = path
                    .strip_prefix(&root)
                    .map(Path::to_path_buf)
                    .unwrap_or(path);
                (rel.to_string_lossy().into_owned(), text)
            })
            .collect();
        state.work.set_overrides(overrides)?;
        self.settle(id, started)
    }

    /// Every overlapping pair as the files on disk make it: the pairs of a
    /// participant with unsaved buffers are computed without them, then
    /// the buffers are handed back (merges are cached by tree, so both
    /// steps re-merge little). What a new engine over the same checkouts
    /// finds, without building one.
    pub fn pairs_on_disk(&mut self) -> Result<Vec<GuardPair>, GuardError> {
        self.on_disk(|engine| engine.pairs().into_iter().cloned().collect())
    }

    /// The whole report as the files on disk make it (see
    /// [`GuardEngine::pairs_on_disk`]): what `owt guard` computing from
    /// scratch prints, for `owt lsp` to answer it.
    pub fn report_on_disk(&mut self, repository: &str) -> Result<GuardReport, GuardError> {
        self.on_disk(|engine| engine.report(repository))
    }

    /// `read` of the engine with every participant's unsaved buffers set
    /// aside, then handed back.
    fn on_disk<T>(&mut self, read: impl FnOnce(&GuardEngine) -> T) -> Result<T, GuardError> {
        let buffered: Vec<(String, BTreeMap<String, String>)> = self
            .states
            .iter()
            .filter(|(_, s)| !s.work.overrides.is_empty())
            .map(|(id, s)| (id.clone(), s.work.overrides.clone()))
            .collect();
        let mut result = Ok(());
        for (id, _) in &buffered {
            result = result.and_then(|()| {
                self.state_mut(id)?.work.set_overrides(BTreeMap::new())?;
                self.settle(id, Instant::now()).map(drop)
            });
        }
        let out = result.map(|()| read(self));
        for (id, overrides) in buffered {
            let restored = self
                .state_mut(&id)
                .and_then(|s| s.work.set_overrides(overrides))
                .and_then(|_| self.settle(&id, Instant::now()));
            if let Err(e) = restored {
                tracing::warn!(
                    "conflict guard: handing back the unsaved buffers of {id} failed: {e}"
                );
            }
        }
        out
    }

    fn state_mut(&mut self, id: &str) -> Result<&mut State, GuardError> {
        self.states
            .get_mut(id)
            .ok_or_else(|| GuardError::NoParticipant(id.to_string()))
    }

    /// After `id`'s working state was refreshed: re-diff it and recompute
    /// its pairs when its snapshot or merge base changed.
    fn settle(&mut self, id: &str, started: Instant) -> Result<GuardUpdate, GuardError> {
        let mut update = GuardUpdate::default();
        if self.recompute_participant(id, &mut update)? {
            update.participants.push(id.to_string());
            let others: Vec<String> = self.states.keys().filter(|k| *k != id).cloned().collect();
            for other in others {
                let (a, b) = if id < other.as_str() {
                    (id.to_string(), other)
                } else {
                    (other, id.to_string())
                };
                self.recompute_pair(&a, &b, &mut update)?;
            }
        }
        update.elapsed = started.elapsed();
        if !update.participants.is_empty() {
            self.publish(&update);
        }
        Ok(update)
    }

    /// Recomputes a participant's changes when its snapshot or merge base
    /// changed, and its landing when its snapshot, HEAD or base tip did.
    /// Returns whether either changed (its pairs need recomputing).
    fn recompute_participant(
        &mut self,
        id: &str,
        update: &mut GuardUpdate,
    ) -> Result<bool, GuardError> {
        let state = self
            .states
            .get_mut(id)
            .ok_or_else(|| GuardError::NoParticipant(id.to_string()))?;
        let Some(snapshot) = state.work.snapshot else {
            return Ok(false);
        };
        let mut changed = false;
        let key = (snapshot, state.work.merge_base);
        if state.computed_for != Some(key) {
            let raw = tree::diff_trees(&self.repo, state.work.merge_base_tree, Some(snapshot))?;
            state.changes =
                changes::changes_from_raw(&self.repo, raw.clone(), &mut self.caches.hunks)?;
            state.raw = Arc::new(raw);
            if let Some(base_tree) = state.work.merge_base_tree {
                self.caches
                    .remember_diff(base_tree, snapshot, state.raw.clone());
            }
            state.computed_for = Some(key);
            state.computed_at = now_ms();
            changed = true;
        }
        let landed_key = (snapshot, state.work.head, state.work.base_tip);
        if changed || state.landed_for != Some(landed_key) {
            let landing = verdict::land(
                &self.repo,
                &mut self.caches,
                &verdict::State {
                    head: state.work.head,
                    base_tip: state.work.base_tip,
                    snapshot,
                },
            )?;
            if state.landing.as_ref() != Some(&landing) {
                changed = true;
            }
            state.landing = Some(landing);
            state.landed_for = Some(landed_key);
            self.recompute_base_conflict(id, update)?;
        }
        Ok(changed)
    }

    /// A participant's conflict with its base, from its landing.
    fn recompute_base_conflict(
        &mut self,
        id: &str,
        update: &mut GuardUpdate,
    ) -> Result<(), GuardError> {
        let state = self
            .states
            .get_mut(id)
            .ok_or_else(|| GuardError::NoParticipant(id.to_string()))?;
        let base_conflict = match (&state.landing, state.work.snapshot) {
            (Some(landing), Some(snapshot)) => levels::base_conflict(
                &self.repo,
                &mut self.caches,
                &side(state, snapshot, landing),
                &state.participant.base_branch,
            )?,
            _ => None,
        };
        if base_conflict != state.base_conflict {
            update.changed_base_conflicts.push(id.to_string());
            state.base_conflict = base_conflict;
        }
        Ok(())
    }

    fn recompute_pair(
        &mut self,
        a: &str,
        b: &str,
        update: &mut GuardUpdate,
    ) -> Result<(), GuardError> {
        let (Some(sa), Some(sb)) = (self.states.get(a), self.states.get(b)) else {
            return Ok(());
        };
        let (Some(snap_a), Some(snap_b)) = (sa.work.snapshot, sb.work.snapshot) else {
            return Ok(());
        };
        let (Some(landing_a), Some(landing_b)) = (&sa.landing, &sb.landing) else {
            return Ok(());
        };
        let result = levels::compare(
            &self.repo,
            &self.ignore,
            &side(sa, snap_a, landing_a),
            &side(sb, snap_b, landing_b),
            &mut self.caches,
        )?;
        let key = (a.to_string(), b.to_string());
        update.pairs.push(key.clone());
        let previous = self.pairs.insert(key.clone(), result.clone());
        if previous.flatten() != result {
            update.changed_pairs.push(key);
        }
        Ok(())
    }

    fn publish(&mut self, update: &GuardUpdate) {
        self.subscribers
            .retain(|tx| tx.send(update.clone()).is_ok());
    }
}

fn side<'a>(s: &'a State, snapshot: Oid, landing: &'a Landing) -> Side<'a> {
    Side {
        name: &s.participant.id,
        head: s.work.head,
        base_tip: s.work.base_tip,
        merge_base: s.work.merge_base,
        merge_base_tree: s.work.merge_base_tree,
        snapshot,
        changes: &s.changes,
        raw: &s.raw,
        landing,
    }
}
