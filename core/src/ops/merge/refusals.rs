//! What stops a merge before it changes anything: git's lock files in the
//! way, and a phase 1 that could not be undone exactly.

use anyhow::bail;

use crate::ops::Context;
use crate::ship;
use crate::store::SessionRow;

/// Refuses when one of git's lock files that a merge of `row` would need
/// exists: the repository's own (`HEAD.lock`, `index.lock`,
/// `packed-refs.lock`, …), the branch's and the base's ref locks, and
/// those of the session's worktree and of the base's checkout.
pub(super) fn refuse_git_locks(ctx: &Context, row: &SessionRow) -> anyhow::Result<()> {
    let common = ctx.repo.common_dir().to_path_buf();
    let mut admins = Vec::new();
    admins.extend(ctx.repo.admin_dir_of(&row.worktree_path));
    if let Some(checkout) = ctx.repo.checked_out_at(&row.base_branch)? {
        admins.extend(ctx.repo.admin_dir_of(&checkout));
    }
    let refs = [
        common.join(format!("refs/heads/{}.lock", row.base_branch)),
        common.join(format!("refs/heads/{}.lock", row.branch)),
    ];
    let in_the_way: Vec<_> = ctx
        .repo
        .lock_files()
        .into_iter()
        .filter(|lock| {
            let parent = lock.path.parent();
            parent == Some(common.as_path())
                || refs.contains(&lock.path)
                || admins.iter().any(|a| parent == Some(a.as_path()))
        })
        .collect();
    if in_the_way.is_empty() {
        return Ok(());
    }
    let oldest_git = crate::procs::oldest_git_start_ms(&repo_dirs(ctx));
    let stale = in_the_way
        .iter()
        .all(|lock| is_stale_lock(lock, oldest_git));
    let paths: Vec<String> = in_the_way
        .iter()
        .map(|l| l.path.display().to_string())
        .collect();
    bail!(
        "git's lock file{} {} {} in the way, so nothing was changed: {}",
        if paths.len() == 1 { "" } else { "s" },
        paths.join(", "),
        if paths.len() == 1 { "is" } else { "are" },
        if stale {
            "no git process runs that could hold it (a git was killed and left it behind); remove it with `owt doctor --fix`, then run the command again"
        } else {
            "a git process may be using it right now; wait for it to finish and run the command again (if none is running, `owt doctor --fix` removes stale locks)"
        }
    )
}

/// The folders a git process of this repository works in: the common dir,
/// the main checkout and every linked worktree.
pub fn repo_dirs(ctx: &Context) -> Vec<std::path::PathBuf> {
    let mut dirs = vec![
        ctx.repo.common_dir().to_path_buf(),
        ctx.repo.main_root().to_path_buf(),
    ];
    if let Ok(worktrees) = ctx.repo.worktrees() {
        dirs.extend(
            worktrees
                .into_iter()
                .map(|wt| std::fs::canonicalize(&wt.path).unwrap_or(wt.path)),
        );
    }
    dirs
}

/// A lock is stale when it is older than every running git process of the
/// repository (or none runs): no live git can be holding it.
pub fn is_stale_lock(lock: &crate::git::LockFile, oldest_git_start_ms: Option<i64>) -> bool {
    match oldest_git_start_ms {
        None => true,
        Some(start) => lock.modified_ms < start,
    }
}

/// Refuses a phase 1 that could not be undone exactly: one that would write
/// over files git does not track in the worktree (git overwrites ignored
/// files silently), or that would bring along a file owt copied into the
/// worktree (a `.env`) which the branch committed.
pub(super) fn refuse_unsafe_phase1(
    ctx: &Context,
    row: &SessionRow,
    branch_tip: git2::Oid,
    base_tip: git2::Oid,
) -> anyhow::Result<()> {
    let in_the_way =
        ship::untracked_in_the_way(ctx.repo.git2(), &row.worktree_path, branch_tip, base_tip)?;
    if !in_the_way.is_empty() {
        bail!(
            "merging {} into `{}` would write over files git does not track in its worktree: {}; nothing was changed. Move them away (or commit them) and run the merge again",
            row.base_branch,
            row.name,
            in_the_way.join(", ")
        );
    }
    let copied: Vec<String> = crate::ops::owned::owned(ctx, row)
        .into_iter()
        .filter(|f| f.origin == "copied")
        .map(|f| f.path)
        .collect();
    if copied.is_empty() {
        return Ok(());
    }
    let repo = ctx.repo.git2();
    let fork = repo.merge_base(branch_tip, base_tip).unwrap_or(base_tip);
    let fork_tree = repo.find_commit(fork)?.tree()?;
    let branch_tree = repo.find_commit(branch_tip)?.tree()?;
    let committed: Vec<String> = copied
        .into_iter()
        .filter(|path| {
            let p = std::path::Path::new(path);
            let before = fork_tree.get_path(p).ok().map(|e| e.id());
            let after = branch_tree.get_path(p).ok().map(|e| e.id());
            after.is_some() && after != before
        })
        .collect();
    if !committed.is_empty() {
        bail!(
            "the branch of `{}` commits {}, which owt copied into its worktree from your checkout (it may hold secrets); nothing was merged. Remove {} from the branch's history (e.g. `git rm --cached` and amend or rebase in {}) and run the merge again",
            row.name,
            committed.join(", "),
            if committed.len() == 1 { "it" } else { "them" },
            row.worktree_path.display()
        );
    }
    Ok(())
}
