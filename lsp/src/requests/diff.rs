//! `owt/diff`: an agent's diff against its merge base, from a fresh
//! snapshot of its checkout (what ship would commit).

use owt_protocol::review::{DiffParams, DiffReport};

use super::super::convert::failed;
use super::super::event::Reply;
use super::super::state::State;
use owt_core::ops;

pub fn handle(state: &State, params: DiffParams, reply: Reply<DiffReport>) {
    let result = state
        .ctx()
        .and_then(|ctx| ops::review::diff(ctx, &params.session, params.path.as_deref()))
        .map_err(|e| failed(&e));
    let _ = reply.send(result);
}
