//! The part of the Agent Client Protocol (v1) owt speaks, read from and
//! written to `serde_json::Value` so that what a newer agent adds (fields,
//! update kinds) never stops a message from being read.
//!
//! Method names, the protocol version, the messages owt sends (initialize,
//! session/new, session/prompt) and readers for what agents send
//! (initialize results, `session/update`, `session/request_permission`,
//! prompt responses). Pure: no I/O.

use owt_protocol::host::{PendingPermission, PermissionOption, PlanEntry};
use serde_json::{json, Value};

/// The ACP protocol version owt speaks (the stable v1).
pub const PROTOCOL_VERSION: u64 = 1;

pub mod method {
    pub const INITIALIZE: &str = "initialize";
    pub const AUTHENTICATE: &str = "authenticate";
    pub const SESSION_NEW: &str = "session/new";
    pub const SESSION_LOAD: &str = "session/load";
    pub const SESSION_LIST: &str = "session/list";
    pub const SESSION_PROMPT: &str = "session/prompt";
    pub const SESSION_CANCEL: &str = "session/cancel";
    pub const SESSION_UPDATE: &str = "session/update";
    pub const SESSION_SET_MODE: &str = "session/set_mode";
    pub const REQUEST_PERMISSION: &str = "session/request_permission";
    pub const FS_READ: &str = "fs/read_text_file";
    pub const FS_WRITE: &str = "fs/write_text_file";
    pub const TERMINAL_CREATE: &str = "terminal/create";
    pub const TERMINAL_OUTPUT: &str = "terminal/output";
    pub const TERMINAL_WAIT: &str = "terminal/wait_for_exit";
    pub const TERMINAL_KILL: &str = "terminal/kill";
    pub const TERMINAL_RELEASE: &str = "terminal/release";
}

/// `initialize` params of owt as a client: files and terminals are
/// offered (both confined to the session's worktree).
pub fn initialize_params() -> Value {
    json!({
        "protocolVersion": PROTOCOL_VERSION,
        "clientCapabilities": {
            "fs": {"readTextFile": true, "writeTextFile": true},
            "terminal": true
        },
        "clientInfo": {"name": "owt", "title": "owt", "version": env!("CARGO_PKG_VERSION")}
    })
}

/// What an agent said about itself in its `initialize` result.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentInit {
    /// `name version` from `agentInfo`, if given.
    pub agent: Option<String>,
    pub load_session: bool,
    pub list_sessions: bool,
    /// Ids of the authentication methods it offers.
    pub auth_methods: Vec<String>,
}

/// Reads an `initialize` result; an error (to show the user) when the
/// agent speaks another protocol version.
pub fn read_initialize(result: &Value) -> Result<AgentInit, String> {
    let version = result.get("protocolVersion");
    match version.and_then(Value::as_u64) {
        Some(PROTOCOL_VERSION) => {}
        Some(v) => {
            return Err(format!(
                "the agent speaks ACP protocol version {v}; owt speaks version {PROTOCOL_VERSION} \
                 (update owt, or pin an agent adapter that speaks version {PROTOCOL_VERSION})"
            ))
        }
        None => {
            return Err(format!(
            "the agent's initialize answer has no protocol version (got {}); is this an ACP agent?",
            version.map_or("nothing".to_string(), Value::to_string)
        ))
        }
    }
    let caps = &result["agentCapabilities"];
    let info = &result["agentInfo"];
    let agent = info["name"]
        .as_str()
        .map(|name| match info["version"].as_str() {
            Some(v) => format!("{name} {v}"),
            None => name.to_string(),
        });
    Ok(AgentInit {
        agent,
        load_session: caps["loadSession"].as_bool().unwrap_or(false),
        list_sessions: caps["sessionCapabilities"].get("list").is_some(),
        auth_methods: result["authMethods"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|m| m["id"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default(),
    })
}

/// A text prompt (`session/prompt` params).
pub fn prompt_params(session_id: &str, text: &str) -> Value {
    json!({"sessionId": session_id, "prompt": [{"type": "text", "text": text}]})
}

/// The text of a prompt's content blocks (text blocks, and the names of
/// resources and links).
pub fn prompt_text(prompt: &Value) -> String {
    let mut parts = Vec::new();
    for block in prompt.as_array().into_iter().flatten() {
        match block["type"].as_str() {
            Some("text") => parts.push(block["text"].as_str().unwrap_or("").to_string()),
            Some("resource_link") => {
                parts.push(format!("[{}]", block["uri"].as_str().unwrap_or("")))
            }
            Some("resource") => parts.push(format!(
                "[{}]",
                block["resource"]["uri"].as_str().unwrap_or("")
            )),
            Some(other) => parts.push(format!("[{other}]")),
            None => {}
        }
    }
    parts.join("\n")
}

/// One `session/update`, as much of it as owt uses.
#[derive(Debug, Clone, PartialEq)]
pub enum Update {
    UserChunk(String),
    AgentChunk(String),
    ThoughtChunk(String),
    /// A new tool call, or an update of one (fields not sent are `None`).
    Tool(ToolCall),
    Plan(Vec<PlanEntry>),
    /// `usage_update`: context fill and cumulative cost.
    Usage {
        used: Option<u64>,
        size: Option<u64>,
        cost_usd: Option<f64>,
    },
    /// Kinds owt reads nothing from (commands, modes, config options,
    /// session info).
    Known(String),
    /// A kind owt does not know (ignored, logged once).
    Unknown(String),
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolCall {
    pub id: String,
    /// `tool_call` (new) or `tool_call_update`.
    pub is_new: bool,
    pub title: Option<String>,
    pub kind: Option<String>,
    pub status: Option<String>,
    pub paths: Option<Vec<String>>,
}

fn text_of(content: &Value) -> String {
    match content["type"].as_str() {
        Some("text") => content["text"].as_str().unwrap_or("").to_string(),
        Some("resource_link") => format!("[{}]", content["uri"].as_str().unwrap_or("")),
        Some(other) => format!("[{other}]"),
        None => String::new(),
    }
}

fn tool_call(update: &Value, is_new: bool) -> ToolCall {
    let s = |k: &str| update[k].as_str().map(str::to_string);
    let paths = update["locations"].as_array().map(|locs| {
        locs.iter()
            .filter_map(|l| l["path"].as_str().map(str::to_string))
            .collect()
    });
    ToolCall {
        id: s("toolCallId").unwrap_or_default(),
        is_new,
        title: s("title"),
        kind: s("kind"),
        status: s("status"),
        paths,
    }
}

/// Reads the `update` object of a `session/update` notification.
pub fn read_update(update: &Value) -> Update {
    let kind = update["sessionUpdate"].as_str().unwrap_or("");
    match kind {
        "user_message_chunk" => Update::UserChunk(text_of(&update["content"])),
        "agent_message_chunk" => Update::AgentChunk(text_of(&update["content"])),
        "agent_thought_chunk" => Update::ThoughtChunk(text_of(&update["content"])),
        "tool_call" => Update::Tool(tool_call(update, true)),
        "tool_call_update" => Update::Tool(tool_call(update, false)),
        "plan" => Update::Plan(
            update["entries"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|e| PlanEntry {
                    content: e["content"].as_str().unwrap_or("").to_string(),
                    status: e["status"].as_str().unwrap_or("pending").to_string(),
                })
                .collect(),
        ),
        "usage_update" => Update::Usage {
            used: update["used"].as_u64(),
            size: update["size"].as_u64(),
            cost_usd: update["cost"]["amount"].as_f64().filter(|_| {
                update["cost"]["currency"]
                    .as_str()
                    .is_none_or(|c| c == "USD")
            }),
        },
        "available_commands_update"
        | "current_mode_update"
        | "config_option_update"
        | "session_info_update" => Update::Known(kind.to_string()),
        other => Update::Unknown(other.to_string()),
    }
}

/// Reads `session/request_permission` params into what owt shows; `id`
/// numbers it.
pub fn read_permission(params: &Value, id: u64) -> Result<PendingPermission, String> {
    let options = params["options"]
        .as_array()
        .ok_or("a permission request without options")?
        .iter()
        .map(|o| PermissionOption {
            id: o["optionId"].as_str().unwrap_or("").to_string(),
            name: o["name"].as_str().unwrap_or("").to_string(),
            kind: o["kind"].as_str().unwrap_or("").to_string(),
        })
        .filter(|o| !o.id.is_empty())
        .collect::<Vec<_>>();
    if options.is_empty() {
        return Err("a permission request without options".into());
    }
    let tool = tool_call(&params["toolCall"], false);
    let question = tool
        .title
        .clone()
        .filter(|t| !t.trim().is_empty())
        .unwrap_or_else(|| match &tool.kind {
            Some(kind) => format!("Allow this {kind} tool call?"),
            None => "Allow this tool call?".to_string(),
        });
    Ok(PendingPermission {
        id,
        question,
        tool_kind: tool.kind,
        paths: tool.paths.unwrap_or_default(),
        options,
    })
}

/// The outcome of a permission request (`session/request_permission`
/// result).
pub fn permission_outcome(option_id: Option<&str>) -> Value {
    match option_id {
        Some(id) => json!({"outcome": {"outcome": "selected", "optionId": id}}),
        None => json!({"outcome": {"outcome": "cancelled"}}),
    }
}

/// Tokens a prompt response reports (`usage`, or Gemini's `_meta.quota`).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TurnUsage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
    pub thought: u64,
}

/// Reads a `session/prompt` result: its stop reason and token usage.
pub fn read_prompt_result(result: &Value) -> (String, Option<TurnUsage>) {
    let stop = result["stopReason"]
        .as_str()
        .unwrap_or("end_turn")
        .to_string();
    let n = |v: &Value, k: &str| v[k].as_u64().unwrap_or(0);
    let usage = if result["usage"].is_object() {
        let u = &result["usage"];
        Some(TurnUsage {
            input: n(u, "inputTokens"),
            output: n(u, "outputTokens"),
            cache_read: n(u, "cachedReadTokens"),
            cache_write: n(u, "cachedWriteTokens"),
            thought: n(u, "thoughtTokens"),
        })
    } else if result["_meta"]["quota"]["token_count"].is_object() {
        let u = &result["_meta"]["quota"]["token_count"];
        Some(TurnUsage {
            input: n(u, "input_tokens"),
            output: n(u, "output_tokens"),
            ..TurnUsage::default()
        })
    } else {
        None
    };
    (stop, usage)
}

/// Picks the option an answer names: `deny` takes a reject option (none:
/// cancel); a given option matches an id, a 1-based number or a name; no
/// option takes the first "allow once" (else "allow always", else the
/// first option). `Ok(None)` is "cancel the request".
pub fn choose_option<'a>(
    options: &'a [PermissionOption],
    option: Option<&str>,
    deny: bool,
) -> Result<Option<&'a PermissionOption>, String> {
    let by_kind = |kinds: &[&str]| {
        kinds
            .iter()
            .find_map(|k| options.iter().find(|o| o.kind == *k))
    };
    if deny {
        return Ok(by_kind(&["reject_once", "reject_always"]));
    }
    let Some(wanted) = option.map(str::trim).filter(|w| !w.is_empty()) else {
        return Ok(by_kind(&["allow_once", "allow_always"]).or(options.first()));
    };
    if let Some(o) = options.iter().find(|o| o.id == wanted) {
        return Ok(Some(o));
    }
    if let Ok(n) = wanted.parse::<usize>() {
        if let Some(o) = n.checked_sub(1).and_then(|i| options.get(i)) {
            return Ok(Some(o));
        }
    }
    if let Some(o) = options.iter().find(|o| o.name.eq_ignore_ascii_case(wanted)) {
        return Ok(Some(o));
    }
    Err(format!(
        "no option `{wanted}`; the options are: {}",
        options
            .iter()
            .enumerate()
            .map(|(i, o)| format!("{} {} ({})", i + 1, o.name, o.id))
            .collect::<Vec<_>>()
            .join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options() -> Vec<PermissionOption> {
        [
            ("allow_always", "Always Allow", "allow_always"),
            ("allow", "Allow", "allow_once"),
            ("reject", "Reject", "reject_once"),
        ]
        .iter()
        .map(|(id, name, kind)| PermissionOption {
            id: id.to_string(),
            name: name.to_string(),
            kind: kind.to_string(),
        })
        .collect()
    }

    #[test]
    fn answers_pick_the_option_a_person_means() {
        let opts = options();
        let pick =
            |o: Option<&str>, deny| choose_option(&opts, o, deny).map(|o| o.map(|o| o.id.clone()));
        assert_eq!(
            pick(None, false),
            Ok(Some("allow".into())),
            "allow once first"
        );
        assert_eq!(pick(None, true), Ok(Some("reject".into())));
        assert_eq!(pick(Some("1"), false), Ok(Some("allow_always".into())));
        assert_eq!(pick(Some("reject"), false), Ok(Some("reject".into())));
        assert_eq!(
            pick(Some("always allow"), false),
            Ok(Some("allow_always".into()))
        );
        let err = pick(Some("9"), false).unwrap_err();
        assert!(err.contains("1 Always Allow (allow_always)"), "{err}");
        // No reject option: deny cancels.
        let only_allow = &opts[..2];
        assert_eq!(choose_option(only_allow, None, true), Ok(None));
    }

    #[test]
    fn permission_requests_read_like_the_real_adapters_send_them() {
        // @zed-industries/claude-agent-acp 0.23.1
        let params = json!({"options": [{"kind": "allow_always", "name": "Always Allow", "optionId": "allow_always"},
            {"kind": "allow_once", "name": "Allow", "optionId": "allow"},
            {"kind": "reject_once", "name": "Reject", "optionId": "reject"}],
            "sessionId": "f334", "toolCall": {"toolCallId": "toolu_1", "title": "Write hello.txt", "kind": "edit",
            "locations": [{"path": "hello.txt"}]}});
        let p = read_permission(&params, 3).unwrap();
        assert_eq!(p.id, 3);
        assert_eq!(p.question, "Write hello.txt");
        assert_eq!(p.tool_kind.as_deref(), Some("edit"));
        assert_eq!(p.paths, ["hello.txt"]);
        assert_eq!(p.options, options());
        // No title: the kind says what is asked.
        let p = read_permission(
            &json!({"options": [{"optionId": "a", "name": "Yes", "kind": "allow_once"}],
                    "toolCall": {"kind": "execute"}}),
            1,
        )
        .unwrap();
        assert_eq!(p.question, "Allow this execute tool call?");
        assert!(read_permission(&json!({"options": []}), 1).is_err());
    }

    #[test]
    fn updates_of_unknown_kinds_are_named_not_errors() {
        assert_eq!(
            read_update(
                &json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}})
            ),
            Update::AgentChunk("hi".into())
        );
        assert_eq!(
            read_update(
                &json!({"sessionUpdate": "usage_update", "used": 1501, "size": 200000,
                                "cost": {"amount": 0.007155, "currency": "USD"}})
            ),
            Update::Usage {
                used: Some(1501),
                size: Some(200000),
                cost_usd: Some(0.007155)
            }
        );
        assert_eq!(
            read_update(&json!({"sessionUpdate": "hologram", "x": 1})),
            Update::Unknown("hologram".into())
        );
        assert_eq!(read_update(&json!(7)), Update::Unknown(String::new()));
    }

    #[test]
    fn prompt_results_carry_usage_in_either_shape() {
        let (stop, usage) = read_prompt_result(&json!({"stopReason": "end_turn",
            "usage": {"inputTokens": 2100, "outputTokens": 41, "cachedReadTokens": 800, "cachedWriteTokens": 0, "totalTokens": 2941}}));
        assert_eq!(stop, "end_turn");
        assert_eq!(
            usage,
            Some(TurnUsage {
                input: 2100,
                output: 41,
                cache_read: 800,
                cache_write: 0,
                thought: 0
            })
        );
        // Gemini CLI 0.61.0
        let (_, usage) = read_prompt_result(&json!({"stopReason": "end_turn",
            "_meta": {"quota": {"token_count": {"input_tokens": 1200, "output_tokens": 22}}}}));
        assert_eq!(usage.map(|u| (u.input, u.output)), Some((1200, 22)));
        // Codex's adapter reports none.
        assert_eq!(
            read_prompt_result(&json!({"stopReason": "cancelled"})),
            ("cancelled".into(), None)
        );
    }

    #[test]
    fn another_protocol_version_is_a_clear_error() {
        let err = read_initialize(&json!({"protocolVersion": 2})).unwrap_err();
        assert!(
            err.contains("ACP protocol version 2; owt speaks version 1"),
            "{err}"
        );
        let err = read_initialize(&json!({"agentCapabilities": {}})).unwrap_err();
        assert!(err.contains("no protocol version"), "{err}");
        let init = read_initialize(&json!({"protocolVersion": 1,
            "agentCapabilities": {"loadSession": true, "sessionCapabilities": {"list": {}}},
            "agentInfo": {"name": "OpenCode", "version": "1.18.33"}, "authMethods": [{"id": "opencode-login"}]})).unwrap();
        assert_eq!(init.agent.as_deref(), Some("OpenCode 1.18.33"));
        assert!(init.load_session && init.list_sessions);
        assert_eq!(init.auth_methods, ["opencode-login"]);
    }
}
