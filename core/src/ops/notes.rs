//! `owt note`: shared context for every agent of a repository — stored,
//! typed into every live agent, and part of every new agent's first prompt.

use owt_protocol::{NotesOutput, Status};

use super::Context;
use crate::session;

/// Adds a note (when `text` is given) and types it into every live agent;
/// clears all notes first with `clear`.
pub fn note(ctx: &mut Context, text: Option<&str>, clear: bool) -> anyhow::Result<NotesOutput> {
    let mut out = NotesOutput {
        notes: Vec::new(),
        delivered_to: Vec::new(),
        not_delivered: Vec::new(),
        cleared: 0,
    };
    if clear {
        out.cleared = ctx.store.clear_notes(ctx.repo_row.id)?;
    }
    if let Some(text) = text.map(str::trim).filter(|t| !t.is_empty()) {
        ctx.store.add_note(ctx.repo_row.id, text)?;
        let message = format!("[owt note, shared with every agent] {text}");
        for view in super::list::session_views_with(ctx, false)? {
            // Not to agents that are gone (exited, or a headless run done).
            if view.status == Status::Exited || view.exit_code.is_some() {
                continue;
            }
            let row = ctx.session(&view.name)?;
            match session::send(&ctx.home, &row, &message, true) {
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
