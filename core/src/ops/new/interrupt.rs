//! An interrupted `owt new` undone: what was made removed (the flag and
//! the starter fact are `ops::interrupt`'s and `ops::facts`').

use crate::ops::Context;
use crate::store::SessionRow;

/// Undoes an interrupted `owt new` once its worktree exists: the session is
/// deleted as `owt delete --force` would (what git does not keep goes to
/// the trash). The error to return either way.
pub(super) fn abandon(
    ctx: &mut Context,
    session: &SessionRow,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Error {
    let name = &session.name;
    progress(&format!("Interrupted: removing {name}"));
    match crate::ops::delete::delete_session(ctx, name, true, "interrupted", progress) {
        Ok(_) => anyhow::anyhow!(
            "interrupted: session `{name}` was not created (its worktree and branch are removed)"
        ),
        Err(e) => anyhow::anyhow!(
            "interrupted: session `{name}` is left half made ({e:#}); remove it with `owt delete {name} --force`, or let `owt doctor --fix` do it"
        ),
    }
}
