//! What the agent sends, handled on the reader thread in order: its
//! `session/update`s and its requests (files, terminals, permission).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use owt_protocol::host::AcpEvent;
use serde_json::{json, Value};

use crate::acp::conn::Incoming;
use crate::acp::rpc::{Id, RpcError};
use crate::acp::schema::{self, method, Update};
use crate::session::host::{lock, spawn_guarded};
use crate::status::{kind, AcpState};

use super::{Host, Pending, MALFORMED_ANSWERED};

/// What the agent sent (on the reader thread, in order).
pub(super) fn on_incoming(host: &Arc<Host>, incoming: Incoming) {
    match incoming {
        Incoming::Notification { method, params } => {
            if method == method::SESSION_UPDATE {
                on_update(host, &params["update"]);
            } else {
                tracing::debug!("ignoring the agent's notification {method}");
            }
        }
        Incoming::Request { id, method, params } => on_request(host, id, &method, params),
        Incoming::Malformed(e) => {
            // Answered and logged up to a limit: a program that echoes
            // what it reads would otherwise bounce error responses back
            // and forth without end.
            let n = host.malformed.fetch_add(1, Ordering::Relaxed) + 1;
            if n <= MALFORMED_ANSWERED {
                tracing::warn!("the agent sent a line that is not JSON-RPC: {e}");
                host.conn.send(&e.response());
            } else if n == MALFORMED_ANSWERED + 1 {
                tracing::warn!(
                    "the agent sent {MALFORMED_ANSWERED} lines that are not JSON-RPC; \
                     skipping further ones without an answer (is its stdout ACP?)"
                );
            }
        }
    }
}

fn on_update(host: &Arc<Host>, raw: &Value) {
    let update = schema::read_update(raw);
    let mut state = lock(&host.state);
    match &update {
        Update::Unknown(kind) if state.unknown_kinds.insert(kind.clone()) => {
            tracing::info!("ignoring session/update of unknown kind {kind:?}");
        }
        Update::Usage {
            used,
            size,
            cost_usd,
        } => {
            state.usage.context_used = used.or(state.usage.context_used);
            state.usage.context_size = size.or(state.usage.context_size);
            if cost_usd.is_some() {
                state.usage.cost_usd = *cost_usd;
            }
            host.record(kind::ACP_USAGE, &state.usage);
        }
        _ => {}
    }
    let echo = state.echo_expected;
    state.transcript.apply(&update, echo);
    host.output_seen(&mut state);
    host.broadcast(&AcpEvent::Update {
        update: raw.clone(),
    });
}

fn on_request(host: &Arc<Host>, id: Id, method: &str, params: Value) {
    let root = &host.root;
    let reply = |result: Result<Value, RpcError>| {
        host.conn.respond(id.clone(), result);
    };
    match method {
        method::REQUEST_PERMISSION => {
            let mut state = lock(&host.state);
            let n = state.next_permission;
            match schema::read_permission(&params, n) {
                Ok(permission) => {
                    state.next_permission += 1;
                    let first = state.pending.is_empty();
                    if first {
                        // Blocked, in the store, before anything else.
                        host.record(kind::ACP_PERMISSION, &permission);
                        host.set_state(&mut state, AcpState::Blocked, None);
                    }
                    tracing::info!(question = %permission.question, "the agent asks for permission");
                    state.transcript.permission(&permission);
                    host.broadcast(&AcpEvent::Permission {
                        pending: permission.clone(),
                        tool_call: params["toolCall"].clone(),
                        options: params["options"].clone(),
                    });
                    state.pending.push_back(Pending {
                        permission,
                        rpc_id: id,
                    });
                }
                Err(why) => {
                    drop(state);
                    reply(Err(RpcError::invalid_params(why)));
                }
            }
        }
        method::FS_READ => {
            let path = params["path"].as_str().unwrap_or("");
            reply(
                crate::acp::fs::read_text(
                    root,
                    path,
                    params["line"].as_u64(),
                    params["limit"].as_u64(),
                )
                .map(|content| json!({"content": content})),
            );
        }
        method::FS_WRITE => {
            let path = params["path"].as_str().unwrap_or("");
            let content = params["content"].as_str().unwrap_or("");
            let written = crate::acp::fs::write_text(root, path, content);
            if let Err(e) = &written {
                tracing::info!("refused a write: {e}");
            }
            reply(written.map(|_| Value::Null));
        }
        method::TERMINAL_CREATE => reply(host.terminals.create(&params)),
        method::TERMINAL_OUTPUT => reply(host.terminals.output(&params)),
        method::TERMINAL_KILL => reply(host.terminals.kill(&params)),
        method::TERMINAL_RELEASE => reply(host.terminals.release(&params)),
        method::TERMINAL_WAIT => {
            // Blocks until the command exits: not on the reader.
            let host = host.clone();
            spawn_guarded("terminal-wait", move || {
                let result = host.terminals.wait_for_exit(&params);
                host.conn.respond(id, result);
            });
        }
        other => {
            tracing::info!("the agent asked for {other}, which owt does not offer");
            reply(Err(RpcError::method_not_found(other)));
        }
    }
}
