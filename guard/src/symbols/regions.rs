//! Parsing only the parts of a file a question is about. Signature changes
//! and messages ask an old version (a base blob) about the functions
//! around some lines: its hunks, and the lines that name a changed
//! function. A file of a brace language is cut into **segments** without
//! parsing, at the lines that hold only `}` or `};` (where a top-level
//! item ends, as such code is commonly laid out), and only the segments
//! holding the asked lines are parsed, as one document of tree-sitter's
//! included ranges, so that every position stays the whole file's.
//!
//! - [`SymbolIndex::symbols_near`]: a blob's symbols, complete for the
//!   segments around some lines (`FileSymbols::covered`), parsed where
//!   they are not yet; grown by later questions, cached in memory and on
//!   disk like a whole file's;
//! - a parse of segments with an error between items or a missing `}`
//!   (a cut that was not between two top-level items: inside a comment,
//!   or after a block closed at the line's start) is thrown away for the
//!   whole file's parse, as is a question whose segments hold half the
//!   file or more; an error inside an item (a macro tree-sitter cannot
//!   read, which the whole file's parse meets the same way) is kept;
//!   Python (no braces) and C++ (whose namespaces hold unindented
//!   functions: a segment of one would lose its namespace) are always
//!   parsed whole.
//!
//! Invariants: a segment is parsed whole or not at all, so every symbol a
//! segment holds is known once it is covered, with the lines, signature
//! and kind the whole file's parse gives (`regions_tests`: libgit2's C,
//! owt's Rust, the extension's TypeScript) — except in a file whose whole
//! parse cannot read its items (an error spanning items), where a segment
//! alone reads them better; so are the uses a partial entry holds (those
//! of its segments); [`SymbolIndex::symbols`] never answers with a
//! partial entry.

use std::ops::Range;
use std::sync::Arc;

use git2::{Oid, Repository};
use owt_protocol::guard::LineRange;

use super::{grammar, FileSymbols, Lang, SymbolIndex, MAX_BYTES};

/// A blob asked for: its path, id and language, and the lines whose
/// symbols are asked (`None`: the whole file's).
pub(super) type Wanted<'a> = (&'a str, Oid, Lang, Option<Vec<LineRange>>);

/// Blob `id` when the index parses it: text, at most [`MAX_BYTES`].
pub(super) fn parsable_blob(repo: &Repository, id: Oid) -> Option<git2::Blob<'_>> {
    super::super::big::small_blob(repo, id)
        .filter(|b| !b.is_binary() && b.content().len() <= MAX_BYTES)
}

/// The segments of a text: where each starts.
pub(super) struct Segments {
    /// `(first line, first byte)` of each segment, ascending; the first
    /// is `(1, 0)`.
    starts: Vec<(u32, usize)>,
    /// The text's length in bytes.
    len: usize,
}

/// Cuts `text` after every line that holds only `}` or `};` (trailing
/// whitespace aside).
pub(super) fn segments(text: &[u8]) -> Segments {
    let mut starts = vec![(1, 0)];
    let mut line = 1u32;
    let mut at = 0usize;
    while at < text.len() {
        let end = text[at..]
            .iter()
            .position(|b| *b == b'\n')
            .map_or(text.len(), |i| at + i);
        let body = text[at..end].trim_ascii_end();
        line += 1;
        at = end + 1;
        if (body == b"}" || body == b"};") && at < text.len() {
            starts.push((line, at));
        }
    }
    Segments {
        starts,
        len: text.len(),
    }
}

impl Segments {
    pub(super) fn count(&self) -> usize {
        self.starts.len()
    }

    /// Segment `k`'s lines, inclusive; the last one's end is `u32::MAX`
    /// (whatever lies beyond the text is its).
    pub(super) fn lines(&self, k: usize) -> (u32, u32) {
        let end = self.starts.get(k + 1).map_or(u32::MAX, |s| s.0 - 1);
        (self.starts[k].0, end)
    }

    /// Segment `k`'s bytes.
    pub(super) fn bytes(&self, k: usize) -> Range<usize> {
        self.starts[k].1..self.starts.get(k + 1).map_or(self.len, |s| s.1)
    }

    /// The segments holding any line of `ranges`, each widened by a line
    /// on both sides (a hunk just before a function's head touches it),
    /// ascending.
    pub(super) fn holding(&self, ranges: &[LineRange]) -> Vec<usize> {
        let mut out: Vec<usize> = Vec::new();
        for range in ranges {
            let (lo, hi) = widened(range);
            let first = self.starts.partition_point(|s| s.0 <= lo) - 1;
            let last = self.starts.partition_point(|s| s.0 <= hi) - 1;
            out.extend(first..=last);
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// A range's lines with one more on each side: `(first, last)`.
fn widened(range: &LineRange) -> (u32, u32) {
    let last = range.start.saturating_add(range.lines.max(1) - 1);
    (range.start.saturating_sub(1).max(1), last.saturating_add(1))
}

/// Whether a file of `lang` is cut at all: the brace languages whose
/// top-level items are not commonly nested in an unindented block (C++'s
/// namespaces are; Python has no braces).
pub(super) fn segmented(lang: Lang) -> bool {
    !matches!(lang, Lang::Python | Lang::Cpp)
}

impl FileSymbols {
    /// Whether these symbols are complete around every line of `ranges`
    /// (always, for a whole file's).
    pub fn covers(&self, ranges: &[LineRange]) -> bool {
        let Some(covered) = &self.covered else {
            return true;
        };
        ranges.iter().all(|r| {
            let (lo, hi) = widened(r);
            covered.iter().any(|&(a, b)| a <= lo && hi <= b)
        })
    }

    /// These symbols with `part`'s (a parse of other segments, covering
    /// `lines`) added, in source order.
    fn with(&self, part: FileSymbols, lines: &[(u32, u32)]) -> FileSymbols {
        let mut symbols = self.symbols.clone();
        symbols.extend(part.symbols);
        // Each list is in source order and their segments are disjoint:
        // a stable sort by first line keeps each segment's own order.
        symbols.sort_by_key(|s| s.first);
        let mut covered = self.covered.clone().unwrap_or_default();
        covered.extend_from_slice(lines);
        let mut uses = self.uses.clone();
        for (name, mut lines) in part.uses {
            let all = uses.entry(name).or_default();
            all.append(&mut lines);
            all.sort_unstable();
            all.dedup();
        }
        FileSymbols {
            symbols,
            uses,
            covered: Some(merge_lines(covered)),
        }
    }
}

/// Line ranges sorted and joined where they meet or overlap.
fn merge_lines(mut ranges: Vec<(u32, u32)>) -> Vec<(u32, u32)> {
    ranges.sort_unstable();
    let mut out: Vec<(u32, u32)> = Vec::new();
    for (a, b) in ranges {
        match out.last_mut() {
            Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// The segments to parse: their bytes, and their lines.
type Plan = (Vec<Range<usize>>, Vec<(u32, u32)>);

/// What to parse of a text for `ranges`, given what `have` (a partial
/// entry) covers; `None` when the whole file should be parsed instead
/// (not segmented, or those segments hold half of it or more).
pub(super) fn plan(
    text: &[u8],
    lang: Lang,
    have: Option<&FileSymbols>,
    ranges: &[LineRange],
) -> Option<Plan> {
    if !segmented(lang) {
        return None;
    }
    let cut = segments(text);
    let covered = |k: usize| {
        let (a, b) = cut.lines(k);
        have.and_then(|h| h.covered.as_ref())
            .is_some_and(|c| c.iter().any(|&(x, y)| x <= a && b <= y))
    };
    let wanted: Vec<usize> = cut
        .holding(ranges)
        .into_iter()
        .filter(|k| !covered(*k))
        .collect();
    let bytes: usize = wanted.iter().map(|k| cut.bytes(*k).len()).sum();
    if cut.count() < 2 || bytes * 2 >= text.len() {
        return None;
    }
    let spans = wanted.iter().map(|k| cut.bytes(*k)).collect();
    let lines = wanted.iter().map(|k| cut.lines(*k)).collect();
    Some((spans, lines))
}

/// Parses what [`plan`] says for `ranges`: the segments' symbols with
/// `have`'s, or the whole file's (its tree too) when the plan says so or
/// the segments do not parse cleanly. `None`: the grammar gave up.
pub(super) fn parse_near(
    text: &[u8],
    lang: Lang,
    have: Option<&FileSymbols>,
    ranges: &[LineRange],
) -> Option<(FileSymbols, Option<tree_sitter::Tree>)> {
    match parse_part(text, lang, have, ranges).0 {
        Some(part) => Some((part, None)),
        None => super::parse_from(text, lang, None).map(|(symbols, tree, _)| (symbols, Some(tree))),
    }
}

/// `have` with the segments [`plan`] says for `ranges` parsed (`None`:
/// the whole file must be parsed instead, as the plan says or because the
/// segments do not parse cleanly), and whether segments were parsed.
fn parse_part(
    text: &[u8],
    lang: Lang,
    have: Option<&FileSymbols>,
    ranges: &[LineRange],
) -> (Option<FileSymbols>, bool) {
    let Some((spans, lines)) = plan(text, lang, have, ranges) else {
        return (None, false);
    };
    let none = FileSymbols::default();
    let have = have.unwrap_or(&none);
    if spans.is_empty() {
        return (Some(have.with(FileSymbols::default(), &[])), false);
    }
    let part = parse_spans(text, lang, &spans).map(|part| have.with(part, &lines));
    (part, true)
}

impl SymbolIndex {
    /// The symbols of blob `id` (the file at `path`, as `lang`), complete
    /// around every line of `ranges` (each widened by a line): a whole
    /// file's when one is cached, else the segments holding those lines,
    /// parsed where no earlier question parsed them. `None` as for
    /// [`SymbolIndex::symbols`].
    pub fn symbols_near(
        &mut self,
        repo: &Repository,
        path: &str,
        id: Oid,
        lang: Lang,
        ranges: &[LineRange],
    ) -> Option<Arc<FileSymbols>> {
        if !self.regions || !segmented(lang) {
            return self.symbols(repo, path, id, lang);
        }
        self.settle();
        let have = self.cached_any(id, lang);
        match &have {
            Some(None) => return None,
            Some(Some(found)) if found.covers(ranges) => return Some(found.clone()),
            _ => {}
        }
        if ranges.is_empty() {
            // Nothing asked: nothing known, nothing parsed.
            return Some(Arc::new(FileSymbols {
                covered: Some(Vec::new()),
                ..FileSymbols::default()
            }));
        }
        let have = have.flatten();
        let Some(blob) = parsable_blob(repo, id) else {
            self.files.insert((id, lang), None);
            return None;
        };
        let content = blob.content();
        // Half the file or more, one segment, or segments that do not
        // parse cleanly: the whole file's parse (incremental from a kept
        // tree where there is one).
        let (merged, parsed) = parse_part(content, lang, have.as_deref(), ranges);
        self.parsed += u64::from(parsed);
        let Some(merged) = merged else {
            return self.symbols(repo, path, id, lang);
        };
        let merged = self.keep_parse(path, id, lang, content, merged, None);
        self.files.insert((id, lang), Some(merged.clone()));
        Some(merged)
    }

    /// What memory or disk holds for `(id, lang)`, whole or partial (put
    /// in memory when read from disk); `Some(None)`: known unparsable.
    pub(super) fn cached_any(&mut self, id: Oid, lang: Lang) -> Option<Option<Arc<FileSymbols>>> {
        if let Some(found) = self.files.get(&(id, lang)) {
            return Some(found.clone());
        }
        if self.files.len() >= super::MAX_CACHED {
            self.files.clear();
        }
        let found = Some(Arc::new(self.disk.as_mut()?.get(id, lang)?));
        self.files.insert((id, lang), found.clone());
        Some(found)
    }
}

/// The definitions in `spans` of `source` only (each a run of whole
/// lines), parsed as one document whose positions are the whole text's:
/// `None` when the parse has a syntax error (a span that does not hold
/// whole top-level items) or the grammar gave up. `covered` is
/// left for the caller.
fn parse_spans(source: &[u8], lang: Lang, spans: &[std::ops::Range<usize>]) -> Option<FileSymbols> {
    // Rows and columns counted in one pass (the spans ascend).
    let (mut at, mut row, mut line_start) = (0usize, 0usize, 0usize);
    let mut point = |byte: usize| {
        for (i, b) in source[at..byte].iter().enumerate() {
            if *b == b'\n' {
                row += 1;
                line_start = at + i + 1;
            }
        }
        at = byte;
        tree_sitter::Point {
            row,
            column: byte - line_start,
        }
    };
    let mut ranges: Vec<tree_sitter::Range> = Vec::new();
    for s in spans {
        let start_point = point(s.start);
        ranges.push(tree_sitter::Range {
            start_byte: s.start,
            end_byte: s.end,
            start_point,
            end_point: point(s.end),
        });
    }
    let tree = grammar::with_parser(lang, |parser| {
        parser.set_included_ranges(&ranges).ok()?;
        let tree = grammar::parse_tree(parser, source, None);
        // Back to whole texts for the next parse on this thread.
        let _ = parser.set_included_ranges(&[]);
        tree
    })?;
    if !items_whole(&tree) {
        return None;
    }
    Some(grammar::extract(&tree, source, lang))
}

/// Whether a parse of spans holds whole top-level items only: no error
/// or missing token between items (a cut inside a comment, or inside an
/// item whose closing brace came early) and no missing `}` anywhere (an
/// item cut short). An error inside an item (a macro tree-sitter cannot
/// read, which the whole file's parse meets the same way) leaves the
/// items as they are.
fn items_whole(tree: &tree_sitter::Tree) -> bool {
    let root = tree.root_node();
    if !root.has_error() {
        return true;
    }
    let mut cursor = tree.walk();
    'walk: loop {
        let node = cursor.node();
        let top = node.parent().is_some_and(|p| p.id() == root.id());
        let cut_short = node.is_missing() && (top || node.kind() == "}");
        if cut_short || (node.is_error() && (top || node.id() == root.id())) {
            return false;
        }
        if node.has_error() && cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    true
}

/// Whether tree-sitter reads every top-level item of `source` whole (no
/// error between items, no missing `}`): where it does not, the whole
/// file's parse and a segment's may read the items differently (tests).
#[cfg(test)]
pub(crate) fn reads_items_whole(source: &[u8], lang: Lang) -> bool {
    let mut parser = tree_sitter::Parser::new();
    parser.set_language(&lang.grammar()).unwrap();
    parser.parse(source, None).is_some_and(|t| items_whole(&t))
}

/// Each segment of `text` parsed alone: its symbols, or `None` where it
/// does not parse cleanly (for tests on real code).
#[cfg(test)]
pub(crate) fn each_segment(text: &[u8], lang: Lang) -> Vec<Option<FileSymbols>> {
    let cut = segments(text);
    (0..cut.count())
        .map(|k| parse_spans(text, lang, &[cut.bytes(k)]))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;

    const C: &str = "#include <stdio.h>\n\
static int one(int a)\n{\n\treturn a;\n}\n\n\
/* two */\nint two(const char *s,\n\tint n)\n{\n\tif (n) {\n\t\treturn 1;\n\t}\n\treturn 0;\n}\n\n\
struct pair {\n\tint a, b;\n};\n\n\
void three(void)\n{\n\tone(two(\"x\", 1));\n}\n";

    fn range(start: u32, lines: u32) -> LineRange {
        LineRange { start, lines }
    }

    #[test]
    fn a_file_is_cut_after_each_closing_brace_alone_on_its_line() {
        let cut = segments(C.as_bytes());
        let all: Vec<(u32, u32)> = (0..cut.count()).map(|k| cut.lines(k)).collect();
        assert_eq!(all, vec![(1, 5), (6, 15), (16, 19), (20, u32::MAX)]);
        assert_eq!(&C[cut.bytes(1)][..9], "\n/* two *");
        assert_eq!(cut.holding(&[range(9, 1)]), vec![1]);
        // Widened by a line: a hunk on the line before a head holds it.
        assert_eq!(cut.holding(&[range(5, 1)]), vec![0, 1]);
        assert_eq!(cut.holding(&[range(21, 0)]), vec![3]);
    }

    #[test]
    fn segments_parsed_one_by_one_give_the_whole_files_symbols() {
        let whole = parse(C.as_bytes(), Lang::C).expect("parses");
        let mut have: Option<FileSymbols> = None;
        for line in [22, 9, 2, 18] {
            let (got, tree) = parse_near(C.as_bytes(), Lang::C, have.as_ref(), &[range(line, 1)])
                .expect("parses");
            assert!(tree.is_none(), "line {line}: a part, not the whole");
            assert!(got.covers(&[range(line, 1)]));
            have = Some(got);
        }
        let have = have.unwrap();
        assert_eq!(have.symbols, whole.symbols);
        assert_eq!(have.covered, Some(vec![(1, u32::MAX)]));
        assert_eq!(have.uses, whole.uses);
        // Nothing asked: nothing parsed, an empty part.
        let (none, _) = parse_near(C.as_bytes(), Lang::C, None, &[]).unwrap();
        assert_eq!((none.symbols.len(), none.covered), (0, Some(vec![])));
    }

    #[test]
    fn an_error_inside_an_item_keeps_the_items_as_the_whole_parse_has_them() {
        // A loop macro tree-sitter cannot read, as git's C is full of: the
        // whole file's parse has the same error inside the same function.
        let c = "int a(void)\n{\n\treturn 0;\n}\n\nstatic void each(struct string_list *list)\n{\n\tstruct string_list_item *item;\n\tfor_each_string_list_item(item, list) {\n\t\tputs(item->string);\n\t}\n}\n\nint e(void)\n{\n\treturn 4;\n}\nint f(void)\n{\n\treturn 5;\n}\nint h(void)\n{\n\treturn 6;\n}\n".to_string()
            + &"int more(void)\n{\n\treturn 7;\n}\n".repeat(8);
        let whole = parse(c.as_bytes(), Lang::C).unwrap();
        let (got, tree) = parse_near(c.as_bytes(), Lang::C, None, &[range(10, 1)]).unwrap();
        assert!(tree.is_none(), "a part");
        let each: Vec<_> = whole.symbols.iter().filter(|s| s.name == "each").collect();
        assert_eq!(got.symbols.iter().collect::<Vec<_>>(), each);
    }

    #[test]
    fn nothing_asked_parses_nothing_and_leaves_the_blob_parsable() {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init(dir.path()).unwrap();
        let id = repo.blob(C.as_bytes()).unwrap();
        let mut index = SymbolIndex::default();
        let got = index.symbols_near(&repo, "a.c", id, Lang::C, &[]).unwrap();
        assert!(got.symbols.is_empty());
        assert_eq!(index.parsed, 0);
        let got = index
            .symbols_near(&repo, "a.c", id, Lang::C, &[range(9, 1)])
            .unwrap();
        assert_eq!(got.symbols.len(), 1, "two's segment");
        let whole = index.symbols(&repo, "a.c", id, Lang::C).unwrap();
        assert_eq!(whole.covered, None);
        assert_eq!(*whole, parse(C.as_bytes(), Lang::C).unwrap());
        assert_eq!(index.parsed, 2);
    }

    #[test]
    fn a_cut_inside_an_item_half_the_file_or_a_language_not_cut_is_parsed_whole() {
        // The segment around line 11 starts inside a comment (a `}` alone
        // on a line of it): not clean, so the whole file.
        let c = "int a(void)\n{\n\treturn 0;\n}\n/* an example:\nint b(void)\n{\n}\n */\nint d(void)\n{\n\treturn 3;\n}\nint e(void)\n{\n\treturn 4;\n}\nint f(void)\n{\n\treturn 5;\n}\n";
        let (got, tree) = parse_near(c.as_bytes(), Lang::C, None, &[range(11, 1)]).expect("parses");
        assert!(tree.is_some(), "whole");
        assert_eq!(got, parse(c.as_bytes(), Lang::C).unwrap());
        // A segment that starts with the `#endif` of an `#if` before it
        // parses cleanly (an `#endif` alone is a directive call), and its
        // function is the whole parse's.
        let c = "#if X\nint a(void)\n{\n\treturn 0;\n}\n#endif\nint d(void)\n{\n\treturn 3;\n}\nint e(void)\n{\n\treturn 4;\n}\nint f(void)\n{\n\treturn 5;\n}\n";
        let (got, tree) = parse_near(c.as_bytes(), Lang::C, None, &[range(8, 1)]).expect("parses");
        assert!(tree.is_none());
        let whole = parse(c.as_bytes(), Lang::C).unwrap();
        assert_eq!(got.symbols, vec![whole.symbols[1].clone()]);
        // A `}` alone closing an inner block: the segment before it holds
        // a function cut short (its brace missing), the one after a stray
        // `}`: neither is clean.
        let c = "int a(void)\n{\n\treturn 0;\n}\nint g(void)\n{\n\tif (x) {\n\t\ty();\n}\n\treturn 0;\n}\nint e(void)\n{\n\treturn 4;\n}\nint f(void)\n{\n\treturn 5;\n}\nint h(void)\n{\n\treturn 6;\n}\n";
        for line in [6, 11] {
            let (got, tree) =
                parse_near(c.as_bytes(), Lang::C, None, &[range(line, 1)]).expect("parses");
            assert!(tree.is_some(), "line {line}: whole");
            assert_eq!(got, parse(c.as_bytes(), Lang::C).unwrap());
        }
        // Two segments of four asked: half the file.
        let (_, tree) = parse_near(C.as_bytes(), Lang::C, None, &[range(9, 12)]).expect("parses");
        assert!(tree.is_some());
        // C++ (namespaces hold unindented functions) and Python are not cut.
        let cpp = "namespace n {\nint a()\n{\n}\nint b()\n{\n}\nint c()\n{\n}\n}\n";
        let (_, tree) = parse_near(cpp.as_bytes(), Lang::Cpp, None, &[range(6, 1)]).unwrap();
        assert!(tree.is_some());
        let py = "def a():\n    return 1\n";
        let (_, tree) = parse_near(py.as_bytes(), Lang::Python, None, &[range(1, 1)]).unwrap();
        assert!(tree.is_some());
    }
}
