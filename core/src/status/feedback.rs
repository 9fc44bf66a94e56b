//! The feedback loops' facts — local checks, the pull request — and what
//! they make of a session's status once its agent's turn is over.
//!
//! Invariant: pure, like the rest of `status`. The rules (after the
//! agent's own status is known):
//!
//! 1. a merged pull request is `merged`, READY TO CLEAN, whatever the agent
//!    does;
//! 2. the rest applies only when the agent's turn is over (done, waiting,
//!    idle, or exited with code 0) and the session has work;
//! 3. checks that ran since the last input reached the agent decide first:
//!    running is `checks-running` (IN FLIGHT); failed is `checks-failed`,
//!    IN FLIGHT while owt asked the agent to fix them, NEEDS YOU once owt
//!    gave up (`max_attempts` fixes failed) or did not ask;
//! 4. turn-end checks a live session's host runs, with no run since the
//!    last input, are due: `checks-running` ("checks pending");
//! 5. an open pull request: failing CI is `ci-failed` (IN FLIGHT while the
//!    agent fixes it, NEEDS YOU once it gave up), changes requested is
//!    `changes-requested` (IN FLIGHT), green and approved is `pr-open` in
//!    READY TO SHIP, anything else `pr-open` IN FLIGHT.

use owt_protocol::{ChecksView, Lane, PrView, Status};
use serde::{Deserialize, Serialize};

use super::SessionFacts;

/// Fact kinds of the feedback loops.
pub mod kind {
    /// [`super::ChecksFact`]: the last checks run.
    pub const CHECKS: &str = "checks";
    /// [`super::ChecksSetup`]: the session's host runs turn-end checks.
    pub const CHECKS_SETUP: &str = "checks-setup";
    /// [`super::PrFact`]: the session's pull request.
    pub const PR: &str = "pr";
    /// [`super::PrLease`]: which watcher looks at the pull request.
    pub const PR_LEASE: &str = "pr-lease";
    /// [`super::ToldConflicts`]: conflicts already typed into the agent.
    pub const TOLD_CONFLICTS: &str = "told-conflicts";
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChecksState {
    Running,
    Passed,
    Failed,
    /// A new turn made the run outdated, or the host went away.
    Cancelled,
    /// Nothing to check (no changes against the base).
    Skipped,
}

impl ChecksState {
    pub fn as_str(self) -> &'static str {
        match self {
            ChecksState::Running => "running",
            ChecksState::Passed => "passed",
            ChecksState::Failed => "failed",
            ChecksState::Cancelled => "cancelled",
            ChecksState::Skipped => "skipped",
        }
    }
}

/// One checks run, as recorded when it starts and again when it ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChecksFact {
    pub state: ChecksState,
    /// The command as configured.
    pub command: String,
    /// `turn-end`, `ship`, `pr` or `manual`.
    pub trigger: String,
    /// Unix ms.
    pub started_at: i64,
    /// When this result was last confirmed for the work as it is: a turn
    /// that ends without changing the work confirms the last result again.
    pub checked_at: i64,
    #[serde(default)]
    pub duration_ms: Option<u64>,
    #[serde(default)]
    pub exit_code: Option<i32>,
    #[serde(default)]
    pub timed_out: bool,
    /// Why it failed without an exit code, or was cancelled.
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub log: Option<String>,
    /// The end of the output, bounded.
    #[serde(default)]
    pub excerpt: Option<String>,
    /// Failed runs in a row, this one included (0 when it passed).
    #[serde(default)]
    pub attempt: u32,
    #[serde(default)]
    pub max_attempts: u32,
    /// owt typed the failure into the agent (or is about to).
    #[serde(default)]
    pub fixing: bool,
    /// The work's snapshot (git tree of the whole working state) it ran on.
    #[serde(default)]
    pub tree: Option<String>,
}

impl ChecksFact {
    /// The result holds for the work as it is now: it was confirmed after
    /// the last input reached the agent.
    pub fn current(&self, last_input_at: Option<i64>) -> bool {
        last_input_at.is_none_or(|input| self.checked_at >= input)
    }

    pub fn view(&self, last_input_at: Option<i64>) -> ChecksView {
        ChecksView {
            state: self.state.as_str().to_string(),
            trigger: self.trigger.clone(),
            attempt: self.attempt,
            max_attempts: self.max_attempts,
            exit_code: self.exit_code,
            timed_out: self.timed_out,
            duration_ms: self.duration_ms,
            log: self.log.clone(),
            started_at: self.started_at,
            current: self.current(last_input_at),
        }
    }

    /// `checks failed (exit code 1)`, `checks passed in 3.2 s`, …
    pub fn summary(&self) -> String {
        let took = self
            .duration_ms
            .map(|ms| format!(" in {:.1} s", ms as f64 / 1000.0))
            .unwrap_or_default();
        match self.state {
            ChecksState::Running => "checks running".into(),
            ChecksState::Passed => format!("checks passed{took}"),
            ChecksState::Skipped => "checks skipped (no changes)".into(),
            ChecksState::Cancelled => format!(
                "checks cancelled ({})",
                self.reason.as_deref().unwrap_or("outdated")
            ),
            ChecksState::Failed => format!("checks failed ({}){took}", self.why()),
        }
    }

    /// Why a run failed: `exit code 1`, `timed out after 600 s`, `could
    /// not start: …`.
    pub fn why(&self) -> String {
        match (&self.reason, self.exit_code) {
            (Some(reason), _) if self.timed_out || self.exit_code.is_none() => reason.clone(),
            (_, Some(code)) => format!("exit code {code}"),
            (_, None) if self.timed_out => "timed out".into(),
            _ => "failed".into(),
        }
    }
}

/// What the session's host does about checks, recorded when it starts and
/// whenever it reads a different `[checks]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChecksSetup {
    /// `turn-end`, `ship` or `manual`; `none` without a command.
    pub when: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PrState {
    #[default]
    Open,
    Closed,
    Merged,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CiState {
    /// No CI reported on the pull request.
    #[default]
    None,
    Pending,
    Passing,
    Failing,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReviewState {
    #[default]
    None,
    ReviewRequired,
    Approved,
    ChangesRequested,
}

fn kebab<T: Serialize>(value: &T) -> String {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// A session's pull request as owt last saw it, and what it already told
/// the agent about it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct PrFact {
    /// `github` or `gitlab`.
    pub forge: String,
    /// `HOST/OWNER/NAME` as the forge CLI takes it.
    pub repo: String,
    pub remote: String,
    pub number: u64,
    pub url: String,
    pub state: PrState,
    pub draft: bool,
    pub ci: CiState,
    pub review: ReviewState,
    /// `mergeable`, `conflicting` or `unknown`.
    pub mergeable: String,
    /// The head commit the forge has.
    pub head: Option<String>,
    /// Failing CI runs typed into the agent in a row (reset when CI passes).
    pub ci_attempt: u32,
    pub ci_max_attempts: u32,
    /// The head commit whose CI failure was typed into the agent.
    pub ci_told_for: Option<String>,
    /// CI failed again after `ci_max_attempts` fixes: owt stopped asking.
    pub ci_gave_up: bool,
    /// Review comments (and reviews) typed into the agent, by id.
    pub told_comments: Vec<String>,
    /// Comments by authors `[feedback] comment_authors` does not route
    /// (outside authors), by id: listed, never typed.
    pub outside_comments: Vec<String>,
    /// The head commit whose merge conflict was typed into the agent.
    pub conflict_told_for: Option<String>,
    /// Unix ms of the last look, and when the next is due.
    pub polled_at: Option<i64>,
    pub next_poll_at: Option<i64>,
    /// The current pause between looks (ms), doubling while nothing changes.
    pub interval_ms: u64,
    /// What went wrong the last time (rate limit, network, authentication).
    pub error: Option<String>,
}

impl PrFact {
    pub fn view(&self) -> PrView {
        PrView {
            number: self.number,
            url: self.url.clone(),
            state: kebab(&self.state),
            draft: self.draft,
            ci: kebab(&self.ci),
            review: kebab(&self.review),
            error: self.error.clone(),
        }
    }
}

/// Who looks at a pull request now; a watcher takes it only when it is
/// free or expired, so two never watch the same one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrLease {
    pub holder: String,
    pub expires_at: i64,
}

/// Conflicts already typed into a session's agent, by key (the other
/// party and the conflicting paths), so each is told once.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ToldConflicts {
    pub keys: Vec<String>,
}

/// The feedback loops' facts of a session, decoded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FeedbackFacts {
    pub checks: Option<ChecksFact>,
    pub setup: Option<ChecksSetup>,
    pub pr: Option<PrFact>,
}

/// Whether the agent's own status means its turn is over.
pub fn turn_over(status: Status, exit_code: Option<i32>) -> bool {
    match status {
        Status::Done | Status::NeedsInput | Status::Idle => true,
        Status::Exited => exit_code == Some(0),
        _ => false,
    }
}

/// What the feedback facts make of a session whose agent shows `agent`
/// (rules in the module doc); `None` leaves the agent's status as is.
pub fn feedback_status(
    facts: &SessionFacts,
    agent: Status,
    exit_code: Option<i32>,
) -> Option<(Status, String, Lane)> {
    let pr = facts.feedback.pr.as_ref();
    if let Some(pr) = pr.filter(|p| p.state == PrState::Merged) {
        return Some((
            Status::Merged,
            format!("merged (#{})", pr.number),
            Lane::ReadyToClean,
        ));
    }
    if !turn_over(agent, exit_code) || !facts.has_work() {
        return None;
    }
    let live = agent != Status::Exited;
    if let Some(checks) = checks_status(facts, live) {
        return Some(checks);
    }
    let pr = pr.filter(|p| p.state == PrState::Open)?;
    Some(pr_status(pr, live))
}

/// What the local checks say of a turn that is over (`live`: the agent
/// still runs), when they say something: running or pending, failed (being
/// fixed, or needing the user).
fn checks_status(facts: &SessionFacts, live: bool) -> Option<(Status, String, Lane)> {
    let fb = &facts.feedback;
    match fb
        .checks
        .as_ref()
        .filter(|c| c.current(facts.last_input_at))
    {
        Some(c) if c.state == ChecksState::Running => Some((
            Status::ChecksRunning,
            "checks running".into(),
            Lane::InFlight,
        )),
        Some(c) if c.state == ChecksState::Failed => Some(if c.fixing && live {
            (
                Status::ChecksFailed,
                format!(
                    "checks failed, agent fixing ({} of {})",
                    c.attempt, c.max_attempts
                ),
                Lane::InFlight,
            )
        } else if c.max_attempts > 0 && c.attempt > c.max_attempts {
            (
                Status::ChecksFailed,
                format!("checks failed ({} fixes tried)", c.max_attempts),
                Lane::NeedsYou,
            )
        } else {
            (Status::ChecksFailed, "checks failed".into(), Lane::NeedsYou)
        }),
        Some(_) => None,
        None => {
            let due = fb.setup.as_ref().is_some_and(|s| s.when == "turn-end");
            (due && live).then(|| {
                (
                    Status::ChecksRunning,
                    "checks pending".into(),
                    Lane::InFlight,
                )
            })
        }
    }
}

/// What an open pull request's CI and review say (`live`: the agent still
/// runs and can fix a failure).
fn pr_status(pr: &PrFact, live: bool) -> (Status, String, Lane) {
    let (status, text, lane) = pr_state_status(pr, live);
    match pr.outside_comments.len() {
        0 => (status, text, lane),
        1 => (
            status,
            format!("{text}; 1 comment not routed (outside authors)"),
            lane,
        ),
        n => (
            status,
            format!("{text}; {n} comments not routed (outside authors)"),
            lane,
        ),
    }
}

/// [`pr_status`] but for the comments not routed.
fn pr_state_status(pr: &PrFact, live: bool) -> (Status, String, Lane) {
    let n = pr.number;
    match (pr.ci, pr.review) {
        (CiState::Failing, _) if pr.ci_gave_up || !live => (
            Status::CiFailed,
            format!("ci failed on #{n}"),
            Lane::NeedsYou,
        ),
        (CiState::Failing, _) => (
            Status::CiFailed,
            format!("ci failed on #{n}, agent fixing"),
            Lane::InFlight,
        ),
        (_, ReviewState::ChangesRequested) => (
            Status::ChangesRequested,
            format!("changes requested on #{n}"),
            Lane::InFlight,
        ),
        (CiState::Passing | CiState::None, ReviewState::Approved) => {
            (Status::PrOpen, format!("#{n} approved"), Lane::ReadyToShip)
        }
        (CiState::Pending, _) => (
            Status::PrOpen,
            format!("#{n} open, ci running"),
            Lane::InFlight,
        ),
        _ => (
            Status::PrOpen,
            format!("#{n} open, awaiting review"),
            Lane::InFlight,
        ),
    }
}
