//! Derived status: the one pure function from a session's stored facts to
//! the status and board lane every surface shows.
//!
//! Invariant: nothing here reads the clock, the store, git or a process;
//! callers gather [`SessionFacts`] and pass `now`. The rules:
//!
//! 1. an exit fact wins (`exited`, or `exited (host lost)`); a headless
//!    run (the agent's non-interactive form) that exited with code 0 is
//!    `done`; then, for a remote session, an `unreachable` fact (its
//!    bridge is down: `unreachable (since 14:02:07 UTC)`, lane IN FLIGHT —
//!    the agent goes on over there, owt just cannot see it; never
//!    `exited`);
//! 2. an unresolved merge conflict in the worktree is `conflict`; then a
//!    usage or rate limit the agent shows, newer than its last input, is
//!    `limited` (see [`limit`]);
//! 3. *sticky* states — `blocked`, `needs-input`, `done` — hold until newer
//!    input reaches the agent or a hook reports a new turn (`working`); tool
//!    output alone does not clear them; what the agent said itself (hook,
//!    native notification, MCP report) outranks what its screen shows,
//!    except that a permission dialog on screen newer than the agent's own
//!    word is `blocked` (a "needs you" notification comes just before the
//!    dialog it announces);
//! 4. a hook's `working` holds while fresh; once older than
//!    [`HOOK_STALE_MS`] the screen (re-checked by the host) decides, so no
//!    session stays `working` forever; a screen the rules do not recognise
//!    (`idle`) has no say;
//! 5. without hooks or screen rules: recent output is `working`, older
//!    output `idle`, no output yet `starting` (`starting: setting up the
//!    worktree` while `owt new` still makes it); a blocked terminal agent's
//!    text says what its dialog asks (`blocked: Do you want to …?`);
//! 6. a headless run is `working` until it exits (it waits for nobody),
//!    unless it shows a permission dialog;
//! 7. an ACP session's status is what the protocol says ([`AcpFact`]: a
//!    turn running is `working`, a permission request `blocked`, a turn
//!    ended `needs-input`); screens, hooks and output have no say (rules 1
//!    and 2 still come first).
//! 8. a session waiting for room on the machine (a `queued` fact, no host
//!    started yet) is `queued`, in the IN FLIGHT lane.
//! 9. once the agent's turn is over, the feedback loops' facts (checks,
//!    pull request) may say more: see [`feedback`].
//! 10. work that no longer merges — into its base's tip, or with another
//!     session's (the Conflict Guard's `base-conflict` and `conflict`) — is
//!     never READY TO SHIP: it needs you (NEEDS YOU).

use owt_protocol::{Lane, ReviewState, Status};
use serde::{Deserialize, Serialize};

use crate::store::FactRow;

pub mod feedback;
pub mod limit;
pub mod since;

/// A hook `working` older than this is re-checked against the screen.
pub const HOOK_STALE_MS: i64 = 120_000;
/// Output within this window means the agent is working (when nothing
/// better is known).
pub const OUTPUT_ACTIVE_MS: i64 = 5_000;

/// Fact kinds, as stored in `facts.kind`.
pub mod kind {
    /// An agent's own summary of what it is doing (MCP `set_summary`).
    pub const SUMMARY: &str = "summary";
    /// [`super::HostFact`]: the host and agent started.
    pub const HOST: &str = "host";
    /// No value: the agent wrote output (throttled); `observed_at` is when.
    pub const OUTPUT: &str = "output";
    /// No value: input reached the agent (typed, sent); `observed_at` is when.
    pub const INPUT: &str = "input";
    /// [`super::ExitFact`]: the agent process ended.
    pub const EXIT: &str = "exit";
    /// No value: the host vanished with no exit fact.
    pub const HOST_LOST: &str = "host-lost";
    /// [`super::AgentSignal`] from `owt hook`.
    pub const HOOK: &str = "hook";
    /// [`super::AgentSignal`] from the host's screen rules.
    pub const SCREEN: &str = "screen";
    /// [`super::ReportFact`] from the agent (MCP `report_status`).
    pub const REPORT: &str = "report";
    /// [`super::ConflictFact`]: merge/rebase stopped on conflicts.
    pub const CONFLICT: &str = "conflict";
    /// [`super::GitFact`]: commits ahead and changed paths.
    pub const GIT: &str = "git";
    /// [`super::HostGitFact`]: the git fact as the session's host read it
    /// from its journal, with the commits it holds for; recorded whenever
    /// the journal changed (debounced), so that a listing reads it instead
    /// of asking every host.
    pub const HOST_GIT: &str = "host-git";
    /// [`super::OverlapFact`]: Conflict Guard's overlap count.
    pub const OVERLAPS: &str = "overlaps";
    /// [`super::AcpFact`]: an ACP session's state, from the protocol.
    pub const ACP: &str = "acp";
    /// `owt_protocol::host::PendingPermission`: the permission request an
    /// ACP agent waits on (cleared once answered).
    pub const ACP_PERMISSION: &str = "acp-permission";
    /// `owt_protocol::AcpView`: the agent, its conversation id, and the
    /// tokens and cost it reported (cumulative for the session).
    pub const ACP_USAGE: &str = "acp-usage";
    /// The session waits for room to start its agent (`owt new` beyond
    /// `[agent] max_running` or `min_free_memory`); the value holds how to
    /// launch it (`ops::queue::QueuedLaunch`). Cleared once it starts.
    pub const QUEUED: &str = "queued";
    /// [`super::MemoryFact`]: the agent's process tree's resident memory.
    pub const MEMORY: &str = "memory";
    /// [`super::UnreachableFact`]: a remote session's bridge is down;
    /// `observed_at` is since when. Cleared when it is back.
    pub const UNREACHABLE: &str = "unreachable";
    /// `ops::facts::StarterFact`: the `owt new` process making the session,
    /// until its agent is started or queued (status reads its presence:
    /// `setting up`).
    pub const STARTER: &str = "starter";
    /// The question of the permission dialog on a terminal agent's screen
    /// (a JSON string; recorded by its host with each `blocked` screen
    /// judgement, cleared when the screen moves on): `blocked: …`.
    pub const DIALOG: &str = "dialog";
    /// The Conflict Guard's fact of a session (`guard::GuardFact`, its one
    /// writer the guard); status reads its `snapshot` only. The same kind
    /// as `guard::kind::GUARD` (a test in `ops::review` checks it).
    pub const GUARD: &str = "guard";
    /// `ops::review::Reviewed`: the files marked reviewed; status reads its
    /// `snapshot` only.
    pub const REVIEWED: &str = "reviewed_files";
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostFact {
    pub host_pid: u32,
    pub agent_pid: Option<u32>,
    pub socket: String,
    /// The agent runs its non-interactive form to completion (`--headless`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub headless: bool,
    /// How the host talks to the agent (absent: its terminal).
    #[serde(default, skip_serializing_if = "is_pty")]
    pub transport: owt_protocol::host::Transport,
}

fn is_pty(t: &owt_protocol::host::Transport) -> bool {
    *t == owt_protocol::host::Transport::Pty
}

/// Where an ACP session's conversation is, as the protocol tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AcpState {
    /// Connecting: `initialize` and `session/new` not answered yet.
    Starting,
    /// A prompt turn is running (`session/prompt` not answered yet).
    Working,
    /// The agent waits on `session/request_permission`.
    Blocked,
    /// The turn ended (`stopReason`); the agent waits for the next prompt.
    Waiting,
    /// The connection failed (see `error`); the agent is being stopped.
    Failed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AcpFact {
    pub state: AcpState,
    /// The last turn's `stopReason` (`end_turn`, `cancelled`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// Why the connection failed (a protocol version owt does not speak,
    /// an agent that wants a login, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExitFact {
    pub code: Option<i32>,
    pub signal: Option<String>,
}

/// What an agent is doing, as a hook or the screen rules saw it: in
/// owt-session, beside the screen rules.
pub use owt_session::AgentSignal;

/// A signal that holds until the human types (waiting, blocked, done),
/// rather than until the output moves on.
fn is_sticky(signal: AgentSignal) -> bool {
    matches!(
        signal,
        AgentSignal::Waiting | AgentSignal::Blocked | AgentSignal::Done
    )
}

/// The status a signal shows.
fn signal_status(signal: AgentSignal) -> Status {
    match signal {
        AgentSignal::Working => Status::Working,
        AgentSignal::Waiting => Status::NeedsInput,
        AgentSignal::Blocked => Status::Blocked,
        AgentSignal::Idle => Status::Idle,
        AgentSignal::Done => Status::Done,
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportFact {
    /// `done`, `blocked`, `question` or `note`.
    pub kind: String,
    pub text: String,
}

impl ReportFact {
    fn signal(&self) -> Option<AgentSignal> {
        match self.kind.as_str() {
            "done" => Some(AgentSignal::Done),
            "blocked" => Some(AgentSignal::Blocked),
            "question" => Some(AgentSignal::Waiting),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ConflictFact {
    pub files: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct GitFact {
    pub ahead: u32,
    pub changed_files: u32,
}

/// A session host's reading of its own checkout (`kind::HOST_GIT`): the
/// [`GitFact`] and the commits it was read against. A reader trusts it
/// while HEAD and the base branch's tip are still these, and the fact is
/// newer than the host's own start.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct HostGitFact {
    pub ahead: u32,
    pub changed_files: u32,
    /// HEAD's commit (`None` while unborn).
    pub head: Option<String>,
    /// The base branch's tip (`None` when it does not exist).
    pub base_tip: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct OverlapFact {
    pub count: u32,
    /// Paths where the session's work no longer merges into its base's tip
    /// (Conflict Guard's `base-conflict`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub base_conflicts: Vec<String>,
    /// The other sessions its work conflicts with (Conflict Guard's
    /// `conflict` pairs; not the human's checkout).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conflicts_with: Vec<String>,
}

/// Resident memory of the agent's process tree, sampled by its host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct MemoryFact {
    /// Now (at the fact's time).
    pub rss_bytes: u64,
    /// The most seen since the agent started.
    pub peak_bytes: u64,
}

/// The machine a remote session runs on cannot be reached (recorded by the
/// bridge keeper, see `crate::remote`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct UnreachableFact {
    pub remote: String,
    /// The last error (`ssh: connect to host … refused`).
    #[serde(default)]
    pub reason: Option<String>,
}

/// Everything [`derive_status`] looks at, decoded from the store.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionFacts {
    pub created_at: i64,
    pub host: Option<(HostFact, i64)>,
    pub last_output_at: Option<i64>,
    pub last_input_at: Option<i64>,
    pub exit: Option<(ExitFact, i64)>,
    pub host_lost_at: Option<i64>,
    pub hook: Option<(AgentSignal, i64)>,
    pub screen: Option<(AgentSignal, i64)>,
    pub report: Option<(ReportFact, i64)>,
    pub conflict: Option<ConflictFact>,
    pub git: GitFact,
    pub overlaps: u32,
    pub acp: Option<(AcpFact, i64)>,
    /// What an ACP session's agent asks (shown, not derived from).
    pub acp_permission: Option<owt_protocol::host::PendingPermission>,
    /// What an ACP session's agent reported (shown, not derived from).
    pub acp_usage: Option<owt_protocol::AcpView>,
    pub base_conflicts: Vec<String>,
    /// The other sessions its work conflicts with ([`OverlapFact`]).
    pub conflicts_with: Vec<String>,
    /// Checks and pull request ([`feedback`]).
    pub feedback: feedback::FeedbackFacts,
    /// When the session was queued, while it waits to start.
    pub queued_at: Option<i64>,
    /// The queued session's agent is to run as an ACP server (`owt new
    /// --acp`): its view says `acp` before its host records it.
    pub queued_acp: bool,
    pub memory: Option<MemoryFact>,
    /// A remote session's bridge is down, since when.
    pub unreachable: Option<(UnreachableFact, i64)>,
    /// The agent showed a usage or rate limit, or no longer does ([`limit`]).
    pub limit: Option<(limit::LimitFact, i64)>,
    /// The snapshot tree of the agent's whole working state, as the
    /// Conflict Guard last saw it (its `guard` fact).
    pub snapshot: Option<String>,
    /// The snapshot tree the human had reviewed every changed file of
    /// (`ops::review`'s `reviewed_files` fact).
    pub reviewed_snapshot: Option<String>,
    /// What the permission dialog on a terminal agent's screen asks.
    pub dialog: Option<String>,
    /// `owt new` is still making the session (worktree, setup).
    pub being_made: bool,
    /// The status last taken as the session's, and since when.
    pub status_since: Option<since::StatusSince>,
}

impl SessionFacts {
    /// Decodes stored rows; rows of unknown kinds or shapes are ignored (a
    /// newer owt may have written them).
    pub fn from_rows(created_at: i64, rows: &[FactRow]) -> SessionFacts {
        fn decode<T: serde::de::DeserializeOwned>(row: &FactRow) -> Option<T> {
            serde_json::from_value(row.value.clone()).ok()
        }
        let mut facts = SessionFacts {
            created_at,
            ..SessionFacts::default()
        };
        for row in rows {
            let at = row.observed_at;
            match row.kind.as_str() {
                kind::HOST => facts.host = decode(row).map(|v| (v, at)),
                kind::OUTPUT => facts.last_output_at = Some(at),
                kind::INPUT => facts.last_input_at = Some(at),
                kind::EXIT => facts.exit = decode(row).map(|v| (v, at)),
                kind::HOST_LOST => facts.host_lost_at = Some(at),
                kind::HOOK => facts.hook = decode(row).map(|v| (v, at)),
                kind::SCREEN => facts.screen = decode(row).map(|v| (v, at)),
                kind::REPORT => facts.report = decode(row).map(|v| (v, at)),
                kind::CONFLICT => facts.conflict = decode(row),
                kind::GIT => facts.git = decode(row).unwrap_or_default(),
                kind::OVERLAPS => {
                    let fact = decode::<OverlapFact>(row).unwrap_or_default();
                    facts.overlaps = fact.count;
                    facts.base_conflicts = fact.base_conflicts;
                    facts.conflicts_with = fact.conflicts_with;
                }
                kind::ACP => facts.acp = decode(row).map(|v| (v, at)),
                kind::ACP_PERMISSION => facts.acp_permission = decode(row),
                kind::ACP_USAGE => facts.acp_usage = decode(row),
                feedback::kind::CHECKS => facts.feedback.checks = decode(row),
                feedback::kind::CHECKS_SETUP => facts.feedback.setup = decode(row),
                feedback::kind::PR => facts.feedback.pr = decode(row),
                kind::QUEUED => {
                    facts.queued_at = Some(at);
                    facts.queued_acp = row.value["acp"] == true;
                }
                kind::MEMORY => facts.memory = decode(row),
                kind::DIALOG => facts.dialog = decode(row),
                kind::STARTER => facts.being_made = true,
                kind::UNREACHABLE => facts.unreachable = decode(row).map(|v| (v, at)),
                limit::LIMIT => facts.limit = decode(row).map(|v| (v, at)),
                since::STATUS_SINCE => facts.status_since = decode(row),
                kind::GUARD => facts.snapshot = row.value["snapshot"].as_str().map(str::to_string),
                kind::REVIEWED => {
                    facts.reviewed_snapshot = row.value["snapshot"].as_str().map(str::to_string)
                }
                _ => {}
            }
        }
        facts
    }

    pub(crate) fn has_work(&self) -> bool {
        self.git.ahead > 0 || self.git.changed_files > 0
    }

    /// Whether its work no longer merges: into its base's tip, or with
    /// another session's work (the Conflict Guard's facts).
    pub fn conflicts(&self) -> bool {
        !self.base_conflicts.is_empty() || !self.conflicts_with.is_empty()
    }
}

/// A session's derived status, its human text and its board lane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Derived {
    pub status: Status,
    pub text: String,
    pub lane: Lane,
    pub exit_code: Option<i32>,
    pub host_lost: bool,
}

/// Whether a READY TO SHIP session's work is reviewed: every changed file
/// marked reviewed and the agent's state the very one then (the snapshot
/// tree holds every file's content and mode). `None` outside READY TO
/// SHIP, and for a remote session (its files are not here).
pub fn derive_review(facts: &SessionFacts, lane: Lane, remote: bool) -> Option<ReviewState> {
    if lane != Lane::ReadyToShip || remote {
        return None;
    }
    let reviewed = facts.reviewed_snapshot.is_some() && facts.reviewed_snapshot == facts.snapshot;
    Some(if reviewed {
        ReviewState::Reviewed
    } else {
        ReviewState::NotReviewed
    })
}

/// The status of a session at `now` (ms), from its facts alone.
pub fn derive_status(facts: &SessionFacts, now: i64) -> Derived {
    let headless = facts.host.as_ref().is_some_and(|(h, _)| h.headless);
    let (status, text, exit_code, host_lost) = if let Some((exit, _)) = &facts.exit {
        if headless && exit.code == Some(0) {
            (Status::Done, "done".to_string(), exit.code, false)
        } else {
            let acp_error = facts
                .acp
                .as_ref()
                .and_then(|(a, _)| a.error.as_deref().filter(|_| a.state == AcpState::Failed));
            let text = match (exit.code, &exit.signal) {
                _ if acp_error.is_some() => format!("exited: {}", acp_error.unwrap_or_default()),
                (Some(0), _) => "exited".to_string(),
                (Some(code), _) => format!("exited with code {code}"),
                (None, Some(signal)) => format!("exited ({signal})"),
                (None, None) => "exited".to_string(),
            };
            (Status::Exited, text, exit.code, false)
        }
    } else if facts.host_lost_at.is_some() {
        (Status::Exited, "exited (host lost)".to_string(), None, true)
    } else if facts.queued_at.is_some() && facts.host.is_none() {
        // Rule 8.
        (Status::Queued, "queued".to_string(), None, false)
    } else if let Some((_, since)) = &facts.unreachable {
        let text = format!("unreachable (since {})", utc_time_of_day(*since));
        (Status::Unreachable, text, None, false)
    } else if facts.conflict.as_ref().is_some_and(|c| !c.files.is_empty()) {
        let n = facts.conflict.as_ref().map_or(0, |c| c.files.len());
        let text = format!("conflict in {n} file{}", if n == 1 { "" } else { "s" });
        (Status::Conflict, text, None, false)
    } else if let Some(text) = limit::limited_text(facts) {
        (Status::Limited, text, None, false)
    } else if let Some((acp, _)) = &facts.acp {
        let status = match acp.state {
            AcpState::Starting => Status::Starting,
            AcpState::Working | AcpState::Failed => Status::Working,
            AcpState::Blocked => Status::Blocked,
            AcpState::Waiting => Status::NeedsInput,
        };
        (status, status.as_str().to_string(), None, false)
    } else {
        let status = match agent_status(facts, now) {
            Status::Blocked => Status::Blocked,
            _ if headless => Status::Working,
            status => status,
        };
        // `blocked: Do you want to overwrite README.md?`
        let text = match &facts.dialog {
            Some(question) if status == Status::Blocked => format!("blocked: {question}"),
            _ if status == Status::Starting && facts.being_made && facts.host.is_none() => {
                "starting: setting up the worktree".to_string()
            }
            _ => status.as_str().to_string(),
        };
        (status, text, None, false)
    };
    // An unreachable machine's last known checks and PR say nothing now.
    let said = (status != Status::Unreachable)
        .then(|| feedback::feedback_status(facts, status, exit_code))
        .flatten();
    let (status, text, lane) = match said {
        Some(said) => said,
        None => (status, text, agent_lane(facts, status, exit_code)),
    };
    // Rule 10: work that conflicts is never ready to ship.
    let lane = match lane {
        Lane::ReadyToShip if facts.conflicts() => Lane::NeedsYou,
        lane => lane,
    };
    Derived {
        status,
        text,
        lane,
        exit_code,
        host_lost,
    }
}

/// The board lane of the agent's own status.
fn agent_lane(facts: &SessionFacts, status: Status, exit_code: Option<i32>) -> Lane {
    match status {
        Status::Limited if limit::waited_out(facts) => Lane::InFlight,
        Status::Conflict | Status::Blocked | Status::Limited => Lane::NeedsYou,
        Status::Exited if exit_code == Some(0) && facts.has_work() => Lane::ReadyToShip,
        Status::Exited => Lane::NeedsYou,
        Status::Done | Status::NeedsInput if facts.has_work() => Lane::ReadyToShip,
        Status::Done | Status::NeedsInput => Lane::NeedsYou,
        Status::Starting
        | Status::Working
        | Status::Idle
        | Status::Queued
        | Status::Unreachable => Lane::InFlight,
        Status::ChecksFailed | Status::CiFailed => Lane::NeedsYou,
        Status::ChecksRunning | Status::ChangesRequested | Status::PrOpen => Lane::InFlight,
        Status::Merged => Lane::ReadyToClean,
    }
}

/// `14:02:07 UTC` for a Unix time in ms (no time zone database: pure).
pub(crate) fn utc_time_of_day(ms: i64) -> String {
    let secs = ms.div_euclid(1000).rem_euclid(86_400);
    format!(
        "{:02}:{:02}:{:02} UTC",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

fn agent_status(facts: &SessionFacts, now: i64) -> Status {
    let input_at = facts.last_input_at.unwrap_or(i64::MIN);
    let report = facts
        .report
        .as_ref()
        .and_then(|(r, at)| r.signal().map(|s| (s, *at)));
    // Rule 3: a sticky signal newer than the last input holds, unless a
    // hook reported a new turn after it. What the agent said itself (hooks,
    // reports) outranks what its screen looks like; among equals the newest
    // wins.
    let newest_sticky = |signals: &[Option<(AgentSignal, i64)>]| {
        signals
            .iter()
            .flatten()
            .filter(|(signal, at)| is_sticky(*signal) && *at > input_at)
            .max_by_key(|(_, at)| *at)
            .copied()
    };
    let said = newest_sticky(&[facts.hook, report]);
    let shown = newest_sticky(&[facts.screen]);
    let sticky = match (said, shown) {
        (Some((_, said_at)), Some((AgentSignal::Blocked, shown_at))) if shown_at > said_at => shown,
        (Some(said), _) => Some(said),
        (None, shown) => shown,
    };
    if let Some((signal, at)) = sticky {
        let new_turn = matches!(facts.hook, Some((AgentSignal::Working, hook_at)) if hook_at > at);
        if !new_turn {
            return signal_status(signal);
        }
    }
    // Rule 4: a fresh hook `working` holds; a stale one (or none) defers to
    // what the screen last showed, when that is current.
    let screen_after = match facts.hook {
        Some((AgentSignal::Working, hook_at)) if now - hook_at < HOOK_STALE_MS => {
            return Status::Working;
        }
        Some((_, hook_at)) => hook_at,
        None => i64::MIN,
    };
    if let Some((signal, at)) = facts.screen {
        // An unrecognised screen (`idle`) has no say: the output decides.
        if at > screen_after && !is_sticky(signal) && signal != AgentSignal::Idle {
            return signal_status(signal);
        }
    }
    // Rule 5.
    match facts.last_output_at {
        Some(at) if now - at < OUTPUT_ACTIVE_MS => Status::Working,
        Some(_) => Status::Idle,
        None => Status::Starting,
    }
}

#[cfg(test)]
mod tests;
