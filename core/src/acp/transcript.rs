//! An ACP session's transcript: the conversation as entries (prompts,
//! replies, thoughts, tool calls with their paths, the plan, permission
//! questions and their answers, turn ends), built from the protocol's
//! updates, bounded, and rendered as text for `owt attach` and `owt peek`.
//!
//! Pure: no I/O. Invariants: chunks of one message join one entry; a tool
//! call update changes the entry of its id; the transcript keeps at most
//! [`MAX_ENTRIES`] entries of at most [`MAX_TEXT`] bytes each (the oldest
//! go first, counted in `dropped`); rendering escapes control characters.

use std::collections::VecDeque;

use owt_protocol::host::{PendingPermission, TranscriptEntry, TranscriptView};
use serde_json::{json, Value};

use super::schema::{ToolCall, Update};

/// Entries kept.
pub const MAX_ENTRIES: usize = 2_000;
/// Bytes kept of one entry's text (the end is cut, at a char boundary).
pub const MAX_TEXT: usize = 64 * 1024;

#[derive(Debug, Clone, Default)]
pub struct Transcript {
    entries: VecDeque<TranscriptEntry>,
    dropped: u64,
}

fn push_text(text: &mut String, more: &str) {
    if text.len() >= MAX_TEXT {
        return;
    }
    let room = MAX_TEXT - text.len();
    if more.len() <= room {
        text.push_str(more);
    } else {
        let mut end = room;
        while !more.is_char_boundary(end) {
            end -= 1;
        }
        text.push_str(&more[..end]);
        text.push('…');
    }
}

impl Transcript {
    pub fn new() -> Transcript {
        Transcript::default()
    }

    pub fn entries(&self) -> impl Iterator<Item = &TranscriptEntry> {
        self.entries.iter()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    fn push(&mut self, entry: TranscriptEntry) {
        if self.entries.len() >= MAX_ENTRIES {
            self.entries.pop_front();
            self.dropped += 1;
        }
        self.entries.push_back(entry);
    }

    /// Appends to the last entry if it is the same kind of message, else
    /// starts one.
    fn chunk(&mut self, text: &str, make: fn(String) -> TranscriptEntry) {
        let probe = make(String::new());
        if let Some(last) = self.entries.back_mut() {
            let same = std::mem::discriminant(last) == std::mem::discriminant(&probe);
            if same {
                if let TranscriptEntry::User { text: t }
                | TranscriptEntry::Agent { text: t }
                | TranscriptEntry::Thought { text: t } = last
                {
                    push_text(t, text);
                    return;
                }
            }
        }
        if text.is_empty() {
            return;
        }
        let mut t = String::new();
        push_text(&mut t, text);
        self.push(make(t));
    }

    /// A prompt sent to the agent (owt's own record of it: agents do not
    /// all echo the prompt back as `user_message_chunk`).
    pub fn user(&mut self, text: &str) {
        let mut t = String::new();
        push_text(&mut t, text);
        self.push(TranscriptEntry::User { text: t });
    }

    pub fn note(&mut self, text: &str) {
        self.push(TranscriptEntry::Note {
            text: text.to_string(),
        });
    }

    pub fn turn_ended(&mut self, stop_reason: &str) {
        self.push(TranscriptEntry::TurnEnded {
            stop_reason: stop_reason.to_string(),
        });
    }

    pub fn permission(&mut self, p: &PendingPermission) {
        self.push(TranscriptEntry::Permission {
            question: p.question.clone(),
            options: p.options.clone(),
            answer: None,
        });
    }

    /// Records the answer of the latest unanswered question.
    pub fn answered(&mut self, answer: &str) {
        for entry in self.entries.iter_mut().rev() {
            if let TranscriptEntry::Permission { answer: a, .. } = entry {
                if a.is_none() {
                    *a = Some(answer.to_string());
                }
                return;
            }
        }
    }

    /// Applies one update. Echoed user chunks are dropped when the prompt
    /// is already recorded (`echo_expected`): they repeat it.
    pub fn apply(&mut self, update: &Update, echo_expected: bool) {
        match update {
            Update::UserChunk(text) if !echo_expected => {
                self.chunk(text, |text| TranscriptEntry::User { text })
            }
            Update::UserChunk(_) => {}
            Update::AgentChunk(text) => self.chunk(text, |text| TranscriptEntry::Agent { text }),
            Update::ThoughtChunk(text) => {
                self.chunk(text, |text| TranscriptEntry::Thought { text })
            }
            Update::Tool(call) => self.tool(call),
            Update::Plan(entries) => {
                if let Some(TranscriptEntry::Plan { entries: e }) = self.entries.back_mut() {
                    *e = entries.clone();
                } else {
                    self.push(TranscriptEntry::Plan {
                        entries: entries.clone(),
                    });
                }
            }
            Update::Usage { .. } | Update::Known(_) | Update::Unknown(_) => {}
        }
    }

    fn tool(&mut self, call: &ToolCall) {
        let existing = self.entries.iter_mut().rev().find_map(|e| match e {
            TranscriptEntry::Tool {
                id,
                title,
                kind,
                status,
                paths,
            } if *id == call.id => Some((title, kind, status, paths)),
            _ => None,
        });
        match existing {
            Some((title, kind, status, paths)) => {
                if let Some(t) = &call.title {
                    *title = t.clone();
                }
                if call.kind.is_some() {
                    kind.clone_from(&call.kind);
                }
                if call.status.is_some() {
                    status.clone_from(&call.status);
                }
                if let Some(p) = call.paths.as_ref().filter(|p| !p.is_empty()) {
                    *paths = p.clone();
                }
            }
            None => self.push(TranscriptEntry::Tool {
                id: call.id.clone(),
                title: call.title.clone().unwrap_or_else(|| "tool call".into()),
                kind: call.kind.clone(),
                status: call.status.clone(),
                paths: call.paths.clone().unwrap_or_default(),
            }),
        }
    }

    pub fn view(&self) -> TranscriptView {
        TranscriptView {
            entries: self.entries.iter().cloned().collect(),
            dropped: self.dropped,
            ..TranscriptView::default()
        }
    }
}

/// The transcript as lines of text for a person: prompts after `> `, the
/// agent's text as it is, tool calls, plans, questions with numbered
/// options. Control characters are escaped.
pub fn render(entries: &[TranscriptEntry]) -> Vec<String> {
    let mut out = Vec::new();
    for entry in entries {
        render_entry(entry, &mut out);
    }
    out
}

/// One entry's lines.
pub fn render_entry(entry: &TranscriptEntry, out: &mut Vec<String>) {
    fn clean(s: &str) -> std::borrow::Cow<'_, str> {
        crate::printable::line(s)
    }
    let lines = |text: &str, first: &str, rest: &str, out: &mut Vec<String>| {
        for (i, line) in text.trim_end().lines().enumerate() {
            out.push(format!(
                "{}{}",
                if i == 0 { first } else { rest },
                clean(line)
            ));
        }
    };
    match entry {
        TranscriptEntry::User { text } => {
            out.push(String::new());
            lines(text, "> ", "  ", out);
        }
        TranscriptEntry::Agent { text } => lines(text, "", "", out),
        TranscriptEntry::Thought { text } => lines(text, "(thinking) ", "(thinking) ", out),
        TranscriptEntry::Tool {
            title,
            kind,
            status,
            paths,
            ..
        } => {
            let mut line = format!("[{}] {}", kind.as_deref().unwrap_or("tool"), clean(title));
            let shown: Vec<String> = paths
                .iter()
                .filter(|p| !title.contains(p.as_str()))
                .map(|p| clean(p).into_owned())
                .collect();
            if !shown.is_empty() {
                line.push_str(&format!(" ({})", shown.join(", ")));
            }
            if let Some(s) = status {
                line.push_str(&format!(" — {}", clean(s)));
            }
            out.push(line);
        }
        TranscriptEntry::Plan { entries } => {
            out.push("Plan:".into());
            for e in entries {
                let mark = match e.status.as_str() {
                    "completed" => "[x]",
                    "in_progress" => "[>]",
                    _ => "[ ]",
                };
                out.push(format!("  {mark} {}", clean(&e.content)));
            }
        }
        TranscriptEntry::Permission {
            question,
            options,
            answer,
        } => {
            out.push(format!("Permission: {}", clean(question)));
            let listed: Vec<String> = options
                .iter()
                .enumerate()
                .map(|(i, o)| format!("{}) {}", i + 1, clean(&o.name)))
                .collect();
            out.push(format!("  {}", listed.join("   ")));
            match answer {
                Some(a) => out.push(format!("  → {}", clean(a))),
                None => out.push("  (waiting: owt approve NAME [N] / owt deny NAME)".into()),
            }
        }
        TranscriptEntry::TurnEnded { stop_reason } => {
            if stop_reason != "end_turn" {
                out.push(format!("(turn ended: {})", clean(stop_reason)));
            }
        }
        TranscriptEntry::Note { text } => lines(text, "owt: ", "     ", out),
    }
}

/// The updates that replay `entries` to an ACP client (`session/load`):
/// messages as chunks, tool calls with their last state, the plan.
pub fn replay_updates(entries: &[TranscriptEntry]) -> Vec<Value> {
    let text = |kind: &str, t: &str| json!({"sessionUpdate": kind, "content": {"type": "text", "text": t}});
    let mut out = Vec::new();
    for entry in entries {
        match entry {
            TranscriptEntry::User { text: t } => out.push(text("user_message_chunk", t)),
            TranscriptEntry::Agent { text: t } => out.push(text("agent_message_chunk", t)),
            TranscriptEntry::Thought { text: t } => out.push(text("agent_thought_chunk", t)),
            TranscriptEntry::Note { text: t } => {
                out.push(text("agent_message_chunk", &format!("\n[owt] {t}\n")))
            }
            TranscriptEntry::Tool {
                id,
                title,
                kind,
                status,
                paths,
            } => out.push(json!({
                "sessionUpdate": "tool_call",
                "toolCallId": id,
                "title": title,
                "kind": kind.as_deref().unwrap_or("other"),
                "status": status.as_deref().unwrap_or("completed"),
                "locations": paths.iter().map(|p| json!({"path": p})).collect::<Vec<_>>(),
            })),
            TranscriptEntry::Plan { entries } => out.push(json!({
                "sessionUpdate": "plan",
                "entries": entries.iter().map(|e| json!({"content": e.content, "status": e.status, "priority": "medium"})).collect::<Vec<_>>(),
            })),
            TranscriptEntry::Permission { .. } | TranscriptEntry::TurnEnded { .. } => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::acp::schema::read_update;
    use expect_test::expect;
    use owt_protocol::host::PermissionOption;

    #[test]
    fn a_turn_reads_as_a_conversation() {
        let mut t = Transcript::new();
        t.user("Create hello.txt");
        for u in [
            json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "Create hello.txt"}}),
            json!({"sessionUpdate": "plan", "entries": [{"content": "Write the file", "status": "in_progress"}]}),
            json!({"sessionUpdate": "plan", "entries": [{"content": "Write the file", "status": "completed"}]}),
            json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Write", "kind": "edit", "status": "pending", "locations": []}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "title": "Write hello.txt", "locations": [{"path": "hello.txt"}]}),
        ] {
            t.apply(&read_update(&u), true);
        }
        t.permission(&PendingPermission {
            id: 1,
            question: "Write hello.txt".into(),
            tool_kind: Some("edit".into()),
            paths: vec!["hello.txt".into()],
            options: vec![
                PermissionOption {
                    id: "allow".into(),
                    name: "Allow".into(),
                    kind: "allow_once".into(),
                },
                PermissionOption {
                    id: "reject".into(),
                    name: "Reject".into(),
                    kind: "reject_once".into(),
                },
            ],
        });
        t.answered("Allow");
        for u in [
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "I w"}}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "rote it.\u{1b}[2J"}}),
            json!({"sessionUpdate": "something_new", "x": 1}),
        ] {
            t.apply(&read_update(&u), true);
        }
        t.turn_ended("end_turn");
        t.user("Now stop");
        t.turn_ended("cancelled");
        expect![[r#"

            > Create hello.txt
            Plan:
              [x] Write the file
            [edit] Write hello.txt — completed
            Permission: Write hello.txt
              1) Allow   2) Reject
              → Allow
            I wrote it.\x1b[2J

            > Now stop
            (turn ended: cancelled)"#]]
        .assert_eq(&render(&t.view().entries).join("\n"));
    }

    #[test]
    fn the_transcript_stays_bounded() {
        let mut t = Transcript::new();
        for i in 0..MAX_ENTRIES + 5 {
            t.note(&format!("note {i}"));
        }
        let view = t.view();
        assert_eq!(view.entries.len(), MAX_ENTRIES);
        assert_eq!(view.dropped, 5);
        let mut t = Transcript::new();
        let big = "é".repeat(MAX_TEXT);
        t.apply(&Update::AgentChunk(big.clone()), false);
        t.apply(&Update::AgentChunk(big), false);
        let TranscriptEntry::Agent { text } = &t.view().entries[0] else {
            panic!()
        };
        assert!(text.len() <= MAX_TEXT + '…'.len_utf8());
    }
}
