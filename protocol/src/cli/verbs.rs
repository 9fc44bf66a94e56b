//! What the session verbs print: new, delete, merge, ship, notes, sync,
//! cleanup.

use serde::{Deserialize, Serialize};

use super::SessionView;

/// `owt new --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct NewOutput {
    pub session: SessionView,
    /// Warnings that did not stop the session (failed setup script, …).
    pub warnings: Vec<String>,
}

/// `owt delete --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct DeleteOutput {
    pub name: String,
    pub worktree_removed: bool,
    pub branch_deleted: bool,
    /// Set when the branch had commits not in the base: `refs/owt/backup/<name>`.
    pub backup_ref: Option<String>,
    /// Where the worktree's files that git does not commit (ignored files;
    /// with `--force` also the uncommitted ones) were moved:
    /// `$OWT_HOME/trash/<repo>/<session>-<time>/`.
    #[serde(default)]
    pub trash: Option<String>,
    /// The paths moved to `trash` (relative to the worktree).
    #[serde(default)]
    pub trashed: Vec<String>,
    /// Paths removed without a copy: owt's own files, files the setup
    /// copied that are unchanged, and `[worktree] disposable` caches.
    #[serde(default)]
    pub dropped: Vec<String>,
    /// Uncommitted changes `--force` discarded (a copy of each file is in
    /// `trash`).
    #[serde(default)]
    pub discarded: Vec<String>,
    /// Things the user should know (e.g. a shell still inside the worktree).
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// A file the merge would conflict on (or did), with the conflicting line
/// ranges of the merged result (1-based, inclusive).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ConflictFile {
    pub path: String,
    pub lines: Vec<(u32, u32)>,
}

/// `owt merge --json` (and the merge part of `owt ship --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct MergeOutput {
    pub name: String,
    pub branch: String,
    pub base: String,
    /// Whether the base branch now contains the session's work.
    pub merged: bool,
    pub base_before: String,
    pub base_after: String,
    /// `merge` (merge commit or fast-forward) or `rebase`.
    pub method: String,
    /// `ours` (the agent's side wins) or `theirs` (the base wins), if given.
    pub strategy: Option<String>,
    /// Conflicts predicted (or left in the worktree with `--leave-conflicts`).
    pub conflicts: Vec<ConflictFile>,
    /// The conflicts were left in the worktree for you to resolve.
    pub left_conflicts: bool,
    /// The human's checkout of the base branch was updated.
    pub checkout_updated: Option<String>,
    /// The session was deleted after the merge (not with `--keep`).
    pub deleted: bool,
    /// Where the deletion moved the worktree's ignored files, if any.
    #[serde(default)]
    pub trash: Option<String>,
}

/// `owt ship --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(optional_fields))]
pub struct ShipOutput {
    /// The commit made of the worktree's uncommitted work, if there was any.
    pub committed: Option<String>,
    pub merge: MergeOutput,
    /// Changed files shipped without being marked reviewed since their
    /// last change (`owt review NAME --mark`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreviewed: Vec<String>,
    /// `[checks]` before shipping: `passed`, `skipped` (`--no-checks`) or
    /// `not-run` (`when = "manual"`); absent without checks configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<String>,
}

/// `owt queue --ship --json`: what shipped and where it stopped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueShipOutput {
    pub shipped: Vec<ShipOutput>,
    /// The session the queue stopped at, and why.
    pub stopped_at: Option<String>,
    pub reason: Option<String>,
    /// Sessions not attempted.
    pub remaining: Vec<String>,
}

/// `owt note --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotesOutput {
    /// The notes now in force, oldest first.
    pub notes: Vec<String>,
    /// Live sessions the new note was typed into (working ones, whose
    /// agent reads it at its next turn; with `--now`, every live one not
    /// showing a dialog).
    pub delivered_to: Vec<String>,
    /// Live sessions that get the note with their next prompt (`owt send`)
    /// instead of a turn of its own.
    #[serde(default)]
    pub at_next_turn: Vec<String>,
    /// Sessions it could not reach, with why.
    pub not_delivered: Vec<(String, String)>,
    /// Notes removed by `--clear`.
    pub cleared: u64,
}

/// `owt sync --json`: one entry per session synced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SyncOutput {
    pub sessions: Vec<SyncResult>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SyncResult {
    pub name: String,
    pub base: String,
    /// `up-to-date`, `synced`, `conflicts` (restored, or left with `--leave-conflicts`), `skipped`.
    pub outcome: String,
    /// The base was first fast-forwarded from its upstream (e.g. `origin/main`).
    pub fetched_from: Option<String>,
    pub conflicts: Vec<String>,
    pub detail: Option<String>,
}

/// `owt cleanup --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CleanupOutput {
    pub days: u32,
    /// Stale sessions (exited or idle for longer than `days`).
    pub stale: Vec<StaleSession>,
    /// Removed (only with `--force`).
    pub removed: Vec<String>,
    /// Stale but kept, with why (uncommitted work, …).
    pub kept: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StaleSession {
    pub name: String,
    pub status_text: String,
    /// Days since the agent last did anything.
    pub idle_days: f64,
}
