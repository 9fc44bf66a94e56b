//! What a checkout holds that its branch does not: uncommitted and
//! untracked work, ignored files, paths changed against a base, and the
//! paths kept out of `git status`.

use std::path::Path;

use git2::{Repository, StatusOptions};

use super::{GitError, Repo, Result};

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

/// What `git status` shows in the checkout at `path` (ignored files
/// excluded): owt-sys's one reading of a checkout's status.
pub fn dirt(path: &Path) -> Result<Dirt> {
    // `path` must be a checkout's top: git would find one above it (a
    // folder that is not a checkout, inside another, is not that one's
    // work). libgit2's open does not look upwards.
    Repository::open(path)?;
    let entries = crate::platform::git::GitCli::new(path).status()?;
    let mut dirt = Dirt::default();
    for entry in entries {
        if entry.untracked {
            dirt.untracked.push(entry.path);
        } else {
            dirt.modified.push(entry.path);
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
    let mut existing: std::collections::HashSet<String> =
        text.lines().map(|l| l.trim().to_string()).collect();
    // Each line once, even when `paths` names a file twice.
    let missing: Vec<String> = paths
        .iter()
        .map(|p| format!("/{}", p.trim_start_matches('/')))
        .filter(|p| existing.insert(p.clone()))
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
pub(super) fn prime_cache_tree(worktree: &Path) {
    let primed = Repository::open(worktree).and_then(|repo| {
        let mut index = repo.index()?;
        index.write_tree()?;
        index.write()
    });
    if let Err(e) = primed {
        tracing::debug!("priming the cache tree of {}: {e}", worktree.display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression (#34 item 10): a file named twice (or once as `/x`,
    /// once as `x`) got two lines in `info/exclude`.
    #[test]
    fn regression_exclude_paths_writes_each_line_once() {
        let dir = tempfile::tempdir().unwrap();
        Repository::init(dir.path()).unwrap();
        let repo = Repo::discover(dir.path()).unwrap();
        let paths = [".mcp.json", "/.mcp.json", ".aider.tags.cache.v4"].map(String::from);
        exclude_paths(&repo, &paths).unwrap();
        exclude_paths(&repo, &paths[..1]).unwrap();
        let text = std::fs::read_to_string(repo.common_dir.join("info/exclude")).unwrap();
        let ours: Vec<&str> = text.lines().filter(|l| l.starts_with('/')).collect();
        assert_eq!(ours, ["/.mcp.json", "/.aider.tags.cache.v4"], "{text}");
    }
}
