//! The `LanguageServer` implementation: thin. Each handler sends one
//! [`Event`] to the owner thread as its future is created, then awaits the
//! reply. Nothing else happens here.

use std::future::Future;
use std::sync::mpsc::Sender;

use owt_protocol::Board;
use serde_json::Value;
use tokio::sync::oneshot;
use tower_lsp_server::jsonrpc::{Error, Result};
use tower_lsp_server::ls_types::*;
use tower_lsp_server::LanguageServer;

use super::event::Event;

pub struct Backend {
    tx: Sender<Event>,
}

impl Backend {
    pub fn new(tx: Sender<Event>) -> Backend {
        Backend { tx }
    }

    /// Sends `event` now; the returned future awaits the reply.
    fn request<T: Send + 'static>(
        &self,
        event: impl FnOnce(oneshot::Sender<Result<T>>) -> Event,
    ) -> impl Future<Output = Result<T>> + Send + 'static {
        let (reply, rx) = oneshot::channel();
        let sent = self.tx.send(event(reply)).is_ok();
        async move {
            if !sent {
                return Err(Error::internal_error());
            }
            rx.await.unwrap_or_else(|_| Err(Error::internal_error()))
        }
    }

    fn notify(&self, event: Event) -> impl Future<Output = ()> + Send + 'static {
        let _ = self.tx.send(event);
        std::future::ready(())
    }

    /// `owt/board`.
    pub fn board(&self) -> impl Future<Output = Result<Board>> + Send + 'static {
        self.request(Event::Board)
    }

    /// `owt/diff`.
    pub fn diff(
        &self,
        params: owt_protocol::review::DiffParams,
    ) -> impl Future<Output = Result<owt_protocol::review::DiffReport>> + Send + 'static {
        self.request(|reply| Event::Diff(params, reply))
    }

    /// `$/owt/flush` (the test harness only).
    #[cfg(test)]
    pub fn flush(&self, marker: String) -> impl Future<Output = ()> + Send + 'static {
        self.notify(Event::Flush(marker))
    }
}

impl LanguageServer for Backend {
    fn initialize(
        &self,
        params: InitializeParams,
    ) -> impl Future<Output = Result<InitializeResult>> + Send {
        self.request(|reply| Event::Initialize(Box::new(params), reply))
    }

    fn initialized(&self, _: InitializedParams) -> impl Future<Output = ()> + Send {
        self.notify(Event::Initialized)
    }

    fn shutdown(&self) -> impl Future<Output = Result<()>> + Send {
        self.request(Event::Shutdown)
    }

    fn did_open(&self, params: DidOpenTextDocumentParams) -> impl Future<Output = ()> + Send {
        self.notify(Event::DidOpen(params))
    }

    fn did_change(&self, params: DidChangeTextDocumentParams) -> impl Future<Output = ()> + Send {
        self.notify(Event::DidChange(params))
    }

    fn did_save(&self, params: DidSaveTextDocumentParams) -> impl Future<Output = ()> + Send {
        self.notify(Event::DidSave(params.text_document.uri))
    }

    fn did_close(&self, params: DidCloseTextDocumentParams) -> impl Future<Output = ()> + Send {
        self.notify(Event::DidClose(params))
    }

    fn code_action(
        &self,
        params: CodeActionParams,
    ) -> impl Future<Output = Result<Option<CodeActionResponse>>> + Send {
        self.request(|reply| Event::CodeAction(Box::new(params), reply))
    }

    fn execute_command(
        &self,
        params: ExecuteCommandParams,
    ) -> impl Future<Output = Result<Option<Value>>> + Send {
        self.request(|reply| Event::ExecuteCommand(params, reply))
    }
}
