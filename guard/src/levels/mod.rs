//! The levels for one pair of participants, least first: `same-change`
//! (both made the very same change), `overlap` (a path both changed),
//! `hunk-overlap` (changed line ranges that intersect or are separated by
//! at most one unchanged line), `semantic` (one changed a signature the
//! other's changes use) and `conflict` (merging one's state after the
//! other's into the base conflicts, in either order; see
//! [`super::verdict`]). And, per participant, `base-conflict`: its state
//! does not merge into its base's tip.
//!
//! Lines are compared as each agent changed them: every side's own hunks
//! (from its merge base with its base branch), carried into the pair's
//! common coordinates when the two merge bases differ, so history neither
//! agent wrote is never counted as theirs.
//!
//! Invariants: pure given the two sides' snapshots and changes (it reads
//! and writes only git objects); `[guard] ignore` hides overlaps below
//! `conflict`, never a conflict.

use std::collections::{BTreeMap, BTreeSet};

use git2::{Oid, Repository};
use globset::GlobSet;
use owt_protocol::guard::{GuardPair, GuardPath, Level, LineRange};

use super::changes::{ranges_near, Change, ChangeKind};
use super::merge::MergeOutcome;
use super::tree::{self, RawChange};
use super::verdict::{self, Caches, Landing};
use super::GuardError;

mod base;
mod lines;
mod semantic;

pub use base::base_conflict;
use lines::{side_hunks, Coordinates, SideHunks};
use semantic::{semantic, symbols_of};

/// Ranges this close (in unchanged lines between them) are a hunk-overlap.
/// One line apart still merges cleanly in git, which is why it is a warning
/// and not a conflict.
pub const HUNK_NEAR_LINES: u32 = 1;

/// One side of a pair.
#[derive(Clone, Copy)]
pub struct Side<'a> {
    pub name: &'a str,
    pub head: Option<Oid>,
    pub base_tip: Option<Oid>,
    pub merge_base: Option<Oid>,
    pub merge_base_tree: Option<Oid>,
    pub snapshot: Oid,
    pub changes: &'a [Change],
    /// The tree diff from `merge_base_tree` to `snapshot`.
    pub raw: &'a [RawChange],
    pub landing: &'a Landing,
}

impl Side<'_> {
    fn state(&self) -> verdict::State {
        verdict::State {
            head: self.head,
            base_tip: self.base_tip,
            snapshot: self.snapshot,
        }
    }
}

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
    let emptied: BTreeSet<&str> = a
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

/// The pair's verdict: both orders merged, or none while a side conflicts
/// with its own base.
struct PairVerdict {
    clean: bool,
    conflicts: BTreeSet<String>,
    orders: Vec<[String; 2]>,
    not_merged: Vec<String>,
}

fn pair_verdict(
    repo: &Repository,
    caches: &mut Caches,
    a: &Side<'_>,
    b: &Side<'_>,
) -> Result<PairVerdict, GuardError> {
    let not_merged: Vec<String> = [a, b]
        .iter()
        .filter(|s| !s.landing.clean())
        .map(|s| s.name.to_string())
        .collect();
    let mut verdict = PairVerdict {
        clean: true,
        conflicts: BTreeSet::new(),
        orders: Vec::new(),
        not_merged,
    };
    if !verdict.not_merged.is_empty() {
        return Ok(verdict);
    }
    let (sa, sb) = (a.state(), b.state());
    for (first, second, x, y) in [(a, b, &sa, &sb), (b, a, &sb, &sa)] {
        let outcome: MergeOutcome =
            verdict::after(repo, caches, (x, first.landing), (y, second.landing))?;
        if !outcome.clean {
            verdict.clean = false;
            verdict.conflicts.extend(outcome.conflicts);
            verdict
                .orders
                .push([first.name.to_string(), second.name.to_string()]);
        }
    }
    Ok(verdict)
}

fn change_word(change: Option<&Change>, path: &str) -> Option<String> {
    let change = change?;
    Some(
        match change.kind {
            ChangeKind::Added => "added",
            ChangeKind::Deleted => "deleted",
            ChangeKind::Renamed if change.path == path => "renamed here",
            ChangeKind::Renamed => "renamed away",
            ChangeKind::ModeChanged => "mode",
            ChangeKind::TypeChanged => "type",
            ChangeKind::Modified if change.binary => "binary",
            ChangeKind::Modified => return None,
        }
        .to_string(),
    )
}

/// The pair's report, or `None` when they share nothing worth saying.
pub fn compare(
    repo: &Repository,
    ignore: &GlobSet,
    a: &Side<'_>,
    b: &Side<'_>,
    caches: &mut Caches,
) -> Result<Option<GuardPair>, GuardError> {
    let a_touched = touched(a.changes);
    let b_touched = touched(b.changes);
    let mut candidates = candidates(a, b, &a_touched, &b_touched);
    let verdict = pair_verdict(repo, caches, a, b)?;
    for path in &verdict.conflicts {
        candidates.entry(path.clone()).or_insert(None);
    }
    let notes = semantic(repo, &mut caches.symbols, a, b);
    if candidates.is_empty() && notes.is_empty() {
        return Ok(None);
    }
    let coordinates = coordinates(repo, caches, a, b)?;
    let mut paths = Vec::new();
    for (path, clash) in candidates {
        let conflicting = verdict.conflicts.contains(&path);
        let ignored = ignore.is_match(&path);
        if ignored && !conflicting {
            continue;
        }
        let candidate = Candidate {
            a_change: a_touched.get(path.as_str()).copied(),
            b_change: b_touched.get(path.as_str()).copied(),
            path,
            clash,
            conflicting,
            ignored,
        };
        if let Some(report) = path_report(repo, caches, &coordinates, a, b, candidate)? {
            paths.push(report);
        }
    }
    if paths.is_empty() && notes.is_empty() {
        return Ok(None);
    }
    let mut level = paths
        .iter()
        .map(|p| p.level)
        .max()
        .unwrap_or(Level::Overlap);
    if !notes.is_empty() && level < Level::Semantic {
        level = Level::Semantic;
    }
    if !verdict.clean {
        level = Level::Conflict;
    }
    Ok(Some(GuardPair {
        a: a.name.to_string(),
        b: b.name.to_string(),
        level,
        paths,
        conflicting_paths: verdict.conflicts.into_iter().collect(),
        conflicting_orders: verdict.orders,
        not_merged: verdict.not_merged,
        lines_from: coordinates
            .lines_from
            .map(|(commit, _)| commit)
            .filter(|c| !c.is_zero())
            .map(|c| c.to_string()),
        semantic: notes,
    }))
}

/// The paths worth a look: changed by both sides, a file on one side and
/// a folder on the other, or added into a folder the other emptied (each
/// with the name of such a clash).
fn candidates(
    a: &Side<'_>,
    b: &Side<'_>,
    a_touched: &BTreeMap<&str, &Change>,
    b_touched: &BTreeMap<&str, &Change>,
) -> BTreeMap<String, Option<&'static str>> {
    let mut candidates: BTreeMap<String, Option<&'static str>> = BTreeMap::new();
    for path in a_touched.keys() {
        if b_touched.contains_key(path) {
            candidates.insert(path.to_string(), None);
        }
    }
    for path in folder_clashes(a_touched, b_touched)
        .into_iter()
        .chain(folder_clashes(b_touched, a_touched))
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
    candidates
}

/// The pair's coordinates: the shared merge base, or their best common
/// ancestor with each side's own hunks carried into it.
fn coordinates(
    repo: &Repository,
    caches: &mut Caches,
    a: &Side<'_>,
    b: &Side<'_>,
) -> Result<Coordinates, GuardError> {
    if a.merge_base_tree == b.merge_base_tree {
        return Ok(Coordinates { lines_from: None });
    }
    let common = match (a.head, b.head) {
        (Some(ha), Some(hb)) => caches
            .history
            .merge_bases(repo, ha, &[hb])?
            .first()
            .copied(),
        _ => None,
    };
    let tree = match common {
        Some(id) => repo.find_commit(id)?.tree_id(),
        None => tree::empty_tree(repo)?,
    };
    Ok(Coordinates {
        lines_from: Some((common.unwrap_or_else(Oid::zero), tree)),
    })
}

/// A path of the pair to report on, with what each side did there.
struct Candidate<'c> {
    path: String,
    /// The clash that made it a candidate, when not both changing it.
    clash: Option<&'static str>,
    a_change: Option<&'c Change>,
    b_change: Option<&'c Change>,
    conflicting: bool,
    ignored: bool,
}

/// One path's report, or `None` for an ignored path both sides changed the
/// same way.
fn path_report(
    repo: &Repository,
    caches: &mut Caches,
    coordinates: &Coordinates,
    a: &Side<'_>,
    b: &Side<'_>,
    candidate: Candidate<'_>,
) -> Result<Option<GuardPath>, GuardError> {
    let Candidate {
        path,
        clash,
        a_change,
        b_change,
        conflicting,
        ignored,
    } = candidate;
    let same_entry = match (a_change, b_change) {
        (Some(x), Some(y)) => {
            let entry = |c: &Change| if c.path == path { c.new } else { None };
            entry(x) == entry(y) && (x.path == path) == (y.path == path)
        }
        _ => false,
    };
    let hunks = &mut caches.hunks;
    let a_h = side_hunks(repo, hunks, coordinates, a, a_change, &path, true)?;
    let b_h = side_hunks(repo, hunks, coordinates, b, b_change, &path, true)?;
    let (level, a_ranges, b_ranges) = level_and_ranges(a_h, b_h, conflicting, same_entry);
    if ignored && level == Level::SameChange {
        return Ok(None);
    }
    let detail = clash
        .map(str::to_string)
        .or_else(|| detail_of(&path, a_change, b_change, level));
    // Symbols of the lines in the pair's coordinates: the file as it is
    // in the tree those lines count in.
    let coordinate_tree = coordinates
        .lines_from
        .map(|(_, tree)| tree)
        .or(a.merge_base_tree);
    let (a_symbols, b_symbols) = symbols_of(
        repo,
        &mut caches.symbols,
        coordinate_tree,
        &path,
        [a_change, b_change],
        [&a_ranges, &b_ranges],
    );
    Ok(Some(GuardPath {
        a_change: change_word(a_change, &path),
        b_change: change_word(b_change, &path),
        path,
        level,
        a_ranges,
        b_ranges,
        detail,
        ignored,
        a_symbols,
        b_symbols,
    }))
}

/// A path's level and the ranges of each side that show it.
fn level_and_ranges(
    a_h: SideHunks,
    b_h: SideHunks,
    conflicting: bool,
    same_entry: bool,
) -> (Level, Vec<LineRange>, Vec<LineRange>) {
    // Hunks both wrote identically (same lines replaced by the same
    // text) are not an overlap: git takes them once.
    let shared = |mine: &SideHunks, theirs: &SideHunks, i: usize| {
        (0..theirs.ranges.len())
            .any(|j| theirs.ranges[j] == mine.ranges[i] && theirs.texts[j] == mine.texts[i])
    };
    let a_own: Vec<LineRange> = (0..a_h.ranges.len())
        .filter(|i| !shared(&a_h, &b_h, *i))
        .map(|i| a_h.ranges[i])
        .collect();
    let b_own: Vec<LineRange> = (0..b_h.ranges.len())
        .filter(|i| !shared(&b_h, &a_h, *i))
        .map(|i| b_h.ranges[i])
        .collect();
    let near = |mine: &[LineRange], theirs: &[LineRange], gap: u32| -> Vec<LineRange> {
        mine.iter()
            .filter(|r| theirs.iter().any(|t| ranges_near(**r, *t, gap)))
            .copied()
            .collect()
    };
    let a_near = near(&a_own, &b_own, HUNK_NEAR_LINES);
    let b_near = near(&b_own, &a_own, HUNK_NEAR_LINES);
    let all_shared = !a_h.ranges.is_empty() && a_own.is_empty() && b_own.is_empty();
    if conflicting {
        let a_c = near(&a_own, &b_own, 0);
        let b_c = near(&b_own, &a_own, 0);
        (
            Level::Conflict,
            if a_c.is_empty() { a_own } else { a_c },
            if b_c.is_empty() { b_own } else { b_c },
        )
    } else if same_entry || all_shared {
        (Level::SameChange, a_h.ranges, b_h.ranges)
    } else if !a_near.is_empty() {
        (Level::HunkOverlap, a_near, b_near)
    } else {
        (Level::Overlap, a_own, b_own)
    }
}

fn detail_of(path: &str, a: Option<&Change>, b: Option<&Change>, level: Level) -> Option<String> {
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
            "deleted on both sides"
        } else if deleted_here(a) || deleted_here(b) {
            "edit/delete"
        } else if a.binary && b.binary {
            "binary file changed on both sides"
        } else if a.binary || b.binary {
            "binary"
        } else if a.kind == ChangeKind::Added && b.kind == ChangeKind::Added {
            if level == Level::SameChange {
                "the same new file on both sides"
            } else {
                "new file on both sides"
            }
        } else if a.kind == ChangeKind::ModeChanged || b.kind == ChangeKind::ModeChanged {
            "mode"
        } else {
            return None;
        }
        .to_string(),
    )
}
