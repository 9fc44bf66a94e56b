//! The git-facts thread: reads the session's commits ahead and changed
//! files from the host's own journal whenever the journal changes (once it
//! is quiet for [`QUIET`], at most [`MAX_DELAY`] after the first change),
//! and hands them to the monitor to record (`host-git` facts). `owt list`
//! and the board then read the store instead of asking every host: a
//! listing costs O(sessions), with no round trip to any host.
//!
//! Freshness: a write the journal saw is in the store within `QUIET`
//! (`MAX_DELAY` while writes keep coming) plus one reading (a few ms: the
//! index, and the paths the journal names) once writes stop; a commit or
//! `git add` waits for the journal's walk as well (it is not trusted
//! before). A reader checks HEAD and the base tip itself and asks the
//! host when they moved.

use super::*;
use crate::guard::source::JournalSource;
use crate::status::HostGitFact;

/// Quiet time after a change before the checkout is read.
pub(super) const QUIET: Duration = Duration::from_millis(50);
/// Longest wait after a first change while changes keep coming.
pub(super) const MAX_DELAY: Duration = Duration::from_millis(500);

/// The one answer of the journal read just before (ready), given to the
/// scan so that it walks nothing unless HEAD or the index moved since.
#[derive(Debug)]
struct Answer(JournalView);

impl JournalSource for Answer {
    fn ask(&self) -> Option<JournalView> {
        Some(self.0.clone())
    }
}

/// Follows the journal for ever (the host's process ends it), sending a
/// [`HostGitFact`] to the monitor after every change that alters it.
pub(super) fn follow_journal(shared: &Arc<Shared>, worktree: PathBuf, base_branch: String) {
    let Some(journal) = shared.journal.as_ref() else {
        return;
    };
    follow(journal, &shared.exiting, &worktree, &base_branch, |fact| {
        let Some(to_monitor) = lock(&shared.to_monitor).clone() else {
            return Sent::NotNow;
        };
        match to_monitor.send(ToMonitor::GitFact(fact)) {
            Ok(()) => Sent::Yes,
            Err(_) => Sent::Stop,
        }
    });
}

/// What became of a fact handed to [`follow`]'s `send`.
pub(crate) enum Sent {
    /// Recorded (or on its way): not sent again until it changes.
    Yes,
    /// Not taken this time: sent again after the next change.
    NotNow,
    /// Never again: the host is going.
    Stop,
}

/// Follows `journal` until `exiting` (or `send` says stop), handing `send`
/// the checkout's [`HostGitFact`] after every change that alters it. The
/// terminal host sends it to its monitor; the ACP host records it itself.
pub(crate) fn follow(
    journal: &crate::guard::journal::Journal,
    exiting: &AtomicBool,
    worktree: &Path,
    base_branch: &str,
    mut send: impl FnMut(HostGitFact) -> Sent,
) {
    let mut seen = 0;
    let mut sent: Option<HostGitFact> = None;
    loop {
        seen = journal.wait_change(seen, None);
        let first = Instant::now();
        loop {
            let left = MAX_DELAY.saturating_sub(first.elapsed());
            if left.is_zero() {
                break;
            }
            let now = journal.wait_change(seen, Some(QUIET.min(left)));
            if now == seen {
                break;
            }
            seen = now;
        }
        if exiting.load(Ordering::SeqCst) {
            return;
        }
        // Not ready (a walk due or under way): its end is a change.
        let view = journal.view();
        if !view.ready {
            continue;
        }
        let source: Arc<dyn JournalSource> = Arc::new(Answer(view));
        let read = crate::guard::counts::counts(worktree, base_branch, Some(source));
        // The repository and index copies are freed: give the pages back,
        // and the stack the reading went down.
        crate::platform::allocator::trim();
        crate::platform::allocator::release_stack();
        let fact = match read {
            Ok(counts) => HostGitFact {
                ahead: counts.ahead,
                changed_files: counts.changed_files,
                head: counts.head,
                base_tip: counts.base_tip,
            },
            Err(e) => {
                tracing::warn!("reading the git facts of {}: {e}", worktree.display());
                continue;
            }
        };
        if sent.as_ref() == Some(&fact) {
            continue;
        }
        match send(fact.clone()) {
            Sent::Yes => sent = Some(fact),
            Sent::NotNow => {}
            Sent::Stop => return,
        }
    }
}
