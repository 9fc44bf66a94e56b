//! `owt cleanup`: list sessions that are stale (exited, or idle for longer
//! than N days) and, with `force`, remove them — never one that holds
//! uncommitted work.

use owt_protocol::{CleanupOutput, StaleSession, Status};

use super::Context;
use crate::status::SessionFacts;
use crate::store::now_ms;

const DAY_MS: f64 = 86_400_000.0;

pub fn cleanup(
    ctx: &mut Context,
    days: Option<u32>,
    force: bool,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<CleanupOutput> {
    let days = days.unwrap_or(ctx.config.config.worktree.auto_cleanup_days);
    let now = now_ms();
    let mut out = CleanupOutput {
        days,
        stale: Vec::new(),
        removed: Vec::new(),
        kept: Vec::new(),
    };
    for view in super::list::session_views(ctx)? {
        // A finished headless run (`done` with an exit code) is as
        // finished as an exited one.
        let finished = view.status == Status::Done && view.exit_code.is_some();
        if !finished
            && !matches!(
                view.status,
                Status::Exited | Status::Idle | Status::Starting
            )
        {
            continue;
        }
        let row = ctx.session(&view.name)?;
        let facts = SessionFacts::from_rows(row.created_at, &ctx.store.facts(row.id)?);
        let last_activity = [
            Some(row.created_at),
            facts.last_output_at,
            facts.last_input_at,
            facts.exit.as_ref().map(|(_, at)| *at),
        ]
        .into_iter()
        .flatten()
        .max()
        .unwrap_or(row.created_at);
        let idle_days = (now - last_activity) as f64 / DAY_MS;
        if idle_days < f64::from(days) {
            continue;
        }
        out.stale.push(StaleSession {
            name: view.name.clone(),
            status_text: view.status_text.clone(),
            idle_days: (idle_days * 100.0).round() / 100.0,
        });
        if force {
            match super::delete::delete_session(ctx, &view.name, false, "cleaned-up", progress) {
                Ok(_) => out.removed.push(view.name),
                Err(e) => out.kept.push((view.name, format!("{e:#}"))),
            }
        }
    }
    Ok(out)
}
