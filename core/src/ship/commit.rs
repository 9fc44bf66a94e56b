//! A worktree's work committed the way `git commit` does (hooks run).

use std::path::Path;

use git2::{Oid, Repository};

use super::git_cli::{self, GitCli};
use super::{Result, ShipError};

/// Commits everything in `worktree` (tracked changes and untracked files that
/// are not ignored) with `message`, running the repository's commit hooks —
/// never the paths in `never` (files owt put there, such as a copied
/// `.env`), which are also unstaged if something staged them. Returns the
/// new commit, or `None` when there was nothing to commit. When the commit
/// fails (a hook rejects it), the index is restored as it was.
pub fn commit_all(worktree: &Path, message: &str, never: &[String]) -> Result<Option<Oid>> {
    let repo = Repository::open(worktree)?;
    let head_tree = repo.head()?.peel_to_tree()?;
    let index_path = repo.path().join("index");
    let saved_index = std::fs::read(&index_path).ok();
    let git = GitCli::new(worktree);
    // `git add -A` skips them (they are in info/exclude) unless something
    // staged them already (`git add -f`): those new to the branch are
    // unstaged again.
    let prepared = git.run(["add", "-A"]).and_then(|_| {
        let index = Repository::open(worktree)
            .and_then(|r| r.index())
            .map_err(|e| git_cli::GitCliError {
                args: "index".into(),
                dir: worktree.to_path_buf(),
                message: e.to_string(),
            })?;
        let staged: Vec<&str> = never
            .iter()
            .map(|p| p.trim_start_matches('/'))
            .filter(|p| {
                index.get_path(Path::new(p), 0).is_some()
                    && head_tree.get_path(Path::new(p)).is_err()
            })
            .collect();
        if staged.is_empty() {
            return Ok(String::new());
        }
        let mut reset: Vec<&str> = vec!["reset", "-q", "--"];
        reset.extend(staged);
        git.run(&reset)
    });
    let restore = |git: &GitCli| match &saved_index {
        Some(bytes) => {
            let _ = std::fs::write(&index_path, bytes);
        }
        None => {
            let _ = git.run(["reset", "-q"]);
        }
    };
    if let Err(e) = prepared {
        restore(&git);
        return Err(ShipError::Refused(format!("staging the work failed: {e}")));
    }
    // Anything to commit?
    let staged_tree = Repository::open(worktree)?.index()?.write_tree()?;
    if staged_tree == head_tree.id() {
        restore(&git);
        return Ok(None);
    }
    if let Err(e) = git.run(["commit", "-q", "--no-edit", "-m", message]) {
        restore(&git);
        return Err(ShipError::Refused(format!("the commit was rejected: {e}")));
    }
    let head = Repository::open(worktree)?.head()?.peel_to_commit()?.id();
    Ok(Some(head))
}
