//! Agent hooks: `owt hook --event …` records what an agent says it is
//! doing (the hooks themselves are installed by
//! `provider::integration`).

use std::path::Path;

use super::SessionError;
use crate::status::{kind, AgentSignal};
use crate::store::Store;

/// The `--event` values of `owt hook`.
pub fn parse_event(event: &str) -> Option<AgentSignal> {
    match event {
        "working" => Some(AgentSignal::Working),
        "waiting" => Some(AgentSignal::Waiting),
        "blocked" => Some(AgentSignal::Blocked),
        "done" => Some(AgentSignal::Done),
        "idle" => Some(AgentSignal::Idle),
        _ => None,
    }
}

/// Records a hook signal for the session with short id `short_id`.
pub fn record_hook(home: &Path, short_id: &str, signal: AgentSignal) -> Result<(), SessionError> {
    let store = Store::open(home)?;
    let session =
        store
            .session_by_short_id(short_id)?
            .ok_or_else(|| SessionError::UnknownSession {
                short_id: short_id.to_string(),
                home: home.to_path_buf(),
            })?;
    store.record_fact(session.id, kind::HOOK, &signal)?;
    Ok(())
}
