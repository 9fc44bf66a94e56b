//! Linked worktrees: added (serialized across processes), listed, pruned,
//! removed.

use std::path::{Path, PathBuf};

use git2::{BranchType, WorktreeAddOptions, WorktreePruneOptions};

use super::status::prime_cache_tree;
use super::{same_path, GitError, Repo, Result};

/// A linked worktree as git knows it.
#[derive(Debug, Clone, PartialEq)]
pub struct WorktreeInfo {
    /// Its name under `<common dir>/worktrees/`.
    pub name: String,
    pub path: PathBuf,
    /// Its folder is gone (git would prune it).
    pub prunable: bool,
}

impl Repo {
    /// Creates `path` as a linked worktree on `branch`, creating the branch
    /// at `base` first when `create_branch`.
    pub fn add_worktree(
        &self,
        admin_name: &str,
        path: &Path,
        branch: &str,
        base: &str,
        create_branch: bool,
    ) -> Result<()> {
        if path.exists() {
            return Err(GitError::PathExists {
                path: path.to_path_buf(),
            });
        }
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|source| GitError::Io {
                path: parent.to_path_buf(),
                error: source,
            })?;
        }
        // libgit2 reads every worktree's HEAD while adding one; a worktree
        // half-written by another process can make it report our own new
        // branch as "already checked out". Serialize additions per
        // repository with an advisory lock.
        let _lock = FileLock::acquire(&self.common_dir.join("owt-worktree.lock"))?;
        if create_branch {
            let base_commit = self.repo.find_commit(self.start_commit(base)?)?;
            self.repo.branch(branch, &base_commit, false)?;
        }
        let reference = self
            .repo
            .find_branch(branch, BranchType::Local)
            .map_err(|_| GitError::NoSuchBranch(branch.to_string()))?
            .into_reference();
        let mut opts = WorktreeAddOptions::new();
        opts.reference(Some(&reference));
        let added = self.repo.worktree(admin_name, path, Some(&opts));
        if let Err(e) = added {
            // Leave nothing behind.
            let _ = std::fs::remove_dir_all(path);
            let _ = std::fs::remove_dir_all(self.common_dir.join("worktrees").join(admin_name));
            if create_branch {
                if let Ok(mut b) = self.repo.find_branch(branch, BranchType::Local) {
                    let _ = b.delete();
                }
            }
            return Err(e.into());
        }
        prime_cache_tree(path);
        Ok(())
    }

    /// The commit a new branch starts at: the tip of the local branch
    /// `base`, or the commit `base` names by its full id (`owt fork`).
    fn start_commit(&self, base: &str) -> Result<git2::Oid> {
        match self.branch_tip(base) {
            Ok(tip) => Ok(tip),
            Err(e) => git2::Oid::from_str(base)
                .ok()
                .filter(|_| base.len() == 40)
                .filter(|oid| self.repo.find_commit(*oid).is_ok())
                .ok_or(e),
        }
    }

    /// Whether an admin entry `<common dir>/worktrees/<name>` exists.
    pub fn worktree_admin_exists(&self, admin_name: &str) -> bool {
        self.common_dir.join("worktrees").join(admin_name).exists()
    }

    /// Linked worktrees (not the main checkout).
    pub fn worktrees(&self) -> Result<Vec<WorktreeInfo>> {
        let mut out = Vec::new();
        for name in self.repo.worktrees()?.iter().flatten() {
            let Ok(wt) = self.repo.find_worktree(name) else {
                continue;
            };
            out.push(WorktreeInfo {
                name: name.to_string(),
                path: wt.path().to_path_buf(),
                prunable: !wt.path().exists(),
            });
        }
        Ok(out)
    }

    /// Forgets a linked worktree whose folder is gone (git's `worktree prune`).
    pub fn prune_worktree(&self, admin_name: &str) -> Result<()> {
        let wt = self.repo.find_worktree(admin_name)?;
        wt.prune(Some(WorktreePruneOptions::new().valid(true).locked(false)))?;
        Ok(())
    }

    /// Removes a linked worktree: its folder and git's entry. The caller has
    /// checked it is clean or was told `--force`.
    pub fn remove_worktree(&self, path: &Path) -> Result<()> {
        let admin = self
            .worktrees()?
            .into_iter()
            .find(|wt| same_path(&wt.path, path))
            .map(|wt| wt.name);
        if path.exists() {
            std::fs::remove_dir_all(path).map_err(|source| GitError::Io {
                path: path.to_path_buf(),
                error: source,
            })?;
        }
        if let Some(admin) = admin {
            self.prune_worktree(&admin)?;
        }
        Ok(())
    }
}

/// An exclusive `flock(2)` on a file, released on drop.
struct FileLock {
    file: std::fs::File,
}

impl FileLock {
    fn acquire(path: &Path) -> Result<FileLock> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(path)
            .map_err(|source| GitError::Io {
                path: path.to_path_buf(),
                error: source,
            })?;
        crate::platform::fs::lock_exclusive(&file).map_err(|error| GitError::Io {
            path: path.to_path_buf(),
            error,
        })?;
        Ok(FileLock { file })
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        let _ = crate::platform::fs::unlock(&self.file);
    }
}
