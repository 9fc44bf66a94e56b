//! The git refresher: the thread that keeps every session's git fact
//! (commits ahead, changed files) current for the board, on its own store
//! connection, so reading them never holds up diagnostics. With live
//! session hosts a pass reads their journals (milliseconds for 64
//! sessions); a worktree whose host is gone is walked (seconds on a large
//! repository), see `ops::list::read_git_fact`.
//!
//! Invariant: in `owt lsp` this thread is the one writer of the git fact —
//! what it reads from git, and what the live guard read from its snapshots
//! ([`GitPoke::Facts`]) — through `ops::list::record_git_fact`.

use std::path::PathBuf;
use std::sync::mpsc::{RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use super::event::Event;
use owt_core::ops::guard::SnapshotGitFact;
use owt_core::ops::{self, Context};

/// How often every session's git facts are re-read while no Conflict
/// Guard watches the worktrees.
const GIT_REFRESH: Duration = Duration::from_secs(5);
/// While the guard watches (it hands over what its snapshots show), every
/// session is re-read this often all the same.
const GIT_FULL_REFRESH: Duration = Duration::from_secs(60);
/// How long the refresher collects pokes before acting on them.
const GIT_COALESCE: Duration = Duration::from_millis(500);

/// What the git refresher is told.
pub enum GitPoke {
    /// Re-read every session now.
    All,
    /// Whether a guard watches the worktrees (everything is then re-read
    /// only every [`GIT_FULL_REFRESH`]).
    Watched(bool),
    /// Git facts the live guard read from its snapshots.
    Facts(Vec<SnapshotGitFact>),
}

/// The handle the owner keeps; dropping it ends the thread.
pub struct GitRefresher {
    poke: Sender<GitPoke>,
}

impl GitRefresher {
    /// Starts the thread for the repository at `root`: it records every
    /// session's git facts right away, then as described in the module
    /// doc, and sends [`Event::GitRefreshed`] after each pass that may
    /// have changed something.
    pub fn start(root: PathBuf, home: PathBuf, tx: Sender<Event>) -> Option<GitRefresher> {
        let (poke, poked) = std::sync::mpsc::channel::<GitPoke>();
        let spawned = std::thread::Builder::new()
            .name("owt-lsp-git".into())
            .spawn(move || {
                let ctx = match Context::open_in(Some(&root), &home) {
                    Ok(ctx) => ctx,
                    Err(e) => {
                        tracing::warn!("the git refresher could not start: {e:#}");
                        return;
                    }
                };
                let mut pass = Pass {
                    ctx,
                    tx,
                    watched: false,
                    all: true,
                    facts: Vec::new(),
                    last_full: Instant::now(),
                };
                loop {
                    if !pass.run() {
                        return;
                    }
                    let period = if pass.watched {
                        GIT_FULL_REFRESH
                    } else {
                        GIT_REFRESH
                    };
                    let wait = (pass.last_full + period).saturating_duration_since(Instant::now());
                    match poked.recv_timeout(wait) {
                        // The guard's facts are recorded at once (the
                        // editor already shows them); other pokes are
                        // collected a while first.
                        Ok(first @ GitPoke::Facts(_)) => pass.take(first),
                        Ok(first) => {
                            pass.take(first);
                            std::thread::sleep(GIT_COALESCE);
                            while let Ok(next) = poked.try_recv() {
                                pass.take(next);
                            }
                        }
                        Err(RecvTimeoutError::Timeout) => pass.all = true,
                        Err(RecvTimeoutError::Disconnected) => return,
                    }
                }
            });
        match spawned {
            Ok(_) => Some(GitRefresher { poke }),
            Err(e) => {
                tracing::warn!("cannot start the git refresher: {e}");
                None
            }
        }
    }

    pub fn poke(&self, poke: GitPoke) {
        let _ = self.poke.send(poke);
    }

    /// A sender for another thread (the live guard's watcher).
    pub fn sender(&self) -> Sender<GitPoke> {
        self.poke.clone()
    }
}

/// The refresher thread's state between passes.
struct Pass {
    ctx: Context,
    tx: Sender<Event>,
    watched: bool,
    /// Re-read every session on the next pass.
    all: bool,
    /// Facts handed over since the last pass.
    facts: Vec<SnapshotGitFact>,
    last_full: Instant,
}

impl Pass {
    fn take(&mut self, poke: GitPoke) {
        match poke {
            GitPoke::All => self.all = true,
            GitPoke::Watched(on) => self.watched = on,
            GitPoke::Facts(facts) => self.facts.extend(facts),
        }
    }

    /// One pass; false once the owner is gone.
    fn run(&mut self) -> bool {
        let mut changed = false;
        for git in std::mem::take(&mut self.facts) {
            match ops::list::record_git_fact(&self.ctx.store, git.session_id, &git.fact) {
                Ok(recorded) => changed |= recorded,
                Err(e) => tracing::warn!("recording git facts failed: {e:#}"),
            }
        }
        if self.all {
            if let Err(e) = ops::list::refresh_git_facts(&self.ctx) {
                tracing::warn!("refreshing git facts failed: {e:#}");
            }
            self.last_full = Instant::now();
            self.all = false;
            changed = true;
        }
        !changed || self.tx.send(Event::GitRefreshed).is_ok()
    }
}
