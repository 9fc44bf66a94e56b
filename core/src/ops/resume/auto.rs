//! `[agent] auto_resume = true`: the sessions of a repository whose host
//! died (a reboot, an OOM kill, `kill -9`) are resumed ([`super::resume`])
//! when owt next runs there (a CLI verb, `owt lsp` starting), within the
//! queue's limits (`max_running`, `min_free_memory`): beyond them they
//! stay as they are, resumable by hand.
//!
//! Invariants: only sessions whose host was lost (not agents that exited
//! on their own, not headless or remote ones); one process resumes a
//! session (the queue's start lease); never fails its caller.

use super::super::queue::{self, Limits, Machine};
use super::super::Context;
use crate::session::memory;
use crate::status::SessionFacts;

/// What [`auto_resume`] did with one session.
#[derive(Debug)]
pub struct AutoResumed {
    pub name: String,
    /// How it was resumed, or why it could not be.
    pub outcome: anyhow::Result<String>,
}

/// Resumes the sessions of `ctx`'s repository whose host died, if its
/// configuration says `[agent] auto_resume = true`, as many as there is
/// room for (oldest first; stops at the first that must wait).
pub fn auto_resume(ctx: &mut Context) -> Vec<AutoResumed> {
    let mut out = Vec::new();
    if !ctx.config.config.agent.auto_resume {
        return out;
    }
    let sessions = match ctx.store.sessions(ctx.repo_row.id) {
        Ok(sessions) => sessions,
        Err(e) => {
            tracing::warn!("auto_resume: listing the sessions: {e}");
            return out;
        }
    };
    let owner = format!("auto-resume pid {}", std::process::id());
    for session in sessions {
        if session.remote().is_some() || !host_lost(ctx, &session) {
            continue;
        }
        let machine = Machine {
            memory: memory::machine_memory(),
            running: queue::running_now(&ctx.store, &ctx.home),
        };
        let limits = Limits::of(&ctx.config.config, machine.memory.map_or(0, |m| m.total));
        let need = queue::estimate(&ctx.store, &session.provider);
        let room = match queue::room_for(&limits, &machine, need) {
            Ok(room) => room,
            Err(why) => {
                tracing::info!(session = %session.name, "not resumed: {why}");
                break;
            }
        };
        let max = limits.max_running;
        let taken =
            ctx.store
                .take_start_lease(session.id, &owner, queue::LEASE_MS, |running, starting| {
                    max.is_none_or(|max| running + starting < max) && starting < room
                });
        match taken {
            Ok(true) => {}
            // Another process resumes it, or the room went to others.
            Ok(false) => continue,
            Err(e) => {
                tracing::warn!(session = %session.name, "auto_resume: taking the lease: {e}");
                break;
            }
        }
        // Resumed by someone else since it was read: left alone.
        if !host_lost(ctx, &session) {
            let _ = ctx.store.release_start_lease(session.id, &owner);
            continue;
        }
        let outcome = super::resume(ctx, &session.name).map(|(_, how)| how);
        let _ = ctx.store.release_start_lease(session.id, &owner);
        if let Err(e) = &outcome {
            tracing::warn!(session = %session.name, "auto_resume: {e:#}");
        }
        out.push(AutoResumed {
            name: session.name.clone(),
            outcome,
        });
    }
    out
}

/// Whether `session`'s host is gone (reconciled first: a host that died
/// since it was last looked at is recorded so) and it can be resumed.
fn host_lost(ctx: &Context, session: &crate::store::SessionRow) -> bool {
    let _ = crate::session::reconcile(&ctx.store, &ctx.home, session);
    let Ok(rows) = ctx.store.facts(session.id) else {
        return false;
    };
    let facts = SessionFacts::from_rows(session.created_at, &rows);
    facts.host_lost_at.is_some() && super::resumable(&facts)
}
