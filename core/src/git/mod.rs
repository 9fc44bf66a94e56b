//! Git: repository discovery, branches, worktrees and the questions owt asks
//! of them (is this branch checked out? is this worktree dirty? how far
//! ahead is this branch?).
//!
//! Invariants: everything goes through `git2` on the repository's *common*
//! dir, so a repository opened from its main checkout or from any linked
//! worktree is the same repository; nothing here deletes a worktree that
//! holds uncommitted or untracked work (callers decide, with `--force`);
//! this module never touches the store or a PTY.
//!
//! Parts: here the repository and its branches; `worktree` (linked
//! worktrees added, listed, removed), `status` (what is uncommitted,
//! ignored, changed against a base, excluded), `locks` (git's lock files
//! left behind), `paths` (paths as git sees them).

use std::path::{Path, PathBuf};

use git2::{BranchType, Repository};

mod locks;
mod paths;
mod status;
mod worktree;

pub use locks::LockFile;
use paths::{canonical, head_ref};
pub use paths::{outermost_enclosing_checkout, same_path};
pub use status::{changed_paths, dirt, exclude_paths, ignored, Dirt};
pub use worktree::WorktreeInfo;

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("{path} is not inside a git repository")]
    NotARepository { path: PathBuf },
    #[error("{path} is a bare repository; owt needs a checkout")]
    Bare { path: PathBuf },
    #[error("the repository has no commits yet; make a first commit before starting agents")]
    NoCommits,
    #[error("the main checkout is on a detached HEAD; pass --base BRANCH")]
    DetachedHead,
    #[error("branch `{0}` does not exist")]
    NoSuchBranch(String),
    #[error("`{0}` is not a valid branch name")]
    InvalidBranchName(String),
    #[error("branch `{branch}` is already checked out at {path}")]
    CheckedOutElsewhere { branch: String, path: PathBuf },
    #[error("{path} already exists")]
    PathExists { path: PathBuf },
    #[error(transparent)]
    Git(#[from] git2::Error),
    #[error(transparent)]
    Cli(#[from] crate::platform::git::GitCliError),
    #[error("{path}: {error}")]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
}

pub type Result<T, E = GitError> = std::result::Result<T, E>;

/// A repository, opened on its common dir.
pub struct Repo {
    repo: Repository,
    common_dir: PathBuf,
    main_root: PathBuf,
}

impl std::fmt::Debug for Repo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repo")
            .field("common_dir", &self.common_dir)
            .field("main_root", &self.main_root)
            .finish()
    }
}

impl Repo {
    /// Finds the repository containing `dir` (its main checkout or any of its
    /// worktrees).
    pub fn discover(dir: &Path) -> Result<Repo> {
        let found = Repository::discover(dir).map_err(|e| match e.code() {
            git2::ErrorCode::NotFound => GitError::NotARepository {
                path: dir.to_path_buf(),
            },
            _ => GitError::Git(e),
        })?;
        let common_dir = canonical(found.commondir())?;
        let repo = Repository::open(&common_dir)?;
        let Some(workdir) = repo.workdir() else {
            return Err(GitError::Bare { path: common_dir });
        };
        let main_root = canonical(workdir)?;
        Ok(Repo {
            repo,
            common_dir,
            main_root,
        })
    }

    pub fn git2(&self) -> &Repository {
        &self.repo
    }

    /// The repository's common git dir (canonical): its identity.
    pub fn common_dir(&self) -> &Path {
        &self.common_dir
    }

    /// The main checkout's root.
    pub fn main_root(&self) -> &Path {
        &self.main_root
    }

    /// The main checkout's folder name.
    pub fn name(&self) -> String {
        self.main_root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "repo".into())
    }

    /// The branch checked out in the main checkout.
    pub fn default_base(&self) -> Result<String> {
        let head = match self.repo.head() {
            Ok(head) => head,
            Err(e) if e.code() == git2::ErrorCode::UnbornBranch => return Err(GitError::NoCommits),
            Err(e) => return Err(e.into()),
        };
        if !head.is_branch() {
            return Err(GitError::DetachedHead);
        }
        Ok(head.shorthand().unwrap_or_default().to_string())
    }

    pub fn branch_exists(&self, branch: &str) -> bool {
        self.repo.find_branch(branch, BranchType::Local).is_ok()
    }

    pub fn branch_tip(&self, branch: &str) -> Result<git2::Oid> {
        let found = self
            .repo
            .find_branch(branch, BranchType::Local)
            .map_err(|_| GitError::NoSuchBranch(branch.to_string()))?;
        found
            .get()
            .target()
            .ok_or_else(|| GitError::NoSuchBranch(branch.to_string()))
    }

    pub fn is_valid_branch_name(branch: &str) -> bool {
        git2::Branch::name_is_valid(branch).unwrap_or(false)
    }

    /// Where `branch` is checked out (main checkout or a linked worktree).
    pub fn checked_out_at(&self, branch: &str) -> Result<Option<PathBuf>> {
        let full = format!("refs/heads/{branch}");
        if head_ref(&self.common_dir.join("HEAD")).as_deref() == Some(full.as_str()) {
            return Ok(Some(self.main_root.clone()));
        }
        for name in self.repo.worktrees()?.iter().flatten() {
            let admin = self.common_dir.join("worktrees").join(name);
            if head_ref(&admin.join("HEAD")).as_deref() == Some(full.as_str()) {
                let path = self
                    .repo
                    .find_worktree(name)
                    .map(|wt| wt.path().to_path_buf())
                    .unwrap_or(admin);
                return Ok(Some(path));
            }
        }
        Ok(None)
    }

    /// Commits on `branch` not in `base`.
    pub fn commits_ahead(&self, branch: &str, base: &str) -> Result<u32> {
        let tip = self.branch_tip(branch)?;
        let base = self.branch_tip(base)?;
        let (ahead, _) = self.repo.graph_ahead_behind(tip, base)?;
        Ok(ahead as u32)
    }

    /// Deletes a local branch. When it has commits not in `base`, first
    /// writes `refs/owt/backup/<backup_name>` at its tip and returns that ref.
    pub fn delete_branch(
        &self,
        branch: &str,
        base: &str,
        backup_name: &str,
    ) -> Result<Option<String>> {
        let tip = self.branch_tip(branch)?;
        let unmerged = match self.branch_tip(base) {
            Ok(base_tip) => tip != base_tip && !self.repo.graph_descendant_of(base_tip, tip)?,
            Err(_) => true,
        };
        let backup = if unmerged {
            let mut name = format!("refs/owt/backup/{backup_name}");
            let mut n = 2;
            while let Ok(existing) = self.repo.find_reference(&name) {
                if existing.target() == Some(tip) {
                    break;
                }
                name = format!("refs/owt/backup/{backup_name}-{n}");
                n += 1;
            }
            self.repo.reference(
                &name,
                tip,
                true,
                &format!("owt: backup of {branch} before delete"),
            )?;
            Some(name)
        } else {
            None
        };
        self.repo.find_branch(branch, BranchType::Local)?.delete()?;
        Ok(backup)
    }
}
