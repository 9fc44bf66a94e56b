//! `textDocument/didClose`: forget the text; the guard goes back to the
//! file on disk.

use tower_lsp_server::ls_types::DidCloseTextDocumentParams;

use super::super::guard_live;
use super::super::state::State;

pub fn handle(state: &mut State, params: DidCloseTextDocumentParams) {
    state.docs.remove(&params.text_document.uri);
    guard_live::buffers_changed(state);
    super::super::unsaved::changed(state);
}
