//! MCP peers: `owt mcp`, the Model Context Protocol server an agent runs on
//! stdio to talk to the other agents of its repository — list them, message
//! them, read their changed files, publish a summary and report its status.
//!
//! Code map:
//! - [`peers`]: the tools as plain library functions over the store
//!   ([`Peers`]); the only code here that reads or writes facts, messages
//!   and events;
//! - [`server`]: the `rmcp` adapter — tool list, JSON schemas, argument
//!   parsing, errors as MCP tool errors; no store calls.
//!
//! Registering the server with an agent in a new worktree is
//! `provider::integration::claude::register_mcp` (core, not this edge).
//!
//! Invariants: the calling session is identified by the environment
//! (`OWT_SESSION` = its short id, `OWT_HOME`), never by an argument the agent
//! types; without `OWT_SESSION` the caller is the human and only the tools
//! that need no sender identity work for it. The server reads and writes the
//! store only through [`owt_core::store`]; it never writes to a git worktree
//! (reading a peer's changed paths, when the Conflict Guard has not recorded
//! them yet, is the one git read). Stdout is the protocol: nothing here
//! prints.

#![forbid(unsafe_code)]
#![deny(clippy::print_stdout)]

pub mod conductor;
pub mod peers;
pub mod server;

use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;

pub use peers::{PeerError, Peers, ReportKind, SummaryFact};

/// Fact kinds the MCP tools record (`facts.kind`), beside
/// [`owt_core::status::kind::REPORT`].
pub mod kind {
    /// [`super::SummaryFact`]: what the agent says it is working on.
    pub const SUMMARY: &str = "summary";
    /// The Conflict Guard's per-session fact (`owt_core::guard::GuardFact`):
    /// read by `get_peer_files`.
    pub const GUARD: &str = "guard";
}

/// Serves the peer tools on stdin/stdout until the client closes stdin.
/// `session` is the caller's `OWT_SESSION` (a short id, or a session name);
/// `dir` picks the repository when there is no session.
pub fn serve_stdio(dir: Option<&Path>, session: Option<&str>) -> anyhow::Result<()> {
    let peers = Peers::open(dir, session)?;
    tracing::info!(caller = %peers.caller_name(), "serving MCP peer tools on stdio");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let result = runtime.block_on(server::serve(peers));
    // A pending read of stdin cannot be cancelled; do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(100));
    result
}
