//! The conversation (the driver thread): connect, open the session, then
//! one `session/prompt` at a time from the prompt queue.

use std::sync::Arc;

use owt_protocol::host::AcpEvent;
use serde_json::{json, Value};

use crate::acp::conn::CallError;
use crate::acp::rpc::{self, RpcError};
use crate::acp::schema::{self, method, AgentInit};
use crate::session::host::lock;
use crate::status::{kind, AcpState};

use super::{Host, CONNECT_TIMEOUT};

/// The conversation: connect, open the session, then prompt after prompt.
pub(super) fn drive(host: &Arc<Host>) {
    let conn = host.conn.clone();
    let Some(init) = initialize(host) else {
        return;
    };
    let Some(session_id) = open_session(host, &init) else {
        return;
    };
    {
        let mut state = lock(&host.state);
        state.acp_session = Some(session_id.clone());
        state.usage.agent = init.agent.clone();
        state.usage.session_id = Some(session_id.clone());
        host.record(kind::ACP_USAGE, &state.usage);
        let next = if state.prompts.is_empty() {
            AcpState::Waiting
        } else {
            AcpState::Working
        };
        host.set_state(&mut state, next, None);
    }
    loop {
        let Some(prompt) = next_prompt(host) else {
            return;
        };
        begin_turn(host, &prompt);
        let result = conn.request(
            method::SESSION_PROMPT,
            schema::prompt_params(&session_id, &prompt),
            None,
        );
        if matches!(result, Err(CallError::Closed)) {
            // The agent is gone mid-turn: the waiter says so (the turn
            // stays running until then).
            return;
        }
        end_turn(host, result);
    }
}

/// `initialize`; `None` when the agent is gone or failed (said so).
fn initialize(host: &Arc<Host>) -> Option<AgentInit> {
    let init = match host.conn.request(
        method::INITIALIZE,
        schema::initialize_params(),
        Some(CONNECT_TIMEOUT),
    ) {
        Ok(result) => result,
        Err(CallError::Closed) => return None,
        Err(e) => {
            host.fail(&format!("the agent did not answer `initialize`: {e}"));
            return None;
        }
    };
    match schema::read_initialize(&init) {
        Ok(init) => {
            tracing::info!(agent = ?init.agent, "the agent speaks ACP");
            Some(init)
        }
        Err(why) => {
            host.fail(&why);
            None
        }
    }
}

/// `session/load` (when asked and the agent can) or `session/new`: the
/// ACP session's id; `None` when the agent is gone or refused (said so).
fn open_session(host: &Arc<Host>, init: &AgentInit) -> Option<String> {
    let conn = &host.conn;
    let cwd = host.spec.cwd.display().to_string();
    let load = host.spec.acp_load.clone().filter(|_| init.load_session);
    let opened = match &load {
        Some(id) => conn
            .request(
                method::SESSION_LOAD,
                json!({"sessionId": id, "cwd": cwd, "mcpServers": host.mcp_servers()}),
                Some(CONNECT_TIMEOUT),
            )
            .map(|_| id.clone()),
        None => conn
            .request(
                method::SESSION_NEW,
                json!({"cwd": cwd, "mcpServers": host.mcp_servers()}),
                Some(CONNECT_TIMEOUT),
            )
            .and_then(|r| {
                r["sessionId"]
                    .as_str()
                    .map(str::to_string)
                    .ok_or_else(|| CallError::Rpc(RpcError::internal("no sessionId in the answer")))
            }),
    };
    let why = match opened {
        Ok(id) => return Some(id),
        Err(CallError::Closed) => return None,
        Err(CallError::Rpc(e)) if e.code == rpc::code::AUTH_REQUIRED => format!(
            "the agent wants you to log in first ({}); log in with the agent's own CLI, then start the session again",
            e.describe()
        ),
        Err(e) => {
            let what = if load.is_some() {
                "session/load"
            } else {
                "session/new"
            };
            format!("the agent refused `{what}`: {e}")
        }
    };
    host.fail(&why);
    None
}

/// The next queued prompt, waiting for one; `None` once the agent is gone.
fn next_prompt(host: &Arc<Host>) -> Option<String> {
    let mut state = lock(&host.state);
    loop {
        if state.exit.is_some() || host.conn.is_closed() {
            return None;
        }
        if let Some(p) = state.prompts.pop_front() {
            return Some(p);
        }
        state = host
            .prompt_ready
            .wait(state)
            .unwrap_or_else(|e| e.into_inner());
    }
}

/// A turn starts: the prompt goes into the transcript, to the clients, and
/// the conversation is working.
fn begin_turn(host: &Arc<Host>, prompt: &str) {
    let mut state = lock(&host.state);
    state.turn_running = true;
    state.echo_expected = true;
    state.transcript.user(prompt);
    host.broadcast(&AcpEvent::Prompt {
        text: prompt.to_string(),
    });
    host.set_state(&mut state, AcpState::Working, None);
}

/// The agent answered `session/prompt` (or failed it): count the usage,
/// say the turn ended, void what it left pending, and wait or go on.
fn end_turn(host: &Arc<Host>, result: Result<Value, CallError>) {
    let mut state = lock(&host.state);
    state.turn_running = false;
    state.echo_expected = false;
    let stop = match result {
        Ok(result) => {
            let (stop, usage) = schema::read_prompt_result(&result);
            state.usage.turns += 1;
            if let Some(u) = usage {
                state.usage.input_tokens += u.input;
                state.usage.output_tokens += u.output;
                state.usage.cache_read_tokens += u.cache_read;
                state.usage.cache_write_tokens += u.cache_write;
                state.usage.thought_tokens += u.thought;
            }
            host.record(kind::ACP_USAGE, &state.usage);
            state.transcript.turn_ended(&stop);
            host.broadcast(&AcpEvent::TurnEnded {
                stop_reason: stop.clone(),
                usage: result.get("usage").cloned(),
            });
            stop
        }
        Err(e) => {
            host.note(
                &mut state,
                &format!("the agent ended the turn with an error: {e}"),
            );
            host.broadcast(&AcpEvent::TurnEnded {
                stop_reason: "error".into(),
                usage: None,
            });
            "error".to_string()
        }
    };
    // Requests of the turn the agent left unanswered are void now.
    if !state.pending.is_empty() {
        state.pending.clear();
        host.clear(kind::ACP_PERMISSION);
    }
    let next = if state.prompts.is_empty() {
        AcpState::Waiting
    } else {
        AcpState::Working
    };
    host.set_state(&mut state, next, Some(stop));
}
