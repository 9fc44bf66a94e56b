//! The LSP sidecar (`owt lsp`): Conflict Guard diagnostics on the exact
//! lines, agents as code actions and commands, the board as a custom
//! request.
//!
//! Shape (rust-analyzer's main loop): [`backend::Backend`] implements
//! tower-lsp-server's `LanguageServer`; every handler turns its message into
//! an [`state::Event`] and sends it to the owner thread *when the handler's
//! future is created* (before any `.await`), so events keep their arrival
//! order; requests then await a oneshot reply. [`state::State`] owns all
//! mutable state on one thread. Long operations (spawn, merge, ship, delete)
//! run on worker threads that report `$/progress` and post their result back.
//!
//! Invariants: only this module knows LSP types; handlers never await a
//! request to the editor (those are spawned); stdout is the protocol, so
//! nothing here prints; the server holds no durable state — everything is
//! rebuilt from the store and git at start.

mod backend;
mod code_action;
mod commands;
mod convert;
mod diagnostics;
pub mod framing;
pub(crate) mod fuzzing;
mod machine;
mod state;
mod terminal;

use anyhow::Context as _;
use tower_lsp_server::{LspService, Server};

/// Runs the server on stdin/stdout until the client exits.
pub fn run() -> anyhow::Result<()> {
    crate::memory::configure_allocator();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("owt-lsp")
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let (tx, rx) = std::sync::mpsc::channel();
        let handle = tokio::runtime::Handle::current();
        let owner_tx = tx.clone();
        let (service, socket) = LspService::build(move |client| {
            state::spawn_owner(client, handle, owner_tx, rx);
            backend::Backend::new(tx)
        })
        .custom_method(owt_protocol::lsp::METHOD_BOARD, backend::Backend::board)
        .finish();
        let (guarded, reader) = tokio::io::duplex(1 << 20);
        tokio::spawn(framing::pump(tokio::io::stdin(), guarded));
        Server::new(reader, tokio::io::stdout(), socket)
            .serve(service)
            .await;
    });
    // The owner thread and any workers end with the process.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    Ok(())
}
