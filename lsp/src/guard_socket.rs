//! `owt guard`'s queries to this server: the socket
//! `$OWT_HOME/run/lsp-<pid>.sock` and its record
//! ([`owt_core::guard::warm`]), served on a thread of their own, one
//! client at a time, each answered from the live guard
//! ([`super::guard_slot::report_source`]).
//!
//! Invariants: a bad request gets an error answer, never ends the thread;
//! the record and socket are removed when the server ends
//! ([`crate::run`]), and those of killed servers by the next one.

use std::path::Path;
use std::sync::{Arc, Mutex};

use owt_core::guard::warm;
use owt_core::ops::Context;

use super::guard_slot::{self, Slot};

/// Listens for `owt guard` on behalf of the repository whose main checkout
/// is `root` (its own store connection, opened in `home`), on a thread of
/// its own: opening the repository and the store there keeps it off the
/// owner's start-up. Logged and skipped when it cannot.
pub fn start(home: &Path, root: &Path, slot: Arc<Mutex<Slot>>) {
    let (home, root) = (home.to_path_buf(), root.to_path_buf());
    let spawned = std::thread::Builder::new()
        .name("owt-guard-serve".into())
        .spawn(move || serve(&home, &root, slot));
    if let Err(e) = spawned {
        tracing::warn!("serving owt guard: starting its thread failed: {e}");
    }
}

fn serve(home: &Path, root: &Path, slot: Arc<Mutex<Slot>>) {
    let ctx = match Context::open_in(Some(root), home) {
        Ok(ctx) => ctx,
        Err(e) => {
            tracing::warn!("serving owt guard: opening the repository failed: {e:#}");
            return;
        }
    };
    let listener = match warm::listen(home, ctx.repo.main_root()) {
        Ok(listener) => listener,
        Err(e) => {
            tracing::warn!("serving owt guard: listening failed: {e}");
            return;
        }
    };
    let mut report = guard_slot::report_source(slot, ctx);
    for stream in listener.incoming() {
        match stream {
            Ok(stream) => {
                if let Err(e) = warm::serve_one(stream, &mut report) {
                    tracing::debug!("answering owt guard failed: {e}");
                }
            }
            Err(e) => tracing::warn!("accepting an owt guard query failed: {e}"),
        }
    }
}
