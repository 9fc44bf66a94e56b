//! One file per request the server answers. Each handler takes the owner's
//! [`super::state::State`] and replies once, through its reply.

pub mod board;
pub mod code_action;
pub mod diff;
pub mod execute_command;
pub mod initialize;
pub mod shutdown;
