//! owt-core: everything owt knows and does, below its three faces (the
//! CLI in the `owt` binary, `owt-lsp`, `owt-mcp`).
//!
//! Modules: [`store`] and [`names`] (the crate `owt-store`, re-exported),
//! [`guard`] (the crate `owt-guard`, re-exported), [`printable`] (a module
//! of the crate `owt-session`, whose client side of session hosts
//! [`session`] re-exports),
//! [`status`], [`actions`], [`git`], [`config`], [`editor`], [`provider`],
//! [`remote`], [`session`], [`guard`], [`ship`], [`usage`] and the use
//! cases, [`ops`]. Nothing here knows clap, LSP or MCP types (the crate
//! does not depend on them), and the modules import each other only along
//! the edges `docs/ARCHITECTURE.md` lists (`scripts/check-layers` checks
//! them).
//!
//! `unsafe` code is forbidden here: the calls to the operating system (and
//! to SQLite's C interface) are in the platform layer, the crate
//! `owt-sys`, re-exported as [`platform`] (so `crate::platform::…` names
//! it).

#![forbid(unsafe_code)]

pub mod acp;
pub mod actions;
pub mod clock;
pub mod config;
pub mod context;
pub mod editor;
pub mod errors;
pub mod feedback;
pub mod forge;
pub mod git;
pub mod ops;
/// Outside text made safe to print: in `owt-session`, re-exported.
pub use owt_session::printable;
/// The platform layer (the crate `owt-sys`): every call to the operating
/// system, behind safe functions.
pub use owt_sys as platform;
pub mod procs;
pub mod provider;
pub mod remote;
/// Files in a checkout opened without following links: in the platform
/// layer (`owt-sys`), re-exported so `crate::safe_fs` names it.
pub use owt_sys::safe_fs;
pub mod session;
pub mod ship;
pub mod status;
pub mod usage;

/// The Conflict Guard: the crate `owt-guard` (guard/), below owt-core;
/// the glue to the store and the repository is the use case `ops::guard`.
pub use owt_guard as guard;
/// The status store: the crate `owt-store` (store/), below owt-core.
pub use owt_store as store;
/// Session names, branch names and worktree paths: in `owt-store`, which
/// picks a free session name with them.
pub use owt_store::names;

/// The allocator settings and page hand-back, in the platform layer (an
/// old path kept for the crates above).
pub use platform::allocator;
