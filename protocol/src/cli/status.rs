//! A session's status, lane, kind and the actions it allows.

use serde::{Deserialize, Serialize};

/// The display status of a session, derived from its stored facts by one pure
/// function (`owt::status::derive_status`). Never stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum Status {
    /// Created; the agent has not shown any output yet.
    Starting,
    /// The agent is busy (spinner, streaming output, a turn in progress).
    Working,
    /// The agent is alive and quiet, with nothing asked of anyone.
    Idle,
    /// The agent waits for the human: its input box is ready, or it asked a question.
    NeedsInput,
    /// The agent shows a permission dialog or reported itself blocked.
    Blocked,
    /// The agent reported its work done.
    Done,
    /// The agent process is gone (see `exit_code` and `host_lost`).
    Exited,
    /// A merge or rebase in the session's worktree stopped on conflicts.
    Conflict,
    /// The agent's turn is over and `[checks]` run on its work (or are due).
    ChecksRunning,
    /// The checks failed on the agent's work (see `checks`): the agent is
    /// fixing them (IN FLIGHT) or gave up / was not asked (NEEDS YOU).
    ChecksFailed,
    /// The pull request's CI failed (see `pr`).
    CiFailed,
    /// A reviewer asked for changes on the pull request.
    ChangesRequested,
    /// A pull request is open (CI running or green; READY TO SHIP once
    /// approved).
    PrOpen,
    /// The pull request was merged: nothing is left but cleaning up.
    Merged,
    /// Created with its worktree, waiting for room on the machine (`[agent]
    /// max_running`, `min_free_memory`): its agent starts when a running
    /// one ends or frees memory.
    Queued,
    /// A remote session whose machine owt cannot reach right now (its
    /// bridge is down); its last known state is kept, nothing is deleted.
    Unreachable,
    /// The agent hit a usage or rate limit (HTTP 429, "usage limit
    /// reached"): it waits for the limit to reset (see `status_text`).
    Limited,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Starting => "starting",
            Status::Working => "working",
            Status::Idle => "idle",
            Status::NeedsInput => "needs-input",
            Status::Blocked => "blocked",
            Status::Done => "done",
            Status::Exited => "exited",
            Status::Conflict => "conflict",
            Status::ChecksRunning => "checks-running",
            Status::ChecksFailed => "checks-failed",
            Status::CiFailed => "ci-failed",
            Status::ChangesRequested => "changes-requested",
            Status::PrOpen => "pr-open",
            Status::Merged => "merged",
            Status::Queued => "queued",
            Status::Unreachable => "unreachable",
            Status::Limited => "limited",
        }
    }
}

/// The board lane a session is shown in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum Lane {
    NeedsYou,
    ReadyToShip,
    InFlight,
    /// The work landed elsewhere (a merged pull request): delete the session.
    ReadyToClean,
}

impl Lane {
    pub const ALL: [Lane; 4] = [
        Lane::NeedsYou,
        Lane::ReadyToShip,
        Lane::InFlight,
        Lane::ReadyToClean,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Lane::NeedsYou => "NEEDS YOU",
            Lane::ReadyToShip => "READY TO SHIP",
            Lane::InFlight => "IN FLIGHT",
            Lane::ReadyToClean => "READY TO CLEAN",
        }
    }
}

/// Whether a READY TO SHIP session's work was reviewed: every changed
/// file opened (marked reviewed) since the agent's last change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum ReviewState {
    Reviewed,
    NotReviewed,
}

impl ReviewState {
    /// The words the board shows: `reviewed`, `not reviewed`.
    pub fn text(self) -> &'static str {
        match self {
            ReviewState::Reviewed => "reviewed",
            ReviewState::NotReviewed => "not reviewed",
        }
    }
}

/// How a session holds its code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum SessionKind {
    /// Its own git worktree and branch (the default).
    Worktree,
    /// A branch in the human's checkout (`--in-place`).
    Branch,
}

impl SessionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SessionKind::Worktree => "worktree",
            SessionKind::Branch => "branch",
        }
    }

    /// The kind named `text` (`worktree`, `branch`).
    pub fn parse(text: &str) -> Option<SessionKind> {
        match text {
            "worktree" => Some(SessionKind::Worktree),
            "branch" => Some(SessionKind::Branch),
            _ => None,
        }
    }
}

/// Something a person can do to a session (every surface offers the same
/// ones, from [`SessionView::actions`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[cfg_attr(test, derive(ts_rs::TS))]
pub enum SessionAction {
    /// Open a terminal on the agent.
    Attach,
    /// Show the agent's screen.
    Peek,
    /// Type text into the agent.
    Send,
    /// Start an agent that is gone (it exited, or its host was lost) again
    /// in the same worktree, continuing its conversation (`owt resume`).
    Resume,
    /// Merge the branch into its base.
    Merge,
    /// Commit, merge and delete.
    Ship,
    /// Stop the agent, remove its worktree and branch.
    Delete,
    /// Open the files a merge or rebase left conflicted.
    Conflicts,
    /// ACP sessions: answer the pending permission request with one of
    /// its options (`owt approve`).
    Approve,
    /// ACP sessions: refuse the pending permission request (`owt deny`).
    Deny,
}

impl SessionAction {
    /// Every action, in menu order.
    pub const ALL: [SessionAction; 10] = [
        SessionAction::Attach,
        SessionAction::Peek,
        SessionAction::Send,
        SessionAction::Resume,
        SessionAction::Merge,
        SessionAction::Ship,
        SessionAction::Delete,
        SessionAction::Conflicts,
        SessionAction::Approve,
        SessionAction::Deny,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SessionAction::Attach => "attach",
            SessionAction::Peek => "peek",
            SessionAction::Send => "send",
            SessionAction::Resume => "resume",
            SessionAction::Merge => "merge",
            SessionAction::Ship => "ship",
            SessionAction::Delete => "delete",
            SessionAction::Conflicts => "conflicts",
            SessionAction::Approve => "approve",
            SessionAction::Deny => "deny",
        }
    }
}

/// Whether an action can be done now, and if not, why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ActionState {
    pub action: SessionAction,
    pub available: bool,
    /// Why it is not available (a fragment: `the agent exited`).
    pub reason: Option<String>,
}
