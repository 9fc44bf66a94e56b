//! `textDocument/didClose`: forget the text; the guard goes back to the
//! file on disk.

use tower_lsp_server::ls_types::DidCloseTextDocumentParams;

use super::super::owner::Owner;

pub fn handle(owner: &mut Owner, params: DidCloseTextDocumentParams) {
    owner.state.docs.remove(&params.text_document.uri);
    owner.guard.buffers_changed();
    owner.unsaved.changed();
}
