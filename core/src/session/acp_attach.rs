//! `owt attach` for an ACP session: the transcript so far, then the
//! conversation as it happens, and a line editor (the terminal's own, in
//! its normal mode) for the next prompt.
//!
//! A line is a prompt, except: `/approve [N]` (or a bare number while a
//! question waits), `/deny`, `/cancel` (the turn), `/detach` (or end of
//! input). One thread prints the host's events; the calling thread reads
//! lines and sends requests; the replies come back on the event stream.

use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::{Arc, Mutex};

use owt_protocol::host::{
    self as proto, AcpEvent, AgentExit, FrameKind, HostError, PendingPermission, PermissionAnswer,
    PermissionAnswered, SendText, TranscriptEntry, TranscriptView,
};

use super::client::HostConn;
use super::SessionError;
use crate::acp::schema::{read_update, ToolCall, Update};
use crate::acp::transcript;

/// How an ACP attach ended.
#[derive(Debug, Clone, PartialEq)]
pub enum AcpAttachEnd {
    Detached,
    Exited(AgentExit),
    HostGone,
}

/// What the printer needs to know between events.
#[derive(Default)]
struct Printer {
    /// The line printed last was cut short (streamed text without `\n`).
    mid_line: bool,
    /// Which kind of message text is streaming (`agent`, `thought`).
    streaming: Option<&'static str>,
    pending: Option<PendingPermission>,
    /// Tool calls by id: (kind, title, last status printed).
    tools: std::collections::HashMap<String, (String, String, String)>,
}

impl Printer {
    fn line(&mut self, out: &mut impl Write, text: &str) {
        if self.mid_line {
            let _ = writeln!(out);
        }
        self.mid_line = false;
        self.streaming = None;
        let _ = writeln!(out, "{text}");
    }

    fn stream(&mut self, out: &mut impl Write, kind: &'static str, text: &str) {
        if self.streaming != Some(kind) {
            if self.mid_line {
                let _ = writeln!(out);
            }
            if kind == "thought" {
                let _ = write!(out, "(thinking) ");
            }
            self.streaming = Some(kind);
        }
        let clean = crate::printable::text(text);
        let _ = write!(out, "{clean}");
        self.mid_line = !clean.ends_with('\n');
    }

    fn permission(&mut self, out: &mut impl Write, p: &PendingPermission) {
        let mut lines = Vec::new();
        transcript::render_entry(
            &TranscriptEntry::Permission {
                question: p.question.clone(),
                options: p.options.clone(),
                answer: None,
            },
            &mut lines,
        );
        lines.pop();
        for l in lines {
            self.line(out, &l);
        }
        self.line(out, "  answer: a number (or /approve N), /deny");
        self.pending = Some(p.clone());
    }

    fn event(&mut self, out: &mut impl Write, event: &AcpEvent) {
        match event {
            AcpEvent::Update { update } => match read_update(update) {
                Update::AgentChunk(t) => self.stream(out, "agent", &t),
                Update::ThoughtChunk(t) => self.stream(out, "thought", &t),
                Update::Tool(call) => self.tool(out, &call),
                Update::Plan(entries) => self.entry(out, &TranscriptEntry::Plan { entries }),
                _ => {}
            },
            AcpEvent::Prompt { text } => {
                let mut lines = Vec::new();
                transcript::render_entry(&TranscriptEntry::User { text: text.clone() }, &mut lines);
                for l in lines.into_iter().filter(|l| !l.is_empty()) {
                    self.line(out, &l);
                }
            }
            AcpEvent::Permission { pending, .. } => self.permission(out, pending),
            AcpEvent::Answered { id, option_id } => self.answered(out, *id, option_id.as_ref()),
            AcpEvent::TurnEnded { stop_reason, .. } => {
                if stop_reason != "end_turn" {
                    self.line(out, &format!("(turn ended: {stop_reason})"));
                }
                self.line(out, "(your turn)");
            }
            AcpEvent::Note { text } => {
                self.line(out, &format!("owt: {}", crate::printable::line(text)))
            }
        }
        let _ = out.flush();
    }

    /// A transcript entry's lines.
    fn entry(&mut self, out: &mut impl Write, entry: &TranscriptEntry) {
        let mut lines = Vec::new();
        transcript::render_entry(entry, &mut lines);
        for l in lines {
            self.line(out, &l);
        }
    }

    /// A tool call: a line when it starts and when it finishes.
    fn tool(&mut self, out: &mut impl Write, call: &ToolCall) {
        let entry = self.tools.entry(call.id.clone()).or_default();
        if let Some(k) = &call.kind {
            entry.0 = k.clone();
        }
        if let Some(t) = &call.title {
            entry.1 = t.clone();
        }
        let status = call.status.clone().unwrap_or_default();
        let show =
            call.is_new || (matches!(status.as_str(), "completed" | "failed") && entry.2 != status);
        if !status.is_empty() {
            entry.2 = status.clone();
        }
        if show {
            let entry = TranscriptEntry::Tool {
                id: call.id.clone(),
                title: entry.1.clone(),
                kind: Some(entry.0.clone()).filter(|k| !k.is_empty()),
                status: Some(entry.2.clone()).filter(|s| !s.is_empty()),
                paths: call.paths.clone().unwrap_or_default(),
            };
            self.entry(out, &entry);
        }
    }

    /// The permission request `id` was answered with `option_id` (none:
    /// cancelled).
    fn answered(&mut self, out: &mut impl Write, id: u64, option_id: Option<&String>) {
        if self.pending.as_ref().is_some_and(|p| p.id == id) {
            let name = self
                .pending
                .take()
                .and_then(|p| p.options.into_iter().find(|o| Some(&o.id) == option_id))
                .map_or_else(|| "cancelled".to_string(), |o| o.name);
            self.line(out, &format!("  → {}", crate::printable::line(&name)));
        }
    }
}

/// The printer and the terminal it prints to, shared by the event thread
/// and the line reader.
type Shared<W> = Arc<Mutex<(Printer, W)>>;

fn lock_printer<W>(printer: &Shared<W>) -> std::sync::MutexGuard<'_, (Printer, W)> {
    printer.lock().unwrap_or_else(|e| e.into_inner())
}

/// Attaches to the ACP session served at `socket`, reading lines from
/// `input` and printing to `output`.
pub fn attach(
    socket: &Path,
    name: &str,
    input: impl BufRead + Send + 'static,
    output: impl Write + Send + 'static,
) -> Result<AcpAttachEnd, SessionError> {
    let (conn, view) = HostConn::events(socket)?;
    let printer = Arc::new(Mutex::new((Printer::default(), output)));
    print_history(&printer, &view, name);
    let clone = || {
        conn.stream
            .try_clone()
            .map_err(|e| SessionError::Host(format!("cloning the socket: {e}")))
    };
    let mut writer = clone()?;
    let events = print_events(printer.clone(), clone()?);
    let pending_now = || lock_printer(&printer).0.pending.clone();
    let lines_rx = read_lines(input);
    let mut ended = AcpAttachEnd::Detached;
    loop {
        let line = match lines_rx.recv_timeout(std::time::Duration::from_millis(100)) {
            Ok(line) => line,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if events.is_finished() {
                    break;
                }
                continue;
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
        };
        if events.is_finished() {
            break;
        }
        if line.trim().is_empty() {
            continue;
        }
        let Some(request) = request_for(&line, pending_now) else {
            break;
        };
        if writer.write_all(&request).is_err() {
            ended = AcpAttachEnd::HostGone;
            break;
        }
    }
    if events.is_finished() {
        let _ = conn.stream.shutdown(std::net::Shutdown::Both);
        return Ok(events.join().unwrap_or(AcpAttachEnd::HostGone));
    }
    let _ = writer.write_all(&proto::encode(FrameKind::Detach, b""));
    let _ = conn.stream.shutdown(std::net::Shutdown::Both);
    let _ = events.join();
    Ok(ended)
}

/// The transcript so far, what can be typed, and whose turn it is.
fn print_history<W: Write>(printer: &Shared<W>, view: &TranscriptView, name: &str) {
    let mut guard = lock_printer(printer);
    let (p, out) = &mut *guard;
    if view.dropped > 0 {
        p.line(out, &format!("({} earlier entries not kept)", view.dropped));
    }
    for l in transcript::render(&view.entries) {
        p.line(out, &l);
    }
    p.pending = view.pending.clone();
    p.line(
        out,
        &format!(
            "-- attached to {name} (ACP): type a prompt and Enter; /approve [N], /deny, /cancel; /detach or Ctrl-D to leave --"
        ),
    );
    if view.pending.is_none() && !view.turn_running {
        p.line(out, "(your turn)");
    }
}

/// The thread that prints the host's events until the agent exits or the
/// host is gone; it returns how the attach ended.
fn print_events<W: Write + Send + 'static>(
    printer: Shared<W>,
    reader_stream: std::os::unix::net::UnixStream,
) -> std::thread::JoinHandle<AcpAttachEnd> {
    std::thread::spawn(move || {
        let mut reader = std::io::BufReader::new(reader_stream);
        loop {
            let frame = match proto::read_frame(&mut reader) {
                Ok(Some(frame)) => frame,
                Ok(None) | Err(_) => return AcpAttachEnd::HostGone,
            };
            let mut guard = lock_printer(&printer);
            let (p, out) = &mut *guard;
            match frame.kind {
                FrameKind::Event => {
                    if let Ok(event) = frame.json::<AcpEvent>() {
                        p.event(out, &event);
                    }
                }
                FrameKind::Exited => {
                    let exit = frame.json::<AgentExit>().unwrap_or(AgentExit {
                        code: None,
                        signal: None,
                    });
                    return AcpAttachEnd::Exited(exit);
                }
                FrameKind::Answered => {
                    if let Ok(a) = frame.json::<PermissionAnswered>() {
                        tracing::debug!("answered: {}", a.name);
                    }
                }
                FrameKind::Error => {
                    let message = frame
                        .json::<HostError>()
                        .map(|e| e.message)
                        .unwrap_or_default();
                    p.line(out, &format!("error: {}", crate::printable::line(&message)));
                    let _ = out.flush();
                }
                _ => {}
            }
        }
    })
}

/// Lines come from their own thread, so an agent that exits while the
/// user types nothing ends the attach at once.
fn read_lines(input: impl BufRead + Send + 'static) -> std::sync::mpsc::Receiver<String> {
    let (lines_tx, lines_rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in input.lines() {
            let Ok(line) = line else { break };
            if lines_tx.send(line).is_err() {
                break;
            }
        }
    });
    lines_rx
}

/// The frame a typed line asks for (`None`: `/detach`); `pending_now` is
/// the permission request waiting now.
fn request_for(line: &str, pending_now: impl Fn() -> Option<PendingPermission>) -> Option<Vec<u8>> {
    let text = line.trim();
    Some(if text == "/detach" {
        return None;
    } else if text == "/cancel" {
        proto::encode(FrameKind::Cancel, b"")
    } else if text == "/deny" {
        answer_frame(None, true, pending_now().map(|p| p.id))
    } else if let Some(rest) = text.strip_prefix("/approve") {
        let option = Some(rest.trim().to_string()).filter(|o| !o.is_empty());
        answer_frame(option, false, pending_now().map(|p| p.id))
    } else if pending_now().is_some() && text.parse::<usize>().is_ok() {
        answer_frame(Some(text.to_string()), false, pending_now().map(|p| p.id))
    } else {
        proto::encode_json(
            FrameKind::Send,
            &SendText {
                text: line.to_string(),
                enter: true,
            },
        )
    })
}

fn answer_frame(option: Option<String>, deny: bool, id: Option<u64>) -> Vec<u8> {
    proto::encode_json(FrameKind::Answer, &PermissionAnswer { option, deny, id })
}

#[cfg(test)]
mod tests {
    use owt_protocol::host::PermissionOption;
    use serde_json::json;

    use super::*;

    fn printed(events: &[AcpEvent]) -> String {
        let mut printer = Printer::default();
        let mut out = Vec::new();
        for event in events {
            printer.event(&mut out, event);
        }
        String::from_utf8(out).unwrap()
    }

    fn update(value: serde_json::Value) -> AcpEvent {
        AcpEvent::Update { update: value }
    }

    /// What `owt attach` prints for a turn: the streamed reply, a tool
    /// call's start and end (not its steps in between), the permission
    /// asked and answered, and whose turn it is.
    #[test]
    fn a_turn_prints_its_reply_tools_permission_and_end() {
        let pending = PendingPermission {
            id: 1,
            question: "Write a.txt".into(),
            tool_kind: Some("edit".into()),
            paths: vec!["a.txt".into()],
            options: vec![PermissionOption {
                id: "allow".into(),
                name: "Allow".into(),
                kind: "allow_once".into(),
            }],
        };
        let text = printed(&[
            AcpEvent::Prompt {
                text: "make a.txt".into(),
            },
            update(
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "On "}}),
            ),
            update(
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "it."}}),
            ),
            update(
                json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Write a.txt", "kind": "edit", "status": "pending"}),
            ),
            update(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "in_progress"}),
            ),
            AcpEvent::Permission {
                pending: pending.clone(),
                tool_call: json!({}),
                options: json!([]),
            },
            AcpEvent::Answered {
                id: 1,
                option_id: Some("allow".into()),
            },
            update(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"}),
            ),
            AcpEvent::TurnEnded {
                stop_reason: "end_turn".into(),
                usage: None,
            },
        ]);
        let expected = {
            let mut lines = Vec::new();
            transcript::render_entry(
                &TranscriptEntry::User {
                    text: "make a.txt".into(),
                },
                &mut lines,
            );
            lines.retain(|l| !l.is_empty());
            lines.push("On it.".into());
            let tool = |status: &str| TranscriptEntry::Tool {
                id: "t1".into(),
                title: "Write a.txt".into(),
                kind: Some("edit".into()),
                status: Some(status.into()),
                paths: Vec::new(),
            };
            transcript::render_entry(&tool("pending"), &mut lines);
            let mut asked = Vec::new();
            transcript::render_entry(
                &TranscriptEntry::Permission {
                    question: pending.question.clone(),
                    options: pending.options.clone(),
                    answer: None,
                },
                &mut asked,
            );
            asked.pop();
            lines.extend(asked);
            lines.push("  answer: a number (or /approve N), /deny".into());
            lines.push("  → Allow".into());
            transcript::render_entry(&tool("completed"), &mut lines);
            lines.push("(your turn)".into());
            lines.join("\n") + "\n"
        };
        assert_eq!(text, expected);
    }

    /// A typed line is a prompt unless it is one of the attach's commands;
    /// a bare number answers only while a question waits.
    #[test]
    fn typed_lines_become_the_frames_they_ask_for() {
        let waiting = || {
            Some(PendingPermission {
                id: 7,
                question: "q".into(),
                tool_kind: None,
                paths: Vec::new(),
                options: Vec::new(),
            })
        };
        let nothing = || None;
        let answer = |option: Option<&str>, deny, id| {
            Some(answer_frame(option.map(str::to_string), deny, id))
        };
        let send = |text: &str| {
            Some(proto::encode_json(
                FrameKind::Send,
                &SendText {
                    text: text.into(),
                    enter: true,
                },
            ))
        };
        assert_eq!(request_for(" /detach ", waiting), None);
        assert_eq!(
            request_for("/cancel", waiting),
            Some(proto::encode(FrameKind::Cancel, b""))
        );
        assert_eq!(request_for("/deny", waiting), answer(None, true, Some(7)));
        assert_eq!(
            request_for("/approve 2", waiting),
            answer(Some("2"), false, Some(7))
        );
        assert_eq!(request_for("/approve", nothing), answer(None, false, None));
        assert_eq!(request_for("2", waiting), answer(Some("2"), false, Some(7)));
        assert_eq!(request_for("2", nothing), send("2"));
        assert_eq!(request_for("  fix it ", nothing), send("  fix it "));
    }
}
