//! `textDocument/didChange`: apply the edits (full or ranged); the guard
//! gets the new text soon.

use tower_lsp_server::ls_types::DidChangeTextDocumentParams;

use super::super::convert::apply_change;
use super::super::owner::Owner;

pub fn handle(owner: &mut Owner, params: DidChangeTextDocumentParams) {
    if let Some(doc) = owner.state.docs.get_mut(&params.text_document.uri) {
        for change in &params.content_changes {
            apply_change(&mut doc.text, change);
        }
        doc.version = params.text_document.version;
    }
    owner.guard.buffers_changed();
    owner.unsaved.changed();
}
