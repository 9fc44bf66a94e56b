//! The merges a supervisor asks about, done in memory:
//!
//! - **landing**: a participant's working state merged into the current
//!   tip `T` of its base branch, over the merge bases of its HEAD and `T`
//!   (what shipping it now does). A landing that conflicts is a
//!   `base-conflict`; a clean one gives the tree `T ⊕ state`.
//! - **pair order** `(X, Y)`: `Y`'s state merged into `T_X ⊕ X`'s state,
//!   over the best common ancestors of (`T_X`, `X`'s HEAD) and `Y`'s HEAD
//!   (what merging `Y` after shipping `X` does). History both share —
//!   stacked sessions, branches synced from the same upstream, sessions
//!   created at different base commits — is in that merge base, so only
//!   what the agents changed can conflict.
//!
//! Each equals `git merge-tree --write-tree` on the same states as commits
//! (`state` = a commit of the snapshot tree whose parent is HEAD; `T ⊕ X` =
//! a commit of the landing's tree whose parents are `T` and `X`'s state).
//! With one merge base the merge runs on trees ([`super::merge`]); with
//! several, git merges those commits itself (recursively, as it would).
//!
//! Cost: merge bases are cached by the commits asked; the common case — a
//! session whose own commits are not in the other's history, both on the
//! same base tip — needs no history walk at all beyond each participant's
//! own commits ([`History::exclusive`]); tree diffs and merge verdicts are
//! cached by tree ids, so an update re-merges only what changed.
//!
//! Invariants: pure over the object database (writes trees and, for
//! several merge bases, commits; never a ref, an index or a file).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use git2::{Oid, Repository};

use super::changes::HunkCache;
use super::merge::{self, MergeOutcome};
use super::tree::{self, RawChange};
use super::GuardError;

/// Own commits are listed up to this many; beyond, merge bases are asked
/// of the commit graph directly.
const EXCLUSIVE_LIMIT: usize = 4096;
/// Entries kept per cache before it is emptied.
const CACHE_LIMIT: usize = 20_000;

/// Merge verdicts by `(base tree, ours, theirs)`.
pub type MergeCache = HashMap<(Oid, Oid, Oid), MergeOutcome>;

/// Everything the verdicts cache, owned by the engine.
#[derive(Default)]
pub struct Caches {
    pub hunks: HunkCache,
    /// Pair merges (no tree kept).
    pub merges: MergeCache,
    /// Landing merges (with the merged tree).
    pub landings: MergeCache,
    /// Verdicts git gave on commits: `(ours, theirs)`.
    pub commit_merges: HashMap<(Oid, Oid), MergeOutcome>,
    pub history: History,
    diffs: HashMap<(Oid, Oid), Arc<Vec<RawChange>>>,
    /// Parsed files and signature changes (`levels`' symbol-aware
    /// messages and the `semantic` level); content-addressed, never stale.
    pub symbols: super::symbols::SymbolIndex,
    /// owt's commit-graph of the repository, for git's walks of its
    /// history (`None`: git parses the commits, or reads the
    /// repository's own graph).
    pub graph: Option<super::commit_graph::CommitGraph>,
    /// git reading the repository's own commit-graph, when it has one
    /// (and a graph is wanted: [`super::GuardEngine::set_commit_graph`]).
    pub own_graph: Option<super::commit_graph::GraphGit>,
}

impl Caches {
    /// git asked about history where it reads a commit-graph (the
    /// repository's own, else owt's once written); `None`: libgit2 walks.
    pub fn graph_git(&self) -> Option<super::commit_graph::GraphGit> {
        self.own_graph
            .clone()
            .or_else(|| self.graph.as_ref()?.reader())
    }

    /// The tree diff from `old` to `new`, cached.
    pub fn diff(
        &mut self,
        repo: &Repository,
        old: Oid,
        new: Oid,
    ) -> Result<Arc<Vec<RawChange>>, GuardError> {
        if let Some(found) = self.diffs.get(&(old, new)) {
            return Ok(found.clone());
        }
        let diff = Arc::new(tree::diff_trees(repo, Some(old), Some(new))?);
        self.remember_diff(old, new, diff.clone());
        Ok(diff)
    }

    /// Seeds the diff cache with a diff computed elsewhere.
    pub fn remember_diff(&mut self, old: Oid, new: Oid, diff: Arc<Vec<RawChange>>) {
        if self.diffs.len() > CACHE_LIMIT {
            self.diffs.clear();
        }
        self.diffs.insert((old, new), diff);
    }

    /// Drops every cached verdict (not the history, which cannot change).
    pub fn clear_verdicts(&mut self) {
        self.hunks = HunkCache::default();
        self.merges.clear();
        self.landings.clear();
        self.commit_merges.clear();
        self.diffs.clear();
    }

    /// A three-way merge of trees, cached; `keep` tells which cache (and
    /// whether the merged tree is kept).
    fn merge_trees(
        &mut self,
        repo: &Repository,
        base: Oid,
        ours: Oid,
        theirs: Oid,
        want_tree: bool,
    ) -> Result<MergeOutcome, GuardError> {
        let key = (base, ours, theirs);
        let found = if want_tree {
            self.landings.get(&key)
        } else {
            self.merges.get(&key).or_else(|| self.landings.get(&key))
        };
        if let Some(found) = found {
            return Ok(found.clone());
        }
        if !want_tree {
            // The other order of a pair is often this merge mirrored (both
            // landings trivial, one merge base). Where git's answer was not
            // needed, a merge is path by path over the paths both changed,
            // and a path conflicts where both sides' changes overlap,
            // whichever is ours: the same verdict, conflicting paths and
            // all. (A verdict of git's own, with renames in play, is not
            // reused: `ort` may name paths by side.)
            let mirrored = (base, theirs, ours);
            let found = self
                .merges
                .get(&mirrored)
                .or_else(|| self.landings.get(&mirrored))
                .filter(|f| f.backend != merge::Backend::GitCli);
            if let Some(found) = found {
                let outcome = MergeOutcome {
                    tree: None,
                    ..found.clone()
                };
                if self.merges.len() > CACHE_LIMIT {
                    self.merges.clear();
                }
                self.merges.insert(key, outcome.clone());
                return Ok(outcome);
            }
        }
        let ours_diff = self.diff(repo, base, ours)?;
        let theirs_diff = self.diff(repo, base, theirs)?;
        let outcome = merge::merge_trees_with_diffs(
            repo,
            base,
            ours,
            theirs,
            Some((&ours_diff, &theirs_diff)),
            want_tree,
        )?;
        let cache = if want_tree {
            &mut self.landings
        } else {
            &mut self.merges
        };
        if cache.len() > CACHE_LIMIT {
            cache.clear();
        }
        cache.insert(key, outcome.clone());
        Ok(outcome)
    }

    /// Asks git for the verdicts of these merges of commits (`(ours,
    /// theirs)`) at once ([`merge::merge_commits_batch`]) and caches them,
    /// so that [`after`] finds them there: a full recompute's pairs with
    /// several merge bases. Two or more not cached yet, else nothing is
    /// done (one is asked when needed, as before); a batch that fails is
    /// left to those single merges, which report the error.
    pub fn prefetch_commit_merges(&mut self, repo: &Repository, merges: &[(Oid, Oid)]) {
        let mut wanted: Vec<(Oid, Oid)> = merges
            .iter()
            .filter(|key| !self.commit_merges.contains_key(key))
            .copied()
            .collect();
        wanted.sort();
        wanted.dedup();
        if wanted.len() < 2 {
            return;
        }
        let jobs = std::thread::available_parallelism().map_or(2, |n| n.get().min(4));
        let graph = self.graph.as_mut();
        let outcomes = merge::merge_commits_batch(repo.path(), graph, &wanted, jobs);
        self.history.git = self.graph_git();
        let Ok(outcomes) = outcomes else {
            return;
        };
        if self.commit_merges.len() + wanted.len() > CACHE_LIMIT {
            self.commit_merges.clear();
        }
        self.commit_merges.extend(wanted.into_iter().zip(outcomes));
    }

    fn merge_commits(
        &mut self,
        repo: &Repository,
        ours: Oid,
        theirs: Oid,
        want_tree: bool,
    ) -> Result<MergeOutcome, GuardError> {
        if let Some(found) = self.commit_merges.get(&(ours, theirs)) {
            if found.tree.is_some() || !want_tree {
                return Ok(found.clone());
            }
        }
        // Always keep the tree: it is free with git.
        let graph = self.graph.as_mut();
        let outcome = merge::merge_commits_with_git(repo.path(), graph, ours, theirs, true);
        // Merge bases from git too, once the graph is written.
        self.history.git = self.graph_git();
        let outcome = outcome?;
        if self.commit_merges.len() > CACHE_LIMIT {
            self.commit_merges.clear();
        }
        self.commit_merges.insert((ours, theirs), outcome.clone());
        Ok(outcome)
    }
}

/// Commits of one side that the other does not have, by `(side, other)`.
type Exclusive = HashMap<(Oid, Option<Oid>), Option<Arc<HashSet<Oid>>>>;

/// Merge bases and own commits, by the commits asked (history never
/// changes under an id, so nothing here goes stale).
#[derive(Default)]
pub struct History {
    bases: HashMap<(Oid, Vec<Oid>), Arc<Vec<Oid>>>,
    exclusive: Exclusive,
    /// Commits written for the git backend: `(tree, parents)` → commit.
    commits: HashMap<(Oid, Vec<Oid>), Oid>,
    /// git where it reads a commit-graph ([`Caches::graph_git`]), asked
    /// for merge bases once libgit2's walks were slow
    /// ([`super::commit_graph::merge_bases`]).
    pub git: Option<super::commit_graph::GraphGit>,
}

impl History {
    /// The best common ancestors of `one` and a merge of all of `others`
    /// (`git merge-base --all one others…`), sorted.
    pub fn merge_bases(
        &mut self,
        repo: &Repository,
        one: Oid,
        others: &[Oid],
    ) -> Result<Arc<Vec<Oid>>, GuardError> {
        let mut others = others.to_vec();
        others.sort();
        others.dedup();
        let key = (one, others);
        if let Some(found) = self.bases.get(&key) {
            return Ok(found.clone());
        }
        let found = if key.1.contains(&one) {
            vec![one]
        } else {
            super::commit_graph::merge_bases(repo, self.git.as_ref(), one, &key.1)?
        };
        let found = Arc::new(found);
        if self.bases.len() > CACHE_LIMIT {
            self.bases.clear();
        }
        self.bases.insert(key, found.clone());
        Ok(found)
    }

    /// The commits of `head` that `base` does not have (`git rev-list
    /// base..head`); `None` when there are too many to list.
    pub fn exclusive(
        &mut self,
        repo: &Repository,
        head: Oid,
        base: Option<Oid>,
    ) -> Result<Option<Arc<HashSet<Oid>>>, GuardError> {
        if let Some(found) = self.exclusive.get(&(head, base)) {
            return Ok(found.clone());
        }
        let mut walk = repo.revwalk()?;
        walk.push(head)?;
        if let Some(base) = base {
            walk.hide(base)?;
        }
        let mut set = HashSet::new();
        let mut complete = true;
        for id in walk {
            set.insert(id?);
            if set.len() > EXCLUSIVE_LIMIT {
                complete = false;
                break;
            }
        }
        let found = complete.then(|| Arc::new(set));
        if self.exclusive.len() > CACHE_LIMIT {
            self.exclusive.clear();
        }
        self.exclusive.insert((head, base), found.clone());
        Ok(found)
    }

    /// A commit of `tree` with `parents` (fixed author and date, so the
    /// same state is the same commit), written once.
    fn commit(&mut self, repo: &Repository, tree: Oid, parents: &[Oid]) -> Result<Oid, GuardError> {
        let key = (tree, parents.to_vec());
        if let Some(found) = self.commits.get(&key) {
            return Ok(*found);
        }
        let signature = git2::Signature::new("owt", "owt@localhost", &git2::Time::new(0, 0))?;
        let tree_object = repo.find_tree(tree)?;
        let parent_commits = parents
            .iter()
            .map(|id| repo.find_commit(*id))
            .collect::<Result<Vec<_>, _>>()?;
        let refs: Vec<&git2::Commit<'_>> = parent_commits.iter().collect();
        let id = repo.commit(
            None,
            &signature,
            &signature,
            "owt conflict guard state",
            &tree_object,
            &refs,
        )?;
        if self.commits.len() > CACHE_LIMIT {
            self.commits.clear();
        }
        self.commits.insert(key, id);
        Ok(id)
    }
}

/// What a participant's state is, for the verdicts.
#[derive(Debug, Clone, Copy)]
pub struct State {
    pub head: Option<Oid>,
    pub base_tip: Option<Oid>,
    pub snapshot: Oid,
}

/// A participant's state merged into its base's tip.
#[derive(Debug, Clone, PartialEq)]
pub struct Landing {
    /// The tip it was merged into.
    pub base_tip: Option<Oid>,
    /// The merge bases of HEAD and the tip.
    pub bases: Arc<Vec<Oid>>,
    /// `tip ⊕ state` (when clean).
    pub tree: Option<Oid>,
    pub outcome: MergeOutcome,
    /// HEAD's commits the tip does not have (`None`: too many to list).
    pub exclusive: Option<Arc<HashSet<Oid>>>,
}

impl Landing {
    pub fn clean(&self) -> bool {
        self.outcome.clean
    }
}

fn tree_of(repo: &Repository, commit: Oid) -> Result<Oid, GuardError> {
    Ok(repo.find_commit(commit)?.tree_id())
}

/// The state as a commit (snapshot tree, parent HEAD), for git.
fn state_commit(repo: &Repository, caches: &mut Caches, s: &State) -> Result<Oid, GuardError> {
    let parents: Vec<Oid> = s.head.into_iter().collect();
    caches.history.commit(repo, s.snapshot, &parents)
}

/// Merges the state into its base's tip.
pub fn land(repo: &Repository, caches: &mut Caches, s: &State) -> Result<Landing, GuardError> {
    let clean_as_is = |bases: Arc<Vec<Oid>>, exclusive| Landing {
        base_tip: s.base_tip,
        bases,
        tree: Some(s.snapshot),
        outcome: MergeOutcome {
            clean: true,
            conflicts: Vec::new(),
            tree: Some(s.snapshot),
            backend: merge::Backend::Trivial,
        },
        exclusive,
    };
    let (Some(head), Some(tip)) = (s.head, s.base_tip) else {
        // No base to merge into (or nothing committed yet): the state lands
        // as it is.
        return Ok(clean_as_is(Arc::new(Vec::new()), None));
    };
    let bases = caches.history.merge_bases(repo, head, &[tip])?;
    let exclusive = caches.history.exclusive(repo, head, Some(tip))?;
    if bases.as_slice() == [tip] {
        // The tip is in HEAD's history: nothing to merge.
        return Ok(clean_as_is(bases, exclusive));
    }
    let tip_tree = tree_of(repo, tip)?;
    let outcome = match bases.as_slice() {
        [base] => {
            let base_tree = tree_of(repo, *base)?;
            caches.merge_trees(repo, base_tree, tip_tree, s.snapshot, true)?
        }
        [] => {
            let empty = tree::empty_tree(repo)?;
            caches.merge_trees(repo, empty, tip_tree, s.snapshot, true)?
        }
        _ => {
            let state = state_commit(repo, caches, s)?;
            caches.merge_commits(repo, tip, state, true)?
        }
    };
    Ok(Landing {
        base_tip: s.base_tip,
        bases,
        tree: outcome.tree.filter(|_| outcome.clean),
        outcome,
        exclusive,
    })
}

/// `second`'s state merged into `first`'s landing (which must be clean).
pub fn after(
    repo: &Repository,
    caches: &mut Caches,
    first: (&State, &Landing),
    second: (&State, &Landing),
) -> Result<MergeOutcome, GuardError> {
    let (x, _) = first;
    let (y, _) = second;
    let (landed, bases) = after_bases(repo, caches, first, second)?;
    match bases.as_slice() {
        [base] => {
            let base_tree = tree_of(repo, *base)?;
            caches.merge_trees(repo, base_tree, landed, y.snapshot, false)
        }
        [] => {
            let empty = tree::empty_tree(repo)?;
            caches.merge_trees(repo, empty, landed, y.snapshot, false)
        }
        _ => {
            let (x_landed, y_state) = after_commits(repo, caches, x, landed, y)?;
            caches.merge_commits(repo, x_landed, y_state, false)
        }
    }
}

/// The commits git merges for [`after`] when the pair has several merge
/// bases (`None`: the merge runs on trees), for
/// [`Caches::prefetch_commit_merges`].
pub fn after_commit_merge(
    repo: &Repository,
    caches: &mut Caches,
    first: (&State, &Landing),
    second: (&State, &Landing),
) -> Result<Option<(Oid, Oid)>, GuardError> {
    let (landed, bases) = after_bases(repo, caches, first, second)?;
    if bases.len() < 2 {
        return Ok(None);
    }
    after_commits(repo, caches, first.0, landed, second.0).map(Some)
}

/// `first`'s landed tree, and the merge bases [`after`] merges over.
fn after_bases(
    repo: &Repository,
    caches: &mut Caches,
    first: (&State, &Landing),
    second: (&State, &Landing),
) -> Result<(Oid, Arc<Vec<Oid>>), GuardError> {
    let (x, x_landing) = first;
    let (y, y_landing) = second;
    let landed = x_landing.tree.ok_or_else(|| {
        GuardError::Internal("a pair merged after a landing that conflicts".into())
    })?;
    let mut x_commits: Vec<Oid> = x.base_tip.into_iter().chain(x.head).collect();
    x_commits.sort();
    x_commits.dedup();
    let bases = match y.head {
        None => Arc::new(Vec::new()),
        Some(y_head) => {
            // Common case: the same tip, and neither's own commits are in
            // the other's history. The common ancestors of (tip, X's HEAD)
            // and Y's HEAD are then those of the tip and Y's HEAD: Y's
            // landing's merge bases.
            let disjoint = match (&x_landing.exclusive, &y_landing.exclusive) {
                (Some(a), Some(b)) => a.is_disjoint(b),
                _ => false,
            };
            if x.base_tip.is_some() && x.base_tip == y.base_tip && disjoint {
                y_landing.bases.clone()
            } else if x_commits.is_empty() {
                Arc::new(Vec::new())
            } else {
                caches.history.merge_bases(repo, y_head, &x_commits)?
            }
        }
    };
    Ok((landed, bases))
}

/// `T_X ⊕ X` and `Y`'s state as commits, for git.
fn after_commits(
    repo: &Repository,
    caches: &mut Caches,
    x: &State,
    landed: Oid,
    y: &State,
) -> Result<(Oid, Oid), GuardError> {
    let x_state = state_commit(repo, caches, x)?;
    let mut parents: Vec<Oid> = x.base_tip.into_iter().collect();
    parents.push(x_state);
    let x_landed = caches.history.commit(repo, landed, &parents)?;
    let y_state = state_commit(repo, caches, y)?;
    Ok((x_landed, y_state))
}
