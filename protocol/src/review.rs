//! Review: an agent's diff, the comments sent back to it, and which files
//! the human has reviewed. Printed by `owt diff --json`, `owt comments
//! --json` and answered by the LSP request `owt/diff` ([`METHOD_DIFF`]).

use serde::{Deserialize, Serialize};

/// LSP request: [`DiffParams`] → [`DiffReport`].
pub const METHOD_DIFF: &str = "owt/diff";
/// Diagnostic `source` of review comments (severity Hint).
pub const COMMENT_SOURCE: &str = "owt-review";

/// `owt/diff` params.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(optional_fields))]
pub struct DiffParams {
    pub session: String,
    /// Only this file (relative to the worktree, `/`-separated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
}

/// How a file changed between the merge base and the agent's working state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum FileStatus {
    Added,
    Deleted,
    Modified,
    Renamed,
    /// Only the mode (the executable bit) changed.
    ModeChanged,
    /// File ↔ symlink (or submodule).
    TypeChanged,
}

impl FileStatus {
    /// One letter, as `git diff --name-status` prints it.
    pub fn letter(self) -> char {
        match self {
            FileStatus::Added => 'A',
            FileStatus::Deleted => 'D',
            FileStatus::Modified | FileStatus::ModeChanged => 'M',
            FileStatus::Renamed => 'R',
            FileStatus::TypeChanged => 'T',
        }
    }
}

/// One line of a hunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(optional_fields))]
pub struct DiffLine {
    /// `" "` context, `"+"` added, `"-"` removed.
    pub origin: String,
    /// The line without its newline (invalid UTF-8 replaced).
    pub text: String,
    /// 1-based line in the base (context and removed lines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_line: Option<u32>,
    /// 1-based line in the agent's file (context and added lines).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_line: Option<u32>,
    /// This line ends its file with no newline.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_newline: bool,
}

/// One hunk, with three lines of context (as `git diff`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct DiffHunk {
    /// `@@ -a,b +c,d @@ …` as git prints it.
    pub header: String,
    pub old_start: u32,
    pub old_lines: u32,
    pub new_start: u32,
    pub new_lines: u32,
    pub lines: Vec<DiffLine>,
}

/// One changed file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(optional_fields))]
pub struct DiffFile {
    /// Relative to the worktree, `/`-separated (the new path of a rename).
    pub path: String,
    /// The path in the base, for a rename.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    pub status: FileStatus,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub binary: bool,
    /// Octal git modes (`100644`, `100755`, `120000`); absent on the side
    /// where the file does not exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_mode: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new_mode: Option<String>,
    /// The base's blob (`git cat-file blob ID` in the repository).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_blob: Option<String>,
    /// The agent's blob: its file's content now, as ship would commit it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_blob: Option<String>,
    /// `file://` URI of the agent's copy (absent for a deleted file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_uri: Option<String>,
    pub additions: u32,
    pub deletions: u32,
    /// The human marked this file reviewed and it has not changed since.
    pub reviewed: bool,
    pub hunks: Vec<DiffHunk>,
}

/// `owt diff NAME --json` and `owt/diff`: the agent's whole working state
/// (committed, staged, unstaged, untracked) against its merge base.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(optional_fields))]
pub struct DiffReport {
    pub session: String,
    /// The session's worktree.
    pub worktree: String,
    /// The base branch.
    pub base: String,
    /// The commit the diff starts from (absent on an unborn branch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_base: Option<String>,
    /// The tree of the agent's working state (what ship commits).
    pub snapshot: String,
    pub files: Vec<DiffFile>,
    pub additions: u32,
    pub deletions: u32,
}

/// A review comment sent to an agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(optional_fields))]
pub struct ReviewComment {
    /// Unique within the session.
    pub id: u32,
    pub path: String,
    /// 1-based, inclusive, in the agent's file when the comment was made.
    pub start_line: u32,
    pub end_line: u32,
    /// The lines commented on, as they were.
    pub selected: String,
    pub text: String,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
    /// `open`, `addressed` (the agent changed those lines since) or
    /// `resolved` (by the human).
    pub state: String,
    /// Whether it was typed into the agent (false when its agent is not
    /// running: it is still listed).
    pub delivered: bool,
}

/// `owt comments NAME --json`, and what `owt comment` answers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct CommentsOutput {
    pub session: String,
    pub comments: Vec<ReviewComment>,
}

/// `owt review NAME --mark` answer: files now marked reviewed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ReviewedOutput {
    pub session: String,
    pub reviewed: Vec<String>,
    /// Changed files not reviewed since their last change.
    pub unreviewed: Vec<String>,
}
