//! `owt remote …`: the configured remotes and their bridges.

use serde::{Deserialize, Serialize};

/// One configured remote (`owt remote list --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoteView {
    pub name: String,
    /// What `ssh` is given (an alias of `~/.ssh/config`, `user@host`, …).
    pub host: String,
    /// The repository's clone on the remote.
    pub path: String,
    /// The owt binary on the remote.
    pub owt: String,
    /// Sessions of this repository recorded as running there.
    pub sessions: u32,
    /// The bridge to it, when one was started.
    pub bridge: Option<BridgeState>,
}

/// The state of a bridge as its keeper last recorded it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BridgeState {
    /// Whether the keeper process runs.
    pub running: bool,
    pub connected: bool,
    /// Unix ms: connected since, or unreachable since.
    pub since: i64,
    pub last_error: Option<String>,
    /// Seconds until the next attempt, while unreachable.
    pub retry_in_s: Option<u64>,
}

/// `owt remote list --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoteList {
    pub remotes: Vec<RemoteView>,
}

/// `owt remote check NAME --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoteCheck {
    pub name: String,
    pub host: String,
    pub path: String,
    /// `ssh` connected and ran a command.
    pub reachable: bool,
    /// `uname -sm` of the remote, e.g. `Linux x86_64`.
    pub os_arch: Option<String>,
    /// The remote owt's version, when it runs.
    pub owt_version: Option<String>,
    pub bridge_protocol: Option<u32>,
    /// Same bridge protocol as this owt.
    pub compatible: bool,
    /// The clone at `path` exists and is a git repository.
    pub clone_ok: bool,
    /// The base branch's tip there, and here.
    pub remote_base_tip: Option<String>,
    pub local_base_tip: Option<String>,
    pub base: Option<String>,
    /// What is wrong, each with what to do about it.
    pub problems: Vec<String>,
}

/// `owt remote setup NAME --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoteSetup {
    pub name: String,
    pub path: String,
    /// `cloned` (from the local repository's own remote), `pushed` (a new
    /// repository there, with the base pushed from here) or `existing`.
    pub how: String,
    pub base: String,
    /// The base's tip on the remote afterwards.
    pub base_tip: String,
}

/// `owt remote install NAME --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RemoteInstall {
    pub name: String,
    pub installed: bool,
    /// Where the binary went on the remote.
    pub path: String,
    /// `owt version` there afterwards.
    pub version: Option<String>,
    /// When the remote's OS or architecture differ from this one: how to
    /// build owt there.
    pub how_to_build: Option<String>,
}
