//! The three levels for one pair of participants, cheapest first:
//! `overlap` (a path both changed), `hunk-overlap` (changed line ranges that
//! intersect or are separated by at most one unchanged line) and `conflict`
//! (a real three-way merge of the two snapshots over their merge base
//! conflicts). Levels 2 and 3 run only for pairs that share a path, or where
//! one's file is the other's folder.
//!
//! Invariants: pure given the two sides' snapshots and changes (it reads
//! and writes only git objects); `[guard] ignore` hides overlaps below
//! `conflict`, never a conflict.

use std::collections::{BTreeMap, HashMap};

use git2::{Oid, Repository};
use globset::GlobSet;
use owt_protocol::guard::{GuardPair, GuardPath, Level, LineRange};

use super::changes::{ranges_near, Change, ChangeKind, Hunk, HunkCache};
use super::merge::{self, MergeOutcome};
use super::tree::{self, RawChange};
use super::GuardError;

/// Ranges this close (in unchanged lines between them) are a hunk-overlap.
/// One line apart still merges cleanly in git, which is why it is a warning
/// and not a conflict.
pub const HUNK_NEAR_LINES: u32 = 1;

/// One side of a pair.
#[derive(Debug, Clone, Copy)]
pub struct Side<'a> {
    pub name: &'a str,
    pub head: Option<Oid>,
    pub merge_base: Option<Oid>,
    pub merge_base_tree: Option<Oid>,
    pub snapshot: Oid,
    pub changes: &'a [Change],
    /// The tree diff from `merge_base_tree` to `snapshot`.
    pub raw: &'a [RawChange],
}

/// Merge verdicts by `(base tree, ours, theirs)`.
pub type MergeCache = HashMap<(Oid, Oid, Oid), MergeOutcome>;

fn touched(changes: &[Change]) -> BTreeMap<&str, &Change> {
    let mut map = BTreeMap::new();
    for change in changes {
        for path in change.paths() {
            map.insert(path, change);
        }
    }
    map
}

/// Paths of `a` that are a folder of a path of `b`.
fn folder_clashes<'a>(a: &BTreeMap<&'a str, &Change>, b: &BTreeMap<&str, &Change>) -> Vec<&'a str> {
    a.keys()
        .filter(|p| {
            let prefix = format!("{p}/");
            b.range(prefix.as_str()..)
                .next()
                .is_some_and(|(q, _)| q.starts_with(&prefix))
        })
        .copied()
        .collect()
}

fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// Paths `b` added in a folder `a` deleted (or moved) files from: git may
/// see a directory rename there and move `b`'s file (a conflict by
/// default).
fn moved_into_emptied_folder<'b>(a: &[Change], b: &'b [Change]) -> Vec<&'b str> {
    let emptied: std::collections::BTreeSet<&str> = a
        .iter()
        .filter_map(|c| match c.kind {
            ChangeKind::Deleted => Some(parent(&c.path)),
            ChangeKind::Renamed => c.old_path.as_deref().map(parent),
            _ => None,
        })
        // git never renames the top folder.
        .filter(|dir| !dir.is_empty())
        .collect();
    if emptied.is_empty() {
        return Vec::new();
    }
    b.iter()
        .filter(|c| matches!(c.kind, ChangeKind::Added | ChangeKind::Renamed))
        .filter(|c| emptied.contains(parent(&c.path)))
        .map(|c| c.path.as_str())
        .collect()
}

/// The pair's report, or `None` when they share nothing worth saying.
pub fn compare(
    repo: &Repository,
    ignore: &GlobSet,
    a: &Side<'_>,
    b: &Side<'_>,
    hunk_cache: &mut HunkCache,
    merges: &mut MergeCache,
) -> Result<Option<GuardPair>, GuardError> {
    let a_touched = touched(a.changes);
    let b_touched = touched(b.changes);
    let mut candidates: BTreeMap<String, Option<&'static str>> = BTreeMap::new();
    for path in a_touched.keys() {
        if b_touched.contains_key(path) {
            candidates.insert(path.to_string(), None);
        }
    }
    for path in folder_clashes(&a_touched, &b_touched)
        .into_iter()
        .chain(folder_clashes(&b_touched, &a_touched))
    {
        candidates.insert(path.to_string(), Some("file/directory"));
    }
    for path in moved_into_emptied_folder(a.changes, b.changes)
        .into_iter()
        .chain(moved_into_emptied_folder(b.changes, a.changes))
    {
        candidates
            .entry(path.to_string())
            .or_insert(Some("directory rename"));
    }
    if candidates.is_empty() {
        return Ok(None);
    }
    // The pair's own merge base: both sides' hunks are compared in its
    // coordinates.
    let same_base = a.merge_base == b.merge_base;
    let base_tree = if same_base {
        a.merge_base_tree
    } else {
        match (a.head, b.head) {
            (Some(ha), Some(hb)) => match repo.merge_base(ha, hb) {
                Ok(id) => Some(repo.find_commit(id)?.tree_id()),
                Err(_) => None,
            },
            _ => None,
        }
    };
    let base_tree = match base_tree {
        Some(t) => t,
        None => tree::empty_tree(repo)?,
    };
    let side_hunks = |side: &Side<'_>,
                      path: &str,
                      touched: &BTreeMap<&str, &Change>,
                      cache: &mut HunkCache|
     -> Result<Option<Vec<Hunk>>, GuardError> {
        if same_base {
            return Ok(touched
                .get(path)
                .filter(|c| c.path == path && !c.binary)
                .map(|c| c.hunks.clone()));
        }
        let blob = |e: Option<tree::Entry>| e.filter(|e| e.1 & 0o170000 == 0o100000).map(|e| e.0);
        let old = blob(tree::entry_at(repo, base_tree, path));
        let new = blob(tree::entry_at(repo, side.snapshot, path));
        if old == new {
            return Ok(Some(Vec::new()));
        }
        cache.hunks(repo, old, new)
    };
    let (first, second) = if a.snapshot <= b.snapshot {
        (a, b)
    } else {
        (b, a)
    };
    let key = (base_tree, first.snapshot, second.snapshot);
    let outcome = match merges.get(&key) {
        Some(found) => found.clone(),
        None => {
            let diffs = same_base.then_some((first.raw, second.raw));
            let outcome = merge::merge_trees_with_diffs(repo, key.0, key.1, key.2, diffs, false)?;
            if merges.len() > 10_000 {
                merges.clear();
            }
            merges.insert(key, outcome.clone());
            outcome
        }
    };
    for path in &outcome.conflicts {
        candidates.entry(path.clone()).or_insert(None);
    }
    let mut paths = Vec::new();
    let clean = outcome.clean;
    for (path, clash) in candidates {
        let conflicting = outcome.conflicts.contains(&path);
        let ignored = ignore.is_match(&path);
        if ignored && !conflicting {
            continue;
        }
        let a_change = a_touched.get(path.as_str()).copied();
        let b_change = b_touched.get(path.as_str()).copied();
        let a_hunks = side_hunks(a, &path, &a_touched, hunk_cache)?;
        let b_hunks = side_hunks(b, &path, &b_touched, hunk_cache)?;
        let ranges = |h: &Option<Vec<Hunk>>| -> Vec<LineRange> {
            h.as_ref()
                .map(|h| h.iter().map(Hunk::base_range).collect())
                .unwrap_or_default()
        };
        let (a_all, b_all) = (ranges(&a_hunks), ranges(&b_hunks));
        let near = |mine: &[LineRange], theirs: &[LineRange], gap: u32| -> Vec<LineRange> {
            mine.iter()
                .filter(|r| theirs.iter().any(|t| ranges_near(**r, *t, gap)))
                .copied()
                .collect()
        };
        let a_near = near(&a_all, &b_all, HUNK_NEAR_LINES);
        let b_near = near(&b_all, &a_all, HUNK_NEAR_LINES);
        let (level, a_ranges, b_ranges) = if conflicting {
            let a_c = near(&a_all, &b_all, 0);
            let b_c = near(&b_all, &a_all, 0);
            (
                Level::Conflict,
                if a_c.is_empty() { a_all } else { a_c },
                if b_c.is_empty() { b_all } else { b_c },
            )
        } else if !a_near.is_empty() {
            (Level::HunkOverlap, a_near, b_near)
        } else {
            (Level::Overlap, a_all, b_all)
        };
        let detail = clash
            .map(str::to_string)
            .or_else(|| detail_of(&path, a_change, b_change));
        paths.push(GuardPath {
            path,
            level,
            a_ranges,
            b_ranges,
            detail,
            ignored,
        });
    }
    if paths.is_empty() {
        return Ok(None);
    }
    let mut level = paths
        .iter()
        .map(|p| p.level)
        .max()
        .unwrap_or(Level::Overlap);
    if !clean {
        level = Level::Conflict;
    }
    Ok(Some(GuardPair {
        a: a.name.to_string(),
        b: b.name.to_string(),
        level,
        paths,
        conflicting_paths: outcome.conflicts,
    }))
}

fn detail_of(path: &str, a: Option<&Change>, b: Option<&Change>) -> Option<String> {
    let (a, b) = (a?, b?);
    let is_rename = |c: &Change| c.kind == ChangeKind::Renamed;
    let deleted_here = |c: &Change| {
        c.kind == ChangeKind::Deleted || (c.kind == ChangeKind::Renamed && c.path != path)
    };
    Some(
        if is_rename(a) || is_rename(b) {
            if deleted_here(a) && deleted_here(b) {
                "rename/rename"
            } else {
                "rename"
            }
        } else if deleted_here(a) && deleted_here(b) {
            "delete/delete"
        } else if deleted_here(a) || deleted_here(b) {
            "edit/delete"
        } else if a.binary || b.binary {
            "binary"
        } else if a.kind == ChangeKind::Added && b.kind == ChangeKind::Added {
            "added on both sides"
        } else if a.kind == ChangeKind::ModeChanged || b.kind == ChangeKind::ModeChanged {
            "mode"
        } else {
            return None;
        }
        .to_string(),
    )
}
