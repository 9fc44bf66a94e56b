//! The edits that turn one version of a file into another, as tree-sitter
//! takes them ([`InputEdit`]) to re-parse the new version incrementally
//! from the old one's tree.
//!
//! Invariants: applying the edits in the order given to a tree of `old`
//! describes `new` exactly (every byte outside them is equal in both and
//! keeps its place relative to them); pure; bounded time (a diff over its
//! deadline falls back to one edit spanning every difference).

use std::time::{Duration, Instant};

use similar::{Algorithm, DiffOp};
use tree_sitter::{InputEdit, Point};

/// The longest the line diff between two versions may take.
const DIFF_DEADLINE: Duration = Duration::from_millis(20);

/// Differing parts this small are one edit (no line diff).
const ONE_EDIT_BYTES: usize = 4096;

/// At most this many edits; more are merged into one.
const MAX_EDITS: usize = 256;

/// Offsets where each line starts.
struct Lines(Vec<usize>);

impl Lines {
    fn of(text: &[u8]) -> Lines {
        let mut starts = vec![0];
        starts.extend(
            text.iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .map(|(i, _)| i + 1),
        );
        Lines(starts)
    }

    /// The point (row, byte column) of `byte`.
    fn point(&self, byte: usize) -> Point {
        let row = self.0.partition_point(|&s| s <= byte) - 1;
        Point {
            row,
            column: byte - self.0[row],
        }
    }
}

/// One difference: `old[start..old_end]` became `new[start'..new_end]`,
/// in each text's own bytes.
struct Span {
    old: (usize, usize),
    new: (usize, usize),
}

/// The edits from `old` to `new`, to apply in the order given (last in the
/// file first, so each one's positions are still those of `old`).
pub fn edits(old: &[u8], new: &[u8]) -> Vec<InputEdit> {
    let (prefix, suffix) = common_ends(old, new);
    let (old_end, new_end) = (old.len() - suffix, new.len() - suffix);
    if prefix == old_end && prefix == new_end {
        return Vec::new();
    }
    let whole = Span {
        old: (prefix, old_end),
        new: (prefix, new_end),
    };
    let spans = if (old_end - prefix) + (new_end - prefix) <= ONE_EDIT_BYTES {
        vec![whole]
    } else {
        line_spans(old, new, whole)
    };
    let (old_lines, new_lines) = (Lines::of(old), Lines::of(new));
    spans
        .iter()
        .rev()
        .map(|s| {
            // Bytes before this edit are untouched by the edits applied
            // so far (they lie after it), so its start is where it was.
            let start_position = old_lines.point(s.old.0);
            let new_start = new_lines.point(s.new.0);
            let new_end = new_lines.point(s.new.1);
            let new_end_position = if new_end.row == new_start.row {
                Point {
                    row: start_position.row,
                    column: start_position.column + (new_end.column - new_start.column),
                }
            } else {
                Point {
                    row: start_position.row + (new_end.row - new_start.row),
                    column: new_end.column,
                }
            };
            InputEdit {
                start_byte: s.old.0,
                old_end_byte: s.old.1,
                new_end_byte: s.old.0 + (s.new.1 - s.new.0),
                start_position,
                old_end_position: old_lines.point(s.old.1),
                new_end_position,
            }
        })
        .collect()
}

/// The differing lines inside `whole` (a line diff), or `whole` itself
/// when the diff runs out of time or finds too many parts.
fn line_spans(old: &[u8], new: &[u8], whole: Span) -> Vec<Span> {
    // Whole lines: back to the start of the line the difference starts on.
    let from = old[..whole.old.0]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let split = |text: &[u8], end: usize| -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut at = from;
        while at < end {
            let next = text[at..end]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(end, |i| at + i + 1);
            out.push((at, next));
            at = next;
        }
        out
    };
    let (a, b) = (split(old, whole.old.1), split(new, whole.new.1));
    let a_text: Vec<&[u8]> = a.iter().map(|&(s, e)| &old[s..e]).collect();
    let b_text: Vec<&[u8]> = b.iter().map(|&(s, e)| &new[s..e]).collect();
    let ops = similar::capture_diff_slices_deadline(
        Algorithm::Myers,
        &a_text,
        &b_text,
        Some(Instant::now() + DIFF_DEADLINE),
    );
    // Byte offset of line `i` of a side (its end when `i` is past it).
    let at = |lines: &[(usize, usize)], end: usize, i: usize| lines.get(i).map_or(end, |l| l.0);
    let mut spans: Vec<Span> = Vec::new();
    for op in ops {
        if matches!(op, DiffOp::Equal { .. }) {
            continue;
        }
        let (o, n) = (op.old_range(), op.new_range());
        let span = Span {
            old: (at(&a, whole.old.1, o.start), at(&a, whole.old.1, o.end)),
            new: (at(&b, whole.new.1, n.start), at(&b, whole.new.1, n.end)),
        };
        match spans.last_mut() {
            // Adjacent (no equal line between): one edit.
            Some(last) if last.old.1 == span.old.0 && last.new.1 == span.new.0 => {
                last.old.1 = span.old.1;
                last.new.1 = span.new.1;
            }
            _ => spans.push(span),
        }
    }
    if spans.is_empty() || spans.len() > MAX_EDITS {
        return vec![whole];
    }
    spans
}

/// How many bytes lie between the common prefix and the common suffix of
/// two texts, counted in both.
pub(super) fn differing_bytes(a: &[u8], b: &[u8]) -> usize {
    let (prefix, suffix) = common_ends(a, b);
    (a.len() - prefix - suffix) + (b.len() - prefix - suffix)
}

/// The lengths of two texts' common prefix and of their common suffix
/// after it (the two never overlap).
fn common_ends(a: &[u8], b: &[u8]) -> (usize, usize) {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let rest = a.len().min(b.len()) - prefix;
    let suffix = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take(rest)
        .take_while(|(x, y)| x == y)
        .count();
    (prefix, suffix)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Applies `edits` to `old` as text, with `new`'s bytes.
    fn apply(old: &[u8], new: &[u8], edits: &[InputEdit]) -> Vec<u8> {
        let mut text = old.to_vec();
        // Each edit's new bytes sit, in `new`, where the edit starts plus
        // the growth of every edit before it in the file (applied later).
        let mut growth: Vec<isize> = edits
            .iter()
            .map(|e| e.new_end_byte as isize - e.old_end_byte as isize)
            .collect();
        growth.reverse();
        let before: Vec<isize> = growth
            .iter()
            .scan(0isize, |acc, g| {
                let b = *acc;
                *acc += g;
                Some(b)
            })
            .collect();
        for (k, e) in edits.iter().enumerate() {
            let shift = before[edits.len() - 1 - k];
            let from = (e.start_byte as isize + shift) as usize;
            let to = from + (e.new_end_byte - e.start_byte);
            text.splice(e.start_byte..e.old_end_byte, new[from..to].iter().copied());
        }
        text
    }

    #[test]
    fn edits_rebuild_the_new_text_from_the_old() {
        let old = "a\nb\nc\nd\ne\n".repeat(400);
        let mut new = old.clone();
        new.insert_str(10, "X\n");
        new.replace_range(3000..3004, "yy\nzz");
        new.push_str("tail\n");
        for (o, n) in [
            (old.as_str(), new.as_str()),
            ("", "fn a() {}\n"),
            ("fn a() {}\n", ""),
            ("same", "same"),
            ("ab", "aXb"),
        ] {
            let e = edits(o.as_bytes(), n.as_bytes());
            assert_eq!(apply(o.as_bytes(), n.as_bytes(), &e), n.as_bytes(), "{o:?}");
        }
        assert!(edits(old.as_bytes(), new.as_bytes()).len() >= 2);
    }
}
