//! [`GuardEngine`]'s computations from scratch: every participant
//! scanned (in parallel) and every pair recomputed, at once or with the
//! symbol index held back (verdicts first, symbols after).

use std::time::Instant;

use super::super::snapshot::WorkState;
use super::super::symbols::{side_key, SideRef};
use super::super::verdict;
use super::super::GuardError;
use super::{GuardEngine, GuardUpdate};

impl GuardEngine {
    /// Scans every participant from scratch (a walk of each checkout,
    /// in parallel) and recomputes every pair.
    pub fn full_recompute(&mut self) -> Result<GuardUpdate, GuardError> {
        let started = Instant::now();
        self.scan_all()?;
        self.symbols_owed = false;
        self.recompute_all(started)
    }

    /// [`Self::full_recompute`] with the symbol index held back: every
    /// verdict, level and line range as it computes them, but no enclosing
    /// symbols and no `semantic` notes (parsing every changed file of every
    /// participant is most of the difference) until
    /// [`Self::complete_symbols`]. For a caller that shows verdicts first
    /// (`owt lsp`): the index costs the first diagnostics nothing.
    pub fn full_recompute_verdicts(&mut self) -> Result<GuardUpdate, GuardError> {
        let started = Instant::now();
        self.scan_all()?;
        tracing::debug!(
            "conflict guard: {} checkouts scanned in {:?}",
            self.states.len(),
            started.elapsed()
        );
        let on = self.caches.symbols.enabled;
        self.caches.symbols.enabled = false;
        let result = self.recompute_all(started);
        self.caches.symbols.enabled = on;
        self.symbols_owed = on && result.is_ok();
        result
    }

    /// Whether symbols are owed (see [`Self::full_recompute_verdicts`]).
    pub fn symbols_owed(&self) -> bool {
        self.symbols_owed
    }

    /// Adds what [`Self::full_recompute_verdicts`] held back: every pair
    /// and base conflict again, now with the symbol index (the merges,
    /// changes and hunks come from the caches: the parses are the cost).
    /// Pairs that only a `semantic` note relates appear now. The update
    /// names only the pairs and base conflicts whose report changed
    /// (published only when there are some); empty when nothing is owed.
    pub fn complete_symbols(&mut self) -> Result<GuardUpdate, GuardError> {
        let started = Instant::now();
        if !std::mem::take(&mut self.symbols_owed) || !self.caches.symbols.enabled {
            return Ok(GuardUpdate::default());
        }
        let mut update = GuardUpdate::default();
        let ids: Vec<String> = self.states.keys().cloned().collect();
        self.start_symbol_parses();
        for id in &ids {
            self.recompute_base_conflict(id, &mut update)?;
        }
        for (i, a) in ids.iter().enumerate() {
            for b in &ids[i + 1..] {
                self.recompute_pair(a, b, &mut update)?;
            }
        }
        update.elapsed = started.elapsed();
        // Pairs the symbols left as they were carry no news.
        let changed = update.changed_pairs.clone();
        update.pairs = changed;
        if !update.changed_pairs.is_empty() || !update.changed_base_conflicts.is_empty() {
            self.publish(&update);
        }
        Ok(update)
    }

    /// Every participant's full scan, in parallel.
    fn scan_all(&mut self) -> Result<(), GuardError> {
        // Longest first, each thread taking the next checkout as it
        // finishes one: a checkout with no journal is walked (every file
        // lstat-ed), one whose host answers costs a round trip and its few
        // paths, so the walks start at once and the journals fill the
        // other threads around them (in name order, the human's walk came
        // last, after half the journals).
        // git where it reads a commit-graph, for the merge bases of a
        // deep history (`commit_graph::merge_bases`).
        let graph_git = self.caches.graph_git();
        self.caches.history.git = graph_git.clone();
        let mut works: Vec<&mut WorkState> = self
            .states
            .values_mut()
            .map(|s| {
                s.work.history = graph_git.clone();
                &mut s.work
            })
            .collect();
        works.sort_by_key(|w| w.journal.is_some() || w.pinned.is_some());
        let threads = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .clamp(1, 8)
            .min(works.len().max(1));
        let queue = std::sync::Mutex::new(works.into_iter());
        let results: Vec<Result<(), GuardError>> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    let queue = &queue;
                    scope.spawn(move || loop {
                        let next = queue.lock().unwrap_or_else(|p| p.into_inner()).next();
                        match next {
                            Some(work) => work.scan_full().map(drop)?,
                            None => return Ok(()),
                        }
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(GuardError::Internal("a scan thread panicked".into()))
                    })
                })
                .collect()
        });
        for result in results {
            result?;
        }
        Ok(())
    }

    /// Recomputes every participant's changes and every pair from the
    /// current snapshots, with no file-system scan and no cached merge
    /// verdicts (what a moved base branch or new `[guard]` settings need).
    pub fn recompute_pairs(&mut self) -> Result<GuardUpdate, GuardError> {
        let started = Instant::now();
        self.symbols_owed = false;
        self.caches.clear_verdicts();
        for state in self.states.values_mut() {
            state.computed_for = None;
            state.landed_for = None;
        }
        self.recompute_all(started)
    }

    /// The merges of commits git must do for the pairs of `ids` (pairs with
    /// several merge bases: forks sharing history beyond the base), asked
    /// of git at once ([`super::verdict::Caches::prefetch_commit_merges`])
    /// before the pairs are compared one by one. A pair whose plan cannot
    /// be made is left to its own comparison, which reports the error.
    fn prefetch_pair_merges(&mut self, ids: &[String]) {
        let sides: Vec<(verdict::State, &verdict::Landing)> = ids
            .iter()
            .filter_map(|id| {
                let state = self.states.get(id)?;
                let landing = state.landing.as_ref().filter(|l| l.clean())?;
                let snapshot = state.work.snapshot?;
                let s = verdict::State {
                    head: state.work.head,
                    base_tip: state.work.base_tip,
                    snapshot,
                };
                Some((s, landing))
            })
            .collect();
        let mut merges = Vec::new();
        for (i, a) in sides.iter().enumerate() {
            for b in &sides[i + 1..] {
                for (x, y) in [(a, b), (b, a)] {
                    let planned = verdict::after_commit_merge(
                        &self.repo,
                        &mut self.caches,
                        (&x.0, x.1),
                        (&y.0, y.1),
                    );
                    if let Ok(Some(merge)) = planned {
                        merges.push(merge);
                    }
                }
            }
        }
        self.caches.prefetch_commit_merges(&self.repo, &merges);
    }

    /// Starts the parses the pairs' `semantic` notes will need first (each
    /// side's old versions, [`super::super::symbols::SymbolIndex::start_parses_for`]),
    /// in the background: with an empty symbol cache they run on the
    /// cores while git compares the pairs. Nothing when the index is off.
    fn start_symbol_parses(&mut self) {
        if !self.caches.symbols.enabled {
            return;
        }
        let sides: Vec<SideRef<'_>> = self
            .states
            .values()
            .filter_map(|s| {
                s.landing.as_ref()?;
                Some(SideRef {
                    name: &s.participant.id,
                    key: side_key(s.work.merge_base_tree, s.work.snapshot?),
                    changes: &s.changes,
                })
            })
            .collect();
        self.caches.symbols.start_parses_for(&self.repo, &sides);
    }

    /// Recomputes every participant (from its current snapshot) and every
    /// pair.
    fn recompute_all(&mut self, started: Instant) -> Result<GuardUpdate, GuardError> {
        let ids: Vec<String> = self.states.keys().cloned().collect();
        let mut update = GuardUpdate::default();
        for id in &ids {
            if self.recompute_participant(id, &mut update)? {
                update.participants.push(id.clone());
            }
        }
        self.start_symbol_parses();
        self.prefetch_pair_merges(&ids);
        self.pairs.clear();
        for (i, a) in ids.iter().enumerate() {
            for b in &ids[i + 1..] {
                self.recompute_pair(a, b, &mut update)?;
            }
        }
        update.elapsed = started.elapsed();
        self.publish(&update);
        Ok(update)
    }
}
