//! owt: supervise parallel AI coding agents from inside the editor.
//!
//! The library behind the `owt` binary. Core modules ([`store`], [`status`],
//! [`actions`], [`git`], [`names`], [`config`], [`editor`], [`provider`],
//! [`session`], [`guard`], [`ops`]) never import the edges ([`cli`],
//! [`lsp`], [`mcp`]); the edges parse, call one library function and
//! format. See `docs/ARCHITECTURE.md`.

pub mod acp;
pub mod actions;
pub mod cli;
pub mod config;
pub mod editor;
pub mod errors;
pub mod feedback;
pub mod forge;
#[doc(hidden)]
pub mod fuzzing;
pub mod git;
pub mod guard;
pub mod lsp;
pub mod mcp;
pub mod memory;
pub mod names;
pub mod ops;
pub mod printable;
pub mod procs;
pub mod provider;
pub mod remote;
pub mod session;
pub mod ship;
pub mod status;
pub mod store;
pub mod usage;
