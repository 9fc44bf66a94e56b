//! The Agent Client Protocol (ACP): JSON-RPC over stdio between an editor
//! (the client) and a coding agent. owt speaks it both ways:
//!
//! - as a **client**: an ACP session's host runs the agent's ACP server
//!   (`claude-agent-acp`, `codex-acp`, `opencode acp`, `gemini --acp`, or a
//!   `[tools.NAME] acp` command) and reads the session's status from the
//!   protocol instead of a screen (`session::acp_host`);
//! - as an **agent**: `owt acp` on stdio gives an editor the owt sessions
//!   of its workspace behind one connection (an edge over the use cases:
//!   `owt::acp_agent`, in the binary's crate).
//!
//! [`rpc`] frames and decodes messages, [`conn`] runs one connection on
//! std threads, [`schema`] reads and writes the part of ACP v1 owt uses
//! (tolerant of what newer agents add), [`transcript`] keeps a session's
//! conversation, [`fs`] and [`terminal`] serve the agent's file and
//! terminal requests inside the worktree. The crate `agent-client-protocol`
//! is not used: its connections are async (futures with a local spawner)
//! where the host is std threads with one store, and its update enum is
//! closed, where an update of a kind owt does not know must be skipped and
//! logged without losing the message (see docs/acp.md).
//!
//! Invariants: nothing an agent or an editor sends can panic a reader; no
//! file outside a session's worktree is read or written for an agent.

pub mod conn;
pub mod fs;
#[cfg(any(test, feature = "fuzzing"))]
#[doc(hidden)]
pub mod fuzzing;
pub mod rpc;
pub mod schema;
pub mod terminal;
pub mod transcript;
