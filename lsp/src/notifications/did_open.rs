//! `textDocument/didOpen`: keep the text; the guard gets it soon.

use tower_lsp_server::ls_types::DidOpenTextDocumentParams;

use super::super::guard_live;
use super::super::state::{Document, State};

pub fn handle(state: &mut State, params: DidOpenTextDocumentParams) {
    let doc = params.text_document;
    state.docs.insert(
        doc.uri,
        Document {
            text: doc.text,
            version: doc.version,
        },
    );
    guard_live::buffers_changed(state);
    super::super::unsaved::changed(state);
}
