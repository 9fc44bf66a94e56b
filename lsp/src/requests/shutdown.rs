//! `shutdown`: stop the guard and clear every diagnostic before replying.

use std::time::Duration;

use super::super::event::Reply;
use super::super::owner::Owner;

/// How long the reply waits for the cleared diagnostics to go out.
const DRAIN: Duration = Duration::from_secs(2);

pub fn handle(owner: &mut Owner, reply: Reply<()>) {
    owner.state.shut_down = true;
    owner.guard.stop(&mut owner.state);
    owner.state.outbox.drain(DRAIN);
    let _ = reply.send(Ok(()));
}
