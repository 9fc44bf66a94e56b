//! The LSP sidecar (`owt lsp`): Conflict Guard diagnostics on the exact
//! lines, agents as code actions and commands, the board as a custom
//! request.
//!
//! Shape (rust-analyzer's main loop, ruff_server's files):
//! - [`backend`]: tower-lsp-server's `LanguageServer`; every handler turns
//!   its message into an [`event::Event`] and sends it to the owner thread
//!   *when the handler's future is created* (before any `.await`), so
//!   events keep their arrival order; requests then await a oneshot reply.
//! - [`main_loop`]: the owner thread, one event at a time, each handed to
//!   its handler: one file per request ([`requests`]) and per notification
//!   ([`notifications`]). [`owner`] is what it owns: the [`state`] every
//!   part reads and each subsystem's own part.
//! - [`commands`]: one function per `workspace/executeCommand` command;
//!   long ones (spawn, merge, ship, delete) run on worker threads that
//!   report `$/progress` and post their result back.
//! - [`sessions`]: sessions re-read, `owt/boardChanged`, status messages.
//! - [`permission`]: ACP permission requests: `owt.approve` / `owt.deny`,
//!   the question as `window/showMessageRequest`, the answers as code actions.
//! - [`guard_live`]: the live Conflict Guard, publishing from each
//!   update's delta ([`guard_view`]) through [`diagnostics`]; its engine as
//!   other threads see it ([`guard_slot`]), and `owt guard`'s queries
//!   answered from it on the server's socket ([`guard_socket`]).
//! - [`git_refresher`]: the thread that keeps git facts current.
//! - [`outbox`]: notifications to the editor, in order.
//! - [`framing`] (the input guard), [`convert`], [`progress`],
//!   [`terminal`], [`fuzzing`] (the `lsp_framing` fuzz target's checks).
//!
//! Imports go one way, bottom up (`scripts/check-cycles` fails on a cycle):
//! 1. leaves: [`convert`], [`outbox`], [`progress`], [`terminal`],
//!    [`machine`], [`guard_view`], [`framing`]; [`event`] names
//!    `guard_view`, [`git_refresher`] `event`, [`diagnostics`] `convert`
//!    and `guard_view`;
//! 2. [`state`] (names `event`, `git_refresher`, `outbox`);
//! 3. the subsystems, which take the `State` and (where they keep one)
//!    their own part of the owner's state, never another's: [`commands`],
//!    [`unsaved`], [`guard_live`] (which names [`guard_slot`]),
//!    [`guard_socket`] (which names `guard_slot`); [`permission`] and [`review_live`]
//!    (which name `commands`); [`sessions`] (which names `permission`);
//! 4. [`owner`]: the steps that need several subsystems (re-reading
//!    sessions restarts the guard; a guard update reaches the review
//!    comments and the session views);
//! 5. [`requests`] and [`notifications`], then [`main_loop`]; [`backend`]
//!    names only `event`.
//!
//! Invariants: only this module knows LSP types; handlers never await a
//! request to the editor (those are spawned); stdout is the protocol, so
//! nothing here prints; the server holds no durable state — everything is
//! rebuilt from the store and git at start.

#![forbid(unsafe_code)]

mod backend;
mod commands;
mod convert;
pub(crate) mod diagnostics;
mod event;
pub mod framing;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
mod git_refresher;
mod guard_live;
mod guard_slot;
mod guard_socket;
mod guard_view;
mod machine;
mod main_loop;
mod notifications;
mod outbox;
mod owner;
mod permission;
mod progress;
mod requests;
mod review_live;
mod sessions;
mod state;
mod terminal;
#[cfg(test)]
mod test_server;
#[cfg(test)]
mod tests;
mod unsaved;

use std::path::PathBuf;

use anyhow::Context as _;
use tokio::io::{AsyncRead, AsyncWrite};
use tower_lsp_server::{LspService, Server};

/// Runs the server on stdin/stdout until the client exits.
pub fn run() -> anyhow::Result<()> {
    owt_core::allocator::configure_allocator();
    // Without a home for the store the server still answers, with no
    // repository (`initialize` says why in the log).
    let home = owt_core::ops::owt_home().map_err(|e| format!("{e:#}"));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("owt-lsp")
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let record_home = home.clone().ok();
    runtime.block_on(async {
        let (guarded, reader) = tokio::io::duplex(1 << 20);
        tokio::spawn(framing::pump(tokio::io::stdin(), guarded));
        serve(reader, tokio::io::stdout(), home).await;
    });
    // The client went away, maybe without a shutdown: its unsaved buffers
    // are no more (the pre-edit hook's record), nor is its guard served.
    if let Some(home) = record_home {
        owt_core::guard::unsaved::remove(&home, std::process::id());
        owt_core::guard::warm::remove(&home, std::process::id());
    }
    // The owner thread and any workers end with the process.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    Ok(())
}

/// Serves one client on `input`/`output` (framed, already guarded) with
/// the store under `home`, until it exits; returns the owner thread.
async fn serve(
    input: impl AsyncRead + Unpin,
    output: impl AsyncWrite,
    home: Result<PathBuf, String>,
) -> Option<std::thread::JoinHandle<()>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let handle = tokio::runtime::Handle::current();
    let owner_tx = tx.clone();
    let mut owner = None;
    let builder = LspService::build(|client| {
        owner = main_loop::spawn_owner(client, handle, owner_tx, rx, home);
        backend::Backend::new(tx)
    })
    .custom_method(owt_protocol::lsp::METHOD_BOARD, backend::Backend::board)
    .custom_method(owt_protocol::review::METHOD_DIFF, backend::Backend::diff);
    #[cfg(test)]
    let builder = builder.custom_method("$/owt/flush", backend::Backend::flush);
    let (service, socket) = builder.finish();
    Server::new(input, output, socket).serve(service).await;
    owner
}
