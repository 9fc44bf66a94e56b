//! Wire formats of owt.
//!
//! Everything that crosses a process boundary is defined here and nowhere
//! else: the JSON printed by `owt --json <verb>` ([`cli`]), and the frames
//! spoken on a session host's unix socket ([`host`]) and on the bridge to a
//! remote machine ([`bridge`]). The server crate and the
//! end-to-end tests both depend on this crate, so a change of format is a
//! change of this crate.

#![forbid(unsafe_code)]

pub mod bridge;
pub mod cli;
pub mod feedback;
pub mod guard;
pub mod host;
pub mod lsp;
pub mod review;
#[cfg(test)]
mod typescript;

pub use cli::*;
pub use feedback::*;
