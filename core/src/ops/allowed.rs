//! The one check every verb that has a board action goes through before it
//! acts (ship, merge, delete, attach, send, peek, approve, deny): the
//! session's view as the board shows it (for ship, merge and delete with
//! its git facts read afresh), asked of [`crate::actions::refusal`]. So a
//! verb does exactly what the board's `actions` say it can, and refuses
//! with the board's own reason.
//!
//! An interrupted ship or merge (its journal in the store) is let through:
//! running the same command again completes it.

use owt_protocol::{SessionAction, SessionView};

use super::Context;
use crate::actions::{self, Refusal};
use crate::status::GitFact;
use crate::store::SessionRow;

/// Refuses `action` on `row` unless the board allows it now; `overridden`:
/// the verb's override flag was given, which lets it through when only
/// the agent being at work stands in the way (the verb then stops it).
pub fn check(
    ctx: &Context,
    row: &SessionRow,
    action: SessionAction,
    overridden: bool,
) -> anyhow::Result<()> {
    if ctx
        .store
        .fact::<super::facts::Journal>(row.id, super::facts::JOURNAL)?
        .is_some()
    {
        return Ok(());
    }
    let view = if changes_work(action) {
        fresh_view(ctx, row)?
    } else {
        // Its status is what matters, not its commits: no git read.
        super::list::session_view_now(ctx, row)?
    };
    Ok(decide(&view, action, overridden)?)
}

/// [`check`] for `owt approve` (`deny`: `owt deny`). A terminal agent's
/// dialog is read from its screen by its host at the moment it is
/// answered, which is newer than the status the board derived from it (a
/// dialog drawn a moment ago may still read `working`): such a session is
/// refused here only when its agent or host is gone, as the board says,
/// and otherwise by its host when no dialog is on the screen.
pub fn check_answer(ctx: &Context, row: &SessionRow, deny: bool) -> anyhow::Result<()> {
    let view = super::list::session_view_now(ctx, row)?;
    let action = if deny {
        SessionAction::Deny
    } else {
        SessionAction::Approve
    };
    if screen_decides(&view) {
        return Ok(());
    }
    Ok(decide(&view, action, false)?)
}

/// Whether a permission answer to `view` is decided by its host reading the
/// screen (a terminal agent whose agent and host are there) rather than by
/// the board's status.
pub fn screen_decides(view: &SessionView) -> bool {
    use owt_protocol::{host::Transport, Status};
    let gone = view.host_lost
        || matches!(
            view.status,
            Status::Queued | Status::Exited | Status::Unreachable
        );
    view.transport == Transport::Pty && !gone
}

/// The decision of [`check`] on the session's view (pure): the board's
/// [`actions::refusal`], let through by the override when only the agent
/// being at work stands in the way.
pub fn decide(view: &SessionView, action: SessionAction, overridden: bool) -> Result<(), Refused> {
    match actions::refusal(view, action) {
        None => Ok(()),
        Some(refusal) if refusal.overridable && overridden => Ok(()),
        Some(refusal) => Err(refused(view, action, &refusal)),
    }
}

/// A verb refused by [`check`]: what was not done and why (`message`), and
/// how to do it anyway (`hint`, when a flag does).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Refused {
    pub message: String,
    pub hint: Option<String>,
}

/// Whether `action` acts on the session's work (its commits and files), so
/// that its git facts are read afresh before it is decided.
fn changes_work(action: SessionAction) -> bool {
    matches!(
        action,
        SessionAction::Ship | SessionAction::Merge | SessionAction::Delete
    )
}

/// The board's view of `row` as a listing makes it (reconciled, its
/// conflicts looked at again), with its commits ahead and changed files
/// read from its checkout now (a host's record may be older than the
/// agent's last write).
fn fresh_view(ctx: &Context, row: &SessionRow) -> anyhow::Result<SessionView> {
    let listed = super::list::session_view(ctx, row)?;
    if row.remote().is_some() || !row.worktree_path.is_dir() {
        return Ok(listed);
    }
    match crate::guard::counts::counts(&row.worktree_path, &row.base_branch, None) {
        Ok(read) if (read.ahead, read.changed_files) != (listed.ahead, listed.changed_files) => {
            let git = GitFact {
                ahead: read.ahead,
                changed_files: read.changed_files,
            };
            super::list::record_git_fact(&ctx.store, row.id, &git)?;
            super::list::session_view_newer_git(ctx, &row.name, &git)
        }
        Ok(_) => Ok(listed),
        Err(e) => {
            tracing::warn!(session = %row.name, "reading the git facts failed: {e:#}");
            Ok(listed)
        }
    }
}

/// The refusal: what was not done, why, that nothing changed, and the flag
/// that does it anyway when there is one.
pub fn refused(view: &SessionView, action: SessionAction, refusal: &Refusal) -> Refused {
    let name = &view.name;
    let verb = match action {
        SessionAction::Ship => "shipping",
        SessionAction::Merge => "merging",
        SessionAction::Delete => "deleting",
        SessionAction::Attach => "attaching to",
        SessionAction::Send => "typing into",
        SessionAction::Resume => "resuming",
        SessionAction::Peek => "showing the screen of",
        SessionAction::Approve => "approving for",
        SessionAction::Deny => "denying for",
        SessionAction::Conflicts => "opening the conflicts of",
    };
    // A verb that only looks or types changes nothing when refused
    // anyway; the ones that act on the work say so.
    let nothing = if changes_work(action) {
        "; nothing was changed"
    } else {
        ""
    };
    let message = format!("not {verb} `{name}`: {}{nothing}", refusal.reason);
    let hint = refusal.overridable.then(|| match action {
            SessionAction::Ship => format!(
                "wait for its turn to end (`owt peek {name}`), or run `owt ship {name} --now` to stop the agent and ship what its worktree holds now (half-written files included)"
            ),
            SessionAction::Merge => format!(
                "wait for its turn to end (`owt peek {name}`), or run `owt merge {name} --now` to merge its commits now (the agent is stopped unless --keep; uncommitted work is left out)"
            ),
            _ => format!(
                "wait for its turn to end (`owt peek {name}`), or run `owt delete {name} --force` to stop the agent and delete the session (uncommitted work goes to the trash)"
            ),
    });
    Refused { message, hint }
}

#[cfg(test)]
mod tests;
