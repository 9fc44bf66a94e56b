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
use owt_protocol::guard::{BaseConflict, GuardPair, GuardPath, Level, LineRange};

use super::changes::{ranges_near, Change, ChangeKind, Hunk, HunkCache};
use super::merge::MergeOutcome;
use super::symbols::{self, SymbolIndex};
use super::tree::{self, RawChange};
use super::verdict::{self, Caches, Landing};
use super::GuardError;

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

/// Lines of a text blob (empty for a missing or binary one).
fn blob_lines(repo: &Repository, id: Option<Oid>) -> Vec<Vec<u8>> {
    let Some(blob) = id.and_then(|id| repo.find_blob(id).ok()) else {
        return Vec::new();
    };
    if blob.is_binary() {
        return Vec::new();
    }
    blob.content()
        .split_inclusive(|b| *b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

fn blob_of(entry: Option<tree::Entry>) -> Option<Oid> {
    entry.filter(|e| e.1 & 0o170000 == 0o100000).map(|e| e.0)
}

/// A boundary between lines ("before line `b`", 1-based) of a file carried
/// through `diff`'s hunks into the new file. Inside a changed region a
/// start goes to the region's start and an end to its end.
fn map_boundary(b: u32, diff: &[Hunk], is_end: bool) -> u32 {
    let mut delta: i64 = 0;
    for h in diff {
        let (os, oe) = if h.old_lines == 0 {
            (h.old_start + 1, h.old_start + 1)
        } else {
            (h.old_start, h.old_start + h.old_lines)
        };
        let (ns, ne) = if h.new_lines == 0 {
            (h.new_start + 1, h.new_start + 1)
        } else {
            (h.new_start, h.new_start + h.new_lines)
        };
        let before = if is_end {
            oe < b || (oe == b && os < oe)
        } else {
            oe <= b
        };
        if before {
            delta = i64::from(ne) - i64::from(oe);
            continue;
        }
        if os < b && b < oe {
            return if is_end { ne } else { ns };
        }
        break;
    }
    (i64::from(b) + delta).max(1) as u32
}

/// A base range carried through `diff` (base → other base).
fn map_range(range: LineRange, diff: &[Hunk]) -> LineRange {
    let start = map_boundary(range.start, diff, false);
    let end = map_boundary(range.start + range.lines, diff, true);
    LineRange {
        start,
        lines: end.saturating_sub(start),
    }
}

/// One side's hunks at a path, in the pair's coordinates, each with the
/// text it wrote.
struct SideHunks {
    ranges: Vec<LineRange>,
    texts: Vec<Vec<Vec<u8>>>,
}

/// The coordinates a pair's lines are counted in.
struct Coordinates {
    /// `None`: both sides' own merge base.
    lines_from: Option<(Oid, Oid)>,
}

fn side_hunks(
    repo: &Repository,
    hunks: &mut HunkCache,
    coordinates: &Coordinates,
    side: &Side<'_>,
    change: Option<&Change>,
    path: &str,
    with_text: bool,
) -> Result<SideHunks, GuardError> {
    let mut out = SideHunks {
        ranges: Vec::new(),
        texts: Vec::new(),
    };
    let Some(change) = change.filter(|c| !c.binary && c.kind != ChangeKind::Added) else {
        return Ok(out);
    };
    // A rename's old path: its edits count there, in the old coordinates.
    let own: Vec<Hunk> = change.hunks.clone();
    let diff = match (coordinates.lines_from, side.merge_base_tree) {
        (Some((_, tree)), Some(own_tree)) if tree != own_tree => {
            let old_path = change.old_path.as_deref().unwrap_or(path);
            let from = blob_of(tree::entry_at(repo, own_tree, old_path));
            let to = blob_of(tree::entry_at(repo, tree, old_path));
            if from == to {
                None
            } else {
                hunks.hunks(repo, from, to)?
            }
        }
        _ => None,
    };
    let lines = if with_text {
        blob_lines(repo, blob_of(change.new))
    } else {
        Vec::new()
    };
    for h in &own {
        let range = h.base_range();
        out.ranges.push(match &diff {
            Some(diff) => map_range(range, diff),
            None => range,
        });
        if with_text {
            let from = h.new_start.saturating_sub(1) as usize;
            let to = (from + h.new_lines as usize).min(lines.len());
            out.texts
                .push(lines.get(from.min(to)..to).unwrap_or_default().to_vec());
        }
    }
    Ok(out)
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
    let verdict = pair_verdict(repo, caches, a, b)?;
    for path in &verdict.conflicts {
        candidates.entry(path.clone()).or_insert(None);
    }
    let notes = semantic(repo, &mut caches.symbols, a, b);
    if candidates.is_empty() && notes.is_empty() {
        return Ok(None);
    }
    // The pair's coordinates: the shared merge base, or their best common
    // ancestor with each side's own hunks carried into it.
    let coordinates = if a.merge_base_tree == b.merge_base_tree {
        Coordinates { lines_from: None }
    } else {
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
        Coordinates {
            lines_from: Some((common.unwrap_or_else(Oid::zero), tree)),
        }
    };
    let mut paths = Vec::new();
    for (path, clash) in candidates {
        let conflicting = verdict.conflicts.contains(&path);
        let ignored = ignore.is_match(&path);
        if ignored && !conflicting {
            continue;
        }
        let a_change = a_touched.get(path.as_str()).copied();
        let b_change = b_touched.get(path.as_str()).copied();
        let same_entry = match (a_change, b_change) {
            (Some(x), Some(y)) => {
                let entry = |c: &Change| if c.path == path { c.new } else { None };
                entry(x) == entry(y) && (x.path == path) == (y.path == path)
            }
            _ => false,
        };
        let a_h = side_hunks(
            repo,
            &mut caches.hunks,
            &coordinates,
            a,
            a_change,
            &path,
            true,
        )?;
        let b_h = side_hunks(
            repo,
            &mut caches.hunks,
            &coordinates,
            b,
            b_change,
            &path,
            true,
        )?;
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
        let (level, a_ranges, b_ranges) = if conflicting {
            let a_c = near(&a_own, &b_own, 0);
            let b_c = near(&b_own, &a_own, 0);
            (
                Level::Conflict,
                if a_c.is_empty() { a_own } else { a_c },
                if b_c.is_empty() { b_own } else { b_c },
            )
        } else if same_entry || all_shared {
            (Level::SameChange, a_h.ranges.clone(), b_h.ranges.clone())
        } else if !a_near.is_empty() {
            (Level::HunkOverlap, a_near, b_near)
        } else {
            (Level::Overlap, a_own, b_own)
        };
        if ignored && level == Level::SameChange {
            continue;
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
        paths.push(GuardPath {
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
        });
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

/// The `semantic` notes of a pair (empty when the symbol index is off).
fn semantic(
    repo: &Repository,
    index: &mut SymbolIndex,
    a: &Side<'_>,
    b: &Side<'_>,
) -> Vec<owt_protocol::guard::SemanticNote> {
    let side =
        |s: &Side<'_>| -> (Oid, Oid) { (s.merge_base_tree.unwrap_or_else(Oid::zero), s.snapshot) };
    index.semantic(
        repo,
        &symbols::SideRef {
            name: a.name,
            key: side(a),
            changes: a.changes,
        },
        &symbols::SideRef {
            name: b.name,
            key: side(b),
            changes: b.changes,
        },
    )
}

/// The symbols enclosing each side's ranges at `path`, as the file is in
/// `tree` (the tree the ranges count in); none when the index is off, the
/// language unknown or the file absent there.
fn symbols_of(
    repo: &Repository,
    index: &mut SymbolIndex,
    tree: Option<Oid>,
    path: &str,
    changes: [Option<&Change>; 2],
    ranges: [&[LineRange]; 2],
) -> (Vec<String>, Vec<String>) {
    if !index.enabled {
        return (Vec::new(), Vec::new());
    }
    // A rename's lines count at its old path.
    let old_path = changes
        .iter()
        .flatten()
        .find(|c| c.path == path)
        .and_then(|c| c.old_path.as_deref())
        .unwrap_or(path);
    let blob = tree.and_then(|t| blob_of(tree::entry_at(repo, t, old_path)));
    let Some(file) = index.of_path(repo, blob, old_path) else {
        return (Vec::new(), Vec::new());
    };
    let labels = |ranges: &[LineRange]| -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for range in ranges {
            for symbol in file.enclosing(*range) {
                let label = symbol.label();
                if !out.contains(&label) {
                    out.push(label);
                }
            }
        }
        out
    };
    (labels(ranges[0]), labels(ranges[1]))
}

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
        let theirs: Vec<LineRange> = match (side.merge_base_tree, tip_tree) {
            (Some(from), Some(to)) => {
                let old = blob_of(tree::entry_at(repo, from, path));
                let new = blob_of(tree::entry_at(repo, to, path));
                if old == new || old.is_none() {
                    Vec::new()
                } else {
                    caches
                        .hunks
                        .hunks(repo, old, new)?
                        .map(|h| h.iter().map(Hunk::base_range).collect())
                        .unwrap_or_default()
                }
            }
            _ => Vec::new(),
        };
        let near = |x: &[LineRange], y: &[LineRange]| -> Vec<LineRange> {
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
        };
        let (a_ranges, b_ranges) = (near(&mine, &theirs), near(&theirs, &mine));
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
