//! `shutdown`: stop the guard and clear every diagnostic before replying.

use std::time::Duration;

use super::super::event::Reply;
use super::super::guard_live;
use super::super::state::State;

/// How long the reply waits for the cleared diagnostics to go out.
const DRAIN: Duration = Duration::from_secs(2);

pub fn handle(state: &mut State, reply: Reply<()>) {
    state.shut_down = true;
    guard_live::stop(state);
    state.outbox.drain(DRAIN);
    let _ = reply.send(Ok(()));
}
