//! Phase 2: the base branch fast-forwarded, and a checkout of it updated
//! like `git merge --ff-only` (refused when it would overwrite anything).

use std::path::{Path, PathBuf};

use git2::{Oid, Repository};

use super::git_cli::GitCli;
use super::{Result, ShipError};
use crate::git::Repo;

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
            "{base} moved while merging (it is not an ancestor of the branch any more)"
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
                        "could not update your checkout of {base} at {}; your checkout was left as it was and {base} did not move{}; {e}",
                        path.display(),
                        if e.message.contains("would be overwritten") {
                            "; commit or stash your changes there"
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
