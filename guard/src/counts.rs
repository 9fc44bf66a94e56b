//! A checkout's commits ahead and changed files, as `owt list` shows them
//! (HEAD against the merge base with its base branch, as the Conflict
//! Guard counts them: a rename is one change). Read by a listing for a
//! checkout without a live host, and by a session host for its own
//! checkout from its journal whenever the journal changes.

use std::path::Path;
use std::sync::Arc;

use super::snapshot::{ScanSource, WorkState};
use super::source::JournalSource;
use super::{changes, GuardError};

/// What [`counts`] read, with the commits it read them against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkCounts {
    pub ahead: u32,
    pub changed_files: u32,
    /// HEAD's commit (`None` while unborn).
    pub head: Option<String>,
    /// The base branch's tip (`None` when it does not exist).
    pub base_tip: Option<String>,
    /// How the paths were found (`journal`, `walk`, ...).
    pub source: &'static str,
}

/// Reads the counts of the checkout at `worktree`, asking `journal` first
/// (no walk when it answers for the index and HEAD seen here; a walk
/// otherwise, see [`WorkState::scan_full`]).
pub fn counts(
    worktree: &Path,
    base_branch: &str,
    journal: Option<Arc<dyn JournalSource>>,
) -> Result<WorkCounts, GuardError> {
    let mut work = WorkState::open(worktree, base_branch)?;
    work.journal = journal;
    work.scan_full()?;
    let changed = match work.snapshot {
        Some(snapshot) => changes::changes(
            work.repo(),
            work.merge_base_tree,
            snapshot,
            &mut changes::HunkCache::default(),
        )?
        .len() as u32,
        None => 0,
    };
    let ahead = match (work.head, work.base_tip) {
        (Some(head), Some(base)) => work.repo().graph_ahead_behind(head, base)?.0 as u32,
        _ => 0,
    };
    Ok(WorkCounts {
        ahead,
        changed_files: changed,
        head: work.head.map(|h| h.to_string()),
        base_tip: work.base_tip.map(|b| b.to_string()),
        source: work.last_scan.map_or("nothing", ScanSource::name),
    })
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::super::journal::Journal;
    use super::super::source::JournalSource;
    use super::super::tests::{git, lines, with_line, write, Fixture};
    use super::counts;

    /// The journal's one answer, as a host hands it to [`counts`].
    #[derive(Debug)]
    struct Answer(owt_protocol::host::JournalView);

    impl JournalSource for Answer {
        fn ask(&self) -> Option<owt_protocol::host::JournalView> {
            Some(self.0.clone())
        }
    }

    /// Waits (30 s at most) for the journal to change after `seen` and be
    /// ready; its answer.
    fn changed_and_ready(journal: &Journal, seen: u64, after: &str) -> (u64, Arc<Answer>) {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let mut now = journal.wait_change(seen, Some(Duration::from_secs(30)));
        assert!(
            now > seen,
            "the journal did not change within 30 s after {after}"
        );
        loop {
            let view = journal.view();
            if view.ready {
                return (now, Arc::new(Answer(view)));
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            assert!(
                !left.is_zero(),
                "the journal was not ready within 30 s after {after}"
            );
            now = journal.wait_change(now, Some(left));
        }
    }

    #[test]
    fn counts_read_from_the_journal_follow_each_change_without_a_walk() {
        let fx = Fixture::new(&[("a.txt", &lines()), ("d/b.txt", &lines())]);
        let wt = fx.worktree("agent");
        let journal = Journal::start(&wt).unwrap();
        let (seen, answer) = changed_and_ready(&journal, 0, "the start");
        let read = counts(&wt, "main", Some(answer)).unwrap();
        assert_eq!(
            (read.ahead, read.changed_files, read.source),
            (0, 0, "journal")
        );
        let head = git(&wt, &["rev-parse", "HEAD"]);
        assert_eq!(read.head.as_deref(), Some(head.trim()));
        assert_eq!(read.base_tip.as_deref(), Some(head.trim()));

        // A write wakes whoever waits on the journal, and counts.
        write(&wt, "d/b.txt", &with_line(3, "edited"));
        write(&wt, "new.txt", "new\n");
        let (seen, answer) = changed_and_ready(&journal, seen, "two writes");
        let read = counts(&wt, "main", Some(answer)).unwrap();
        assert_eq!(
            (read.ahead, read.changed_files, read.source),
            (0, 2, "journal")
        );

        // A commit: the journal walks again, then answers for the new HEAD.
        git(&wt, &["add", "-A"]);
        git(&wt, &["commit", "-qm", "work"]);
        let (_, answer) = changed_and_ready(&journal, seen, "a commit");
        let read = counts(&wt, "main", Some(answer)).unwrap();
        assert_eq!((read.ahead, read.changed_files), (1, 2));
        let head = git(&wt, &["rev-parse", "HEAD"]);
        assert_eq!(read.head.as_deref(), Some(head.trim()));
    }
}
