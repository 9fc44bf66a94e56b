//! One session as every surface shows it (`SessionView`) and its parts.

use serde::{Deserialize, Serialize};

use super::{ActionState, Lane, ReviewState, SessionAction, SessionKind, Status};

/// One session as every surface shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct SessionView {
    pub name: String,
    /// Short stable id (names the host socket).
    pub id: String,
    pub task: String,
    pub branch: String,
    pub base: String,
    pub worktree: String,
    pub provider: String,
    pub kind: SessionKind,
    pub status: Status,
    /// Human text of the status, e.g. `exited (host lost)`, `exited with code 2`.
    pub status_text: String,
    /// Since when (Unix ms) the session has been in `status`, as its host
    /// or a view recorded it; absent until one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(type = "number", optional))]
    pub status_since: Option<i64>,
    pub lane: Lane,
    /// Unix time in milliseconds.
    #[cfg_attr(test, ts(type = "number"))]
    pub created_at: i64,
    pub exit_code: Option<i32>,
    pub host_lost: bool,
    /// The agent runs (or ran) its non-interactive form to completion
    /// (`owt new --headless`): such a run is started again, not resumed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    #[cfg_attr(test, ts(as = "Option<bool>", optional))]
    pub headless: bool,
    /// Commits on the branch that are not in the base.
    pub ahead: u32,
    /// Paths changed relative to the merge base (committed or not).
    pub changed_files: u32,
    /// Sessions (or "you") whose changes overlap this one's.
    pub overlaps: u32,
    /// Paths where its work no longer merges into its base branch's tip
    /// (the base moved under it: Conflict Guard's `base-conflict`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub base_conflicts: Vec<String>,
    /// Files with unresolved merge conflicts in the worktree.
    pub conflicted_files: Vec<String>,
    pub agent_pid: Option<u32>,
    /// How the host talks to the agent: its terminal (`pty`) or the Agent
    /// Client Protocol (`acp`).
    #[serde(default)]
    #[cfg_attr(test, ts(as = "Option<crate::host::Transport>", optional))]
    pub transport: crate::host::Transport,
    /// ACP sessions: the permission request the agent waits on (while
    /// `blocked`); answer with `owt approve` / `owt deny`.
    #[serde(default)]
    #[cfg_attr(test, ts(optional = nullable))]
    pub permission: Option<crate::host::PendingPermission>,
    /// ACP sessions: what the protocol reported (agent, tokens, cost).
    #[serde(default)]
    #[cfg_attr(test, ts(optional = nullable))]
    pub acp: Option<AcpView>,
    /// The last `[checks]` run on this session's work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub checks: Option<ChecksView>,
    /// The session's pull request (`owt pr`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub pr: Option<PrView>,
    /// Resident memory of the agent's whole process tree, in bytes, as its
    /// session host last sampled it (every few seconds); `None` when the
    /// agent is not running or was not sampled yet.
    #[serde(default)]
    #[cfg_attr(test, ts(type = "number | null"))]
    pub rss_bytes: Option<u64>,
    /// The session's block of TCP ports (`[worktree] ports = N`), given to
    /// the agent and the setup script as `OWT_PORT` (the first) and
    /// `OWT_PORTS` (all, space-separated); empty when none was asked for.
    #[serde(default)]
    pub ports: Vec<u16>,
    /// Every [`SessionAction`], in menu order, with whether it can be done
    /// now (computed by the server; plugins show exactly these).
    #[serde(default)]
    pub actions: Vec<ActionState>,
    /// Tokens (and cost, where the agent reports it) the agent recorded for
    /// this session in its own files; `None` until a record was read (or
    /// for agents whose records owt cannot read).
    #[serde(default)]
    #[cfg_attr(test, ts(optional = nullable))]
    pub usage: Option<TokenUsage>,
    /// The remote (`[remotes.NAME]`) the session runs on; `None` for a
    /// session on this machine. A remote session's `name` is
    /// `REMOTE:name` and its `worktree` is `REMOTE:/path/on/the/remote`.
    #[serde(default)]
    #[cfg_attr(test, ts(optional = nullable))]
    pub remote: Option<String>,
    /// READY TO SHIP sessions on this machine: whether you reviewed every
    /// changed file since the agent's last change (`owt review`, the
    /// editors' review views); absent in the other lanes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub review: Option<ReviewState>,
    /// The conductor session that spawned this one (MCP `spawn_session`);
    /// boards show it nested under its parent. Absent for a session a
    /// person started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub parent: Option<String>,
}

/// What an ACP session's agent reported through the protocol. Token counts
/// add up the agent's per-turn reports (`PromptResponse.usage`); agents
/// that report none (Codex's adapter) leave them at 0.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct AcpView {
    /// The agent's name and version (`agentInfo`), e.g.
    /// `@zed-industries/claude-agent-acp 0.23.1`.
    #[serde(default)]
    pub agent: Option<String>,
    /// The agent's own id of the conversation (`session/load` reopens it).
    #[serde(default)]
    pub session_id: Option<String>,
    /// Turns ended.
    #[cfg_attr(test, ts(type = "number"))]
    pub turns: u64,
    #[cfg_attr(test, ts(type = "number"))]
    pub input_tokens: u64,
    #[cfg_attr(test, ts(type = "number"))]
    pub output_tokens: u64,
    #[cfg_attr(test, ts(type = "number"))]
    pub cache_read_tokens: u64,
    #[cfg_attr(test, ts(type = "number"))]
    pub cache_write_tokens: u64,
    /// Reasoning tokens, where reported separately.
    #[cfg_attr(test, ts(type = "number"))]
    pub thought_tokens: u64,
    /// Cumulative cost in US dollars (`usage_update.cost`), where reported.
    pub cost_usd: Option<f64>,
    /// Tokens in the context window and its size (`usage_update`).
    #[cfg_attr(test, ts(type = "number | null"))]
    pub context_used: Option<u64>,
    #[cfg_attr(test, ts(type = "number | null"))]
    pub context_size: Option<u64>,
}

impl SessionView {
    /// A session named `name`, `status` in `lane`, everything else empty
    /// (no work, no agent, no actions): a starting point for tests and
    /// examples, e.g. `SessionView { ahead: 2, ..SessionView::sample(…) }`.
    pub fn sample(name: &str, status: Status, lane: Lane) -> SessionView {
        SessionView {
            name: name.into(),
            id: format!("id-{name}"),
            task: "task".into(),
            branch: format!("owt/{name}"),
            base: "main".into(),
            worktree: format!("/w/{name}"),
            provider: "claude".into(),
            kind: SessionKind::Worktree,
            status,
            status_text: status.as_str().into(),
            status_since: None,
            lane,
            created_at: 0,
            exit_code: None,
            host_lost: false,
            headless: false,
            ahead: 0,
            changed_files: 0,
            overlaps: 0,
            conflicted_files: Vec::new(),
            base_conflicts: Vec::new(),
            agent_pid: None,
            transport: Default::default(),
            permission: None,
            acp: None,
            checks: None,
            pr: None,
            remote: None,
            rss_bytes: None,
            ports: Vec::new(),
            actions: Vec::new(),
            usage: None,
            review: None,
            parent: None,
        }
    }

    /// Whether `action` can be done now.
    pub fn can(&self, action: SessionAction) -> bool {
        self.actions
            .iter()
            .any(|a| a.action == action && a.available)
    }
}

/// Tokens an agent spent, as it recorded them (see docs/protocol.md,
/// "Token usage"). `input_tokens` counts input that was neither read from
/// nor written to the provider's prompt cache, so the four counts add up
/// to every token billed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct TokenUsage {
    #[cfg_attr(test, ts(type = "number"))]
    pub input_tokens: u64,
    #[cfg_attr(test, ts(type = "number"))]
    pub output_tokens: u64,
    /// Input read from the prompt cache.
    #[cfg_attr(test, ts(type = "number"))]
    pub cache_read_tokens: u64,
    /// Input written to the prompt cache (Anthropic's cache creation).
    #[cfg_attr(test, ts(type = "number"))]
    pub cache_write_tokens: u64,
    /// US dollars, where the agent reports a cost (Aider, OpenCode, Pi); `None`
    /// where it does not (Claude Code, Codex record tokens only).
    pub cost_usd: Option<f64>,
}

impl TokenUsage {
    /// All four token counts added.
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens
    }

    /// Adds `other` (a cost stays `None` only if both are).
    pub fn add(&mut self, other: &TokenUsage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
        self.cache_read_tokens += other.cache_read_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.cost_usd = match (self.cost_usd, other.cost_usd) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
    }
}

/// The last checks run of a session, as `owt list` and the boards show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ChecksView {
    /// `running`, `passed`, `failed`, `cancelled` or `skipped`.
    pub state: String,
    /// What started it: `turn-end`, `ship`, `pr` or `manual`.
    pub trigger: String,
    /// Failed runs in a row, this one included (0 once they pass).
    pub attempt: u32,
    pub max_attempts: u32,
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    #[cfg_attr(test, ts(type = "number | null"))]
    pub duration_ms: Option<u64>,
    /// The run's whole output: `$OWT_HOME/logs/checks/…`.
    pub log: Option<String>,
    /// Unix ms.
    #[cfg_attr(test, ts(type = "number"))]
    pub started_at: i64,
    /// The result holds for the work as it is now (no input reached the
    /// agent since).
    pub current: bool,
}

/// A session's pull (or merge) request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PrView {
    #[cfg_attr(test, ts(type = "number"))]
    pub number: u64,
    pub url: String,
    /// `open`, `closed` or `merged`.
    pub state: String,
    pub draft: bool,
    /// `none`, `pending`, `passing` or `failing`.
    pub ci: String,
    /// `none`, `review-required`, `approved` or `changes-requested`.
    pub review: String,
    /// What went wrong the last time owt looked at it (rate limit, network).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(test, ts(optional))]
    pub error: Option<String>,
}

/// `owt list --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionList {
    pub repository: String,
    pub sessions: Vec<SessionView>,
}
