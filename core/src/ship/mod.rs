//! Commit, merge and ship at the git level: predict a merge's conflicts in
//! memory, commit a worktree's work (running its hooks), bring the base into
//! a branch (phase 1), advance the base branch (phase 2).
//!
//! Invariants: nothing here deletes a file, a commit or a ref. Phase 1 either
//! succeeds, or restores the worktree exactly (`merge --abort` /
//! `rebase --abort` on a worktree that was clean), or — only when asked —
//! leaves the conflict in place. Phase 2 only fast-forwards; a checkout of
//! the base branch is updated the way `git merge --ff-only` does it, and
//! refused (changing nothing) when that would overwrite local changes or an
//! untracked or ignored file. Worktree-changing steps run the `git` CLI, so
//! hooks, attributes and rerere behave exactly as git's own.
//!
//! Parts: `predict` (conflicts in memory), `commit` (a worktree's work
//! committed), `phase1` (the base brought in, or aborted), `restore` (a
//! failed phase 1 undone file by file), `phase2` (the base advanced, its
//! checkout too); `git_cli` runs git.

mod commit;
pub mod git_cli;
mod phase1;
mod phase2;
mod predict;
mod restore;

pub use commit::commit_all;
pub use phase1::{abort, bring_base_in, conflicted_files, in_progress, in_progress_in, Phase1};
pub use phase2::{advance_base, untracked_in_the_way};
pub use predict::{marker_ranges, predict};
pub use restore::{restore_phase1, Restored};

#[derive(Debug, thiserror::Error)]
pub enum ShipError {
    #[error(transparent)]
    Git(#[from] git2::Error),
    #[error(transparent)]
    Cli(#[from] git_cli::GitCliError),
    #[error("{0}")]
    Refused(String),
}

pub type Result<T, E = ShipError> = std::result::Result<T, E>;

/// How phase 1 brings the base into the branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Merge,
    Rebase,
}

/// Which side wins a conflicting hunk, from the agent's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// The agent's side wins.
    Ours,
    /// The base's side wins.
    Theirs,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Ours => "ours",
            Strategy::Theirs => "theirs",
        }
    }

    /// The `-X` option for git: in a merge run on the agent's branch "ours"
    /// is the agent; in a rebase onto the base, git's "ours" is the base.
    fn git_option(self, method: Method) -> &'static str {
        match (self, method) {
            (Strategy::Ours, Method::Merge) | (Strategy::Theirs, Method::Rebase) => "ours",
            (Strategy::Theirs, Method::Merge) | (Strategy::Ours, Method::Rebase) => "theirs",
        }
    }
}

/// Whether a git failure message says the disk is full.
pub fn is_disk_full(message: &str) -> bool {
    message.contains("No space left on device")
        || message.contains("unable to write file")
        || message.contains("short write")
}

/// Kills this process when `OWT_FAILPOINT` names `point` (crash-safety
/// tests inject SIGKILL between the steps of merge and ship this way).
pub fn failpoint(point: &str) {
    if std::env::var("OWT_FAILPOINT").is_ok_and(|v| v == point) {
        crate::platform::process::signal_process(
            std::process::id(),
            crate::platform::process::Signal::KILL,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_ranges_finds_blocks() {
        let text = b"a\n<<<<<<< ours\nb\n=======\nc\n>>>>>>> theirs\nd\n<<<<<<< x\n>>>>>>> y\n";
        assert_eq!(marker_ranges(text), vec![(2, 6), (8, 9)]);
    }

    #[test]
    fn strategy_is_from_the_agents_point_of_view() {
        assert_eq!(Strategy::Ours.git_option(Method::Merge), "ours");
        assert_eq!(Strategy::Ours.git_option(Method::Rebase), "theirs");
        assert_eq!(Strategy::Theirs.git_option(Method::Merge), "theirs");
        assert_eq!(Strategy::Theirs.git_option(Method::Rebase), "ours");
    }
}
