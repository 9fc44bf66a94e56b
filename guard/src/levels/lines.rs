//! A pair's line coordinates: each side's hunks at a path, carried from
//! its own merge base into the pair's common one when the two differ, with
//! the text each hunk wrote (to tell identical edits apart).

use git2::{Oid, Repository};
use owt_protocol::guard::LineRange;

use super::super::changes::{Change, ChangeKind, Hunk, HunkCache};
use super::super::tree;
use super::super::GuardError;
use super::Side;

/// Lines of a text blob (empty for a missing or binary one).
fn blob_lines(repo: &Repository, id: Option<Oid>) -> Vec<Vec<u8>> {
    let Some(blob) = id.and_then(|id| super::super::big::small_blob(repo, id)) else {
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

pub(super) fn blob_of(entry: Option<tree::Entry>) -> Option<Oid> {
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
pub(super) struct SideHunks {
    pub(super) ranges: Vec<LineRange>,
    pub(super) texts: Vec<Vec<Vec<u8>>>,
}

/// The coordinates a pair's lines are counted in.
pub(super) struct Coordinates {
    /// `None`: both sides' own merge base.
    pub(super) lines_from: Option<(Oid, Oid)>,
}

pub(super) fn side_hunks(
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
