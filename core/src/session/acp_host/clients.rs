//! The socket's side: a client's connection and its requests (prompts,
//! permission answers, cancel, peek, status, terminate).

use std::io::{BufReader, Write};
use std::os::unix::net::UnixStream;
use std::sync::{mpsc, Arc};

use owt_protocol::host::{
    self as proto, AcpEvent, FrameKind, HostError, HostStatus, JournalView, PermissionAnswer,
    PermissionAnswered, Role, ScreenView, Welcome, HOST_PROTOCOL_VERSION,
};
use serde_json::json;

use crate::acp::schema::{self, method};
use crate::acp::transcript::{self};
use crate::session::host::{accept_hello, decode_request, lock, spawn_guarded, Request};
use crate::status::{kind, AcpState};
use crate::store::now_ms;

use super::{EventClient, Host, State, CLIENT_QUEUE};

/// Answers the first pending request.
fn answer(host: &Arc<Host>, answer: &PermissionAnswer) -> Result<PermissionAnswered, String> {
    let mut state = lock(&host.state);
    let Some(first) = state.pending.front() else {
        return Err(format!(
            "{} has no pending permission request",
            host.spec.session_name
        ));
    };
    if answer.id.is_some_and(|id| id != first.permission.id) {
        return Err(format!(
            "permission request {} of {} was already answered",
            answer.id.unwrap_or_default(),
            host.spec.session_name
        ));
    }
    let chosen = schema::choose_option(
        &first.permission.options,
        answer.option.as_deref(),
        answer.deny,
    )?
    .cloned();
    let Some(pending) = state.pending.pop_front() else {
        return Err("the request was answered meanwhile".into());
    };
    let option_id = chosen.as_ref().map(|o| o.id.clone());
    host.conn.respond(
        pending.rpc_id,
        Ok(schema::permission_outcome(option_id.as_deref())),
    );
    let name = chosen
        .as_ref()
        .map_or_else(|| "cancelled".to_string(), |o| o.name.clone());
    tracing::info!(answer = %name, "answered the permission request");
    state.transcript.answered(&name);
    host.broadcast(&AcpEvent::Answered {
        id: pending.permission.id,
        option_id: option_id.clone(),
    });
    match state.pending.front() {
        Some(next) => host.record(kind::ACP_PERMISSION, &next.permission),
        None => {
            host.clear(kind::ACP_PERMISSION);
            host.set_state(&mut state, AcpState::Working, None);
        }
    }
    Ok(PermissionAnswered {
        question: pending.permission.question,
        option_id,
        name,
    })
}

/// `session/cancel`, and every pending request answered `cancelled` (the
/// protocol asks the client to).
fn cancel(host: &Arc<Host>) {
    let mut state = lock(&host.state);
    let Some(session) = state.acp_session.clone() else {
        return;
    };
    host.conn
        .notify(method::SESSION_CANCEL, json!({"sessionId": session}));
    while let Some(p) = state.pending.pop_front() {
        host.conn
            .respond(p.rpc_id, Ok(schema::permission_outcome(None)));
        state.transcript.answered("cancelled");
        host.broadcast(&AcpEvent::Answered {
            id: p.permission.id,
            option_id: None,
        });
    }
    host.clear(kind::ACP_PERMISSION);
    if state.turn_running {
        host.set_state(&mut state, AcpState::Working, None);
    }
}

/// Queues a prompt; recorded as input before this returns.
fn queue_prompt(host: &Arc<Host>, text: &str) {
    let mut state = lock(&host.state);
    let now = now_ms();
    state.last_input_at = Some(now);
    if let Some(store) = lock(&host.store).as_ref() {
        let _ = store.record_fact_at(host.spec.session_id, kind::INPUT, &(), now);
    }
    state.prompts.push_back(text.to_string());
    if state.acp.state == AcpState::Waiting {
        host.set_state(&mut state, AcpState::Working, None);
    }
    drop(state);
    host.prompt_ready.notify_all();
}

fn view(state: &State) -> owt_protocol::host::TranscriptView {
    let mut view = state.transcript.view();
    view.pending = state.pending.front().map(|p| p.permission.clone());
    view.turn_running = state.turn_running;
    view.acp_session_id = state.acp_session.clone();
    view
}

/// The transcript's last lines as a screen (`owt peek`).
fn screen(state: &State, rows: usize, scrollback: bool) -> ScreenView {
    let lines = transcript::render(&state.transcript.view().entries);
    let split = lines.len().saturating_sub(rows);
    let (above, shown) = lines.split_at(split);
    ScreenView {
        rows: shown.len() as u16,
        cols: lines.iter().map(|l| l.chars().count()).max().unwrap_or(0) as u16,
        cursor: (0, 0),
        alternate_screen: false,
        lines: shown.to_vec(),
        scrollback: if scrollback {
            above.to_vec()
        } else {
            Vec::new()
        },
        scrollback_next: None,
        formatted: None,
    }
}

fn status(host: &Host) -> HostStatus {
    let state = lock(&host.state);
    HostStatus {
        host_pid: host.host_pid,
        agent_pid: Some(host.agent_pid),
        exit: state.exit.clone(),
        attached_clients: lock(&host.clients).len() as u32,
        rows: 0,
        cols: 0,
        started_at: host.started_at,
        last_output_at: state.last_output_at,
        last_input_at: state.last_input_at,
        screen_signal: serde_json::to_value(state.acp.state)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string)),
    }
}

pub(super) fn serve_client(host: &Arc<Host>, mut stream: UnixStream) {
    // A passed descriptor means nothing here: it closes at once.
    let Some((hello, _)) = accept_hello(&mut stream) else {
        return;
    };
    if hello.role == Role::Attach {
        let _ = proto::write_json(
            &mut stream,
            FrameKind::Error,
            &HostError {
                message: format!(
                    "{} talks to its agent through ACP, not a terminal; `owt attach {}` shows its transcript",
                    host.spec.session_name, host.spec.session_name
                ),
            },
        );
        return;
    }
    let welcome = proto::encode_json(
        FrameKind::Welcome,
        &Welcome {
            version: HOST_PROTOCOL_VERSION,
            host_pid: host.host_pid,
            agent_pid: Some(host.agent_pid),
            session_name: host.spec.session_name.clone(),
            short_id: host.spec.short_id.clone(),
            direct: false,
            notices: false,
        },
    );
    // Replies and events go through one queue, written by one thread.
    let (tx, rx) = mpsc::sync_channel::<Vec<u8>>(CLIENT_QUEUE);
    let Ok(write_half) = stream.try_clone() else {
        return;
    };
    let writer = spawn_guarded("client-writer", move || {
        let mut w = write_half;
        for frame in rx {
            if w.write_all(&frame).is_err() {
                let _ = w.shutdown(std::net::Shutdown::Both);
                break;
            }
        }
    });
    let _ = tx.send(welcome);
    if hello.role == Role::Events {
        subscribe(host, &tx, &stream);
    }
    let mut incoming = BufReader::with_capacity(16 * 1024, &stream);
    loop {
        let frame = match proto::read_frame(&mut incoming) {
            Ok(Some(frame)) => frame,
            Ok(None) => break,
            Err(e) => {
                tracing::debug!("client read: {e}");
                break;
            }
        };
        let reply = handle_request(host, &frame);
        // The client is gone, or it left.
        let done = match reply {
            Some(bytes) => tx.send(bytes).is_err(),
            None => frame.kind == FrameKind::Detach,
        };
        if done {
            break;
        }
    }
    drop(tx);
    if let Some(writer) = writer {
        let _ = writer.join();
    }
}

/// An `Events` client gets the transcript so far, then every event (or
/// the exit, when the agent is gone), in one order under the state lock.
fn subscribe(host: &Host, tx: &mpsc::SyncSender<Vec<u8>>, stream: &UnixStream) {
    let state = lock(&host.state);
    let _ = tx.send(proto::encode_json(FrameKind::Transcript, &view(&state)));
    if let Some(exit) = &state.exit {
        let _ = tx.send(proto::encode_json(FrameKind::Exited, exit));
    } else if let Ok(s) = stream.try_clone() {
        lock(&host.clients).push(EventClient {
            tx: tx.clone(),
            stream: s,
        });
    }
}

fn error_frame(message: String) -> Vec<u8> {
    proto::encode_json(FrameKind::Error, &HostError { message })
}

fn handle_request(host: &Arc<Host>, frame: &proto::Frame) -> Option<Vec<u8>> {
    match frame.kind {
        FrameKind::Answer => {
            let answer = match frame.json::<PermissionAnswer>() {
                Ok(a) => a,
                Err(e) => return Some(error_frame(e.to_string())),
            };
            return Some(match self::answer(host, &answer) {
                Ok(done) => proto::encode_json(FrameKind::Answered, &done),
                Err(message) => error_frame(message),
            });
        }
        FrameKind::Cancel => {
            cancel(host);
            return Some(proto::encode(FrameKind::Ok, b""));
        }
        _ => {}
    }
    match decode_request(frame) {
        Request::Send(send) => {
            if lock(&host.state).exit.is_some() {
                return Some(error_frame(format!(
                    "{} has exited",
                    host.spec.session_name
                )));
            }
            queue_prompt(host, &send.text);
            Some(proto::encode(FrameKind::Ok, b""))
        }
        Request::Peek(req) => {
            let state = lock(&host.state);
            Some(proto::encode_json(
                FrameKind::Screen,
                &screen(&state, 40, req.scrollback),
            ))
        }
        Request::Status => Some(proto::encode_json(FrameKind::Status, &status(host))),
        Request::Terminate(grace) => {
            host.stop_agent(grace);
            Some(proto::encode(FrameKind::Ok, b""))
        }
        Request::Journal => Some(proto::encode_json(
            FrameKind::Journal,
            &host
                .journal
                .as_ref()
                .map_or_else(JournalView::not_ready, |journal| journal.view()),
        )),
        // No terminal of a client's here to tell anything.
        Request::Detach | Request::Notice(_) => None,
        Request::Input(_) | Request::Resize { .. } => Some(error_frame(format!(
            "{} talks to its agent through ACP: send a prompt (owt send) instead of keys",
            host.spec.session_name
        ))),
        Request::Invalid(message) => Some(error_frame(message)),
    }
}
