//! [`GuardEngine`]'s read side: pairs, base conflicts, per-participant
//! state and the whole report, as the last computation left them.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use git2::Oid;
use owt_protocol::guard::{BaseConflict, GuardPair, GuardParticipant, GuardReport, Level};

use super::super::changes::Change;
use super::super::GuardFact;
use super::GuardEngine;
use crate::store::now_ms;

impl GuardEngine {
    /// Every overlapping pair, in id order.
    pub fn pairs(&self) -> Vec<&GuardPair> {
        self.pairs.values().flatten().collect()
    }

    /// The pair of `a` and `b` (ids in order), when they overlap.
    pub fn pair(&self, a: &str, b: &str) -> Option<&GuardPair> {
        self.pairs
            .get(&(a.to_string(), b.to_string()))
            .and_then(Option::as_ref)
    }

    /// The pairs `id` is part of.
    pub fn pairs_of(&self, id: &str) -> Vec<&GuardPair> {
        self.pairs
            .iter()
            .filter(|((a, b), _)| a == id || b == id)
            .filter_map(|(_, p)| p.as_ref())
            .collect()
    }

    /// How many other participants `id` overlaps (at any level above
    /// `same-change`).
    pub fn overlap_count(&self, id: &str) -> u32 {
        self.pairs_of(id)
            .iter()
            .filter(|p| p.level > Level::SameChange)
            .count() as u32
    }

    /// Whether `id`'s state does not merge into its base's tip, and where.
    pub fn base_conflict(&self, id: &str) -> Option<&BaseConflict> {
        self.states.get(id)?.base_conflict.as_ref()
    }

    /// Every participant whose state does not merge into its base's tip.
    pub fn base_conflicts(&self) -> Vec<&BaseConflict> {
        self.states
            .values()
            .filter_map(|s| s.base_conflict.as_ref())
            .collect()
    }

    /// A participant's changes from its merge base.
    pub fn changes(&self, id: &str) -> Option<&[Change]> {
        self.states.get(id).map(|s| s.changes.as_slice())
    }

    /// A participant's checkout, as git names it.
    pub fn worktree(&self, id: &str) -> Option<&Path> {
        self.states.get(id).map(|s| s.work.worktree.as_path())
    }

    /// The commit a participant's changes are counted from.
    pub fn merge_base(&self, id: &str) -> Option<Oid> {
        self.states.get(id).and_then(|s| s.work.merge_base)
    }

    /// A participant's snapshot tree.
    pub fn snapshot(&self, id: &str) -> Option<Oid> {
        self.states.get(id).and_then(|s| s.work.snapshot)
    }

    /// What the store keeps for `id`.
    pub fn guard_fact(&self, id: &str) -> Option<GuardFact> {
        let s = self.states.get(id)?;
        Some(GuardFact {
            snapshot: s.work.snapshot?.to_string(),
            head: s.work.head.map(|h| h.to_string()),
            merge_base: s.work.merge_base.map(|h| h.to_string()),
            changes: s.changes.clone(),
            computed_at: s.computed_at,
        })
    }

    /// The whole report (`owt guard --json`).
    pub fn report(&self, repository: &str) -> GuardReport {
        let participants = self
            .states
            .values()
            .map(|s| GuardParticipant {
                name: s.participant.id.clone(),
                kind: if s.participant.session_id.is_some() {
                    "session".into()
                } else {
                    "you".into()
                },
                worktree: s.work.worktree.to_string_lossy().into_owned(),
                base: s.participant.base_branch.clone(),
                snapshot: s.work.snapshot.map(|o| o.to_string()).unwrap_or_default(),
                merge_base: s.work.merge_base.map(|o| o.to_string()).unwrap_or_default(),
                changed_paths: {
                    let set: BTreeSet<&str> = s.changes.iter().flat_map(Change::paths).collect();
                    set.into_iter().map(str::to_string).collect()
                },
                scan: s.work.last_scan.map(|source| source.name().to_string()),
            })
            .collect();
        GuardReport {
            repository: repository.to_string(),
            participants,
            pairs: self.pairs().into_iter().cloned().collect(),
            base_conflicts: self.base_conflicts().into_iter().cloned().collect(),
            computed_at: now_ms(),
        }
    }

    /// Blobs the symbol index parsed so far (for tests and benchmarks).
    pub fn symbol_parses(&self) -> u64 {
        self.caches.symbols.parsed
    }

    /// Blobs whose symbols came from the disk cache instead of a parse
    /// ([`Self::set_symbol_cache`]), and entries written to it.
    pub fn symbol_cache_hits(&self) -> (u64, u64) {
        let disk = self.caches.symbols.disk.as_ref();
        disk.map_or((0, 0), |d| (d.hits, d.writes))
    }

    /// Of [`Self::symbol_parses`], those re-parsed incrementally from a
    /// kept tree of another version of the same path.
    pub fn symbol_reparses(&self) -> u64 {
        self.caches.symbols.reparsed
    }

    /// Parse trees the symbol index keeps for incremental re-parses, and
    /// their estimated bytes.
    pub fn symbol_trees_kept(&self) -> (usize, usize) {
        self.caches.symbols.kept()
    }

    /// Lets go of the symbol index's kept parse trees not used for `idle`
    /// (an idle server's memory); whether any went.
    pub fn drop_idle_trees(&mut self, idle: std::time::Duration) -> bool {
        self.caches.symbols.drop_idle_trees(idle)
    }

    /// Merge verdicts cached so far (for diagnostics and benchmarks).
    pub fn cached_merges(&self) -> usize {
        self.caches.merges.len() + self.caches.landings.len()
    }

    /// How each participant's last full scan found its paths.
    pub fn scan_sources(&self) -> BTreeMap<String, Option<super::super::snapshot::ScanSource>> {
        self.states
            .iter()
            .map(|(k, s)| (k.clone(), s.work.last_scan))
            .collect()
    }

    #[doc(hidden)]
    pub fn snapshots(&self) -> HashMap<String, Oid> {
        self.states
            .iter()
            .filter_map(|(k, s)| s.work.snapshot.map(|o| (k.clone(), o)))
            .collect()
    }
}
