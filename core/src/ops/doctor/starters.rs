//! Sessions whose maker is gone: an `owt new` killed (or interrupted and
//! unable to clean up) before it started or queued the agent leaves a
//! session that would read `starting` forever. Found by its
//! [`STARTER_FACT`] naming a process that no longer runs; `fix` deletes it
//! as `owt delete` would (refusing, as delete does, when its worktree holds
//! uncommitted work).

use owt_protocol::DoctorFinding;

use super::finding;
use crate::ops::facts::{StarterFact, STARTER_FACT};
use crate::ops::Context;
use crate::status::kind;

/// Sessions of this repository whose `owt new` died before starting their
/// agent: deleted with `fix`.
pub(super) fn starter_gone(ctx: &mut Context, fix: bool) -> anyhow::Result<Vec<DoctorFinding>> {
    let mut findings = Vec::new();
    for row in ctx.store.sessions(ctx.repo_row.id)? {
        let Some((starter, _)) = ctx.store.fact::<StarterFact>(row.id, STARTER_FACT)? else {
            continue;
        };
        let started = ctx.store.fact::<serde_json::Value>(row.id, kind::HOST)?;
        if started.is_some() || crate::session::pid_alive(starter.pid) {
            continue;
        }
        let mut f = finding(
            "starter-gone",
            format!(
                "session `{}` was being made by owt process {}, which is gone (an interrupted `owt new`): its agent never started",
                row.name, starter.pid
            ),
            Some(&row.worktree_path),
            Some(&row.name),
        );
        if fix {
            match crate::ops::delete::delete_session(ctx, &row.name, false, "doctor", &mut |_| {}) {
                Ok(_) => f.fixed = true,
                Err(e) => f.skipped_reason = Some(format!("{e:#}")),
            }
        }
        findings.push(f);
    }
    Ok(findings)
}
