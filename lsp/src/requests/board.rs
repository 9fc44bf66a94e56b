//! `owt/board`: the board from freshly read sessions.

use owt_protocol::Board;

use super::super::convert::failed;
use super::super::event::Reply;
use super::super::sessions;
use super::super::state::State;

pub fn handle(state: &mut State, reply: Reply<Board>) {
    sessions::refresh(state, false);
    let board = sessions::board(state)
        .ok_or_else(|| failed(&anyhow::anyhow!("{}", state.no_repo_reason())));
    let _ = reply.send(board);
}
