//! Launching a session's agent, below the use cases that start one (`new`,
//! `queue`, `resume`, `fork`, and `remote`'s `new --on`): what `owt new`
//! was asked ([`NewRequest`]), how the agent is launched
//! ([`LaunchOptions`], kept by a queued session), and the session host's
//! spec built from them ([`host_spec`], checked against exec's limits in
//! `exec`; a forked conversation carried over by `fork`).
//!
//! A service of `ops`: it names only leaves (`ports`, `prompt`), never a
//! use case.

mod exec;
pub(crate) mod fork;
mod spec;

use serde::{Deserialize, Serialize};

use crate::provider::LaunchMode;
pub(crate) use spec::host_spec;

/// What the user asked for.
#[derive(Debug, Clone, Default)]
pub struct NewRequest {
    pub task: String,
    pub name: Option<String>,
    pub branch: Option<String>,
    pub base: Option<String>,
    pub ai_tool: Option<String>,
    pub headless: bool,
    pub plan: bool,
    pub in_place: bool,
    /// `--template`: a built-in protocol (feature, bugfix, …) or `[templates.NAME]`.
    pub template: Option<String>,
    /// Pass the task verbatim, without the prompt builder's protocol and context.
    pub raw: bool,
    /// Terminal size for the agent (rows, cols).
    pub size: (u16, u16),
    /// Run the agent's ACP server instead of its terminal UI.
    pub acp: bool,
    /// Start the agent without a first prompt (`owt acp`: the editor sends
    /// it). Only with `acp`.
    pub no_prompt: bool,
    /// ACP: MCP servers to pass to the agent besides owt's own.
    pub acp_mcp_servers: Vec<serde_json::Value>,
    /// Start the agent now even beyond `[agent] max_running` or
    /// `min_free_memory` (never queue it).
    pub now: bool,
    /// `owt fork`: the commit the new branch starts at (the forked
    /// session's working state) and what the agent is told of it.
    pub fork: Option<ForkStart>,
    /// The conductor session that asked for this one (MCP
    /// `spawn_session`): recorded before its agent starts.
    pub parent: Option<super::facts::ParentFact>,
    /// `owt new --conductor`: its MCP server offers the conductor tools.
    pub conductor: bool,
}

/// Where a forked session starts: a commit (not a branch) and the session
/// it was forked from.
#[derive(Debug, Clone)]
pub struct ForkStart {
    /// The full id of the commit holding the forked session's working state.
    pub start_point: String,
    pub from: ForkFrom,
}

/// The session a forked one came from, for its agent's first prompt.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForkFrom {
    /// The forked session's name.
    pub session: String,
    /// Claude Code's transcript of the forked conversation
    /// (`--resume ID --fork-session`); `None`: the agent is told `context`.
    #[serde(default)]
    pub transcript: Option<std::path::PathBuf>,
    /// The forked session's task and diff, for an agent that cannot fork
    /// its conversation.
    pub context: String,
}

impl NewRequest {
    /// How the agent is to be launched (now, or once the queue starts it).
    pub fn launch_options(&self) -> LaunchOptions {
        LaunchOptions {
            headless: self.headless,
            plan: self.plan,
            template: self.template.clone(),
            raw: self.raw,
            rows: self.size.0,
            cols: self.size.1,
            acp: self.acp,
            no_prompt: self.no_prompt,
            acp_mcp_servers: self.acp_mcp_servers.clone(),
            fork: self.fork.as_ref().map(|f| f.from.clone()),
        }
    }
}

/// How a session's agent is launched: what `owt new` was asked. A queued
/// session keeps it (the `queued` fact) until its agent starts; the first
/// prompt is built when it does, so it names the peers of that moment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchOptions {
    #[serde(default)]
    pub headless: bool,
    #[serde(default)]
    pub plan: bool,
    #[serde(default)]
    pub template: Option<String>,
    #[serde(default)]
    pub raw: bool,
    #[serde(default)]
    pub rows: u16,
    #[serde(default)]
    pub cols: u16,
    /// Run the agent's ACP server instead of its terminal UI.
    #[serde(default)]
    pub acp: bool,
    /// ACP: start the agent without a first prompt (the editor sends it).
    #[serde(default)]
    pub no_prompt: bool,
    /// ACP: MCP servers to pass to the agent besides owt's own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acp_mcp_servers: Vec<serde_json::Value>,
    /// `owt fork`: the session this one was forked from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fork: Option<ForkFrom>,
}

impl LaunchOptions {
    pub(crate) fn mode(&self) -> LaunchMode {
        if self.headless {
            LaunchMode::Headless
        } else if self.plan {
            LaunchMode::Plan
        } else {
            LaunchMode::Interactive
        }
    }
}

/// Fact kind of an agent's own summary of what it is doing (MCP `set_summary`).
pub const SUMMARY_FACT: &str = crate::status::kind::SUMMARY;
