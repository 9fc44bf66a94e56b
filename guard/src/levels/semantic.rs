//! The symbol side of a pair: its `semantic` notes and the symbols
//! enclosing each side's ranges (both empty while the index is off).

use git2::{Oid, Repository};
use owt_protocol::guard::LineRange;

use super::super::changes::Change;
use super::super::symbols::{self, Lang, SymbolIndex};
use super::super::tree;
use super::lines::blob_of;
use super::Side;

/// The `semantic` notes of a pair (empty when the symbol index is off;
/// see [`SymbolIndex::semantic`] for what it parses).
pub(super) fn semantic(
    repo: &Repository,
    index: &mut SymbolIndex,
    a: &Side<'_>,
    b: &Side<'_>,
) -> Vec<owt_protocol::guard::SemanticNote> {
    let side = |s: &Side<'_>| symbols::side_key(s.merge_base_tree, s.snapshot);
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
pub(super) fn symbols_of(
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
    // Only the segments around the ranges are parsed (`symbols::regions`).
    let around: Vec<LineRange> = ranges.iter().flat_map(|r| r.iter().copied()).collect();
    let file = blob
        .zip(Lang::of_path(old_path))
        .and_then(|(blob, lang)| index.symbols_near(repo, old_path, blob, lang, &around));
    let Some(file) = file else {
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
