//! A selection on the base side of a review diff, carried onto the
//! agent's copy: lines outside every hunk move by the lines the hunks
//! above them added or removed; a line inside a hunk goes to that hunk's
//! agent lines (a context line to itself, a changed line to the lines
//! that replaced it, a removed line with no replacement to the agent line
//! where it was removed), clamped to the agent's file. One place for the
//! editors (`owt.comment` with `side: "base"`).

use anyhow::Context as _;
use owt_protocol::review::DiffHunk;

use super::{check_relative, scan};
use crate::guard::patch;
use crate::ops::Context;

/// Base lines `start..=end` of a file, carried onto the agent's copy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseSelection {
    /// 1-based, inclusive, in the agent's copy.
    pub start_line: u32,
    pub end_line: u32,
    /// The base's lines `start..=end`, as selected.
    pub base_text: String,
}

/// The agent lines (first, last) base line `line` maps to in `hunks`
/// (sorted, as git gives them); `None` when it is outside every hunk.
fn in_hunk(hunk: &DiffHunk, line: u32) -> Option<(u32, u32)> {
    let at = hunk.lines.iter().position(|l| l.old_line == Some(line))?;
    if let Some(n) = hunk.lines[at].new_line {
        return Some((n, n));
    }
    // A removed line: the run of changed lines around it.
    let changed = |i: &usize| hunk.lines[*i].origin != " ";
    let first = (0..at).rev().take_while(changed).last().unwrap_or(at);
    let last = (at + 1..hunk.lines.len())
        .take_while(changed)
        .last()
        .unwrap_or(at);
    let added: Vec<u32> = hunk.lines[first..=last]
        .iter()
        .filter_map(|l| l.new_line)
        .collect();
    if let (Some(a), Some(b)) = (added.first(), added.last()) {
        return Some((*a, *b));
    }
    // Removed with nothing in its place: where it was (the agent line
    // after the removal).
    let before = hunk.lines[..first].iter().rev().find_map(|l| l.new_line);
    // (git's `+N,0` names the line before the removal.)
    let start = if hunk.new_lines == 0 {
        hunk.new_start + 1
    } else {
        hunk.new_start
    };
    let point = before.map_or(start, |n| n + 1);
    Some((point, point))
}

/// Maps base lines `start..=end` onto the agent's lines through `hunks`,
/// clamped to `agent_len` lines (at least 1).
pub fn map_base_range(hunks: &[DiffHunk], start: u32, end: u32, agent_len: u32) -> (u32, u32) {
    let one = |line: u32| -> (u32, u32) {
        let mut shift: i64 = 0;
        for h in hunks {
            if let Some(m) = in_hunk(h, line) {
                return m;
            }
            if h.old_start + h.old_lines <= line || (h.old_lines == 0 && h.old_start < line) {
                shift += i64::from(h.new_lines) - i64::from(h.old_lines);
            }
        }
        let n = (i64::from(line) + shift).max(1) as u32;
        (n, n)
    };
    let last = agent_len.max(1);
    let (a, _) = one(start);
    let (_, b) = one(end);
    let (a, b) = (a.min(b), a.max(b));
    (a.clamp(1, last), b.clamp(1, last))
}

/// `owt.comment` with `side: "base"`: base lines `start..=end` of `path`
/// (the agent's path; the old one of a rename is read for the base) of
/// `name`'s review, carried onto the agent's copy, with the base text.
pub fn base_selection(
    ctx: &Context,
    name: &str,
    path: &str,
    start: u32,
    end: u32,
) -> anyhow::Result<BaseSelection> {
    check_relative(path)?;
    if start == 0 || end < start {
        anyhow::bail!("bad line range {start}-{end} (lines count from 1; START ≤ END)");
    }
    let row = ctx.session(name)?;
    let state = scan(ctx, &row)?;
    let repo = state.repo();
    let snapshot = state
        .snapshot
        .with_context(|| format!("no snapshot of {}", row.name))?;
    let mut files = patch::file_diffs(repo, state.merge_base_tree, snapshot, Some(path), true)?;
    if files
        .iter()
        .any(|f| f.path == path && f.base_blob.is_none())
    {
        // Maybe renamed: a diff of `path` alone cannot see its old path.
        files = patch::file_diffs(repo, state.merge_base_tree, snapshot, None, true)?;
    }
    let file = files.iter().find(|f| f.path == path);
    let blob_text = |id: &str| -> anyhow::Result<String> {
        let blob = repo.find_blob(git2::Oid::from_str(id)?)?;
        Ok(String::from_utf8_lossy(blob.content()).into_owned())
    };
    let in_tree = |tree: git2::Oid| -> Option<String> {
        let tree = repo.find_tree(tree).ok()?;
        Some(
            tree.get_path(std::path::Path::new(path))
                .ok()?
                .id()
                .to_string(),
        )
    };
    let (base_blob, agent_blob, hunks) = match file {
        Some(f) => (
            f.base_blob.clone(),
            f.agent_blob.clone(),
            f.hunks.as_slice(),
        ),
        None => {
            let same = state.merge_base_tree.and_then(in_tree);
            (same.clone(), same, &[][..])
        }
    };
    let base_blob = base_blob
        .with_context(|| format!("{path} is new in {name}: the base has no version of it"))?;
    let agent_blob = agent_blob.with_context(|| {
        format!("{name} deleted {path}: there is no copy of it to change (comment on another file)")
    })?;
    let base = blob_text(&base_blob)?;
    let base_lines: Vec<&str> = base.lines().collect();
    if end as usize > base_lines.len() {
        anyhow::bail!(
            "the base version of {path} has {} lines; line {end} is past its end",
            base_lines.len()
        );
    }
    let agent_len = blob_text(&agent_blob)?.lines().count() as u32;
    if agent_len == 0 {
        anyhow::bail!("{name}'s copy of {path} is empty: there are no lines to comment on");
    }
    let (start_line, end_line) = map_base_range(hunks, start, end, agent_len);
    Ok(BaseSelection {
        start_line,
        end_line,
        base_text: base_lines[start as usize - 1..end as usize].join("\n"),
    })
}

/// The comment's text with what was selected on the base side, so the
/// agent knows: `(on the base version, lines 3-4:\n    …)\ntext`.
pub fn base_note(start: u32, end: u32, base_text: &str, text: &str) -> String {
    let lines = if start == end {
        format!("line {start}")
    } else {
        format!("lines {start}-{end}")
    };
    let mut out = format!("(on the base version, {lines}:");
    for l in base_text.lines() {
        out.push_str(&format!("\n    {l}"));
    }
    out.push_str(&format!(")\n{}", text.trim()));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use owt_protocol::review::DiffLine;

    fn line(origin: &str, old: Option<u32>, new: Option<u32>) -> DiffLine {
        DiffLine {
            origin: origin.into(),
            text: String::new(),
            old_line: old,
            new_line: new,
            no_newline: false,
        }
    }

    /// Base 1..=10; the agent replaced line 3 by two lines and removed
    /// line 8 (hunks without context, as the mapping must not rely on it).
    fn hunks() -> Vec<DiffHunk> {
        vec![
            DiffHunk {
                header: String::new(),
                old_start: 3,
                old_lines: 1,
                new_start: 3,
                new_lines: 2,
                lines: vec![
                    line("-", Some(3), None),
                    line("+", None, Some(3)),
                    line("+", None, Some(4)),
                ],
            },
            DiffHunk {
                header: String::new(),
                old_start: 8,
                old_lines: 1,
                new_start: 8,
                new_lines: 0,
                lines: vec![line("-", Some(8), None)],
            },
        ]
    }

    #[test]
    fn lines_map_through_the_hunks() {
        let h = hunks();
        assert_eq!(map_base_range(&h, 1, 2, 10), (1, 2), "above every hunk");
        assert_eq!(map_base_range(&h, 3, 3, 10), (3, 4), "a replaced line");
        assert_eq!(
            map_base_range(&h, 5, 6, 10),
            (6, 7),
            "below a hunk that added"
        );
        assert_eq!(
            map_base_range(&h, 8, 8, 10),
            (9, 9),
            "a removed line: where it was"
        );
        assert_eq!(map_base_range(&h, 9, 10, 10), (9, 10), "below both");
        assert_eq!(map_base_range(&h, 2, 9, 10), (2, 9), "a range across");
        assert_eq!(map_base_range(&h, 10, 10, 9), (9, 9), "clamped to the file");
    }
}
