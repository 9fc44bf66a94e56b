//! A session's working state as a commit, built without touching the
//! session: a temporary index (`GIT_INDEX_FILE`) is filled from HEAD and
//! the worktree (`git add -A`: tracked changes, deletions and untracked
//! files; ignored files stay out), then written as a tree and a commit
//! whose parent is HEAD. Only new objects are written: no ref, no index,
//! no file of the session changes.

use std::path::{Path, PathBuf};

use anyhow::Context as _;

use crate::platform::git::GitCli;

/// The commit holding `worktree`'s working state (its HEAD when nothing
/// differs from it), by full id.
pub fn working_state(worktree: &Path, session: &str) -> anyhow::Result<String> {
    let scratch = Scratch::new()?;
    let index = scratch.0.join("index");
    let head = git(
        worktree,
        &index,
        &["rev-parse", "--verify", "HEAD^{commit}"],
    )?;
    git(worktree, &index, &["read-tree", &head])?;
    git(worktree, &index, &["add", "--all", "--", "."])?;
    let tree = git(worktree, &index, &["write-tree"])?;
    let head_tree = git(
        worktree,
        &index,
        &["rev-parse", &format!("{head}^{{tree}}")],
    )?;
    if tree == head_tree {
        return Ok(head);
    }
    let message = format!("owt fork: {session}'s uncommitted and untracked work");
    let args = [
        "commit-tree",
        tree.as_str(),
        "-p",
        head.as_str(),
        "-m",
        message.as_str(),
    ];
    match git(worktree, &index, &args) {
        Ok(commit) => Ok(commit),
        // No identity configured: the commit is owt's.
        Err(_) => git_as_owt(worktree, &index, &args),
    }
}

/// A private folder for the temporary index, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> anyhow::Result<Scratch> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = std::env::temp_dir().join(format!("owt-fork-{}-{nanos}", std::process::id()));
        std::fs::create_dir(&dir)
            .with_context(|| format!("making {} for the temporary index", dir.display()))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs git in `worktree` with the temporary `index`; its trimmed stdout.
fn git(worktree: &Path, index: &Path, args: &[&str]) -> anyhow::Result<String> {
    run(command(worktree, index), args)
}

fn git_as_owt(worktree: &Path, index: &Path, args: &[&str]) -> anyhow::Result<String> {
    let git = command(worktree, index)
        .env("GIT_AUTHOR_NAME", "owt")
        .env("GIT_AUTHOR_EMAIL", "owt@localhost")
        .env("GIT_COMMITTER_NAME", "owt")
        .env("GIT_COMMITTER_EMAIL", "owt@localhost");
    run(git, args)
}

fn command(worktree: &Path, index: &Path) -> GitCli {
    GitCli::new(worktree).env("GIT_INDEX_FILE", index)
}

fn run(git: GitCli, args: &[&str]) -> anyhow::Result<String> {
    Ok(git.run(args)?.trim().to_string())
}
