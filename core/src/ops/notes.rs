//! `owt note`: shared context for every agent of a repository — stored,
//! given to every live agent without starting a turn of its own, and part
//! of every new agent's first prompt.
//!
//! A working agent gets the note typed at once (it reads it with its next
//! turn, as any message typed while it works); an idle or waiting one gets
//! it with its next prompt (`owt send` puts the pending notes first, the
//! `pending-notes` fact), unless `--now` types it in (never into a dialog).

use owt_protocol::{NotesOutput, Status};

use super::Context;
use crate::session;
use crate::store::SessionRow;

/// Fact: notes a live agent gets with its next prompt (a list of texts).
pub const PENDING_NOTES_FACT: &str = "pending-notes";

/// Adds a note (when `text` is given) and gives it to every live agent (see
/// the module doc; `now`: typed into idle ones too); clears all notes first
/// with `clear`.
pub fn note(
    ctx: &mut Context,
    text: Option<&str>,
    clear: bool,
    now: bool,
) -> anyhow::Result<NotesOutput> {
    let mut out = NotesOutput {
        notes: Vec::new(),
        delivered_to: Vec::new(),
        at_next_turn: Vec::new(),
        not_delivered: Vec::new(),
        cleared: 0,
    };
    if clear {
        out.cleared = ctx.store.clear_notes(ctx.repo_row.id)?;
    }
    if let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) {
        ctx.store.add_note(ctx.repo_row.id, text)?;
        for view in super::list::session_views_with(ctx, false)? {
            // Not to agents that are gone (exited, or a headless run done).
            if view.status == Status::Exited || view.exit_code.is_some() {
                continue;
            }
            let row = ctx.session(&view.name)?;
            let type_now = view.status == Status::Working
                || (now && view.status != Status::Blocked && view.permission.is_none());
            if !type_now {
                let mut pending = pending_notes(ctx, &row);
                pending.push(text.to_string());
                ctx.store
                    .record_fact(row.id, PENDING_NOTES_FACT, &pending)?;
                out.at_next_turn.push(view.name);
                continue;
            }
            match session::send(&ctx.home, &row, &note_message(text), true) {
                Ok(()) => out.delivered_to.push(view.name),
                Err(e) => out.not_delivered.push((view.name, e.to_string())),
            }
        }
    }
    out.notes = ctx
        .store
        .notes(ctx.repo_row.id)?
        .into_iter()
        .map(|n| n.text)
        .collect();
    Ok(out)
}

/// A note as an agent reads it.
fn note_message(text: &str) -> String {
    format!("[owt note, shared with every agent] {text}")
}

fn pending_notes(ctx: &Context, row: &SessionRow) -> Vec<String> {
    ctx.store
        .fact::<Vec<String>>(row.id, PENDING_NOTES_FACT)
        .ok()
        .flatten()
        .map(|(notes, _)| notes)
        .unwrap_or_default()
}

/// `prompt` with the notes `row`'s agent has not had yet put first (and
/// those marked had).
pub fn with_pending_notes(ctx: &Context, row: &SessionRow, prompt: &str) -> String {
    let pending = pending_notes(ctx, row);
    if pending.is_empty() {
        return prompt.to_string();
    }
    let _ = ctx.store.clear_fact(row.id, PENDING_NOTES_FACT);
    let mut out: Vec<String> = pending.iter().map(|n| note_message(n)).collect();
    out.push(prompt.to_string());
    out.join("\n\n")
}
