//! owt: supervise parallel AI coding agents from inside the editor.
//!
//! The `owt` binary's library: the command line ([`cli`]), `owt acp`'s
//! agent side ([`acp_agent`]) and the fuzz targets' checks ([`fuzzing`]) on top of the layers below, which it
//! re-exports under their usual names for the fuzz targets, benches and
//! tests: `owt-core` (store, status, actions, git, names, config, editor,
//! provider, session, guard, ship, usage, acp, feedback, forge, ops), `owt-lsp` ([`lsp`]) and
//! `owt-mcp` ([`mcp`]). The core never imports an edge; the edges parse,
//! call one use case and format. See `docs/ARCHITECTURE.md`, "Crates".

#![forbid(unsafe_code)]

pub use owt_core::{
    acp, actions, allocator, config, editor, errors, feedback, forge, git, guard, names, ops,
    printable, procs, provider, remote, session, ship, status, store, usage,
};
pub use owt_lsp as lsp;
pub use owt_mcp as mcp;

pub mod acp_agent;
pub mod cli;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
