//! The configuration's tables (`[worktree]`, `[agent]`, `[tools.NAME]`,
//! `[guard]`, …) and their defaults.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::ByteSize;

/// `[remotes.NAME]`: a machine reached with the user's own `ssh`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RemoteConfig {
    /// What `ssh` is given: an alias of `~/.ssh/config`, `user@host`, …
    pub host: String,
    /// The repository's clone there (`~/src/app`, or absolute).
    pub path: String,
    /// The owt binary there (a name on its `PATH`, `~/.local/bin` included,
    /// or a path).
    pub owt: String,
}

impl Default for RemoteConfig {
    fn default() -> Self {
        RemoteConfig {
            host: String::new(),
            path: String::new(),
            owt: "owt".into(),
        }
    }
}

/// A custom template: a protocol kind plus extra instructions.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TemplateConfig {
    /// `feature`, `bugfix`, `hotfix`, `refactor`, `test` or `docs` (default: detected from the task).
    pub kind: Option<String>,
    /// Added to the protocol section of the prompt.
    pub instructions: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct WorktreeConfig {
    /// Where worktrees go; relative paths are relative to the repository
    /// root. Default: `<repo-parent>/<repo-name>.worktrees`.
    pub base_directory: Option<String>,
    /// Files copied from the main checkout into every new worktree.
    pub copy_files: Vec<String>,
    /// Sessions idle or exited longer than this are stale (`owt cleanup`).
    pub auto_cleanup_days: u32,
    /// Globs of ignored files and folders `owt delete` may remove without
    /// keeping a copy in the trash (caches: `["node_modules", "target"]`).
    /// A pattern without `/` matches a name at any depth.
    pub disposable: Vec<String>,
    /// How many TCP ports each session gets (a block of consecutive free
    /// ports, held while the session lives; `OWT_PORT` and `OWT_PORTS` for
    /// the agent and the setup script). 0: none.
    pub ports: u16,
}

impl Default for WorktreeConfig {
    fn default() -> Self {
        WorktreeConfig {
            base_directory: None,
            copy_files: vec![".env".into()],
            auto_cleanup_days: 14,
            disposable: Vec::new(),
            ports: 0,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    /// Provider used when `--ai-tool` is not given (default: auto-detect).
    pub default_tool: Option<String>,
    /// Extra environment for every agent.
    pub env: BTreeMap<String, String>,
    /// Agents that may run at once on this machine (every repository of
    /// the store counts); `owt new` beyond it queues the session. Default:
    /// as many as memory holds (what is available now, against how much
    /// each provider's agents were seen to need).
    pub max_running: Option<u32>,
    /// No agent is started while less memory than this is available
    /// (`"2 GiB"`, `"512 MiB"`). Default: a tenth of the machine's memory,
    /// at most 2 GiB.
    pub min_free_memory: Option<ByteSize>,
    /// Lines of scrollback each session host keeps (tmux's default, 2000;
    /// at most `session::MAX_SCROLLBACK`, 100 000). Needs trust in a
    /// repository's file.
    pub scrollback: Option<u32>,
    /// What a session does when its agent hits a usage or rate limit:
    /// `ask` (NEEDS YOU) or `wait` (its host types "continue" once the
    /// limit resets, when the agent said when).
    pub on_limit: OnLimit,
    /// Sessions whose host died (a reboot, an OOM kill, `kill -9`) are
    /// resumed (`owt resume`) at the next owt command or when `owt lsp`
    /// starts, as many as `max_running` and `min_free_memory` allow.
    /// Default: false. Needs trust in a repository's file.
    pub auto_resume: bool,
}

/// `[agent] on_limit`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnLimit {
    /// The session waits for you (NEEDS YOU).
    #[default]
    Ask,
    /// The host types "continue" once the limit resets.
    Wait,
}

/// How a custom tool receives its first prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PromptMode {
    /// `{binary} … <prompt_flag> "<task>"`.
    Flag,
    /// `{binary} … "<task>"`.
    Positional,
    /// Typed into the agent's terminal once it is ready.
    Typed,
    /// Not passed at all.
    None,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ToolConfig {
    /// Program name (looked up on `PATH` and in `known_paths`) or a path.
    pub binary: String,
    /// Argv template, split like a shell would split words but never run
    /// through a shell. `{binary}` is the resolved binary; `{prompt}`, if
    /// present, is replaced by the task as one argument.
    pub command_template: Option<String>,
    /// Flag that precedes the task (`-p`).
    pub prompt_flag: Option<String>,
    /// Default: `flag` when `prompt_flag` is set, else `positional`.
    pub prompt_mode: Option<PromptMode>,
    /// Non-interactive form for `--headless` (same placeholders).
    pub headless_template: Option<String>,
    pub known_paths: Vec<String>,
    pub install_hint: Option<String>,
    pub env: BTreeMap<String, String>,
    /// Accepted for compatibility with the seed's config; hooks are
    /// installed for the built-in providers that have them.
    pub supports_hooks: bool,
    /// The agent's Agent Client Protocol server, for `owt new --acp`:
    /// `{binary} acp`, or another program (`my-agent-acp --stdio`). Split
    /// into words like `command_template`, never run through a shell.
    pub acp: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GuardConfig {
    /// Globs whose same-file overlaps are not reported (conflicts always are).
    pub ignore: Vec<String>,
    /// `owt lsp`: a hint on the lines another participant is changing in a
    /// document you have open, before you edit it (`aware`).
    pub awareness: bool,
    /// What an agent's pre-edit hook (`owt hook --pre-edit`) answers when
    /// another participant is changing the lines it is about to edit.
    pub pre_edit: PreEdit,
    /// The symbol index (tree-sitter): enclosing symbols named in messages
    /// and the `semantic` level. Off: nothing is parsed.
    pub symbols: bool,
}

impl Default for GuardConfig {
    fn default() -> Self {
        GuardConfig {
            ignore: Vec::new(),
            awareness: true,
            pre_edit: PreEdit::Warn,
            symbols: true,
        }
    }
}

/// `[guard] pre_edit`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PreEdit {
    /// Let the edit through and tell the agent who else is there.
    #[default]
    Warn,
    /// Refuse the edit with a message the agent can act on.
    Block,
    /// Say nothing.
    Off,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ShipConfig {
    /// `owt ship` refuses while a changed file is not marked reviewed
    /// since its last change (`owt review NAME --mark`); otherwise it
    /// only warns.
    pub require_review: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AttachConfig {
    /// Prefix key of the detach sequence (`<prefix> d`): `ctrl-\`, `ctrl-]`,
    /// or `ctrl-<letter>`.
    pub detach_key: String,
}

impl Default for AttachConfig {
    fn default() -> Self {
        AttachConfig {
            detach_key: "ctrl-\\".into(),
        }
    }
}

/// owt's MCP server: which sessions may conduct others (`spawn_session`,
/// `wait_session`, …) and how far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct McpConfig {
    /// Every session (but a conductor's children) gets the conductor tools;
    /// without it, only a session started with `owt new --conductor`.
    pub conductor: bool,
    /// A conductor may ship its children (`ship_session`); without it a
    /// human ships them through NEEDS YOU.
    pub conductor_can_ship: bool,
    /// The most children one conductor may have at once.
    pub max_children: u32,
}

impl Default for McpConfig {
    fn default() -> Self {
        McpConfig {
            conductor: false,
            conductor_can_ship: false,
            max_children: 8,
        }
    }
}

/// The control plane (`owt` in a terminal).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct UiConfig {
    /// `owt` with no verb in a terminal shows the live control plane;
    /// `false`: the static board, as `owt --print`.
    pub control_plane: bool,
    /// A session entering NEEDS YOU: `bell` (the terminal bell), `osc9`
    /// (a desktop notification through the terminal), `both` or `off`.
    pub bell: UiBell,
}

/// How the control plane calls for attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UiBell {
    Bell,
    Osc9,
    Both,
    Off,
}

impl Default for UiConfig {
    fn default() -> Self {
        UiConfig {
            control_plane: true,
            bell: UiBell::Bell,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EnvironmentConfig {
    /// Install dependencies in new worktrees.
    pub auto_install_deps: bool,
    /// Copy `[worktree] copy_files` (`.env` by default) into new worktrees.
    pub copy_env_file: bool,
}

impl Default for EnvironmentConfig {
    fn default() -> Self {
        EnvironmentConfig {
            auto_install_deps: false,
            copy_env_file: true,
        }
    }
}

/// When owt runs `[checks] command` on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChecksWhen {
    /// When an agent ends a turn with new changes, and before `owt ship`.
    #[default]
    TurnEnd,
    /// Before `owt ship` and `owt pr` only.
    Ship,
    /// Only on `owt checks NAME --run`.
    Manual,
}

impl ChecksWhen {
    pub fn as_str(self) -> &'static str {
        match self {
            ChecksWhen::TurnEnd => "turn-end",
            ChecksWhen::Ship => "ship",
            ChecksWhen::Manual => "manual",
        }
    }
}

/// `[checks]`: the command that says whether an agent's work is good.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ChecksConfig {
    /// Split into argv words like `command_template` (shell quoting rules)
    /// and run without a shell (write `sh -c "…"` for one). Unset: no checks.
    pub command: Option<String>,
    /// Seconds before the run is killed (its whole process group).
    pub timeout: u64,
    pub when: ChecksWhen,
    /// Type the failure into the agent and ask it to fix it.
    pub auto_fix: bool,
    /// Failed runs in a row (auto-fix attempts) before the session needs you.
    pub max_attempts: u32,
    /// Lines of the output's end kept as the failure excerpt.
    pub excerpt_lines: u32,
}

impl Default for ChecksConfig {
    fn default() -> Self {
        ChecksConfig {
            command: None,
            timeout: 600,
            when: ChecksWhen::TurnEnd,
            auto_fix: true,
            max_attempts: 3,
            excerpt_lines: 60,
        }
    }
}

/// `[feedback] conflicts`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConflictFeedback {
    /// Type a short message into the agent, once per new conflict.
    #[default]
    Tell,
    Off,
}

/// `[feedback]`: what owt tells agents on its own.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct FeedbackConfig {
    /// A new real conflict with the base or another session.
    pub conflicts: ConflictFeedback,
    /// Whose pull-request comments are typed into agents.
    pub comment_authors: CommentAuthors,
}

/// `[feedback] comment_authors`: whose pull-request comments the watcher
/// types into agents — `"collaborators"` (the default: GitHub's `OWNER`,
/// `MEMBER`, `COLLABORATOR`; GitLab members with Developer access or more),
/// `"all"`, or a list of logins (which may hold `"collaborators"` too).
/// The others are counted and listed, never typed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum CommentAuthors {
    One(String),
    List(Vec<String>),
}

impl Default for CommentAuthors {
    fn default() -> Self {
        CommentAuthors::One("collaborators".into())
    }
}

impl CommentAuthors {
    fn entries(&self) -> &[String] {
        match self {
            CommentAuthors::One(one) => std::slice::from_ref(one),
            CommentAuthors::List(list) => list,
        }
    }

    /// Whether a comment by `login` (`collaborator`: one of the
    /// repository's own people) is typed into the agent.
    pub fn routes(&self, login: &str, collaborator: bool) -> bool {
        self.entries().iter().any(|entry| match entry.as_str() {
            "all" => true,
            "collaborators" => collaborator,
            name => name.eq_ignore_ascii_case(login.trim_start_matches('@')),
        })
    }
}

/// `[notify]`: notifications out, sent by each session's host when its
/// status turns to one that wants a human (see `feedback::notify`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct NotifyConfig {
    /// `notify-send` where a desktop session bus exists.
    pub desktop: bool,
    /// A program and its arguments, run with one JSON object on stdin per
    /// event.
    pub command: Vec<String>,
    /// A terminal attached to a session (`owt attach`) is told when
    /// another session of the repository enters NEEDS YOU, by a desktop
    /// notification through the terminal: `osc9`, `osc777`, `off`, or
    /// `auto` (the default): `osc9` while `desktop = true`, else off.
    pub terminal: TerminalNotify,
}

/// `[notify] terminal`: the escape sequence an attached terminal is told
/// with.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TerminalNotify {
    /// `osc9` while `[notify] desktop = true`, else nothing.
    #[default]
    Auto,
    Osc9,
    Osc777,
    Off,
}

impl NotifyConfig {
    /// How an attached terminal is told, if at all.
    pub fn terminal_style(&self) -> Option<owt_protocol::host::NoticeStyle> {
        use owt_protocol::host::NoticeStyle;
        match self.terminal {
            TerminalNotify::Auto if self.desktop => Some(NoticeStyle::Osc9),
            TerminalNotify::Auto | TerminalNotify::Off => None,
            TerminalNotify::Osc9 => Some(NoticeStyle::Osc9),
            TerminalNotify::Osc777 => Some(NoticeStyle::Osc777),
        }
    }
}

/// Which forge hosts the remote.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ForgeKind {
    Github,
    Gitlab,
}

impl ForgeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ForgeKind::Github => "github",
            ForgeKind::Gitlab => "gitlab",
        }
    }

    /// The forge's own command-line client.
    pub fn default_cli(self) -> &'static str {
        match self {
            ForgeKind::Github => "gh",
            ForgeKind::Gitlab => "glab",
        }
    }
}

/// What happens to a session whose pull request was merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnMerged {
    /// Shown in READY TO CLEAN until you delete it.
    #[default]
    Keep,
    /// Deleted as `owt delete` would (never with uncommitted work).
    Delete,
}

/// `[pr]`: pull requests through the forge's own CLI.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PrConfig {
    /// `github` or `gitlab`; default: told from the remote's URL.
    pub forge: Option<ForgeKind>,
    /// The forge CLI to run (default `gh` or `glab`, looked up on `PATH`).
    pub cli: Option<String>,
    /// The remote to push to (default: the base branch's upstream remote,
    /// else `origin`, else the only remote).
    pub remote: Option<String>,
    /// Open pull requests as drafts.
    pub draft: bool,
    /// Open a pull request when a session's checks pass.
    pub auto: bool,
    /// Seconds between two looks at an open pull request (doubling while
    /// nothing changes, up to `poll_max`).
    pub poll_interval: u64,
    pub poll_max: u64,
    pub on_merged: OnMerged,
}

impl Default for PrConfig {
    fn default() -> Self {
        PrConfig {
            forge: None,
            cli: None,
            remote: None,
            draft: true,
            auto: false,
            poll_interval: 30,
            poll_max: 300,
            on_merged: OnMerged::Keep,
        }
    }
}
