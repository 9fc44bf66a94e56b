//! Git: repository discovery, branches, worktrees and the questions owt asks
//! of them (is this branch checked out? is this worktree dirty? how far
//! ahead is this branch?).
//!
//! Invariants: everything goes through `git2` on the repository's *common*
//! dir, so a repository opened from its main checkout or from any linked
//! worktree is the same repository; nothing here deletes a worktree that
//! holds uncommitted or untracked work (callers decide, with `--force`);
//! this module never touches the store or a PTY.

use std::path::{Path, PathBuf};

use git2::{BranchType, Repository, StatusOptions, WorktreeAddOptions, WorktreePruneOptions};

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

/// What `git status` would list for a worktree.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Dirt {
    /// Tracked files with staged or unstaged changes.
    pub modified: Vec<String>,
    /// Untracked files that are not ignored.
    pub untracked: Vec<String>,
}

impl Dirt {
    pub fn is_clean(&self) -> bool {
        self.modified.is_empty() && self.untracked.is_empty()
    }

    pub fn len(&self) -> usize {
        self.modified.len() + self.untracked.len()
    }

    pub fn is_empty(&self) -> bool {
        self.is_clean()
    }

    /// A few paths for an error message.
    pub fn summary(&self) -> String {
        let mut paths: Vec<&str> = self
            .modified
            .iter()
            .chain(&self.untracked)
            .map(String::as_str)
            .take(5)
            .collect();
        if self.len() > paths.len() {
            paths.push("…");
        }
        paths.join(", ")
    }
}

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
            let base_commit = self.repo.find_commit(self.branch_tip(base)?)?;
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

/// A lock file git holds while it changes something (`index.lock`,
/// `HEAD.lock`, `refs/heads/main.lock`, …), left behind when git is killed.
#[derive(Debug, Clone, PartialEq)]
pub struct LockFile {
    pub path: PathBuf,
    /// Last modification, Unix ms.
    pub modified_ms: i64,
}

impl Repo {
    /// Every lock file under the common dir: its top level, `refs/`, and
    /// each linked worktree's admin folder.
    pub fn lock_files(&self) -> Vec<LockFile> {
        let mut out = Vec::new();
        collect_locks(&self.common_dir, false, &mut out);
        collect_locks(&self.common_dir.join("refs"), true, &mut out);
        if let Ok(entries) = std::fs::read_dir(self.common_dir.join("worktrees")) {
            for entry in entries.flatten() {
                collect_locks(&entry.path(), false, &mut out);
                collect_locks(&entry.path().join("refs"), true, &mut out);
            }
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out
    }

    /// The admin folder of the linked worktree at `path`, if it is one.
    pub fn admin_dir_of(&self, path: &Path) -> Option<PathBuf> {
        let name = self
            .worktrees()
            .ok()?
            .into_iter()
            .find(|wt| same_path(&wt.path, path))?
            .name;
        Some(self.common_dir.join("worktrees").join(name))
    }
}

fn collect_locks(dir: &Path, recurse: bool, out: &mut Vec<LockFile>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() {
            if recurse {
                collect_locks(&path, true, out);
            }
        } else if path.extension().is_some_and(|e| e == "lock")
            && path.file_name().is_some_and(|n| n != "owt-worktree.lock")
        {
            let modified_ms = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_millis() as i64);
            out.push(LockFile { path, modified_ms });
        }
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
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive).map_err(|e| {
            GitError::Io {
                path: path.to_path_buf(),
                error: e.into(),
            }
        })?;
        Ok(FileLock { file })
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        let _ = rustix::fs::flock(&self.file, rustix::fs::FlockOperation::Unlock);
    }
}

/// What `git status` shows in the checkout at `path` (ignored files excluded).
pub fn dirt(path: &Path) -> Result<Dirt> {
    let repo = Repository::open(path)?;
    let mut opts = StatusOptions::new();
    opts.include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(false)
        .exclude_submodules(true);
    let statuses = repo.statuses(Some(&mut opts))?;
    let mut dirt = Dirt::default();
    for entry in statuses.iter() {
        let path = entry.path().unwrap_or("?").to_string();
        if entry.status().contains(git2::Status::WT_NEW) {
            dirt.untracked.push(path);
        } else if !entry.status().is_empty() && !entry.status().contains(git2::Status::IGNORED) {
            dirt.modified.push(path);
        }
    }
    Ok(dirt)
}

/// Ignored files and folders in the checkout at `path` (a folder that is
/// ignored as a whole is one entry, ending in `/`), relative, sorted.
pub fn ignored(path: &Path) -> Result<Vec<String>> {
    let repo = Repository::open(path)?;
    let mut opts = StatusOptions::new();
    opts.include_untracked(false)
        .include_ignored(true)
        .recurse_ignored_dirs(false)
        .exclude_submodules(true);
    let statuses = repo.statuses(Some(&mut opts))?;
    let mut out: Vec<String> = statuses
        .iter()
        .filter(|e| e.status().contains(git2::Status::IGNORED))
        .filter_map(|e| e.path().map(str::to_string))
        .collect();
    out.sort();
    Ok(out)
}

/// The ref a `HEAD` file points at (`None` when detached or unreadable).
fn head_ref(head_file: &Path) -> Option<String> {
    let text = std::fs::read_to_string(head_file).ok()?;
    text.trim().strip_prefix("ref: ").map(str::to_string)
}

fn canonical(path: &Path) -> Result<PathBuf> {
    std::fs::canonicalize(path).map_err(|source| GitError::Io {
        path: path.to_path_buf(),
        error: source,
    })
}

/// The outermost checkout that encloses the checkout at `root` (a
/// superproject of a submodule, a repository holding a nested clone), if
/// any: the highest ancestor folder with a `.git` entry — not counting
/// the home folder and its ancestors (a dotfiles repository in `~` holds
/// everything).
pub fn outermost_enclosing_checkout(root: &Path) -> Option<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    root.ancestors()
        .skip(1)
        .filter(|dir| !home.as_deref().is_some_and(|h| h.starts_with(dir)))
        .filter(|dir| dir.join(".git").symlink_metadata().is_ok())
        .last()
        .map(Path::to_path_buf)
}

/// Whether two paths name the same folder (after resolving links).
pub fn same_path(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// Paths changed in the checkout at `worktree` relative to the merge base
/// of its HEAD with `base`: committed, staged, unstaged and untracked (not
/// ignored).
pub fn changed_paths(repo: &Repo, worktree: &Path, base: &str) -> Result<Vec<String>> {
    let wt = Repository::open(worktree)?;
    let head = wt.head()?.peel_to_commit()?;
    let base_tip = repo.branch_tip(base)?;
    let merge_base = wt.merge_base(head.id(), base_tip).unwrap_or(base_tip);
    let base_tree = wt.find_commit(merge_base)?.tree()?;
    let mut opts = git2::DiffOptions::new();
    opts.include_untracked(true).recurse_untracked_dirs(true);
    let diff = wt.diff_tree_to_workdir_with_index(Some(&base_tree), Some(&mut opts))?;
    let mut paths: Vec<String> = diff
        .deltas()
        .filter_map(|d| d.new_file().path().or(d.old_file().path()))
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    paths.sort();
    paths.dedup();
    Ok(paths)
}

/// Adds root-anchored patterns for `paths` (relative to a checkout) to the
/// repository's `info/exclude`, so files owt writes into agent worktrees
/// (agent hooks, MCP registration) are neither committed by `owt ship` nor
/// reported by Conflict Guard. Only untracked files are affected; existing
/// lines are kept and nothing is added twice.
pub fn exclude_paths(repo: &Repo, paths: &[String]) -> Result<()> {
    if paths.is_empty() {
        return Ok(());
    }
    let file = repo.common_dir.join("info").join("exclude");
    let text = std::fs::read_to_string(&file).unwrap_or_default();
    let existing: std::collections::HashSet<&str> = text.lines().map(str::trim).collect();
    let missing: Vec<String> = paths
        .iter()
        .map(|p| format!("/{}", p.trim_start_matches('/')))
        .filter(|p| !existing.contains(p.as_str()))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let mut out = text.clone();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    if !text.contains("# owt: files owt writes into agent worktrees") {
        out.push_str("# owt: files owt writes into agent worktrees\n");
    }
    for line in missing {
        out.push_str(&line);
        out.push('\n');
    }
    let io = |source| GitError::Io {
        path: file.clone(),
        error: source,
    };
    std::fs::create_dir_all(file.parent().unwrap_or(&repo.common_dir)).map_err(io)?;
    // Through a temporary file and a rename: a running agent that reads
    // the excludes (Aider asks to add `.aider*` to .gitignore when git does
    // not ignore it) never sees the file half written.
    let tmp = file.with_file_name(format!("exclude.owt-{}.tmp", std::process::id()));
    std::fs::write(&tmp, out).map_err(io)?;
    std::fs::rename(&tmp, &file).map_err(io)
}

/// Gives a new worktree's index the cache of trees that `git worktree add`
/// writes and libgit2's checkout does not: with it, "is anything staged?"
/// costs one comparison of tree ids (the guard asks on every full scan)
/// instead of building and reading every tree of the checkout. Only the
/// index's tree-cache extension changes; entries and their stat data stay.
/// Best effort: a failure only leaves the index as libgit2 wrote it.
fn prime_cache_tree(worktree: &Path) {
    let primed = Repository::open(worktree).and_then(|repo| {
        let mut index = repo.index()?;
        index.write_tree()?;
        index.write()
    });
    if let Err(e) = primed {
        tracing::debug!("priming the cache tree of {}: {e}", worktree.display());
    }
}
