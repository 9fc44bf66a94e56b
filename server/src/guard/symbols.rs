//! Symbols: the functions, methods and types enclosing each hunk, and
//! signature changes one side made that the other side's changes use.

use git2::Repository;
use owt_protocol::guard::{GuardPath, SemanticNote};

use super::levels::Side;
use super::GuardError;

/// Parsed symbols by blob.
#[derive(Default)]
pub struct SymbolIndex {}

/// Signature changes of one side used by the other side's changes.
pub fn semantic_notes(
    _repo: &Repository,
    _index: &mut SymbolIndex,
    _a: &Side<'_>,
    _b: &Side<'_>,
) -> Result<Vec<SemanticNote>, GuardError> {
    Ok(Vec::new())
}

/// Adds (or raises) the path entry of a note's use site.
pub fn note_path(_paths: &mut [GuardPath], _note: &SemanticNote, _a: &str) {}
