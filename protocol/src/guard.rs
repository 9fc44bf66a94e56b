//! The serde form of `owt guard --json` and `owt queue --json`: Conflict
//! Guard's report of overlapping participants and the merge queue.
//!
//! Line ranges are 1-based. A range with `lines == 0` is a pure insertion
//! placed before line `start` (or a pure deletion's position on the other
//! side).

use serde::{Deserialize, Serialize};

/// How serious an overlap between two participants is, least first.
///
/// Serialized by name (kebab-case); the order is by severity. A reader
/// should treat a name it does not know as `overlap` (newer owt versions may
/// add levels).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Level {
    /// Both made the very same change (identical lines, or an identical
    /// file): git merges it cleanly, nobody needs to act.
    SameChange,
    /// Both changed the same path.
    Overlap,
    /// Their changed line ranges intersect or touch.
    HunkOverlap,
    /// Git merges them cleanly, but one side changed a function's signature
    /// (name, parameters, return type) and the other side's changes use
    /// that name: the merged code may not build.
    Semantic,
    /// Merging one's working state after the other's into the base
    /// conflicts (see `GuardPair::conflicting_orders`).
    Conflict,
    /// A participant's working state does not merge cleanly into the
    /// current tip of its own base branch (the base moved under it). Only
    /// in [`BaseConflict`] paths.
    BaseConflict,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::SameChange => "same-change",
            Level::Overlap => "overlap",
            Level::HunkOverlap => "hunk-overlap",
            Level::Semantic => "semantic",
            Level::Conflict => "conflict",
            Level::BaseConflict => "base-conflict",
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
    /// How the first participant changed the path, when not a plain edit:
    /// `added` (a new file), `deleted`, `renamed`, `mode`, `type`,
    /// `binary`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub a_change: Option<String>,
    /// The second participant's, likewise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub b_change: Option<String>,
    /// The symbols (functions, methods, types) enclosing the first
    /// participant's ranges, as `kind name` (`fn parse_config`), when the
    /// language is known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub a_symbols: Vec<String>,
    /// The second participant's, likewise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub b_symbols: Vec<String>,
}

/// One side changed a function's signature and the other side's changes
/// use its name ([`Level::Semantic`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SemanticNote {
    /// The participant that changed the signature.
    pub changed_by: String,
    /// The symbol, as `kind name` (`fn parse_config`).
    pub symbol: String,
    /// Where its definition is, in the changing participant's file.
    pub path: String,
    /// The definition's lines in that participant's copy.
    pub lines: LineRange,
    /// The signature before and after (one line each, shortened).
    pub before: String,
    pub after: String,
    /// The participant whose changes use the name.
    pub used_by: String,
    pub used_in: String,
    /// The using participant's changed lines that name it (its own copy).
    pub used_at: Vec<LineRange>,
    /// The symbol enclosing the use, when known (`fn load`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_inside: Option<String>,
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
    /// The merges that conflict, as `[first, second]`: shipping `first`
    /// into its base and then merging `second` into the result. Either
    /// order conflicting makes the pair a `conflict`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicting_orders: Vec<[String; 2]>,
    /// Participants whose state does not merge cleanly into their own base
    /// (see `GuardReport::base_conflicts`): while one does, the pair is not
    /// merged (its conflicts with the base come first), only its lines are
    /// compared.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_merged: Vec<String>,
    /// The commit the ranges are counted in when the two participants'
    /// merge bases differ (their best common ancestor); absent when both
    /// count from their shared merge base.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lines_from: Option<String>,
    /// Signature changes one side made that the other side's changes use.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub semantic: Vec<SemanticNote>,
}

/// A participant whose working state does not merge cleanly into the
/// current tip of its base branch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaseConflict {
    /// The session name, or `you`.
    pub name: String,
    /// Its base branch.
    pub base: String,
    /// The base branch's tip the merge was tried on.
    pub base_tip: String,
    /// The conflicting paths, level [`Level::BaseConflict`]: `a_ranges` are
    /// the participant's lines, `b_ranges` the lines the base changed since
    /// the merge base, both in merge-base coordinates.
    pub paths: Vec<GuardPath>,
    pub conflicting_paths: Vec<String>,
}

/// `owt guard --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuardReport {
    pub repository: String,
    pub participants: Vec<GuardParticipant>,
    pub pairs: Vec<GuardPair>,
    /// Participants whose state does not merge into their base's tip.
    #[serde(default)]
    pub base_conflicts: Vec<BaseConflict>,
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
    /// Sessions (or you) whose changes overlap this one's: the board's
    /// count (`SessionView.overlaps`).
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

/// The version of the guard query `owt guard` sends a running `owt lsp`
/// ([`WarmRequest`], [`WarmAnswer`]; protocol.md, "Guard queries").
pub const WARM_VERSION: u32 = 1;

/// `owt guard` asking a running `owt lsp` for its report: one line of JSON
/// on the server's socket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WarmRequest {
    pub version: u32,
}

/// The server's answer, one line of JSON: the report a cold `owt guard`
/// would compute (every pair, no unsaved buffers), or why not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WarmAnswer {
    pub version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report: Option<GuardReport>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
