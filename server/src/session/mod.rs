//! Session hosts: one detached process per agent that owns the agent's PTY,
//! its screen model and a unix socket for attach / send / peek.
//!
//! INTERFACE (implemented on the `host` branch; this file is the contract
//! the rest of the crate calls).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::store::{SessionRow, Store};

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("session host: {0}")]
    Host(String),
}

/// Everything a session host needs to start an agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HostSpec {
    pub session_id: i64,
    pub session_name: String,
    pub short_id: String,
    pub provider: String,
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    pub env: BTreeMap<String, String>,
    /// Typed into the terminal once the agent is ready.
    pub typed_prompt: Option<String>,
    /// Run to completion (the provider's non-interactive form).
    pub headless: bool,
    /// `$OWT_HOME`: the store and `run/` live here.
    pub home: PathBuf,
    pub rows: u16,
    pub cols: u16,
}

/// A started host.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Started {
    pub host_pid: u32,
    pub agent_pid: Option<u32>,
}

/// `$OWT_HOME/run/<short_id>.sock`.
pub fn socket_path(home: &Path, short_id: &str) -> PathBuf {
    home.join("run").join(format!("{short_id}.sock"))
}

/// Starts a detached host for `spec` and waits until it serves its socket.
pub fn start_host(spec: &HostSpec) -> Result<Started, SessionError> {
    Err(SessionError::Host(format!(
        "cannot start {}: session hosts are not built in yet",
        spec.session_name
    )))
}

/// Records `host-lost` for a session whose host is gone without an exit fact.
pub fn reconcile(_store: &Store, _home: &Path, _session: &SessionRow) -> Result<(), SessionError> {
    Ok(())
}

/// Stops the agent (hang-up, then kill after a grace period) and its host.
pub fn stop(_home: &Path, _session: &SessionRow) -> Result<(), SessionError> {
    Ok(())
}
