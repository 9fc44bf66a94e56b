//! A phase 1 that failed without starting a merge or rebase, undone: the
//! files it could have written put back as the branch has them.

use std::path::{Path, PathBuf};

use git2::{MergeOptions, Oid, Repository};

use super::git_cli::GitCli;
use super::{Result, ShipError};

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
    let mut out = Restored::default();
    let mut checkout_paths: Vec<String> = Vec::new();
    let mut unstage_paths: Vec<String> = Vec::new();
    for rel in &paths_phase1_writes(&wt, &head_tree, &base_tree)? {
        let shown = rel.to_string_lossy().into_owned();
        match judge(&wt, worktree, rel, &head_tree, &merged)? {
            Found::AsInHead => {}
            Found::Changed => out.left.push(shown),
            Found::Written => checkout_paths.push(shown),
            Found::Created { exists } => {
                if exists {
                    let full = worktree.join(rel);
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
    put_back(worktree, head, &unstage_paths, &checkout_paths)?;
    out.restored = checkout_paths;
    Ok(out)
}

/// The paths a merge of `base_tree` into `head_tree` could write: both
/// sides of every change between them, once each.
fn paths_phase1_writes(
    wt: &Repository,
    head_tree: &git2::Tree,
    base_tree: &git2::Tree,
) -> Result<Vec<PathBuf>> {
    let diff = wt.diff_tree_to_tree(Some(head_tree), Some(base_tree), None)?;
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
    Ok(paths)
}

/// What a path phase 1 could write holds now.
enum Found {
    /// What HEAD has: nothing to do.
    AsInHead,
    /// Neither HEAD's nor (a prefix of) the merge's, or not a file: left.
    Changed,
    /// The merge's content (or a cut-short prefix of it) over a file HEAD
    /// has: checked out from HEAD again.
    Written,
    /// A file HEAD lacks, which the merge created (`exists`) or would
    /// have: removed, its index entry reset.
    Created { exists: bool },
}

fn judge(
    wt: &Repository,
    worktree: &Path,
    rel: &Path,
    head_tree: &git2::Tree,
    merged: &git2::Index,
) -> Result<Found> {
    let blob = |id: Oid| -> Result<Vec<u8>> { Ok(wt.find_blob(id)?.content().to_vec()) };
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
        // A folder or link where phase 1 writes a file: not ours to judge.
        Ok(_) => return Ok(Found::Changed),
        Err(_) => None,
    };
    let head_content = match in_head {
        Some(id) => Some(blob(id)?),
        None => None,
    };
    if current == head_content {
        return Ok(Found::AsInHead);
    }
    let written_by_merge = match (&current, &expected) {
        (None, _) => true,
        (Some(cur), Some(exp)) => exp.starts_with(cur),
        (Some(_), None) => false,
    };
    Ok(match (written_by_merge, in_head) {
        (false, _) => Found::Changed,
        (true, Some(_)) => Found::Written,
        (true, None) => Found::Created {
            exists: current.is_some(),
        },
    })
}

/// The index entries of `unstage` reset to `head`'s, and `checkout` put
/// back from `head` (`git reset` / `git checkout`, as git would).
fn put_back(worktree: &Path, head: Oid, unstage: &[String], checkout: &[String]) -> Result<()> {
    let git = GitCli::new(worktree);
    for (command, paths) in [("reset", unstage), ("checkout", checkout)] {
        if paths.is_empty() {
            continue;
        }
        let mut args = vec![
            command.to_string(),
            "-q".into(),
            head.to_string(),
            "--".into(),
        ];
        args.extend(paths.iter().cloned());
        git.run(&args)?;
    }
    Ok(())
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
