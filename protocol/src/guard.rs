//! The serde form of `owt guard --json` and `owt queue --json`: Conflict
//! Guard's report of overlapping participants and the merge queue.
//!
//! Line ranges are 1-based. A range with `lines == 0` is a pure insertion
//! placed before line `start` (or a pure deletion's position on the other
//! side).

use serde::{Deserialize, Serialize};

/// How serious an overlap between two participants is, cheapest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Level {
    /// Both changed the same path.
    Overlap,
    /// Their changed line ranges intersect or touch.
    HunkOverlap,
    /// A real three-way merge of the two states has conflicts.
    Conflict,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Overlap => "overlap",
            Level::HunkOverlap => "hunk-overlap",
            Level::Conflict => "conflict",
        }
    }
}

/// Lines `start .. start + lines` (1-based).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct LineRange {
    pub start: u32,
    pub lines: u32,
}

/// One participant as the guard sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuardParticipant {
    /// Session name, or `you` for the human's checkout.
    pub name: String,
    /// `session` or `you`.
    pub kind: String,
    pub worktree: String,
    pub base: String,
    /// The git tree of its whole working state.
    pub snapshot: String,
    /// The merge base of its HEAD with its base branch.
    pub merge_base: String,
    pub changed_paths: Vec<String>,
    /// How its last full scan found what changed: `journal` (its session
    /// host's record of writes, no walk), `walk` (every file looked at) or
    /// `git` (`git status`). Absent when it was never fully scanned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scan: Option<String>,
}

/// One path both participants of a pair changed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuardPath {
    pub path: String,
    pub level: Level,
    /// The first participant's changed (or conflicting) lines, in merge-base
    /// coordinates.
    pub a_ranges: Vec<LineRange>,
    /// The second participant's, likewise.
    pub b_ranges: Vec<LineRange>,
    /// What kind of clash when it is not a plain edit on both sides
    /// (`edit/delete`, `binary`, `file/directory`, `rename`, `conflict`…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Matched a `[guard] ignore` glob (shown only because it conflicts).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ignored: bool,
}

/// Two participants that touched the same code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuardPair {
    pub a: String,
    pub b: String,
    /// The highest level over `paths`.
    pub level: Level,
    pub paths: Vec<GuardPath>,
    /// Paths a real merge of the two reports as conflicting.
    pub conflicting_paths: Vec<String>,
}

/// `owt guard --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuardReport {
    pub repository: String,
    pub participants: Vec<GuardParticipant>,
    pub pairs: Vec<GuardPair>,
    /// Milliseconds since the Unix epoch.
    pub computed_at: i64,
}

/// One step of the merge queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueStep {
    /// 1-based merge order.
    pub position: u32,
    pub session: String,
    pub branch: String,
    pub base: String,
    pub ahead: u32,
    pub changed_files: u32,
    /// How many other queued sessions touch a path this one touches.
    pub overlaps: u32,
    /// Conflicts with no other queued session at all.
    pub conflict_free: bool,
    /// Paths predicted to conflict when merged onto the base as projected
    /// after the steps before it.
    pub predicted_conflicts: Vec<String>,
}

/// `owt queue --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueReport {
    pub repository: String,
    pub steps: Vec<QueueStep>,
}
