//! What an ACP agent reported through the protocol, for the agents whose
//! own records owt does not read (an agent of `[tools.NAME]` run with
//! `owt new --acp`): the session host keeps the running totals of
//! `PromptResponse.usage` and the cumulative cost of `usage_update` in the
//! `acp-usage` fact ([`crate::status::kind::ACP_USAGE`]); each total minus
//! the one last read is what was spent since, counted on the local day the
//! fact was written. Reasoning tokens (`thoughtTokens`) are not added: the
//! four counts are the ones `owt usage` shows for every agent.
//!
//! The built-in agents (Claude's and Codex's adapters, OpenCode, Gemini
//! CLI) keep their own records, read as for their terminal sessions: they
//! are exact where the protocol is not (Codex's adapter reports no tokens,
//! OpenCode only the turn's last request), and reading both would count
//! twice.

use owt_protocol::AcpView;
use serde_json::Value;

use super::{by_day, Tally, UsageError};
use crate::status::kind;
use crate::store::{SessionRow, Store, UsageCursor};

/// The `usage_sources` key of a session's `acp-usage` fact (not a path:
/// no file holds it).
pub const SOURCE: &str = "acp-usage fact";

/// Whether the session's `acp-usage` fact was written since it was last
/// read (reads only: a listing asks it of every session in one read of
/// the store, then [`refresh`]es the few that changed).
pub(super) fn changed(store: &Store, session: &SessionRow) -> Result<bool, UsageError> {
    // Cheap when nothing changed: the fact's write time is the cursor's.
    let Some((_, at)) = store.fact::<serde::de::IgnoredAny>(session.id, kind::ACP_USAGE)? else {
        return Ok(false);
    };
    Ok(store
        .usage_cursor(&session.short_id, SOURCE)?
        .is_none_or(|c| c.mtime_ns != at))
}

pub(super) fn refresh(store: &Store, session: &SessionRow) -> Result<(), UsageError> {
    store.advance_usage::<UsageError>(session, SOURCE, |before| {
        // Read again under the write lock: the host may have written since.
        let Some((view, at)) = store.fact::<AcpView>(session.id, kind::ACP_USAGE)? else {
            return Ok(None);
        };
        let mut cursor = before.unwrap_or(UsageCursor {
            carry: Value::Null,
            ..UsageCursor::default()
        });
        if cursor.mtime_ns == at {
            return Ok(None);
        }
        let now = totals(&view);
        let delta = now.minus(&Tally::from_json(&cursor.carry).unwrap_or_default());
        cursor.carry = now.to_json();
        cursor.mtime_ns = at;
        cursor.size = view.turns;
        Ok(Some((cursor, by_day(&[(at, delta)]))))
    })?;
    Ok(())
}

/// The session's totals so far as the agent reported them.
pub fn totals(view: &AcpView) -> Tally {
    let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    Tally {
        input: n(view.input_tokens),
        output: n(view.output_tokens),
        cache_read: n(view.cache_read_tokens),
        cache_write: n(view.cache_write_tokens),
        cost_usd: view.cost_usd,
    }
}
