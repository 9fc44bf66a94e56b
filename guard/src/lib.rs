//! owt-guard, the Conflict Guard: live, three-level overlap detection between every pair
//! of participants — each session's worktree and the human's checkout
//! ("you", with unsaved editor buffers as overrides).
//!
//! Code map:
//! - [`tree`]: pruned tree diff and tree overlay (the cost model's base);
//! - [`snapshot`]: a participant's working state as a git tree;
//! - [`changes`]: paths and hunks from the merge base to a snapshot;
//! - [`merge`]: merge verdicts (libgit2 on restricted trees, or git);
//! - [`commit_graph`]: owt's commit-graph of a repository that has none,
//!   for git's walks of its history;
//! - [`verdict`]: the merges a supervisor asks about — a state into its
//!   base's tip (`base-conflict`), one state after another's (`conflict`);
//! - [`levels`]: `same-change` / `overlap` / `hunk-overlap` / `semantic` /
//!   `conflict` for one pair, `base-conflict` for one participant;
//! - [`symbols`]: tree-sitter symbol index of changed files (enclosing
//!   symbols of line ranges, signature changes and their uses);
//! - [`engine`]: [`GuardEngine`], the incremental owner of all of the above
//!   (the API the LSP drives);
//! - [`watch`]: the inotify watcher feeding the engine;
//! - [`journal`]: what a session host keeps of its worktree's changes, so
//!   a full scan of a live agent's checkout looks only at those;
//! - [`queue`]: the merge order of sessions ready to ship;
//! - [`line_map`]: base line numbers mapped into the current text.
//!
//! owt-core re-exports this crate as `guard` (`owt_core::guard`); the glue
//! to the store and the repository context (participants, facts, reports)
//! is a use case there: owt-core's `ops::guard`.
//!
//! Invariants: guard computation is pure given snapshots (it reads and
//! writes git objects only, never an index, a working file or a ref); only
//! [`watch`] (for the LSP's engine) and [`journal`] (in a session host)
//! subscribe to file-system events; nothing here touches the store or
//! knows the session hosts (of the store, this crate names only its clock,
//! `now_ms`, and its private file write, `write_private`: the private
//! `store` module below, and `scripts/check-layers` fails on `owt_store`
//! named elsewhere); no `unsafe` (the system calls are owt-sys's).

#![forbid(unsafe_code)]

// The platform layer and its safe file opening, by the names owt-core
// gives them.
use owt_sys as platform;
use owt_sys::safe_fs;

/// What the guard takes from the status store: its clock and its private
/// (0600) file write, nothing that opens the store.
mod store {
    pub use owt_store::{now_ms, write_private};
}

pub mod big;
pub mod changes;
pub mod commit_graph;
#[cfg(any(test, feature = "corpus"))]
pub mod corpus;
pub mod counts;
pub mod engine;
pub mod journal;
pub mod levels;
pub mod line_map;
pub mod merge;
pub mod patch;
pub mod pid_record;
pub mod pre_edit;
pub mod queue;
pub mod snapshot;
pub mod source;
pub mod symbols;
pub mod tree;
pub mod unsaved;
pub mod verdict;
pub mod warm;
pub mod watch;

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

pub use changes::{Change, ChangeKind, Hunk};
pub use engine::{GuardEngine, GuardUpdate, Participant, YOU};
pub use watch::{Flusher, GuardWatcher, Watching};

/// Fact kinds the guard records (`facts.kind`), beside owt-core's
/// `status::kind::OVERLAPS`.
pub mod kind {
    /// [`super::GuardFact`]: a session's changes, hunks and snapshot.
    pub const GUARD: &str = "guard";
}

/// What the guard stores per session (fact kind [`kind::GUARD`]), so `owt
/// list`, editors and the MCP `get_peer_files` tool read it without
/// recomputing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuardFact {
    /// The snapshot tree of the session's whole working state.
    pub snapshot: String,
    pub head: Option<String>,
    pub merge_base: Option<String>,
    /// Changed paths with hunks (base coordinates in `old_*`).
    pub changes: Vec<Change>,
    /// Milliseconds since the Unix epoch.
    pub computed_at: i64,
}

#[derive(Debug, thiserror::Error)]
pub enum GuardError {
    #[error(transparent)]
    Git(#[from] git2::Error),
    #[error("{0} is a bare repository")]
    Bare(PathBuf),
    #[error("{path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("git merge-tree failed: {0}")]
    GitCli(String),
    #[error("bad [guard] ignore glob: {0}")]
    Glob(globset::Error),
    #[error("no participant `{0}`")]
    NoParticipant(String),
    #[error("conflict guard: {0}")]
    Internal(String),
}

impl From<globset::Error> for GuardError {
    fn from(e: globset::Error) -> Self {
        GuardError::Glob(e)
    }
}

#[cfg(test)]
mod history_tests;
#[cfg(test)]
mod regions_tests;
#[cfg(test)]
mod reparse_tests;
#[cfg(test)]
mod symbol_cache_tests;
#[cfg(test)]
mod symbol_tests;
#[cfg(test)]
mod tests;
