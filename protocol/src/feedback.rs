//! The serde form of the feedback loops' verbs: `owt checks --json`,
//! `owt pr --json`, `owt watch --json`.

use serde::{Deserialize, Serialize};

use crate::{ChecksView, PrView};

/// `owt checks NAME [--run] --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChecksOutput {
    pub session: String,
    /// `[checks] command` as configured (`None`: no checks configured).
    pub command: Option<String>,
    /// `turn-end`, `ship` or `manual`.
    pub when: String,
    /// The last run (the one `--run` started, with `--run`).
    pub checks: Option<ChecksView>,
    /// The end of the failed run's output, bounded (`[checks] excerpt_lines`).
    pub excerpt: Option<String>,
    /// Why it failed when no exit code says it: timed out, could not start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// `owt pr NAME --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PrOutput {
    pub session: String,
    /// `github` or `gitlab`.
    pub forge: String,
    pub remote: String,
    pub branch: String,
    pub base: String,
    /// The commit pushed.
    pub pushed: String,
    /// A pull request was opened now (`false`: it existed; the push updated it).
    pub created: bool,
    /// The commit made of the worktree's uncommitted work, if there was any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub committed: Option<String>,
    pub pr: PrView,
    /// `[checks]` were skipped with `--no-checks`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub checks_skipped: bool,
}

/// One thing `owt watch` saw or did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WatchEvent {
    pub session: String,
    pub pr: u64,
    /// `ci-failed`, `review-comment`, `comment-not-routed` (comments by
    /// outside authors, never typed), `conflict`, `merged`, `deleted`,
    /// `closed`, `rate-limited`, `error`, `leased-elsewhere`, `polled`.
    pub kind: String,
    pub detail: String,
    /// Whether a message was typed into the agent.
    pub told_agent: bool,
}

/// `owt watch --once --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WatchOutput {
    pub events: Vec<WatchEvent>,
}
