//! owt's extensions to the Language Server Protocol, spoken by `owt lsp`.
//!
//! - `initializationOptions`: [`InitializationOptions`].
//! - request `owt/board` (no params) → [`crate::Board`].
//! - notification `owt/boardChanged` (server → client) with [`crate::Board`].
//! - request `owt/openTerminal` (server → client) with [`OpenTerminalParams`]
//!   → [`OpenTerminalResult`]; sent only to clients that announced
//!   `initializationOptions.openTerminal = true`.
//! - commands (`workspace/executeCommand`): [`commands`], each with one JSON
//!   object argument ([`CommandArgs`]).
//! - diagnostics: `source = "owt"`, `code` one of [`LEVEL_OVERLAP`],
//!   [`LEVEL_HUNK_OVERLAP`], [`LEVEL_CONFLICT`], `data` = [`DiagnosticData`].

use serde::{Deserialize, Serialize};

pub const METHOD_BOARD: &str = "owt/board";
pub const METHOD_BOARD_CHANGED: &str = "owt/boardChanged";
pub const METHOD_OPEN_TERMINAL: &str = "owt/openTerminal";

pub const LEVEL_OVERLAP: &str = "overlap";
pub const LEVEL_HUNK_OVERLAP: &str = "hunk-overlap";
pub const LEVEL_CONFLICT: &str = "conflict";

/// Command ids of `workspace/executeCommand`.
pub mod commands {
    pub const SPAWN: &str = "owt.spawn";
    pub const ATTACH: &str = "owt.attach";
    pub const SEND: &str = "owt.send";
    pub const PEEK: &str = "owt.peek";
    pub const MERGE: &str = "owt.merge";
    pub const SHIP: &str = "owt.ship";
    pub const DELETE: &str = "owt.delete";
    /// Restarts a session whose agent is gone, continuing its
    /// conversation (`{session}`; `owt resume`).
    pub const RESUME: &str = "owt.resume";
    pub const OPEN_AGENT_FILE: &str = "owt.openAgentFile";
    /// A review comment to the agent (`{session, path | uri, start_line,
    /// end_line, text}`; only `text` after a code action on a selection).
    pub const COMMENT: &str = "owt.comment";
    /// A read-only copy of the base version of a file of an agent.
    pub const SHOW_BASE: &str = "owt.showBase";
    /// Marks a file (or every changed file) of an agent reviewed.
    pub const MARK_REVIEWED: &str = "owt.markReviewed";
    /// Resolves a review comment (`{session, comment}`): its Hint goes.
    pub const RESOLVE_COMMENT: &str = "owt.resolveComment";
    /// Answers an ACP session's pending permission request (`{session,
    /// option?, permission_id?}`; `owt approve`).
    pub const APPROVE: &str = "owt.approve";
    /// Refuses an ACP session's pending permission request (`{session,
    /// permission_id?}`; `owt deny`).
    pub const DENY: &str = "owt.deny";
    pub const ALL: &[&str] = &[
        SPAWN,
        ATTACH,
        SEND,
        PEEK,
        MERGE,
        SHIP,
        DELETE,
        RESUME,
        OPEN_AGENT_FILE,
        COMMENT,
        SHOW_BASE,
        MARK_REVIEWED,
        RESOLVE_COMMENT,
        APPROVE,
        DENY,
    ];
}

/// The severities a client may set per level (see [`Severities`]).
pub const SEVERITY_VALUES: &[&str] = &["error", "warning", "information", "hint"];

/// `initializationOptions` a client may send.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(optional_fields))]
pub struct InitializationOptions {
    /// The client handles `owt/openTerminal`.
    pub open_terminal: bool,
    /// Severity per level (`error`, `warning`, `information`, `hint`).
    pub severities: Option<Severities>,
    /// Hints on the lines other participants are changing in open
    /// documents you have not edited (level `aware`); `false` turns them
    /// off. Absent: the `[guard] awareness` config key decides (on by
    /// default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub awareness: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(optional_fields))]
pub struct Severities {
    pub overlap: Option<String>,
    pub hunk_overlap: Option<String>,
    pub conflict: Option<String>,
    /// The awareness hint (`aware`; default `hint`).
    pub aware: Option<String>,
}

/// `owt/openTerminal` params: run `argv` in `cwd` in a terminal titled `title`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct OpenTerminalParams {
    pub title: String,
    pub argv: Vec<String>,
    pub cwd: String,
    /// The session the terminal attaches to (lets a client reuse its window).
    pub session: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct OpenTerminalResult {
    pub opened: bool,
}

/// The one argument of every owt command.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
#[cfg_attr(test, derive(ts_rs::TS))]
#[cfg_attr(test, ts(optional_fields))]
pub struct CommandArgs {
    pub session: Option<String>,
    /// `owt.spawn`: the task; `owt.send`: the text.
    pub task: Option<String>,
    pub text: Option<String>,
    /// `owt.spawn`: agent (provider) name.
    pub ai_tool: Option<String>,
    /// `owt.spawn` from a selection / `owt.openAgentFile`: a file URI and range.
    pub uri: Option<String>,
    pub path: Option<String>,
    /// 1-based, inclusive.
    pub start_line: Option<u32>,
    /// 1-based, inclusive.
    pub end_line: Option<u32>,
    /// `owt.merge`: rebase instead of merge.
    pub rebase: Option<bool>,
    /// `owt.delete`: force.
    pub force: Option<bool>,
    /// `owt.markReviewed`: the `snapshot` of the `owt/diff` report the
    /// human read; files are marked as they were in it (one the agent
    /// changed since stays not reviewed). Absent: as they are now.
    pub snapshot: Option<String>,
    /// `owt.resolveComment`: the comment's id (its diagnostic's
    /// `data.comment`).
    pub comment: Option<u32>,
    /// `owt.comment`: `"base"` when `start_line`/`end_line` are lines of
    /// the base version (the read-only side of a review diff): the server
    /// carries them onto the agent's copy through the diff and puts the
    /// base text in the message. Absent or `"agent"`: the agent's lines.
    pub side: Option<String>,
    /// `owt.approve`: which option of the pending permission request (its
    /// id, 1-based number or name; absent: the first "allow once"). `owt
    /// lsp` also takes a JSON number (the option's number).
    pub option: Option<String>,
    /// `owt.approve` / `owt.deny`: answer only the permission request with
    /// this id (`SessionView.permission.id`), never a later one.
    #[cfg_attr(test, ts(as = "Option<u32>"))]
    pub permission_id: Option<u64>,
}

/// `data` of an owt diagnostic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct DiagnosticData {
    pub session: String,
    pub level: String,
}
