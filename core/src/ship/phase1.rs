//! Phase 1: the base brought into the branch in its worktree (merge or
//! rebase), or the attempt aborted.

use std::path::Path;

use git2::Repository;

use super::git_cli::GitCli;
use super::{Method, Result, ShipError, Strategy};
use crate::git::Repo;

/// Whether a merge or rebase is in progress in the checkout at `worktree`
/// (resolved through the worktree's own git dir).
pub fn in_progress(worktree: &Path) -> Option<Method> {
    let repo = Repository::open(worktree).ok()?;
    in_progress_in(repo.path())
}

/// [`in_progress`] for a checkout whose git dir (`<common>/worktrees/<name>`
/// for a linked worktree) is known: three `stat`s, no repository opened.
pub fn in_progress_in(git_dir: &Path) -> Option<Method> {
    if git_dir.join("rebase-merge").exists() || git_dir.join("rebase-apply").exists() {
        Some(Method::Rebase)
    } else if git_dir.join("MERGE_HEAD").exists() {
        Some(Method::Merge)
    } else {
        None
    }
}

/// Files with unresolved conflicts in the checkout at `worktree`.
pub fn conflicted_files(worktree: &Path) -> Result<Vec<String>> {
    let repo = Repository::open(worktree)?;
    let index = repo.index()?;
    let mut files = Vec::new();
    if index.has_conflicts() {
        for conflict in index.conflicts()? {
            let conflict = conflict?;
            if let Some(entry) = conflict.our.or(conflict.their).or(conflict.ancestor) {
                files.push(String::from_utf8_lossy(&entry.path).into_owned());
            }
        }
    }
    files.sort();
    files.dedup();
    Ok(files)
}

/// The result of phase 1.
#[derive(Debug, Clone, PartialEq)]
pub enum Phase1 {
    /// The branch already contains the base.
    UpToDate,
    /// The base was merged (or the branch rebased onto it).
    Done,
    /// Conflicts: left in the worktree (when asked), else aborted.
    Conflicts { files: Vec<String>, left: bool },
}

/// Phase 1: brings `base` into the branch checked out at `worktree`.
pub fn bring_base_in(
    repo: &Repo,
    worktree: &Path,
    base: &str,
    method: Method,
    strategy: Option<Strategy>,
    leave_conflicts: bool,
) -> Result<Phase1> {
    let wt = Repository::open(worktree)?;
    let head = wt.head()?.peel_to_commit()?.id();
    let base_tip = repo
        .branch_tip(base)
        .map_err(|e| ShipError::Refused(e.to_string()))?;
    if head == base_tip || wt.graph_descendant_of(head, base_tip)? {
        return Ok(Phase1::UpToDate);
    }
    let git = GitCli::new(worktree);
    let base_ref = format!("refs/heads/{base}");
    let mut args: Vec<String> = match method {
        Method::Merge => vec!["merge".into(), "--no-edit".into(), "-q".into()],
        Method::Rebase => vec!["rebase".into(), "-q".into()],
    };
    if let Some(strategy) = strategy {
        args.push("-X".into());
        args.push(strategy.git_option(method).into());
    }
    args.push(base_ref);
    match git.run(&args) {
        Ok(_) => Ok(Phase1::Done),
        Err(e) => {
            let files = conflicted_files(worktree).unwrap_or_default();
            if in_progress(worktree).is_none() {
                // Failed before starting (e.g. would overwrite local files).
                return Err(ShipError::Refused(format!(
                    "bringing {base} into the branch failed: {e}"
                )));
            }
            if files.is_empty() {
                // Started, then failed on something else (a full disk):
                // not a conflict to leave for anyone.
                abort(worktree)?;
                return Err(ShipError::Refused(format!(
                    "bringing {base} into the branch failed: {e}"
                )));
            }
            if leave_conflicts {
                return Ok(Phase1::Conflicts { files, left: true });
            }
            abort(worktree)?;
            Ok(Phase1::Conflicts { files, left: false })
        }
    }
}

/// Aborts a merge or rebase in progress in `worktree`.
pub fn abort(worktree: &Path) -> Result<()> {
    let git = GitCli::new(worktree);
    match in_progress(worktree) {
        Some(Method::Merge) => {
            git.run(["merge", "--abort"])?;
        }
        Some(Method::Rebase) => {
            git.run(["rebase", "--abort"])?;
        }
        None => {}
    }
    Ok(())
}
