//! The `rmcp` edge of `owt mcp`: the tool list with descriptions and JSON
//! schemas, argument parsing, and the mapping of every failure to an MCP
//! *tool* error (`isError: true` with a message the agent can act on), so a
//! bad call never ends the server.
//!
//! Invariants: handlers parse, call one [`Peers`] method on a blocking
//! thread (the store is synchronous SQLite), and format; only an unknown
//! tool name is a JSON-RPC protocol error (`-32602`), as the MCP
//! specification asks.

use std::sync::{Arc, Mutex};

use rmcp::handler::server::tool::schema_for_type;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::peers::{PeerError, Peers, ReportKind};

const INSTRUCTIONS: &str = "\
You are one of several coding agents working on the same repository, each in its own git \
worktree and branch, supervised by owt. Use these tools to coordinate with the others: \
`list_peers` to see who else is working and on what, `get_peer_files` before editing a file \
another agent may be changing, `send_message` / `check_messages` to talk, `set_summary` to say \
what you are doing, and `report_status` when you are done, blocked or have a question for the \
human.";

/// Added to [`INSTRUCTIONS`] for a conductor.
const CONDUCTOR_INSTRUCTIONS: &str = "\n\n\
You are a conductor: you may split your task among child sessions. `spawn_session` starts one \
(its own agent, worktree and branch), `list_sessions` shows them, `wait_session` blocks until one \
needs you, is done or exited, `session_diff` shows its work, `send_to_session` types into it, \
and `ship_session` ships it when owt allows conductors to ship (otherwise a human ships it).";

/// Arguments of tools that take none.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct NoArgs {}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SendMessageArgs {
    /// A peer's session name (from list_peers), or `*` for every other session.
    to: String,
    /// The message.
    text: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SetSummaryArgs {
    /// One or two sentences: what you are working on and where.
    summary: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GetPeerFilesArgs {
    /// A peer's session name (from list_peers).
    peer: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReportStatusArgs {
    /// done: the task is finished; blocked: you cannot go on without help;
    /// question: you need an answer from the human; note: information only.
    kind: ReportKind,
    /// What is done, what blocks you, your question, or your note.
    #[serde(default)]
    text: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SpawnSessionArgs {
    /// What the child agent should do; its first prompt.
    task: String,
    /// The agent to run (claude, codex, …, or a [tools.NAME]); default: the
    /// repository's default agent.
    #[serde(default)]
    agent: Option<String>,
    /// The branch the child starts from; default: the repository's base.
    #[serde(default)]
    base: Option<String>,
    /// The child's session name; default: derived from the task.
    #[serde(default)]
    name: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ChildArgs {
    /// One of your children's session names (see list_sessions).
    name: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WaitSessionArgs {
    /// One of your children's session names (see list_sessions).
    name: String,
    /// Give up after this many seconds (default 600, at most 1800).
    #[serde(default)]
    timeout_secs: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SendToSessionArgs {
    /// One of your children's session names (see list_sessions).
    name: String,
    /// The text typed into the child's agent, then Enter.
    text: String,
}

/// One tool: its name, description, argument schema and hints.
struct ToolSpec {
    name: &'static str,
    description: &'static str,
    read_only: bool,
    schema: fn() -> Arc<JsonObject>,
}

const TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "list_peers",
        description: "List the other agent sessions of this repository: name, branch, task, \
                      status (starting, working, idle, needs-input, blocked, done, exited, \
                      conflict), their summary and their last reported status.",
        read_only: true,
        schema: schema_for_type::<NoArgs>,
    },
    ToolSpec {
        name: "send_message",
        description: "Send a message to one peer (by session name, see list_peers) or to every \
                      other session with to=\"*\". They read it with check_messages.",
        read_only: false,
        schema: schema_for_type::<SendMessageArgs>,
    },
    ToolSpec {
        name: "check_messages",
        description: "Read your unread messages (sent to you, or broadcast by others), oldest \
                      first. Each message is returned once.",
        read_only: false,
        schema: schema_for_type::<NoArgs>,
    },
    ToolSpec {
        name: "set_summary",
        description: "Publish a short summary of what you are working on; peers see it in \
                      list_peers. Replaces your previous summary.",
        read_only: false,
        schema: schema_for_type::<SetSummaryArgs>,
    },
    ToolSpec {
        name: "get_peer_files",
        description: "The files a peer changed relative to its base branch, with the changed \
                      line ranges (hunks: old_* in the base, new_* in the peer's copy) when the \
                      Conflict Guard has computed them. Check before editing shared files.",
        read_only: true,
        schema: schema_for_type::<GetPeerFilesArgs>,
    },
    ToolSpec {
        name: "report_status",
        description: "Report your status to the human supervising you: done (work finished), \
                      blocked (cannot continue), question (need an answer) or note. The report \
                      shows in owt's board and editor; done/blocked/question set your status.",
        read_only: false,
        schema: schema_for_type::<ReportStatusArgs>,
    },
];

/// The tools of a conductor session (`[mcp] conductor = true` or `owt
/// new --conductor`), beside [`TOOLS`].
const CONDUCTOR_TOOLS: &[ToolSpec] = &[
    ToolSpec {
        name: "spawn_session",
        description: "Start a child session: a new agent on `task` in its own worktree and \
                      branch (optional agent, base branch and name). It shows under you on \
                      owt's board. At most [mcp] max_children children at once; a child cannot \
                      spawn sessions of its own.",
        read_only: false,
        schema: schema_for_type::<SpawnSessionArgs>,
    },
    ToolSpec {
        name: "list_sessions",
        description: "List your children (the sessions you spawned): name, branch, agent, \
                      task and status (starting, working, idle, needs-input, blocked, done, \
                      exited, conflict).",
        read_only: true,
        schema: schema_for_type::<NoArgs>,
    },
    ToolSpec {
        name: "wait_session",
        description: "Block until one of your children needs you (done, needs input, blocked) \
                      or exited, or until timeout_secs pass (default 600); returns the outcome \
                      (needs-you, exited, timeout) and its status.",
        read_only: true,
        schema: schema_for_type::<WaitSessionArgs>,
    },
    ToolSpec {
        name: "session_diff",
        description: "One of your children's changes against its base branch: every changed \
                      file with its hunks (what shipping it would merge).",
        read_only: true,
        schema: schema_for_type::<ChildArgs>,
    },
    ToolSpec {
        name: "send_to_session",
        description: "Type text (then Enter) into one of your children's agents: an answer, \
                      a correction, the next step.",
        read_only: false,
        schema: schema_for_type::<SendToSessionArgs>,
    },
    ToolSpec {
        name: "ship_session",
        description: "Ship one of your children (commit, merge into its base behind the \
                      checks, delete) when [mcp] conductor_can_ship = true; otherwise it \
                      refuses: a human ships children from owt's NEEDS YOU lane.",
        read_only: false,
        schema: schema_for_type::<ChildArgs>,
    },
];

fn tool(spec: &ToolSpec) -> Tool {
    Tool::new(spec.name, spec.description, (spec.schema)())
        .with_annotations(ToolAnnotations::new().read_only(spec.read_only))
}

/// The tools `owt mcp` serves (a conductor's too, when `conductor`).
pub fn tools(conductor: bool) -> Vec<Tool> {
    specs(conductor).map(tool).collect()
}

fn specs(conductor: bool) -> impl Iterator<Item = &'static ToolSpec> {
    let extra: &[ToolSpec] = if conductor { CONDUCTOR_TOOLS } else { &[] };
    TOOLS.iter().chain(extra)
}

/// Why a call failed, before it becomes an MCP result.
enum Failure {
    /// The agent can fix the call: a tool error.
    Tool(String),
    /// No such tool: a protocol error.
    UnknownTool(String),
}

impl From<PeerError> for Failure {
    fn from(e: PeerError) -> Failure {
        Failure::Tool(e.to_string())
    }
}

fn parse<T: DeserializeOwned>(tool: &str, args: JsonObject) -> Result<T, Failure> {
    serde_json::from_value(serde_json::Value::Object(args)).map_err(|e| {
        Failure::Tool(format!(
            "bad arguments for {tool}: {e}; see the tool's input schema"
        ))
    })
}

fn json<T: Serialize>(value: T) -> Result<serde_json::Value, Failure> {
    serde_json::to_value(value).map_err(|e| Failure::Tool(format!("encoding the result: {e}")))
}

/// Runs one tool call against the store.
fn dispatch(peers: &mut Peers, name: &str, args: JsonObject) -> Result<serde_json::Value, Failure> {
    match name {
        "list_peers" => {
            parse::<NoArgs>(name, args)?;
            json(peers.list_peers()?)
        }
        "send_message" => {
            let a: SendMessageArgs = parse(name, args)?;
            json(peers.send_message(&a.to, &a.text)?)
        }
        "check_messages" => {
            parse::<NoArgs>(name, args)?;
            json(peers.check_messages()?)
        }
        "set_summary" => {
            let a: SetSummaryArgs = parse(name, args)?;
            json(peers.set_summary(&a.summary)?)
        }
        "get_peer_files" => {
            let a: GetPeerFilesArgs = parse(name, args)?;
            json(peers.get_peer_files(&a.peer)?)
        }
        "report_status" => {
            let a: ReportStatusArgs = parse(name, args)?;
            json(peers.report_status(a.kind, &a.text)?)
        }
        other => dispatch_conductor(peers, other, args),
    }
}

/// Runs one of [`CONDUCTOR_TOOLS`] (each refuses a caller that may not
/// conduct, saying why).
fn dispatch_conductor(
    peers: &mut Peers,
    name: &str,
    args: JsonObject,
) -> Result<serde_json::Value, Failure> {
    match name {
        "spawn_session" => {
            let a: SpawnSessionArgs = parse(name, args)?;
            json(peers.spawn_session(&owt_core::ops::conduct::SpawnRequest {
                task: a.task,
                agent: a.agent,
                base: a.base,
                name: a.name,
            })?)
        }
        "list_sessions" => {
            parse::<NoArgs>(name, args)?;
            json(peers.list_sessions()?)
        }
        "wait_session" => {
            let a: WaitSessionArgs = parse(name, args)?;
            json(peers.wait_session(&a.name, a.timeout_secs.unwrap_or(600))?)
        }
        "session_diff" => {
            let a: ChildArgs = parse(name, args)?;
            json(peers.session_diff(&a.name)?)
        }
        "send_to_session" => {
            let a: SendToSessionArgs = parse(name, args)?;
            json(peers.send_to_session(&a.name, &a.text)?)
        }
        "ship_session" => {
            let a: ChildArgs = parse(name, args)?;
            json(peers.ship_session(&a.name)?)
        }
        other => Err(Failure::UnknownTool(format!(
            "unknown tool `{other}`; tools: {}",
            specs(peers.is_conductor())
                .map(|t| t.name)
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// The tool that blocks until a child changes (see [`PeerServer::call`]).
const WAITS: &str = "wait_session";

/// The MCP service: the caller's [`Peers`] behind a lock (one call at a
/// time; each is a few SQLite statements), but for [`WAITS`], which runs
/// on a handle of its own.
#[derive(Clone)]
pub struct PeerServer {
    peers: Arc<Mutex<Peers>>,
    /// The caller may conduct: the conductor tools are listed.
    conductor: bool,
}

impl PeerServer {
    pub fn new(peers: Peers) -> PeerServer {
        PeerServer {
            conductor: peers.is_conductor(),
            peers: Arc::new(Mutex::new(peers)),
        }
    }

    /// Calls a tool; every failure but an unknown tool is a tool error.
    pub async fn call(
        &self,
        name: String,
        args: Option<JsonObject>,
    ) -> Result<CallToolResult, ErrorData> {
        let peers = Arc::clone(&self.peers);
        let tool_name = name.clone();
        let joined = tokio::task::spawn_blocking(move || {
            let mut shared = peers
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if name != WAITS {
                return dispatch(&mut shared, &name, args.unwrap_or_default());
            }
            // A wait may last minutes: it runs on a handle of its own,
            // without the lock, so the other tools keep answering.
            let mut own = shared
                .reopen()
                .map_err(|e| Failure::Tool(format!("{name}: {e:#}")))?;
            drop(shared);
            dispatch(&mut own, &name, args.unwrap_or_default())
        })
        .await;
        match joined {
            Ok(Ok(value)) => Ok(CallToolResult::structured(value)),
            Ok(Err(Failure::Tool(message))) => {
                tracing::debug!(tool = %tool_name, "tool error: {message}");
                Ok(CallToolResult::error(vec![ContentBlock::text(message)]))
            }
            Ok(Err(Failure::UnknownTool(message))) => Err(ErrorData::invalid_params(message, None)),
            Err(panic) => {
                tracing::error!(tool = %tool_name, "tool call panicked: {panic}");
                Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                    "{tool_name} failed inside owt ({panic}); this is a bug in owt, please report it"
                ))]))
            }
        }
    }
}

impl ServerHandler for PeerServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("owt", env!("CARGO_PKG_VERSION")))
            .with_instructions(if self.conductor {
                format!("{INSTRUCTIONS}{CONDUCTOR_INSTRUCTIONS}")
            } else {
                INSTRUCTIONS.to_string()
            })
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools(self.conductor)))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        specs(self.conductor).find(|t| t.name == name).map(tool)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let result = self
            .call(request.name.into_owned(), request.arguments)
            .await?;
        Ok(result.into())
    }
}

/// Serves `peers` over stdin/stdout until the client goes away.
pub async fn serve(peers: Peers) -> anyhow::Result<()> {
    let service = PeerServer::new(peers)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| anyhow::anyhow!("starting the MCP session: {e}"))?;
    let reason = service
        .waiting()
        .await
        .map_err(|e| anyhow::anyhow!("the MCP session ended abnormally: {e}"))?;
    tracing::info!("MCP session ended: {reason:?}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_has_an_object_schema_with_its_fields() {
        let conductor: Vec<String> = tools(true)[6..]
            .iter()
            .map(|t| t.name.to_string())
            .collect();
        assert_eq!(
            conductor,
            [
                "spawn_session",
                "list_sessions",
                "wait_session",
                "session_diff",
                "send_to_session",
                "ship_session"
            ]
        );
        let tools = tools(false);
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        assert_eq!(
            names,
            [
                "list_peers",
                "send_message",
                "check_messages",
                "set_summary",
                "get_peer_files",
                "report_status"
            ]
        );
        for t in &tools {
            assert_eq!(
                t.input_schema.get("type"),
                Some(&"object".into()),
                "{}",
                t.name
            );
            assert!(t.description.as_deref().is_some_and(|d| d.len() > 40));
        }
        let report = &tools[5].input_schema;
        let kind = serde_json::to_string(&report["properties"]["kind"]).unwrap();
        for k in ["done", "blocked", "question", "note"] {
            assert!(kind.contains(k), "{kind}");
        }
        assert_eq!(
            tools[1].input_schema["required"],
            serde_json::json!(["to", "text"])
        );
    }
}
