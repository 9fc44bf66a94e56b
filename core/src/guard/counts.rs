//! A checkout's commits ahead and changed files, as `owt list` shows them
//! (HEAD against the merge base with its base branch, as the Conflict
//! Guard counts them: a rename is one change). Read by a listing for a
//! checkout without a live host, and by a session host for its own
//! checkout from its journal whenever the journal changes.

use std::path::Path;
use std::sync::Arc;

use super::journal::JournalSource;
use super::snapshot::{ScanSource, WorkState};
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
