//! Long actions (new, ship, merge, delete) run off the drawing thread, each
//! on a thread of its own with its own [`Context`] (its own store
//! connection), so the board stays live while a setup script or the
//! `[checks]` run: their progress and result reach the status line.
//!
//! Invariant: a job calls the same `ops` function its CLI verb does; the
//! event loop only ever reads [`Jobs::poll`].

use std::path::PathBuf;
use std::sync::mpsc;

use owt_core::ops::Context;

/// What a job says.
pub enum Said {
    /// A progress line (`owt ship`'s steps, a setup script's output).
    Progress(String),
    /// It ended: what it did (or its error, after `what: `), and the session
    /// to focus afterwards.
    Done {
        what: &'static str,
        result: anyhow::Result<String>,
        focus: Option<String>,
    },
}

/// The running jobs' channel.
pub struct Jobs {
    tx: mpsc::Sender<Said>,
    rx: mpsc::Receiver<Said>,
    /// Where a job opens its context: the repository and owt's home.
    repo: PathBuf,
    home: PathBuf,
    /// Jobs started and not ended.
    pub running: usize,
}

/// A job's body: the context, a progress callback; what it did and the
/// session to focus.
pub type Body = Box<
    dyn FnOnce(&mut Context, &mut dyn FnMut(&str)) -> anyhow::Result<(String, Option<String>)>
        + Send,
>;

impl Jobs {
    pub fn new(ctx: &Context) -> Jobs {
        let (tx, rx) = mpsc::channel();
        Jobs {
            tx,
            rx,
            repo: ctx.repo_row.main_worktree.clone(),
            home: ctx.home.clone(),
            running: 0,
        }
    }

    /// Runs `body` on a thread of its own; `what` names it in an error.
    pub fn spawn(&mut self, what: &'static str, body: Body) {
        let tx = self.tx.clone();
        let (repo, home) = (self.repo.clone(), self.home.clone());
        self.running += 1;
        let spawned = std::thread::Builder::new()
            .name(format!("job-{what}"))
            .spawn(move || {
                let progress_tx = tx.clone();
                let mut progress = |line: &str| {
                    let _ = progress_tx.send(Said::Progress(line.to_string()));
                };
                let done = Context::open_in(Some(&repo), &home)
                    .and_then(|mut ctx| body(&mut ctx, &mut progress));
                let (result, focus) = match done {
                    Ok((line, focus)) => (Ok(line), focus),
                    Err(e) => (Err(e), None),
                };
                let _ = tx.send(Said::Done {
                    what,
                    result,
                    focus,
                });
            });
        if let Err(e) = spawned {
            // Counted down when `poll` reads this.
            let _ = self.tx.send(Said::Done {
                what,
                result: Err(anyhow::anyhow!("starting it: {e}")),
                focus: None,
            });
        }
    }

    /// What the jobs said since the last look (never blocks).
    pub fn poll(&mut self) -> Vec<Said> {
        let said: Vec<Said> = self.rx.try_iter().collect();
        let ended = said
            .iter()
            .filter(|s| matches!(s, Said::Done { .. }))
            .count();
        self.running = self.running.saturating_sub(ended);
        said
    }
}
