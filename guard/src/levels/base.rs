//! `base-conflict`: a participant whose state does not merge into its base
//! branch's tip, with the lines each side changed at the conflicting paths.

use git2::{Oid, Repository};
use owt_protocol::guard::{BaseConflict, GuardPath, Level, LineRange};

use super::super::changes::{ranges_near, ChangeKind, Hunk};
use super::super::tree;
use super::super::verdict::Caches;
use super::super::GuardError;
use super::lines::blob_of;
use super::semantic::symbols_of;
use super::{change_word, touched, Side};

/// The report of a participant whose state does not merge into its base's
/// tip, or `None` when it does.
pub fn base_conflict(
    repo: &Repository,
    caches: &mut Caches,
    side: &Side<'_>,
    base: &str,
) -> Result<Option<BaseConflict>, GuardError> {
    let landing = side.landing;
    if landing.clean() {
        return Ok(None);
    }
    let tip = landing.base_tip.unwrap_or_else(Oid::zero);
    let tip_tree = landing
        .base_tip
        .map(|t| repo.find_commit(t).map(|c| c.tree_id()))
        .transpose()?;
    let own = touched(side.changes);
    let mut paths = Vec::new();
    for path in &landing.outcome.conflicts {
        let change = own.get(path.as_str()).copied();
        let mine: Vec<LineRange> = change
            .filter(|c| !c.binary && c.kind != ChangeKind::Added && c.path == *path)
            .map(|c| c.hunks.iter().map(Hunk::base_range).collect())
            .unwrap_or_default();
        let theirs = base_ranges(repo, caches, side.merge_base_tree, tip_tree, path)?;
        let (a_ranges, b_ranges) = (touching(&mine, &theirs), touching(&theirs, &mine));
        // Both sides' lines count in the merge base.
        let (a_symbols, b_symbols) = symbols_of(
            repo,
            &mut caches.symbols,
            side.merge_base_tree,
            path,
            [change, None],
            [&a_ranges, &b_ranges],
        );
        paths.push(GuardPath {
            path: path.clone(),
            level: Level::BaseConflict,
            a_ranges,
            b_ranges,
            detail: None,
            ignored: false,
            a_change: change_word(change, path),
            b_change: None,
            a_symbols,
            b_symbols,
        });
    }
    Ok(Some(BaseConflict {
        name: side.name.to_string(),
        base: base.to_string(),
        base_tip: tip.to_string(),
        paths,
        conflicting_paths: landing.outcome.conflicts.clone(),
    }))
}

/// The ranges the base branch changed at `path`, from the merge base tree
/// to its tip's (none for a file the merge base does not have).
fn base_ranges(
    repo: &Repository,
    caches: &mut Caches,
    merge_base_tree: Option<Oid>,
    tip_tree: Option<Oid>,
    path: &str,
) -> Result<Vec<LineRange>, GuardError> {
    let (Some(from), Some(to)) = (merge_base_tree, tip_tree) else {
        return Ok(Vec::new());
    };
    let old = blob_of(tree::entry_at(repo, from, path));
    let new = blob_of(tree::entry_at(repo, to, path));
    if old == new || old.is_none() {
        return Ok(Vec::new());
    }
    Ok(caches
        .hunks
        .hunks(repo, old, new)?
        .map(|h| h.iter().map(Hunk::base_range).collect())
        .unwrap_or_default())
}

/// The ranges of `x` that touch one of `y`, or all of `x` when none does.
fn touching(x: &[LineRange], y: &[LineRange]) -> Vec<LineRange> {
    let found: Vec<LineRange> = x
        .iter()
        .filter(|r| y.iter().any(|t| ranges_near(**r, *t, 0)))
        .copied()
        .collect();
    if found.is_empty() {
        x.to_vec()
    } else {
        found
    }
}
