//! Commit, merge and ship at the git level: predict a merge's conflicts in
//! memory, commit a worktree's work (running its hooks), bring the base into
//! a branch (phase 1), advance the base branch (phase 2).
//!
//! Invariants: nothing here deletes a file, a commit or a ref. Phase 1 either
//! succeeds, or restores the worktree exactly (`merge --abort` /
//! `rebase --abort` on a worktree that was clean), or — only when asked —
//! leaves the conflict in place. Phase 2 only fast-forwards; a checkout of
//! the base branch is updated the way `git merge --ff-only` does it, and
//! refused (changing nothing) when that would overwrite local changes or an
//! untracked or ignored file. Worktree-changing steps run the `git` CLI, so
//! hooks, attributes and rerere behave exactly as git's own.

pub mod git_cli;

use std::path::{Path, PathBuf};

use git2::{MergeOptions, Oid, Repository};
use owt_protocol::ConflictFile;

use crate::git::Repo;
use git_cli::GitCli;

#[derive(Debug, thiserror::Error)]
pub enum ShipError {
    #[error(transparent)]
    Git(#[from] git2::Error),
    #[error(transparent)]
    Cli(#[from] git_cli::GitCliError),
    #[error("{0}")]
    Refused(String),
}

pub type Result<T, E = ShipError> = std::result::Result<T, E>;

/// How phase 1 brings the base into the branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Merge,
    Rebase,
}

/// Which side wins a conflicting hunk, from the agent's point of view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// The agent's side wins.
    Ours,
    /// The base's side wins.
    Theirs,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::Ours => "ours",
            Strategy::Theirs => "theirs",
        }
    }

    /// The `-X` option for git: in a merge run on the agent's branch "ours"
    /// is the agent; in a rebase onto the base, git's "ours" is the base.
    fn git_option(self, method: Method) -> &'static str {
        match (self, method) {
            (Strategy::Ours, Method::Merge) | (Strategy::Theirs, Method::Rebase) => "ours",
            (Strategy::Theirs, Method::Merge) | (Strategy::Ours, Method::Rebase) => "theirs",
        }
    }
}

/// The conflicts a merge of `branch_tip` and `base_tip` would have, computed
/// in memory (nothing on disk changes).
pub fn predict(repo: &Repository, branch_tip: Oid, base_tip: Oid) -> Result<Vec<ConflictFile>> {
    let ours = repo.find_commit(branch_tip)?;
    let theirs = repo.find_commit(base_tip)?;
    let mut opts = MergeOptions::new();
    opts.find_renames(true);
    let index = repo.merge_commits(&ours, &theirs, Some(&opts))?;
    if !index.has_conflicts() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for conflict in index.conflicts()? {
        let conflict = conflict?;
        let entry = conflict
            .our
            .as_ref()
            .or(conflict.their.as_ref())
            .or(conflict.ancestor.as_ref());
        let Some(entry) = entry else { continue };
        let path = String::from_utf8_lossy(&entry.path).into_owned();
        let lines = match (&conflict.ancestor, &conflict.our, &conflict.their) {
            (ancestor, Some(our), Some(their)) => {
                let empty;
                let ancestor = match ancestor {
                    Some(a) => a,
                    None => {
                        empty = git2::IndexEntry {
                            path: our.path.clone(),
                            ..empty_entry(repo)?
                        };
                        &empty
                    }
                };
                match repo.merge_file_from_index(ancestor, our, their, None) {
                    Ok(result) => marker_ranges(result.content()),
                    Err(_) => Vec::new(),
                }
            }
            // Modify/delete: the whole file.
            _ => Vec::new(),
        };
        out.push(ConflictFile { path, lines });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out.dedup_by(|a, b| a.path == b.path);
    Ok(out)
}

fn empty_entry(repo: &Repository) -> Result<git2::IndexEntry> {
    let blob = repo.blob(b"")?;
    Ok(git2::IndexEntry {
        ctime: git2::IndexTime::new(0, 0),
        mtime: git2::IndexTime::new(0, 0),
        dev: 0,
        ino: 0,
        mode: 0o100644,
        uid: 0,
        gid: 0,
        file_size: 0,
        id: blob,
        flags: 0,
        flags_extended: 0,
        path: Vec::new(),
    })
}

/// Line ranges (1-based, inclusive) of conflict blocks `<<<<<<<` … `>>>>>>>`
/// in a merged file.
pub fn marker_ranges(content: &[u8]) -> Vec<(u32, u32)> {
    let mut ranges = Vec::new();
    let mut start = None;
    for (i, line) in content.split(|b| *b == b'\n').enumerate() {
        let n = i as u32 + 1;
        if line.starts_with(b"<<<<<<<") {
            start = Some(n);
        } else if line.starts_with(b">>>>>>>") {
            if let Some(s) = start.take() {
                ranges.push((s, n));
            }
        }
    }
    ranges
}

/// Whether a merge or rebase is in progress in the checkout at `worktree`
/// (resolved through the worktree's own git dir).
pub fn in_progress(worktree: &Path) -> Option<Method> {
    let repo = Repository::open(worktree).ok()?;
    let git_dir = repo.path();
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

/// Phase 2: fast-forwards `base` to `new_tip`. Returns the checkout that was
/// updated, if the base branch is checked out somewhere.
pub fn advance_base(repo: &Repo, base: &str, new_tip: Oid) -> Result<Option<PathBuf>> {
    let old_tip = repo
        .branch_tip(base)
        .map_err(|e| ShipError::Refused(e.to_string()))?;
    if old_tip == new_tip || repo.git2().graph_descendant_of(old_tip, new_tip)? {
        return Ok(None);
    }
    if !repo.git2().graph_descendant_of(new_tip, old_tip)? {
        return Err(ShipError::Refused(format!(
            "{base} moved while merging (it is not an ancestor of the branch any more); run the merge again"
        )));
    }
    let checkout = repo
        .checked_out_at(base)
        .map_err(|e| ShipError::Refused(e.to_string()))?;
    match checkout {
        Some(path) => {
            refuse_overwrites(repo.git2(), &path, old_tip, new_tip)?;
            let git = GitCli::new(&path);
            if let Err(e) = git.run(["merge", "--ff-only", "-q", &new_tip.to_string()]) {
                // git may have written the index and files before failing to
                // move HEAD (a lock, a hook): put the checkout back.
                let rolled_back = roll_back_checkout(&path, old_tip, new_tip);
                return Err(ShipError::Refused(match rolled_back {
                    Ok(()) => format!(
                        "could not update your checkout of {base} at {}: {e}; your checkout was left as it was and {base} did not move{}",
                        path.display(),
                        if e.message.contains("would be overwritten") {
                            "; commit or stash your changes there and run the merge again"
                        } else {
                            ""
                        }
                    ),
                    Err(undo) => format!(
                        "could not update your checkout of {base} at {}: {e}; and putting it back failed ({undo}): its index and files may be at {new_tip} while HEAD is still {old_tip}; restore them with `git read-tree -m -u {new_tip} {old_tip}` there",
                        path.display()
                    ),
                }));
            }
            Ok(Some(path))
        }
        None => {
            repo.git2().reference_matching(
                &format!("refs/heads/{base}"),
                new_tip,
                true,
                old_tip,
                "owt: merge (fast-forward)",
            )?;
            Ok(None)
        }
    }
}

/// After a failed `git merge --ff-only` from `old` to `new` in the checkout
/// at `path`: when HEAD did not move but index entries did, moves the index
/// and files back from `new` to `old` the way a checkout does (the human's
/// own changes are carried along).
fn roll_back_checkout(path: &Path, old: Oid, new: Oid) -> Result<()> {
    let checkout = Repository::open(path)?;
    let head = checkout.head()?.peel_to_commit()?.id();
    if head != old {
        return Ok(());
    }
    let old_tree = checkout.find_commit(old)?.tree()?;
    let new_tree = checkout.find_commit(new)?.tree()?;
    let diff = checkout.diff_tree_to_tree(Some(&old_tree), Some(&new_tree), None)?;
    let index = checkout.index()?;
    let moved = diff.deltas().any(|d| {
        let Some(file) = d.new_file().path().or(d.old_file().path()) else {
            return false;
        };
        let in_index = index.get_path(file, 0).map(|e| e.id);
        let in_new = new_tree.get_path(file).ok().map(|e| e.id());
        let in_old = old_tree.get_path(file).ok().map(|e| e.id());
        in_index == in_new && in_index != in_old
    });
    if moved {
        GitCli::new(path).run(["read-tree", "-m", "-u", &new.to_string(), &old.to_string()])?;
    }
    Ok(())
}

/// Refuses when fast-forwarding the checkout at `path` from `old` to `new`
/// would write over a file git does not track there (untracked or ignored,
/// e.g. `.env`): git itself overwrites ignored files silently.
fn refuse_overwrites(repo: &Repository, path: &Path, old: Oid, new: Oid) -> Result<()> {
    let clobbered = untracked_in_the_way(repo, path, old, new)?;
    if clobbered.is_empty() {
        Ok(())
    } else {
        Err(ShipError::Refused(format!(
            "updating your checkout at {} would overwrite files git does not track there: {}; move them away and run the merge again",
            path.display(),
            clobbered.join(", ")
        )))
    }
}

/// Files that going from commit `old` to `new` in the checkout at `path`
/// would create, but that already exist there untracked or ignored.
pub fn untracked_in_the_way(
    repo: &Repository,
    path: &Path,
    old: Oid,
    new: Oid,
) -> Result<Vec<String>> {
    let old_tree = repo.find_commit(old)?.tree()?;
    let new_tree = repo.find_commit(new)?.tree()?;
    let diff = repo.diff_tree_to_tree(Some(&old_tree), Some(&new_tree), None)?;
    let checkout = Repository::open(path)?;
    let index = checkout.index()?;
    let mut clobbered = Vec::new();
    for delta in diff.deltas() {
        let Some(file) = delta.new_file().path() else {
            continue;
        };
        if delta.old_file().id().is_zero()
            && path.join(file).symlink_metadata().is_ok()
            && index.get_path(file, 0).is_none()
        {
            clobbered.push(file.to_string_lossy().into_owned());
        }
    }
    Ok(clobbered)
}

/// What [`restore_phase1`] did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Restored {
    /// Files the failed merge created, removed again.
    pub removed: Vec<String>,
    /// Files put back as the branch has them.
    pub restored: Vec<String>,
    /// Files that differ from both the branch and what the merge would
    /// write (changed since by someone else): left as they are.
    pub left: Vec<String>,
}

/// Puts the worktree at `worktree` back as it was before a phase 1 that
/// failed without starting a merge or rebase (a full disk cut a file
/// short, a lock, a hook): the branch's HEAD was `head`, the worktree
/// clean, and no file of `base_tip` that HEAD lacks existed (phase 1
/// refuses otherwise). Only paths that phase 1 could write are touched:
/// each one that is missing, or holds what the merge would write or a cut
/// short prefix of it, gets the branch's version back (or is removed when
/// the branch has none); anything else is left and reported, so work done
/// since (the agent keeps running) is never undone. The index entries of
/// those paths go back to HEAD's.
pub fn restore_phase1(worktree: &Path, head: Oid, base_tip: Oid) -> Result<Restored> {
    let wt = Repository::open(worktree)?;
    let head_tree = wt.find_commit(head)?.tree()?;
    let base_tree = wt.find_commit(base_tip)?.tree()?;
    let mut opts = MergeOptions::new();
    opts.find_renames(true);
    let merged = wt.merge_commits(
        &wt.find_commit(head)?,
        &wt.find_commit(base_tip)?,
        Some(&opts),
    )?;
    let diff = wt.diff_tree_to_tree(Some(&head_tree), Some(&base_tree), None)?;
    let mut paths: Vec<PathBuf> = Vec::new();
    for delta in diff.deltas() {
        for file in [delta.old_file().path(), delta.new_file().path()]
            .into_iter()
            .flatten()
        {
            if !paths.iter().any(|p| p == file) {
                paths.push(file.to_path_buf());
            }
        }
    }
    let blob = |id: Oid| -> Result<Vec<u8>> { Ok(wt.find_blob(id)?.content().to_vec()) };
    let mut out = Restored::default();
    let mut checkout_paths: Vec<String> = Vec::new();
    let mut unstage_paths: Vec<String> = Vec::new();
    for rel in &paths {
        let shown = rel.to_string_lossy().into_owned();
        let in_head = head_tree.get_path(rel).ok().map(|e| e.id());
        let expected = match merged.get_path(rel, 0) {
            Some(entry) => Some(blob(entry.id)?),
            None => None,
        };
        let full = worktree.join(rel);
        let current = match std::fs::symlink_metadata(&full) {
            Ok(meta) if meta.is_file() => Some(
                std::fs::read(&full)
                    .map_err(|e| ShipError::Refused(format!("reading {}: {e}", full.display())))?,
            ),
            Ok(_) => {
                // A folder or link where phase 1 writes a file: not ours to judge.
                out.left.push(shown);
                continue;
            }
            Err(_) => None,
        };
        let head_content = match in_head {
            Some(id) => Some(blob(id)?),
            None => None,
        };
        if current == head_content {
            continue;
        }
        let written_by_merge = match (&current, &expected) {
            (None, _) => true,
            (Some(cur), Some(exp)) => exp.starts_with(cur),
            (Some(_), None) => false,
        };
        if !written_by_merge {
            out.left.push(shown);
            continue;
        }
        match in_head {
            Some(_) => checkout_paths.push(shown.clone()),
            None => {
                if current.is_some() {
                    std::fs::remove_file(&full).map_err(|e| {
                        ShipError::Refused(format!("removing {}: {e}", full.display()))
                    })?;
                    remove_empty_parents(worktree, rel);
                    out.removed.push(shown.clone());
                }
                unstage_paths.push(shown);
            }
        }
    }
    let git = GitCli::new(worktree);
    if !unstage_paths.is_empty() {
        let mut args = vec![
            "reset".to_string(),
            "-q".into(),
            head.to_string(),
            "--".into(),
        ];
        args.extend(unstage_paths.iter().cloned());
        git.run(&args)?;
    }
    if !checkout_paths.is_empty() {
        let mut args = vec![
            "checkout".to_string(),
            "-q".into(),
            head.to_string(),
            "--".into(),
        ];
        args.extend(checkout_paths.iter().cloned());
        git.run(&args)?;
        out.restored = checkout_paths;
    }
    Ok(out)
}

/// Removes the empty folders above `rel` (up to the worktree's root).
fn remove_empty_parents(worktree: &Path, rel: &Path) {
    let mut dir = rel.parent();
    while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
        if std::fs::remove_dir(worktree.join(d)).is_err() {
            break;
        }
        dir = d.parent();
    }
}

/// Whether a git failure message says the disk is full.
pub fn is_disk_full(message: &str) -> bool {
    message.contains("No space left on device")
        || message.contains("unable to write file")
        || message.contains("short write")
}

/// Kills this process when `OWT_FAILPOINT` names `point` (crash-safety
/// tests inject SIGKILL between the steps of merge and ship this way).
pub fn failpoint(point: &str) {
    if std::env::var("OWT_FAILPOINT").is_ok_and(|v| v == point) {
        let _ =
            rustix::process::kill_process(rustix::process::getpid(), rustix::process::Signal::KILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marker_ranges_finds_blocks() {
        let text = b"a\n<<<<<<< ours\nb\n=======\nc\n>>>>>>> theirs\nd\n<<<<<<< x\n>>>>>>> y\n";
        assert_eq!(marker_ranges(text), vec![(2, 6), (8, 9)]);
    }

    #[test]
    fn strategy_is_from_the_agents_point_of_view() {
        assert_eq!(Strategy::Ours.git_option(Method::Merge), "ours");
        assert_eq!(Strategy::Ours.git_option(Method::Rebase), "theirs");
        assert_eq!(Strategy::Theirs.git_option(Method::Merge), "theirs");
        assert_eq!(Strategy::Theirs.git_option(Method::Rebase), "ours");
    }
}
