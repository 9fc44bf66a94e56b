//! `owt usage`: tokens and cost per session, agent and day.

use serde::{Deserialize, Serialize};

use super::TokenUsage;

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
