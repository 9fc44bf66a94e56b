//! Line numbers of a file's base version mapped into its current text,
//! through their line diff: a range the guard reports in merge-base
//! coordinates follows the edits above it (the LSP's diagnostics, the
//! pre-edit check). Pure.

use owt_protocol::guard::LineRange;
use similar::{DiffOp, TextDiff};

/// Maps 1-based base line numbers to 0-based current line numbers.
pub struct LineMap {
    /// For each base line (0-based), its 0-based line in the current text.
    map: Vec<u32>,
    current_lines: u32,
}

impl LineMap {
    pub fn new(base: &str, current: &str) -> LineMap {
        let diff = TextDiff::from_lines(base, current);
        let mut map = vec![0u32; base.lines().count() + 1];
        for op in diff.ops() {
            match *op {
                DiffOp::Equal {
                    old_index,
                    new_index,
                    len,
                } => {
                    for i in 0..len {
                        map[old_index + i] = (new_index + i) as u32;
                    }
                }
                DiffOp::Delete {
                    old_index,
                    old_len,
                    new_index,
                } => {
                    for i in 0..old_len {
                        map[old_index + i] = new_index as u32;
                    }
                }
                DiffOp::Replace {
                    old_index,
                    old_len,
                    new_index,
                    new_len,
                } => {
                    for i in 0..old_len {
                        map[old_index + i] = (new_index + i.min(new_len.saturating_sub(1))) as u32;
                    }
                }
                DiffOp::Insert { .. } => {}
            }
        }
        let current_lines = current.lines().count() as u32;
        let base_lines = base.lines().count();
        map[base_lines] = current_lines;
        LineMap { map, current_lines }
    }

    /// 0-based inclusive current lines covering a base range (an empty
    /// range — a pure insertion — covers the line it sits before).
    pub fn range(&self, range: LineRange) -> (u32, u32) {
        let index = |line: u32| -> u32 {
            let i = (line.saturating_sub(1) as usize).min(self.map.len() - 1);
            self.map[i]
        };
        let first = index(range.start);
        let last = if range.lines == 0 {
            first
        } else {
            index(range.start + range.lines - 1).max(first)
        };
        let clamp = self.current_lines.saturating_sub(1);
        (first.min(clamp), last.min(clamp))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(start: u32, lines: u32) -> LineRange {
        LineRange { start, lines }
    }

    #[test]
    fn ranges_follow_edits_above_them() {
        let base = "a\nb\nc\nd\ne\n";
        // Two lines inserted at the top, `c` edited.
        let current = "new1\nnew2\na\nb\nC!\nd\ne\n";
        let map = LineMap::new(base, current);
        assert_eq!(map.range(r(4, 2)), (5, 6), "d..e moved down by two");
        assert_eq!(
            map.range(r(3, 1)),
            (4, 4),
            "an edited line maps to its replacement"
        );
        assert_eq!(map.range(r(1, 0)), (2, 2), "a pure insertion before line 1");
    }

    #[test]
    fn deleted_lines_map_to_where_they_were() {
        let base = "a\nb\nc\nd\n";
        let current = "a\nd\n";
        let map = LineMap::new(base, current);
        assert_eq!(map.range(r(2, 2)), (1, 1));
        assert_eq!(map.range(r(9, 3)), (1, 1), "clamped to the text");
    }
}
