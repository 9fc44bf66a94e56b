//! What the owner thread owns ([`Owner`]): the [`State`] every part reads
//! and each subsystem's own part, and the steps that need several
//! subsystems at once — re-reading sessions (which starts or restarts the
//! live guard) and taking in the live guard's updates (which reach the
//! review comments and the session views). Each subsystem below takes the
//! `State` and its own part, never another's.

use super::guard_live::GuardLive;
use super::guard_view::GuardDelta;
use super::machine::MachineMonitor;
use super::review_live::{self, ReviewLive};
use super::sessions::SessionMonitor;
use super::state::State;
use super::unsaved::UnsavedRecord;

pub struct Owner {
    pub state: State,
    /// The live Conflict Guard.
    pub guard: GuardLive,
    /// What was last told to the editor about sessions.
    pub watch: SessionMonitor,
    /// The record of unsaved buffers the pre-edit hook reads.
    pub unsaved: UnsavedRecord,
    pub review: ReviewLive,
    /// Memory pressure and room for queued sessions.
    pub machine: MachineMonitor,
}

impl Owner {
    pub fn new(state: State) -> Owner {
        Owner {
            state,
            guard: GuardLive::default(),
            watch: SessionMonitor::default(),
            unsaved: UnsavedRecord::default(),
            review: ReviewLive::default(),
            machine: MachineMonitor::default(),
        }
    }

    /// Re-reads sessions ([`SessionMonitor::refresh`]), brings the live
    /// guard up to date with them, then sends `owt/boardChanged` when the
    /// board differs.
    pub fn refresh_sessions(&mut self, force_git: bool) {
        let guard = &self.guard;
        let pairs = || guard.pair_source();
        let Some(statuses_changed) = self.watch.refresh(&mut self.state, force_git, pairs) else {
            return;
        };
        self.ensure_guard();
        if statuses_changed {
            // Diagnostics name each agent's status.
            self.guard.republish_all(&mut self.state);
        }
        self.watch.notify_board(&self.state);
    }

    /// Starts (or restarts) the guard when sessions came or went; once it
    /// started, the session views take the git facts of its snapshots and
    /// the guard the unsaved buffers.
    fn ensure_guard(&mut self) {
        if let Some(git) = self.guard.ensure(&mut self.state) {
            self.watch.apply_guard_git(&mut self.state, &git);
            self.guard.apply_overrides(&mut self.state);
        }
    }

    /// A delta from the guard's watcher: its diagnostics, then the review
    /// comments of the sessions it saw change, then the git facts it read.
    pub fn on_guard_delta(&mut self, delta: GuardDelta) {
        let Some((changed, git)) = self.guard.on_delta(&mut self.state, delta) else {
            return;
        };
        review_live::sessions_changed(&mut self.state, &changed);
        // After the diagnostics (they go out first), before the next request:
        // what the editor asks next (code actions) sees these facts.
        self.watch.apply_guard_git(&mut self.state, &git);
    }
}
