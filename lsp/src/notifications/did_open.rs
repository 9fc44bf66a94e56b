//! `textDocument/didOpen`: keep the text; the guard gets it soon.

use tower_lsp_server::ls_types::DidOpenTextDocumentParams;

use super::super::owner::Owner;
use super::super::state::Document;

pub fn handle(owner: &mut Owner, params: DidOpenTextDocumentParams) {
    let doc = params.text_document;
    owner.state.docs.insert(
        doc.uri,
        Document {
            text: doc.text,
            version: doc.version,
        },
    );
    owner.guard.buffers_changed();
    owner.unsaved.changed();
}
