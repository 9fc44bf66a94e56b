//! `owt delete`: stop the agent, remove the worktree, delete the branch —
//! refusing to drop uncommitted work without `force`, and keeping a backup
//! ref of unmerged commits.

use anyhow::{bail, Context as _};
use owt_protocol::DeleteOutput;

use super::new::{BranchFact, BRANCH_FACT};
use super::Context;
use crate::{git, session};

/// Deletes the session `name`.
pub fn delete_session(
    ctx: &mut Context,
    name: &str,
    force: bool,
    how: &str,
    progress: &mut dyn FnMut(&str),
) -> anyhow::Result<DeleteOutput> {
    let row = ctx.session(name)?;
    let _span = tracing::info_span!("session", session = %row.name).entered();
    tracing::info!(worktree = %row.worktree_path.display(), "deleting the session");
    let worktree_exists = row.worktree_path.exists();
    if worktree_exists && !force {
        let dirt = git::dirt(&row.worktree_path).with_context(|| {
            format!(
                "checking {} for uncommitted work",
                row.worktree_path.display()
            )
        })?;
        if !dirt.is_clean() {
            bail!(
                "session `{name}` has uncommitted work in {} ({} file{}: {}); commit it, or delete anyway with `owt delete {name} --force`",
                row.worktree_path.display(),
                dirt.len(),
                if dirt.len() == 1 { "" } else { "s" },
                dirt.summary()
            );
        }
    }
    progress(&format!("Stopping the agent of {name}"));
    session::stop(&ctx.home, &row).with_context(|| format!("stopping the agent of {name}"))?;
    // The agent's last records (some live in the worktree) before it goes;
    // the tokens stay in the store for `owt usage`.
    let places = ctx.usage_places();
    crate::usage::refresh_all(&ctx.store, &places, std::slice::from_ref(&row));

    let mut worktree_removed = false;
    if row.kind == "worktree" && worktree_exists {
        progress(&format!(
            "Removing worktree {}",
            row.worktree_path.display()
        ));
        ctx.repo
            .remove_worktree(&row.worktree_path)
            .with_context(|| format!("removing worktree {}", row.worktree_path.display()))?;
        worktree_removed = true;
    } else if row.kind == "worktree" {
        // Folder already gone: forget git's entry for it.
        if ctx.repo.worktree_admin_exists(&row.name) {
            let _ = ctx.repo.prune_worktree(&row.name);
        }
    }

    if row.kind == "branch" && worktree_exists {
        // The session's branch is checked out in the human's checkout: put
        // it back on the base (uncommitted changes come along, or git
        // refuses and nothing is deleted).
        let git = crate::ship::git_cli::GitCli::new(&row.worktree_path);
        let current = git
            .run(["symbolic-ref", "--quiet", "--short", "HEAD"])
            .unwrap_or_default();
        if current.trim() == row.branch {
            progress(&format!(
                "Switching your checkout back to {}",
                row.base_branch
            ));
            git.run(["switch", "--quiet", &row.base_branch])
                .with_context(|| format!("switching your checkout back to {}", row.base_branch))?;
        }
    }
    let created = ctx
        .store
        .fact::<BranchFact>(row.id, BRANCH_FACT)?
        .is_none_or(|(f, _)| f.created);
    let mut branch_deleted = false;
    let mut backup_ref = None;
    if created
        && ctx.repo.branch_exists(&row.branch)
        && ctx.repo.checked_out_at(&row.branch)?.is_none()
    {
        backup_ref = ctx
            .repo
            .delete_branch(&row.branch, &row.base_branch, &row.name)
            .with_context(|| format!("deleting branch {}", row.branch))?;
        branch_deleted = true;
    }
    ctx.store.remove_session(&row, how)?;
    crate::usage::forget(&places, &row);
    Ok(DeleteOutput {
        name: row.name,
        worktree_removed,
        branch_deleted,
        backup_ref,
    })
}
