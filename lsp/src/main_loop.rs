//! The owner thread's loop: one [`Event`] at a time, in arrival order, each
//! handed to its handler ([`super::requests`], [`super::notifications`],
//! or the guard and session refreshes); between events, the unsaved
//! buffers go to the guard and to their record for the pre-edit hook
//! ([`super::unsaved`]) when due, the sessions are re-read every
//! [`TICK`], and the heap is trimmed once the server goes quiet.

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tokio::runtime::Handle;
use tower_lsp_server::Client;

use super::event::Event;
use super::owner::Owner;
use super::state::State;
use super::{notifications, requests};

/// How often the board and statuses are re-read.
const TICK: Duration = Duration::from_millis(500);

/// Starts the owner thread; it ends when every sender of its queue is gone
/// or once the client asked for shutdown.
pub fn spawn_owner(
    client: Client,
    rt: Handle,
    tx: Sender<Event>,
    rx: Receiver<Event>,
    home: Result<PathBuf, String>,
) -> Option<JoinHandle<()>> {
    let spawned = std::thread::Builder::new()
        .name("owt-lsp-owner".into())
        .spawn(move || run(Owner::new(State::new(client, rt, tx, home)), rx));
    match spawned {
        Ok(handle) => Some(handle),
        Err(e) => {
            tracing::error!("cannot start the owner thread: {e}");
            None
        }
    }
}

/// Runs `work`, catching a panic (reported, and the server keeps running).
fn guarded(what: &str, work: impl FnOnce()) {
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).is_err() {
        tracing::error!("{what} panicked; the server keeps running");
    }
}

fn run(mut owner: Owner, rx: Receiver<Event>) {
    serve(&mut owner, rx);
    // Nothing of this server is unsaved any more (the pre-edit hook).
    owner.unsaved.clear(&owner.state);
}

fn serve(owner: &mut Owner, rx: Receiver<Event>) {
    let mut next_tick = Instant::now() + TICK;
    // Every event but the tick is work (the watcher's and the git
    // refresher's work ends in an event too); the heap is trimmed once it
    // is over, and the binary's pages it mapped are let go of after a
    // longer quiet (what the idle server keeps resident).
    let mut trimmer = owt_core::allocator::Trimmer::new();
    loop {
        let wake = [
            owner.guard.overrides_due,
            owner.unsaved.due,
            trimmer.due(),
            owner.review.due(),
        ]
        .into_iter()
        .flatten()
        .fold(next_tick, Instant::min);
        let timeout = wake.saturating_duration_since(Instant::now());
        match rx.recv_timeout(timeout) {
            Ok(event) => {
                guarded("an LSP event handler", || handle(owner, event));
                trimmer.activity();
                if owner.state.shut_down {
                    // Only `exit` may follow; the transport answers it.
                    return;
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        if owner
            .guard
            .overrides_due
            .is_some_and(|due| Instant::now() >= due)
        {
            guarded("handing buffers to the guard", || {
                owner.guard.apply_overrides(&mut owner.state)
            });
            trimmer.activity();
        }
        if owner.unsaved.due.is_some_and(|due| Instant::now() >= due) {
            guarded("recording the unsaved buffers", || {
                owner.unsaved.update(&owner.state)
            });
        }
        if owner.review.due().is_some_and(|due| Instant::now() >= due) {
            guarded("typing review comments", || {
                owner.review.deliver_due(&owner.state)
            });
        }
        trimmer.poll();
        if Instant::now() >= next_tick {
            next_tick = Instant::now() + TICK;
            if owner.state.initialized {
                guarded("the session refresh", || owner.refresh_sessions(false));
                guarded("watching the machine", || watch_machine(owner));
                owner.unsaved.tick();
                guarded("the review comments' refresh", || {
                    owner.review.recheck(&mut owner.state)
                });
                // The symbol index's parse trees speed up a run of writes;
                // idle, their memory goes back (then the heap is trimmed).
                if owner.guard.drop_idle_trees() {
                    trimmer.activity();
                }
            }
        }
    }
}

/// Memory pressure (a warning before the OOM killer picks an agent) and
/// room for queued sessions.
fn watch_machine(owner: &mut Owner) {
    let state = &owner.state;
    let Some(ctx) = &state.ctx else { return };
    if let Some(warning) = owner.machine.poll(ctx, &state.sessions) {
        state
            .outbox
            .show_message(tower_lsp_server::ls_types::MessageType::WARNING, warning);
    }
}

fn handle(owner: &mut Owner, event: Event) {
    match event {
        Event::Initialize(params, reply) => {
            requests::initialize::handle(&mut owner.state, *params, reply)
        }
        Event::Initialized => notifications::initialized::handle(owner),
        Event::Shutdown(reply) => requests::shutdown::handle(owner, reply),
        Event::DidOpen(params) => notifications::did_open::handle(owner, params),
        Event::DidChange(params) => notifications::did_change::handle(owner, params),
        // The guard's watcher sees the file change; the record of
        // unsaved buffers loses it.
        Event::DidSave(_uri) => owner.unsaved.changed(),
        Event::DidClose(params) => notifications::did_close::handle(owner, params),
        Event::CodeAction(params, reply) => requests::code_action::handle(owner, &params, reply),
        Event::ExecuteCommand(params, reply) => {
            requests::execute_command::handle(owner, params, reply)
        }
        Event::Board(reply) => requests::board::handle(owner, reply),
        Event::Diff(params, reply) => requests::diff::handle(&owner.state, params, reply),
        Event::Refresh => owner.refresh_sessions(true),
        Event::GitRefreshed => owner.refresh_sessions(false),
        Event::GuardChanged(delta) => owner.on_guard_delta(*delta),
        Event::GuardWatched(epoch, watched) => owner.guard.on_watched(&owner.state, epoch, watched),
        #[cfg(test)]
        Event::Flush(id) => {
            owner.guard.apply_overrides(&mut owner.state);
            owner.state.outbox.send(super::outbox::Outgoing::Marker(id));
        }
    }
}
