//! The serde form of everything `owt --json <verb>` prints.

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
    /// Merge the branch into its base.
    Merge,
    /// Commit, merge and delete.
    Ship,
    /// Stop the agent, remove its worktree and branch.
    Delete,
    /// Open the files a merge or rebase left conflicted.
    Conflicts,
}

impl SessionAction {
    /// Every action, in menu order.
    pub const ALL: [SessionAction; 7] = [
        SessionAction::Attach,
        SessionAction::Peek,
        SessionAction::Send,
        SessionAction::Merge,
        SessionAction::Ship,
        SessionAction::Delete,
        SessionAction::Conflicts,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SessionAction::Attach => "attach",
            SessionAction::Peek => "peek",
            SessionAction::Send => "send",
            SessionAction::Merge => "merge",
            SessionAction::Ship => "ship",
            SessionAction::Delete => "delete",
            SessionAction::Conflicts => "conflicts",
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
    pub lane: Lane,
    /// Unix time in milliseconds.
    #[cfg_attr(test, ts(type = "number"))]
    pub created_at: i64,
    pub exit_code: Option<i32>,
    pub host_lost: bool,
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

/// `owt --json` (the board).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct Board {
    pub repository: String,
    /// Non-empty lanes only, in priority order.
    pub lanes: Vec<BoardLane>,
    /// Every lane in priority order, empty ones too, with its title and
    /// count (for a board that always shows each section).
    #[serde(default)]
    pub all_lanes: Vec<LaneCount>,
    /// What a status line shows.
    #[serde(default)]
    pub counts: BoardCounts,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct BoardLane {
    pub lane: Lane,
    /// `NEEDS YOU`, as the CLI board prints it.
    pub title: String,
    /// How many sessions are in it.
    #[serde(default)]
    pub count: u32,
    pub sessions: Vec<SessionView>,
}

/// A lane's title and how many sessions are in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct LaneCount {
    pub lane: Lane,
    pub title: String,
    pub count: u32,
}

/// Sessions counted for a status line: each session is in exactly one of
/// `working`, `needs_you`, `ready`, `idle` and `queued`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct BoardCounts {
    pub total: u32,
    /// In flight, with the agent starting or busy.
    pub working: u32,
    /// In the NEEDS YOU lane.
    pub needs_you: u32,
    /// In the READY TO SHIP lane.
    pub ready: u32,
    /// Everything else (idle, done, exited outside the lanes above).
    pub idle: u32,
    /// In the READY TO CLEAN lane (a merged pull request).
    #[serde(default)]
    pub to_clean: u32,
    /// In flight, waiting for room on the machine (`queued`).
    #[serde(default)]
    pub queued: u32,
    /// The non-zero counts in words, e.g. `3 working · 1 needs you`
    /// (empty when there is no session).
    pub summary: String,
}

/// `owt new --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct NewOutput {
    pub session: SessionView,
    /// Warnings that did not stop the session (failed setup script, …).
    pub warnings: Vec<String>,
}

/// `owt delete --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct DeleteOutput {
    pub name: String,
    pub worktree_removed: bool,
    pub branch_deleted: bool,
    /// Set when the branch had commits not in the base: `refs/owt/backup/<name>`.
    pub backup_ref: Option<String>,
    /// Where the worktree's files that git does not commit (ignored files;
    /// with `--force` also the uncommitted ones) were moved:
    /// `$OWT_HOME/trash/<repo>/<session>-<time>/`.
    #[serde(default)]
    pub trash: Option<String>,
    /// The paths moved to `trash` (relative to the worktree).
    #[serde(default)]
    pub trashed: Vec<String>,
    /// Paths removed without a copy: owt's own files, files the setup
    /// copied that are unchanged, and `[worktree] disposable` caches.
    #[serde(default)]
    pub dropped: Vec<String>,
    /// Uncommitted changes `--force` discarded (a copy of each file is in
    /// `trash`).
    #[serde(default)]
    pub discarded: Vec<String>,
    /// Things the user should know (e.g. a shell still inside the worktree).
    #[serde(default)]
    pub warnings: Vec<String>,
}

/// `owt trust --json` (also with `--show` and `--revoke`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrustOutput {
    /// The repository's main checkout.
    pub repository: String,
    /// `show`, `trusted` or `revoked`.
    pub action: String,
    /// The repository's files that can make owt run programs or write
    /// outside the repository: its configuration and `.owt/setup.sh`.
    pub files: Vec<TrustFile>,
}

/// One file of a repository that needs trust.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrustFile {
    pub path: String,
    /// `config` or `setup-script`.
    pub kind: String,
    /// SHA-256 of the content (what `owt trust` records).
    pub sha256: String,
    /// `trusted`, `untrusted`, `changed` (trusted once, different content
    /// now) or `not-needed` (sets nothing that needs trust).
    pub state: String,
    /// When the user trusted it (Unix ms), if ever.
    pub trusted_at: Option<i64>,
    /// Keys that apply only when the file is trusted, with their values.
    pub keys: Vec<TrustKey>,
    /// Keys a repository may never set (ignored even when trusted).
    pub refused: Vec<String>,
    /// What owt would run because of this file, one item each.
    pub runs: Vec<String>,
    /// A setup script's text.
    pub script: Option<String>,
}

/// A key that needs trust and its value (TOML).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrustKey {
    pub key: String,
    pub value: String,
}

/// One problem found by `owt doctor`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DoctorFinding {
    /// `orphan-worktree-folder`, `missing-worktree`, `missing-branch`,
    /// `prunable-git-worktree`, `interrupted-merge`, `stale-git-lock`,
    /// `git-lock`, `lost-session`, `old-trash`, `untrusted-config`.
    pub kind: String,
    pub detail: String,
    pub path: Option<String>,
    pub session: Option<String>,
    /// Whether `--fix` repaired it in this run.
    pub fixed: bool,
    /// Why `--fix` left it alone, when it did.
    pub skipped_reason: Option<String>,
}

/// `owt doctor --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DoctorReport {
    pub findings: Vec<DoctorFinding>,
    /// What the trash holds (`$OWT_HOME/trash`), oldest first.
    #[serde(default)]
    pub trash: Vec<TrashEntry>,
}

/// One folder of the trash: the files `owt delete` kept from a worktree.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrashEntry {
    pub path: String,
    pub session: Option<String>,
    pub repository: Option<String>,
    /// The worktree the files came from.
    pub worktree: Option<String>,
    /// Unix ms.
    pub created_at: i64,
    pub bytes: u64,
    /// Paths inside (relative to the worktree they came from).
    pub files: Vec<String>,
}

/// `owt db health --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DbHealth {
    pub path: String,
    pub schema_version: u32,
    pub size_bytes: u64,
    pub wal_bytes: u64,
    pub journal_mode: String,
    pub integrity: String,
    pub repositories: u64,
    pub sessions: u64,
    pub facts: u64,
    pub messages: u64,
    pub notes: u64,
    pub events: u64,
    /// Rows of token counts (a session and local day; a deleted session's
    /// are kept for `owt usage` until `owt db purge`).
    #[serde(default)]
    pub usage_rows: u64,
    /// Of those, the rows of sessions that no longer exist.
    #[serde(default)]
    pub usage_rows_deleted_sessions: u64,
    /// How far each agent record file was read (per session and file).
    #[serde(default)]
    pub usage_sources: u64,
    /// Of those, the ones no session will read on (of sessions that no
    /// longer exist, or files no session owns that are gone): what `owt db
    /// purge` deletes; `--check` reports them.
    #[serde(default)]
    pub usage_sources_stale: u64,
    /// Thresholds exceeded (only filled by `--check`).
    pub problems: Vec<String>,
}

/// `owt db purge --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DbPurge {
    pub days: u32,
    pub messages_deleted: u64,
    pub events_deleted: u64,
    /// Trash folders (`$OWT_HOME/trash/…`) older than `days`, deleted.
    #[serde(default)]
    pub trash_deleted: Vec<String>,
    /// Token counts (a session and day) of sessions that no longer exist,
    /// last added to more than `days` days ago, deleted.
    #[serde(default)]
    pub usage_rows_deleted: u64,
    /// Read positions in agent record files no session will read on,
    /// deleted.
    #[serde(default)]
    pub usage_sources_deleted: u64,
}

/// `owt config show --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfigShow {
    /// Files read, highest priority first.
    pub sources: Vec<String>,
    /// The effective configuration.
    pub config: serde_json::Value,
    /// Where each value that is set came from: dotted key → file.
    #[serde(default)]
    pub origins: std::collections::BTreeMap<String, String>,
    /// Keys of a seed-format `.worktreerc` that owt does not use.
    #[serde(default)]
    pub ignored: Vec<String>,
    /// Keys of the repository's file ignored because it is not trusted
    /// (`owt trust`).
    #[serde(default)]
    pub untrusted: Vec<String>,
    /// Keys of the repository's file that a repository may never set
    /// (redefinitions of built-in agents).
    #[serde(default)]
    pub refused: Vec<String>,
}

/// `owt version --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VersionOutput {
    pub version: String,
    pub host_protocol: u32,
    /// The protocol of `owt __bridge` (remotes over SSH).
    #[serde(default)]
    pub bridge_protocol: u32,
}

/// Error document printed on stderr by `owt --json` when a verb fails.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ErrorOutput {
    pub error: String,
    pub hint: Option<String>,
}

/// A file the merge would conflict on (or did), with the conflicting line
/// ranges of the merged result (1-based, inclusive).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct ConflictFile {
    pub path: String,
    pub lines: Vec<(u32, u32)>,
}

/// `owt merge --json` (and the merge part of `owt ship --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct MergeOutput {
    pub name: String,
    pub branch: String,
    pub base: String,
    /// Whether the base branch now contains the session's work.
    pub merged: bool,
    pub base_before: String,
    pub base_after: String,
    /// `merge` (merge commit or fast-forward) or `rebase`.
    pub method: String,
    /// `ours` (the agent's side wins) or `theirs` (the base wins), if given.
    pub strategy: Option<String>,
    /// Conflicts predicted (or left in the worktree with `--leave-conflicts`).
    pub conflicts: Vec<ConflictFile>,
    /// The conflicts were left in the worktree for you to resolve.
    pub left_conflicts: bool,
    /// The human's checkout of the base branch was updated.
    pub checkout_updated: Option<String>,
    /// The session was deleted after the merge (not with `--keep`).
    pub deleted: bool,
    /// Where the deletion moved the worktree's ignored files, if any.
    #[serde(default)]
    pub trash: Option<String>,
}

/// `owt ship --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(optional_fields))]
pub struct ShipOutput {
    /// The commit made of the worktree's uncommitted work, if there was any.
    pub committed: Option<String>,
    pub merge: MergeOutput,
    /// Changed files shipped without being marked reviewed since their
    /// last change (`owt review NAME --mark`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unreviewed: Vec<String>,
    /// `[checks]` before shipping: `passed`, `skipped` (`--no-checks`) or
    /// `not-run` (`when = "manual"`); absent without checks configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checks: Option<String>,
}

/// `owt queue --ship --json`: what shipped and where it stopped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueueShipOutput {
    pub shipped: Vec<ShipOutput>,
    /// The session the queue stopped at, and why.
    pub stopped_at: Option<String>,
    pub reason: Option<String>,
    /// Sessions not attempted.
    pub remaining: Vec<String>,
}

/// `owt note --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotesOutput {
    /// The notes now in force, oldest first.
    pub notes: Vec<String>,
    /// Live sessions the new note was typed into.
    pub delivered_to: Vec<String>,
    /// Sessions it could not reach, with why.
    pub not_delivered: Vec<(String, String)>,
    /// Notes removed by `--clear`.
    pub cleared: u64,
}

/// `owt sync --json`: one entry per session synced.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SyncOutput {
    pub sessions: Vec<SyncResult>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SyncResult {
    pub name: String,
    pub base: String,
    /// `up-to-date`, `synced`, `conflicts` (restored, or left with `--leave-conflicts`), `skipped`.
    pub outcome: String,
    /// The base was first fast-forwarded from its upstream (e.g. `origin/main`).
    pub fetched_from: Option<String>,
    pub conflicts: Vec<String>,
    pub detail: Option<String>,
}

/// `owt cleanup --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CleanupOutput {
    pub days: u32,
    /// Stale sessions (exited or idle for longer than `days`).
    pub stale: Vec<StaleSession>,
    /// Removed (only with `--force`).
    pub removed: Vec<String>,
    /// Stale but kept, with why (uncommitted work, …).
    pub kept: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StaleSession {
    pub name: String,
    pub status_text: String,
    /// Days since the agent last did anything.
    pub idle_days: f64,
}

/// `owt usage --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UsageOutput {
    pub days: u32,
    pub sessions_started: u64,
    pub shipped: u64,
    pub merged: u64,
    pub deleted: u64,
    /// Sessions started, by agent.
    pub by_provider: Vec<(String, u64)>,
    /// Tokens recorded by the agents in these days, all sessions (deleted
    /// ones too).
    #[serde(default)]
    pub tokens: TokenUsage,
    /// Tokens per session, most tokens first.
    #[serde(default)]
    pub sessions: Vec<SessionUsage>,
    /// Tokens per agent, most tokens first.
    #[serde(default)]
    pub by_agent: Vec<AgentUsage>,
    /// Tokens per local day (`YYYY-MM-DD`), oldest first; days without
    /// records are left out.
    #[serde(default)]
    pub by_day: Vec<DayUsage>,
}

/// One session's tokens in `owt usage`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionUsage {
    pub name: String,
    /// The session's short id (names are reused after a delete; ids are not).
    pub id: String,
    pub provider: String,
    /// Whether the session still exists (not deleted or shipped).
    pub live: bool,
    pub tokens: TokenUsage,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentUsage {
    pub provider: String,
    pub tokens: TokenUsage,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DayUsage {
    pub day: String,
    pub tokens: TokenUsage,
}

/// One configured remote (`owt remote list --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoteView {
    pub name: String,
    /// What `ssh` is given (an alias of `~/.ssh/config`, `user@host`, …).
    pub host: String,
    /// The repository's clone on the remote.
    pub path: String,
    /// The owt binary on the remote.
    pub owt: String,
    /// Sessions of this repository recorded as running there.
    pub sessions: u32,
    /// The bridge to it, when one was started.
    pub bridge: Option<BridgeState>,
}

/// The state of a bridge as its keeper last recorded it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BridgeState {
    /// Whether the keeper process runs.
    pub running: bool,
    pub connected: bool,
    /// Unix ms: connected since, or unreachable since.
    pub since: i64,
    pub last_error: Option<String>,
    /// Seconds until the next attempt, while unreachable.
    pub retry_in_s: Option<u64>,
}

/// `owt remote list --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoteList {
    pub remotes: Vec<RemoteView>,
}

/// `owt remote check NAME --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoteCheck {
    pub name: String,
    pub host: String,
    pub path: String,
    /// `ssh` connected and ran a command.
    pub reachable: bool,
    /// `uname -sm` of the remote, e.g. `Linux x86_64`.
    pub os_arch: Option<String>,
    /// The remote owt's version, when it runs.
    pub owt_version: Option<String>,
    pub bridge_protocol: Option<u32>,
    /// Same bridge protocol as this owt.
    pub compatible: bool,
    /// The clone at `path` exists and is a git repository.
    pub clone_ok: bool,
    /// The base branch's tip there, and here.
    pub remote_base_tip: Option<String>,
    pub local_base_tip: Option<String>,
    pub base: Option<String>,
    /// What is wrong, each with what to do about it.
    pub problems: Vec<String>,
}

/// `owt remote setup NAME --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoteSetup {
    pub name: String,
    pub path: String,
    /// `cloned` (from the local repository's own remote), `pushed` (a new
    /// repository there, with the base pushed from here) or `existing`.
    pub how: String,
    pub base: String,
    /// The base's tip on the remote afterwards.
    pub base_tip: String,
}

/// `owt remote install NAME --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoteInstall {
    pub name: String,
    pub installed: bool,
    /// Where the binary went on the remote.
    pub path: String,
    /// `owt version` there afterwards.
    pub version: Option<String>,
    /// When the remote's OS or architecture differ from this one: how to
    /// build owt there.
    pub how_to_build: Option<String>,
}
