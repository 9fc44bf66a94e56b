//! The owner thread's copy of what diagnostics need from the Conflict
//! Guard, kept current from deltas.
//!
//! A [`GuardDelta`] is taken while its taker holds the engine (the
//! watcher, in its update callback; the owner, right after handing the
//! guard unsaved buffers): the participants and pairs one
//! [`GuardUpdate`] recomputed, with each pair member's hunks in the pair's
//! paths. Applying it to a [`GuardView`] says which paths need new
//! diagnostics, so nothing locks the engine a second time or rebuilds the
//! whole report per change.
//!
//! Deltas are stamped: an `epoch` per engine (a restarted guard ignores
//! the old engine's deltas still queued) and a `generation` counted under
//! the engine lock (a delta taken earlier never overwrites a later one,
//! whichever reaches the owner first).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::Arc;

use owt_protocol::guard::{BaseConflict, GuardPair, Level};

use owt_core::guard::{GuardEngine, GuardUpdate, Hunk};
use owt_core::ops::guard::SnapshotGitFact;

/// A participant, as diagnostics need it.
#[derive(Debug, Clone, PartialEq)]
pub struct SideInfo {
    pub worktree: PathBuf,
    /// The commit its changes are counted from.
    pub merge_base: Option<String>,
    /// Every path it changed (for the awareness hint in open documents).
    pub changes: Arc<BTreeMap<String, ChangedPath>>,
    /// Its state no longer merges into its base's tip (`base-conflict`).
    pub base_conflict: Option<BaseConflict>,
}

/// One path a participant changed, as the awareness hint needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangedPath {
    pub hunks: Vec<Hunk>,
    /// New on its side.
    pub added: bool,
    pub deleted: bool,
    pub binary: bool,
}

/// One overlapping pair and each member's hunks in its paths.
#[derive(Debug, Clone, PartialEq)]
pub struct LivePair {
    pub pair: GuardPair,
    /// member id → path → hunks.
    hunks: BTreeMap<String, BTreeMap<String, Vec<Hunk>>>,
}

impl LivePair {
    /// `who`'s hunks in `path` (`None` when `who` did not change it).
    pub fn hunks(&self, who: &str, path: &str) -> Option<&[Hunk]> {
        self.hunks.get(who)?.get(path).map(Vec::as_slice)
    }

    /// The paths its diagnostics are in: its paths, and the definitions and
    /// uses of its `semantic` notes.
    fn paths(&self) -> impl Iterator<Item = &str> {
        self.pair.paths.iter().map(|p| p.path.as_str()).chain(
            self.pair
                .semantic
                .iter()
                .flat_map(|n| [n.path.as_str(), n.used_in.as_str()]),
        )
    }
}

/// What one engine update changed, taken under the engine lock.
#[derive(Debug, Clone, PartialEq)]
pub struct GuardDelta {
    pub epoch: u64,
    pub generation: u64,
    /// Every participant (not only the changed ones) when it is a full
    /// delta.
    pub full: bool,
    pub participants: Vec<(String, SideInfo)>,
    /// Recomputed pairs; `None`: the pair no longer overlaps.
    pub pairs: Vec<((String, String), Option<LivePair>)>,
    /// The git facts (commits ahead, changed files) of the sessions whose
    /// snapshot or HEAD changed, as the snapshots show them.
    pub git: Vec<SnapshotGitFact>,
}

fn side_info(engine: &GuardEngine, id: &str) -> Option<SideInfo> {
    let changes = engine
        .changes(id)
        .unwrap_or_default()
        .iter()
        .map(|change| {
            (
                change.path.clone(),
                ChangedPath {
                    hunks: change.hunks.clone(),
                    added: change.old.is_none(),
                    deleted: change.new.is_none(),
                    binary: change.binary,
                },
            )
        })
        .collect();
    Some(SideInfo {
        worktree: engine.worktree(id)?.to_path_buf(),
        merge_base: engine.merge_base(id).map(|oid| oid.to_string()),
        changes: Arc::new(changes),
        base_conflict: engine.base_conflict(id).cloned(),
    })
}

fn live_pair(engine: &GuardEngine, pair: &GuardPair) -> LivePair {
    let paths: BTreeSet<&str> = pair.paths.iter().map(|p| p.path.as_str()).collect();
    let mut hunks = BTreeMap::new();
    for member in [&pair.a, &pair.b] {
        let mine: BTreeMap<String, Vec<Hunk>> = engine
            .changes(member)
            .unwrap_or_default()
            .iter()
            .filter(|change| paths.contains(change.path.as_str()))
            .map(|change| (change.path.clone(), change.hunks.clone()))
            .collect();
        hunks.insert(member.clone(), mine);
    }
    LivePair {
        pair: pair.clone(),
        hunks,
    }
}

impl GuardDelta {
    /// What `update` recomputed.
    pub fn of(engine: &GuardEngine, update: &GuardUpdate, epoch: u64, generation: u64) -> Self {
        let participants = update
            .participants
            .iter()
            .chain(&update.changed_base_conflicts)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .filter_map(|id| Some((id.clone(), side_info(engine, id)?)))
            .collect();
        let pairs = update
            .pairs
            .iter()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .map(|(a, b)| {
                let pair = engine.pair(a, b).map(|pair| live_pair(engine, pair));
                ((a.clone(), b.clone()), pair)
            })
            .collect();
        GuardDelta {
            epoch,
            generation,
            full: false,
            participants,
            pairs,
            git: Vec::new(),
        }
    }

    /// Everything the engine knows (a guard that just started).
    pub fn full(engine: &GuardEngine, epoch: u64, generation: u64) -> Self {
        let participants = engine
            .participants()
            .filter_map(|p| Some((p.id.clone(), side_info(engine, &p.id)?)))
            .collect();
        let pairs = engine
            .pairs()
            .into_iter()
            .map(|pair| {
                (
                    (pair.a.clone(), pair.b.clone()),
                    Some(live_pair(engine, pair)),
                )
            })
            .collect();
        GuardDelta {
            epoch,
            generation,
            full: true,
            participants,
            pairs,
            git: Vec::new(),
        }
    }
}

/// The owner's copy; see the module doc.
#[derive(Debug, Default)]
pub struct GuardView {
    /// A full delta was applied before (the first one announces no
    /// conflicts: they were there when the editor came).
    seeded: bool,
    participants: BTreeMap<String, (u64, SideInfo)>,
    /// `None` entries remember when a pair stopped overlapping.
    pairs: BTreeMap<(String, String), (u64, Option<LivePair>)>,
}

/// What applying a delta changed.
#[derive(Debug, Default, PartialEq)]
pub struct Applied {
    /// Paths whose diagnostics may differ (`None`: every path).
    pub paths: Option<BTreeSet<String>>,
    /// Pairs that conflict now and did not before.
    pub new_conflicts: Vec<GuardPair>,
}

impl GuardView {
    pub fn participant(&self, id: &str) -> Option<&SideInfo> {
        self.participants.get(id).map(|(_, side)| side)
    }

    /// Every participant, in id order.
    pub fn participants(&self) -> impl Iterator<Item = (&String, &SideInfo)> {
        self.participants.iter().map(|(id, (_, side))| (id, side))
    }

    /// Every overlapping pair, in id order.
    pub fn pairs(&self) -> impl Iterator<Item = &LivePair> {
        self.pairs.values().filter_map(|(_, pair)| pair.as_ref())
    }

    /// Applies `delta` (its parts older than what is here are skipped).
    /// `me` is who the editor is: a change of mine moves every line map.
    pub fn apply(&mut self, delta: GuardDelta, me: &str) -> Applied {
        let mut applied = Applied {
            paths: Some(BTreeSet::new()),
            new_conflicts: Vec::new(),
        };
        if delta.full {
            let before: BTreeSet<(String, String)> = self.conflicting().collect();
            let seeded = self.seeded;
            *self = GuardView {
                seeded: true,
                ..GuardView::default()
            };
            for (key, pair) in &delta.pairs {
                let is_new = seeded
                    && pair
                        .as_ref()
                        .is_some_and(|p| p.pair.level == Level::Conflict && !before.contains(key));
                if is_new {
                    applied
                        .new_conflicts
                        .extend(pair.as_ref().map(|p| p.pair.clone()));
                }
            }
            applied.paths = None;
        }
        for (id, side) in delta.participants {
            let slot = self.participants.get(&id);
            if slot.is_some_and(|(generation, _)| *generation > delta.generation) {
                continue;
            }
            let moved = slot.is_none_or(|(_, old)| old.merge_base != side.merge_base);
            if id == me && moved {
                // Every diagnostic is mapped from my merge base.
                applied.paths = None;
            }
            if id == me {
                // My base-conflict diagnostics: the paths before and after.
                let old = slot.and_then(|(_, old)| old.base_conflict.as_ref());
                if let Some(paths) = applied.paths.as_mut() {
                    for conflict in old.into_iter().chain(side.base_conflict.as_ref()) {
                        paths.extend(conflict.paths.iter().map(|p| p.path.clone()));
                    }
                }
            }
            self.participants.insert(id, (delta.generation, side));
        }
        for (key, pair) in delta.pairs {
            let slot = self.pairs.get(&key);
            if slot.is_some_and(|(generation, _)| *generation > delta.generation) {
                continue;
            }
            let old = slot.and_then(|(_, pair)| pair.as_ref());
            let was_conflict = old.is_some_and(|p| p.pair.level == Level::Conflict);
            if !delta.full && !was_conflict {
                if let Some(p) = pair.as_ref().filter(|p| p.pair.level == Level::Conflict) {
                    applied.new_conflicts.push(p.pair.clone());
                }
            }
            if let Some(paths) = applied.paths.as_mut() {
                for p in old.into_iter().chain(pair.as_ref()) {
                    paths.extend(p.paths().map(str::to_string));
                }
            }
            self.pairs.insert(key, (delta.generation, pair));
        }
        applied
    }

    fn conflicting(&self) -> impl Iterator<Item = (String, String)> + '_ {
        self.pairs
            .iter()
            .filter(|(_, (_, pair))| {
                pair.as_ref()
                    .is_some_and(|p| p.pair.level == Level::Conflict)
            })
            .map(|(key, _)| key.clone())
    }
}

#[cfg(test)]
mod tests {
    use owt_protocol::guard::GuardPath;

    use super::*;

    fn pair(level: Level, paths: &[&str]) -> LivePair {
        LivePair {
            pair: GuardPair {
                a: "a".into(),
                b: "b".into(),
                level,
                paths: paths
                    .iter()
                    .map(|p| GuardPath {
                        path: p.to_string(),
                        level,
                        a_ranges: Vec::new(),
                        b_ranges: Vec::new(),
                        detail: None,
                        ignored: false,
                        a_change: None,
                        b_change: None,
                        a_symbols: Vec::new(),
                        b_symbols: Vec::new(),
                    })
                    .collect(),
                conflicting_paths: Vec::new(),
                conflicting_orders: Vec::new(),
                not_merged: Vec::new(),
                lines_from: None,
                semantic: Vec::new(),
            },
            hunks: BTreeMap::new(),
        }
    }

    fn delta(generation: u64, full: bool, pair: Option<LivePair>) -> GuardDelta {
        GuardDelta {
            epoch: 1,
            generation,
            full,
            participants: Vec::new(),
            pairs: vec![(("a".into(), "b".into()), pair)],
            git: Vec::new(),
        }
    }

    fn paths(applied: &Applied) -> Option<Vec<&str>> {
        applied
            .paths
            .as_ref()
            .map(|p| p.iter().map(String::as_str).collect())
    }

    #[test]
    fn a_delta_names_the_paths_of_the_pair_before_and_after() {
        let mut view = GuardView::default();
        let first = view.apply(delta(1, true, Some(pair(Level::Overlap, &["x"]))), "you");
        assert_eq!(paths(&first), None, "a full delta re-renders everything");
        assert!(
            first.new_conflicts.is_empty(),
            "the first one announces nothing"
        );
        let moved = view.apply(delta(2, false, Some(pair(Level::Conflict, &["y"]))), "you");
        assert_eq!(paths(&moved), Some(vec!["x", "y"]));
        assert_eq!(moved.new_conflicts.len(), 1);
        let gone = view.apply(delta(3, false, None), "you");
        assert_eq!(paths(&gone), Some(vec!["y"]));
        assert_eq!(view.pairs().count(), 0);
    }

    /// A delta taken before another (the watcher's, queued while the owner
    /// handed over buffers) must not undo it.
    #[test]
    fn an_older_delta_never_overwrites_a_newer_one() {
        let mut view = GuardView::default();
        view.apply(delta(1, true, None), "you");
        view.apply(
            delta(5, false, Some(pair(Level::HunkOverlap, &["x"]))),
            "you",
        );
        let stale = view.apply(delta(4, false, None), "you");
        assert_eq!(paths(&stale), Some(vec![]));
        let levels: Vec<Level> = view.pairs().map(|p| p.pair.level).collect();
        assert_eq!(levels, vec![Level::HunkOverlap]);
    }

    #[test]
    fn my_merge_base_moving_re_renders_everything() {
        let mut view = GuardView::default();
        view.apply(delta(1, true, None), "you");
        let side = |base: &str| SideInfo {
            worktree: "/r".into(),
            merge_base: Some(base.into()),
            changes: Arc::default(),
            base_conflict: None,
        };
        let mut moved = delta(2, false, None);
        moved.participants = vec![("you".into(), side("c1"))];
        assert_eq!(paths(&view.apply(moved.clone(), "you")), None);
        moved.generation = 3;
        assert_eq!(
            paths(&view.apply(moved.clone(), "you")),
            Some(vec![]),
            "same base"
        );
        moved.participants = vec![("b".into(), side("c2"))];
        moved.generation = 4;
        assert_eq!(paths(&view.apply(moved, "you")), Some(vec![]), "not mine");
    }
}
