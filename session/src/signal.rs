//! [`AgentSignal`]: what an agent is doing, as its hooks or the screen
//! rules ([`crate::rules`]) saw it; recorded as the `hook` and `screen`
//! facts, read by owt-core's `status::derive_status`.

use serde::{Deserialize, Serialize};

/// What an agent is doing, as a hook or the screen rules saw it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgentSignal {
    Working,
    /// Waiting for the human (idle input box, a question).
    Waiting,
    /// A permission dialog.
    Blocked,
    /// Alive and quiet, nothing asked.
    Idle,
    /// The agent says it finished.
    Done,
}
