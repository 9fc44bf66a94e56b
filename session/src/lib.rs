//! owt-session: session hosts below owt-core — the client side of a
//! host's socket and the pure rules a host applies.
//!
//! Modules: [`client`] (a connection to a host's socket: hello, one
//! request, or an attach's stream; [`HostJournal`], the host's work
//! journal as the Conflict Guard asks for it), [`attach`] (`owt attach`:
//! the user's terminal wired to a host), [`notice`] (desktop
//! notifications spliced into a terminal stream between escape
//! sequences), [`queries`] (the terminal queries in an agent's output and
//! their answers), [`rules`] (what a terminal agent is doing, read from
//! its screen: an [`AgentSignal`]) and [`dialog`] (its permission dialog
//! and the keys that answer it), [`nesting`] (the variables agent CLIs
//! set for their children, removed from every agent a host starts),
//! [`printable`] (outside text made safe to print) and [`SessionError`].
//!
//! owt-core re-exports it: `printable` as `owt_core::printable`, the rest
//! in `owt_core::session` (`session::client`, `session::rules`, …),
//! [`AgentSignal`] in `owt_core::status` and `nesting` in
//! `owt_core::provider`. The host process itself,
//! starting and stopping hosts and the session's facts are owt-core's
//! `session`.
//!
//! Invariants: it depends on no owt crate above owt-guard (no owt-core:
//! the compiler keeps it from naming a use case, the status or the
//! configuration); `notice`, `queries`, `rules`, `dialog`, `nesting` and
//! `printable` are pure; no `unsafe` (the system calls, signals included, are
//! owt-sys's).

#![forbid(unsafe_code)]

// The platform layer, by the name owt-core gives it.
use owt_sys as platform;

pub mod attach;
pub mod client;
pub mod dialog;
mod error;
pub mod nesting;
pub mod notice;
pub mod printable;
pub mod queries;
pub mod rules;
mod signal;

pub use client::{HostConn, HostJournal};
pub use error::SessionError;
pub use signal::AgentSignal;
