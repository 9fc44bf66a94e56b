//! Notifications to the editor, in the order the owner decided them: one
//! task drains one queue (a diagnostic published after another for the
//! same document can never overtake it). Requests to the editor
//! (`window/showDocument`, `owt/openTerminal`) wait for an answer and are
//! spawned on their own instead.

use owt_protocol::lsp::METHOD_BOARD_CHANGED;
use owt_protocol::Board;
use tokio::runtime::Handle;
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
use tower_lsp_server::ls_types::*;
use tower_lsp_server::Client;

/// One notification to send.
pub enum Outgoing {
    Diagnostics(Uri, Vec<Diagnostic>, Option<i32>),
    Message(MessageType, String),
    BoardChanged(Board),
    /// Signalled once everything queued before it was handed over.
    Barrier(std::sync::mpsc::Sender<()>),
    /// Test harness: `$/owt/flushed` with this id (everything queued
    /// before it has been handed to the transport).
    #[cfg(test)]
    Marker(String),
}

/// The sending end of the queue; cheap to clone.
#[derive(Clone)]
pub struct Outbox {
    tx: UnboundedSender<Outgoing>,
}

impl Outbox {
    /// Starts the task that drains the queue into `client`; it ends when
    /// every [`Outbox`] is dropped.
    pub fn start(client: Client, rt: &Handle) -> Outbox {
        let (tx, mut rx) = unbounded_channel::<Outgoing>();
        rt.spawn(async move {
            while let Some(message) = rx.recv().await {
                match message {
                    Outgoing::Diagnostics(uri, diagnostics, version) => {
                        client.publish_diagnostics(uri, diagnostics, version).await
                    }
                    Outgoing::Message(typ, text) => client.show_message(typ, text).await,
                    Outgoing::BoardChanged(board) => {
                        client.send_notification::<BoardChanged>(board).await
                    }
                    Outgoing::Barrier(done) => {
                        let _ = done.send(());
                    }
                    #[cfg(test)]
                    Outgoing::Marker(id) => client.send_notification::<Flushed>(id).await,
                }
            }
        });
        Outbox { tx }
    }

    pub fn send(&self, message: Outgoing) {
        // Fails only once the transport is gone: nobody is listening then.
        let _ = self.tx.send(message);
    }

    pub fn show_message(&self, typ: MessageType, text: String) {
        self.send(Outgoing::Message(typ, text));
    }

    /// Waits (at most `timeout`) until everything queued so far was handed
    /// to the transport. Called from the owner thread, never from a task.
    pub fn drain(&self, timeout: std::time::Duration) {
        let (done, wait) = std::sync::mpsc::channel();
        self.send(Outgoing::Barrier(done));
        if wait.recv_timeout(timeout).is_err() {
            tracing::warn!("the editor did not take the last notifications in time");
        }
    }
}

/// `owt/boardChanged`.
pub enum BoardChanged {}

impl notification::Notification for BoardChanged {
    type Params = Board;
    const METHOD: &'static str = METHOD_BOARD_CHANGED;
}

/// `$/owt/flushed` (test harness only).
#[cfg(test)]
pub enum Flushed {}

#[cfg(test)]
impl notification::Notification for Flushed {
    type Params = String;
    const METHOD: &'static str = "$/owt/flushed";
}
