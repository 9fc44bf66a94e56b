//! `textDocument/didClose`: forget the text; the guard goes back to the
//! file on disk.

use tower_lsp_server::ls_types::DidCloseTextDocumentParams;

use super::super::guard_live;
use super::super::owner::Owner;

pub fn handle(owner: &mut Owner, params: DidCloseTextDocumentParams) {
    owner.state.docs.remove(&params.text_document.uri);
    guard_live::buffers_changed(&mut owner.state);
    owner.unsaved.changed();
}
