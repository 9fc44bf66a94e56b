//! The session's name reserved in the store, and its worktree placed (or
//! the main checkout switched, for a branch session).

use anyhow::{bail, Context as _};
use owt_protocol::SessionKind;

use super::{NewRequest, Plan};
use crate::names;
use crate::ops::Context;
use crate::store::{NewSession, SessionRow};

/// Reserves the session's name (and branch and worktree path) in the
/// store, atomically across processes.
pub(super) fn reserve(
    ctx: &mut Context,
    req: &NewRequest,
    plan: &Plan,
) -> anyhow::Result<SessionRow> {
    let slug = names::slugify(plan.wanted_name);
    let branch_template = match &plan.explicit_branch {
        Some(branch) => branch.clone(),
        None => names::default_branch("{name}"),
    };
    let (kind, worktree_template) = if req.in_place {
        if let Some(other) = ctx
            .store
            .sessions(ctx.repo_row.id)?
            .into_iter()
            .find(|s| s.kind == SessionKind::Branch)
        {
            bail!(
                "the main checkout already hosts the branch session `{}`; ship or delete it first, or start this one in a worktree (without --in-place)",
                other.name
            );
        }
        let main_root = ctx.repo.main_root().to_string_lossy().into_owned();
        (SessionKind::Branch, main_root)
    } else {
        let template = plan.base_dir.join("{name}").to_string_lossy().into_owned();
        (SessionKind::Worktree, template)
    };
    let (in_place, repo) = (req.in_place, &ctx.repo);
    Ok(ctx.store.insert_session(
        &NewSession {
            repo_id: ctx.repo_row.id,
            name: &slug,
            task: plan.task,
            branch_template: &branch_template,
            base_branch: &plan.base,
            worktree_template: &worktree_template,
            provider: &plan.resolved.provider.name,
            kind,
        },
        |candidate| {
            (!in_place
                && (names::worktree_path(&plan.base_dir, candidate).exists()
                    || repo.worktree_admin_exists(candidate)))
                || (plan.explicit_branch.is_none()
                    && repo.branch_exists(&names::default_branch(candidate)))
        },
    )?)
}

/// Creates the branch (at `start`: the base, or a forked session's
/// commit) and the worktree (or switches the main checkout, for a branch
/// session); whether it created the branch.
pub(super) fn place_worktree(
    ctx: &mut Context,
    session: &SessionRow,
    plan: &Plan,
    start: &str,
    in_place: bool,
    progress: &mut dyn FnMut(&str),
    warnings: &mut Vec<String>,
) -> anyhow::Result<bool> {
    let create_branch = !ctx.repo.branch_exists(&session.branch);
    if in_place {
        let main_root = ctx.repo.main_root().to_path_buf();
        progress(&format!(
            "Switching your checkout {} to branch {}",
            main_root.display(),
            session.branch
        ));
        switch_in_place(&main_root, &session.branch, &plan.base, create_branch)
            .with_context(|| format!("switching your checkout to {}", session.branch))?;
    } else {
        progress(&format!(
            "Creating worktree {} on branch {}",
            session.worktree_path.display(),
            session.branch
        ));
        ctx.repo
            .add_worktree(
                &session.name,
                &session.worktree_path,
                &session.branch,
                start,
                create_branch,
            )
            .with_context(|| format!("creating the worktree for {}", session.name))?;
        if let Err(e) = crate::ops::metadata::write_metadata(ctx, session) {
            warnings.push(format!(
                "could not record the session beside its worktree (owt doctor uses it to re-adopt a session the store lost): {e:#}"
            ));
        }
    }
    Ok(create_branch)
}

/// Puts the human's checkout on `branch` (created at `base` when
/// `create`), the way `git switch` does: uncommitted changes come along,
/// and git refuses (changing nothing) when they would be overwritten.
fn switch_in_place(
    main_root: &std::path::Path,
    branch: &str,
    base: &str,
    create: bool,
) -> anyhow::Result<()> {
    let git = crate::ship::git_cli::GitCli::new(main_root);
    let current = git
        .run(["symbolic-ref", "--quiet", "--short", "HEAD"])
        .unwrap_or_default();
    if current.trim() == branch {
        return Ok(());
    }
    if create {
        git.run(["switch", "--quiet", "-c", branch, base])?;
    } else {
        git.run(["switch", "--quiet", branch])?;
    }
    Ok(())
}
