//! The symbol side of a pair: its `semantic` notes and the symbols
//! enclosing each side's ranges (both empty while the index is off).

use git2::{Oid, Repository};
use owt_protocol::guard::LineRange;

use super::super::changes::Change;
use super::super::symbols::{self, SignatureChange, SymbolIndex};
use super::super::tree;
use super::lines::blob_of;
use super::Side;

/// The `semantic` notes of a pair: signature changes of each side that the
/// other side's changed lines use (empty when the symbol index is off).
pub(super) fn semantic(
    repo: &Repository,
    index: &mut SymbolIndex,
    a: &Side<'_>,
    b: &Side<'_>,
) -> Vec<owt_protocol::guard::SemanticNote> {
    if !index.enabled {
        return Vec::new();
    }
    let a_sigs = signature_changes_of(repo, index, a);
    let b_sigs = signature_changes_of(repo, index, b);
    let mut notes =
        symbols::semantic_notes(repo, index, a.name, &a_sigs, b.name, b.changes, &b_sigs);
    notes.extend(symbols::semantic_notes(
        repo, index, b.name, &b_sigs, a.name, a.changes, &a_sigs,
    ));
    notes
}

/// A side's signature changes, cached by (merge-base tree, snapshot): what
/// its changes are a function of.
fn signature_changes_of(
    repo: &Repository,
    index: &mut SymbolIndex,
    side: &Side<'_>,
) -> std::sync::Arc<Vec<SignatureChange>> {
    let key = (
        side.merge_base_tree.unwrap_or_else(Oid::zero),
        side.snapshot,
    );
    if let Some(found) = index.signature_changes.get(&key) {
        return found.clone();
    }
    let found = std::sync::Arc::new(symbols::signature_changes(repo, index, side.changes));
    index.remember_signature_changes(key, found.clone());
    found
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
