//! The frames' payloads of ACP sessions' hosts (`Answer`, `Answered`,
//! `Transcript`, `Event`): permission requests and the conversation.

use serde::{Deserialize, Serialize};

/// An `Answer` frame: which option of the pending permission request to
/// pick.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PermissionAnswer {
    /// An option's id, its 1-based number as listed, or its name
    /// (case-insensitive). `None`: the first "allow once" option (else the
    /// first "allow" one).
    #[serde(default)]
    pub option: Option<String>,
    /// Refuse: the "reject once" option (else "reject always"), else the
    /// request is cancelled.
    #[serde(default)]
    pub deny: bool,
    /// Answer only the request with this id (a client that shows requests
    /// as they come: never a later request by mistake).
    #[serde(default)]
    pub id: Option<u64>,
}

/// The reply to an `Answer`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PermissionAnswered {
    /// The question that was answered.
    pub question: String,
    /// The option picked (`None`: the request was cancelled).
    pub option_id: Option<String>,
    /// The option's name, or `cancelled`.
    pub name: String,
}

/// One choice of a permission request, as the agent offered it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PermissionOption {
    pub id: String,
    pub name: String,
    /// `allow_once`, `allow_always`, `reject_once` or `reject_always`.
    pub kind: String,
}

/// A permission request the agent is waiting on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(test, derive(ts_rs::TS))]
pub struct PendingPermission {
    /// Numbers the requests of one host (answers name no id: there is at
    /// most one pending at a time per turn).
    #[cfg_attr(test, ts(type = "number"))]
    pub id: u64,
    /// The tool call's title, e.g. `Write hello.txt`.
    pub question: String,
    /// The tool's kind (`edit`, `execute`, `read`, …), if the agent said.
    #[serde(default)]
    pub tool_kind: Option<String>,
    /// Paths the tool call touches.
    #[serde(default)]
    pub paths: Vec<String>,
    pub options: Vec<PermissionOption>,
}

/// One entry of an ACP session's transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum TranscriptEntry {
    /// What the user (or `owt send`) prompted.
    User { text: String },
    /// The agent's reply text.
    Agent { text: String },
    /// The agent's reasoning.
    Thought { text: String },
    /// A tool call and its latest state.
    Tool {
        id: String,
        title: String,
        #[serde(default)]
        kind: Option<String>,
        #[serde(default)]
        status: Option<String>,
        #[serde(default)]
        paths: Vec<String>,
    },
    /// The agent's plan (replaced as a whole on every update).
    Plan { entries: Vec<PlanEntry> },
    /// A permission question, and how it was answered.
    Permission {
        question: String,
        options: Vec<PermissionOption>,
        #[serde(default)]
        answer: Option<String>,
    },
    /// A turn ended (`end_turn`, `cancelled`, `max_tokens`, `refusal`, …).
    TurnEnded { stop_reason: String },
    /// Something owt says (the agent exited, a protocol error).
    Note { text: String },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanEntry {
    pub content: String,
    /// `pending`, `in_progress` or `completed`.
    pub status: String,
}

/// The conversation of an ACP session so far (`Transcript` frame).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TranscriptView {
    /// Oldest first; the host keeps the latest entries (a bounded number).
    pub entries: Vec<TranscriptEntry>,
    /// Entries dropped from the front to keep the transcript bounded.
    #[serde(default)]
    pub dropped: u64,
    /// The permission request waiting for an answer, if any.
    #[serde(default)]
    pub pending: Option<PendingPermission>,
    /// A turn is in progress.
    #[serde(default)]
    pub turn_running: bool,
    /// The agent's ACP session id (for `session/load`), once known.
    #[serde(default)]
    pub acp_session_id: Option<String>,
}

/// An `Event` frame: one change of an ACP session's conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum AcpEvent {
    /// The agent's `session/update` as it sent it (its `update` object);
    /// kinds owt does not know are passed on as they are.
    Update { update: serde_json::Value },
    /// A prompt was sent to the agent (from any client).
    Prompt { text: String },
    /// The agent asks; `tool_call` and `options` are its own JSON.
    Permission {
        pending: PendingPermission,
        tool_call: serde_json::Value,
        options: serde_json::Value,
    },
    /// The pending request `id` was answered (by any client).
    Answered {
        id: u64,
        /// The option picked (`None`: cancelled).
        option_id: Option<String>,
    },
    /// The turn ended; `usage` is the agent's own report, if any.
    TurnEnded {
        stop_reason: String,
        #[serde(default)]
        usage: Option<serde_json::Value>,
    },
    /// A transcript entry owt adds (see [`TranscriptEntry::Note`]).
    Note { text: String },
}
