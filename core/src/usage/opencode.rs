//! OpenCode's records: its SQLite database
//! (`$XDG_DATA_HOME/opencode/opencode.db`, OpenCode 1.x) has a `session`
//! row per conversation with the checkout it ran in (`directory`) and its
//! running totals (`tokens_input` — input that was not a cache read or
//! write —, `tokens_output`, `tokens_reasoning`, `tokens_cache_read`,
//! `tokens_cache_write`, and `cost` in US dollars, from the model's
//! prices). Each total minus the one last read is what was spent since.
//! The database is opened read-only, and only when it or its write-ahead
//! log changed since the last read.

use std::path::Path;

use rusqlite::{params, Connection, OpenFlags};
use serde_json::Value;

use super::{by_day, stat, Places, Record, Tally, UsageError};
use crate::store::{SessionRow, Store, UsageCursor};

/// One OpenCode conversation's totals.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    pub id: String,
    pub updated_ms: i64,
    pub totals: Tally,
}

pub(super) fn refresh(
    store: &Store,
    places: &Places,
    session: &SessionRow,
) -> Result<(), UsageError> {
    let Some(db) = &places.opencode_db else {
        return Ok(());
    };
    let Some((size, mtime_ns)) = signature(db)? else {
        return Ok(());
    };
    let key = db.to_string_lossy();
    if let Some(c) = store.usage_cursor(&session.short_id, &key)? {
        if c.size == size && c.mtime_ns == mtime_ns {
            return Ok(());
        }
    }
    let worktree = session.worktree_path.to_string_lossy().into_owned();
    store.advance_usage::<UsageError>(session, &key, |before| {
        let mut cursor = before.unwrap_or(UsageCursor {
            carry: Value::Null,
            ..UsageCursor::default()
        });
        if cursor.size == size && cursor.mtime_ns == mtime_ns {
            return Ok(None);
        }
        let conversations = read(db, &worktree, session.created_at - 1000)?;
        let records = deltas(&conversations, &mut cursor.carry);
        cursor.size = size;
        cursor.mtime_ns = mtime_ns;
        Ok(Some((cursor, by_day(&records))))
    })?;
    Ok(())
}

/// The database's and its write-ahead log's sizes added and latest
/// modification time: changes whenever OpenCode writes.
fn signature(db: &Path) -> Result<Option<(u64, i64)>, UsageError> {
    let Some((size, mtime)) = stat(db)? else {
        return Ok(None);
    };
    let mut wal = db.as_os_str().to_owned();
    wal.push("-wal");
    let (wal_size, wal_mtime) = stat(Path::new(&wal))?.unwrap_or((0, 0));
    Ok(Some((size + wal_size, mtime.max(wal_mtime))))
}

/// The conversations OpenCode had in `worktree` since `since_ms`.
pub fn read(db: &Path, worktree: &str, since_ms: i64) -> Result<Vec<Conversation>, UsageError> {
    let err = |source| UsageError::OpenCode {
        path: db.to_path_buf(),
        source,
    };
    let conn = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )
    .map_err(err)?;
    conn.busy_timeout(std::time::Duration::from_secs(2))
        .map_err(err)?;
    let mut stmt = conn
        .prepare(
            "SELECT id, time_updated, tokens_input, tokens_output, tokens_reasoning,
                    tokens_cache_read, tokens_cache_write, cost
             FROM session WHERE directory = ?1 AND time_created >= ?2 ORDER BY time_created, id",
        )
        .map_err(err)?;
    let rows = stmt
        .query_map(params![worktree, since_ms], |row| {
            Ok(Conversation {
                id: row.get(0)?,
                updated_ms: row.get(1)?,
                totals: Tally {
                    input: row.get(2)?,
                    // Reasoning is output the model was paid for.
                    output: row.get::<_, i64>(3)? + row.get::<_, i64>(4)?,
                    cache_read: row.get(5)?,
                    cache_write: row.get(6)?,
                    cost_usd: Some(row.get(7)?),
                },
            })
        })
        .map_err(err)?;
    rows.collect::<rusqlite::Result<_>>().map_err(err)
}

/// The id of the conversation OpenCode updated last in `worktree` since
/// `since_ms`: what `opencode --session <id>` takes.
pub fn latest_conversation(db: &Path, worktree: &Path, since_ms: i64) -> Option<String> {
    let mut paths = vec![worktree.to_path_buf()];
    if let Ok(real) = worktree.canonicalize() {
        paths.push(real);
    }
    paths
        .iter()
        .filter_map(|p| read(db, &p.to_string_lossy(), since_ms).ok())
        .flatten()
        .max_by_key(|c| c.updated_ms)
        .map(|c| c.id)
}

/// What each conversation spent since the totals kept in `carry` (an
/// object of conversation id → totals), which it updates.
pub fn deltas(conversations: &[Conversation], carry: &mut Value) -> Vec<Record> {
    if !carry.is_object() {
        *carry = Value::Object(Default::default());
    }
    let Some(seen) = carry.as_object_mut() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for c in conversations {
        let previous = seen
            .get(&c.id)
            .and_then(Tally::from_json)
            .unwrap_or_default();
        let delta = c.totals.minus(&previous);
        if !delta.is_zero() {
            out.push((c.updated_ms, delta));
        }
        seen.insert(c.id.clone(), c.totals.to_json());
    }
    out
}
