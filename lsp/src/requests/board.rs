//! `owt/board`: the board from freshly read sessions.

use owt_protocol::Board;

use super::super::convert::failed;
use super::super::event::Reply;
use super::super::owner::Owner;
use super::super::sessions;

pub fn handle(owner: &mut Owner, reply: Reply<Board>) {
    owner.refresh_sessions(false);
    let state = &owner.state;
    let board = sessions::board(state)
        .ok_or_else(|| failed(&anyhow::anyhow!("{}", state.no_repo_reason())));
    let _ = reply.send(board);
}
