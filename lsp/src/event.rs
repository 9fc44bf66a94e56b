//! What the owner thread reacts to: one closed enum, consumed in arrival
//! order (rust-analyzer's main loop). Handlers, workers, the live guard's
//! watcher and the git refresher only ever send these.

use owt_protocol::Board;
use serde_json::Value;
use tokio::sync::oneshot;
use tower_lsp_server::jsonrpc::Result;
use tower_lsp_server::ls_types::*;

use super::guard_view::GuardDelta;

/// The reply half of a request.
pub type Reply<T> = oneshot::Sender<Result<T>>;

/// Everything the owner thread reacts to, in arrival order.
pub enum Event {
    Initialize(Box<InitializeParams>, Reply<InitializeResult>),
    Initialized,
    Shutdown(Reply<()>),
    DidOpen(DidOpenTextDocumentParams),
    DidChange(DidChangeTextDocumentParams),
    /// A document was saved (its file on disk changed).
    DidSave(Uri),
    DidClose(DidCloseTextDocumentParams),
    CodeAction(Box<CodeActionParams>, Reply<Option<CodeActionResponse>>),
    ExecuteCommand(ExecuteCommandParams, Reply<Option<Value>>),
    Board(Reply<Board>),
    Diff(
        owt_protocol::review::DiffParams,
        Reply<owt_protocol::review::DiffReport>,
    ),
    /// A worker finished something that changes sessions.
    Refresh,
    /// The Conflict Guard's watcher applied a batch of file changes: what
    /// it recomputed, taken while it held the engine.
    GuardChanged(Box<GuardDelta>),
    /// The watcher of the guard started as this epoch made its watches
    /// and caught up (its work done: the heap is trimmed after), or could
    /// not watch the worktrees (the error: the guard is not live).
    GuardWatched(u64, std::result::Result<(), String>),
    /// The git refresher recorded fresh git facts (commits ahead, changed
    /// files) in the store.
    GitRefreshed,
    /// Test harness: apply pending buffers now, then send the marker
    /// notification after everything queued for the client.
    #[cfg(test)]
    Flush(String),
}
