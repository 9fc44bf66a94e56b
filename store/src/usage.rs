//! Queries of the `usage` and `usage_sources` tables: the tokens agents
//! recorded, per session and local day, and how far each record file was
//! read (see owt-core's `usage`).

use owt_protocol::TokenUsage;
use rusqlite::{params, OptionalExtension, Transaction, TransactionBehavior};

use super::{now_ms, Result, SessionRow, Store};

/// How far one record file (or database) has been read for a session.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UsageCursor {
    /// Size and modification time when it was last read: unchanged means
    /// nothing new to read.
    pub size: u64,
    pub mtime_ns: i64,
    /// Bytes consumed (up to the last complete line).
    pub offset: u64,
    /// What the reader must remember between reads (e.g. the last
    /// cumulative totals), in the reader's own shape.
    pub carry: serde_json::Value,
}

/// Tokens added on one local day (`YYYY-MM-DD`); counts may be negative
/// when a record corrects an earlier one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UsageDelta {
    pub day: String,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cache_read_tokens: i64,
    pub cache_write_tokens: i64,
    pub cost_usd: Option<f64>,
}

/// One row of `usage`.
#[derive(Debug, Clone, PartialEq)]
pub struct UsageRow {
    pub session_short_id: String,
    pub session_name: String,
    pub provider: String,
    pub day: String,
    pub tokens: TokenUsage,
}

/// The owner recorded for a file checked once and found to be no session's.
pub const NO_SESSION: &str = "";

impl Store {
    /// The cursor of `path` for the session `short_id` (or [`NO_SESSION`]).
    pub fn usage_cursor(&self, short_id: &str, path: &str) -> Result<Option<UsageCursor>> {
        cursor(&self.conn, short_id, path)
    }

    /// Whose records `path` holds, if it was ever attributed: a session's
    /// short id, or [`NO_SESSION`].
    pub fn usage_source_owner(&self, path: &str) -> Result<Option<String>> {
        Ok(self
            .conn
            .prepare_cached("SELECT session_short_id FROM usage_sources WHERE path = ?1 LIMIT 1")?
            .query_row(params![path], |row| row.get(0))
            .optional()?)
    }

    /// Remembers whose records `path` holds (a session's short id, or
    /// [`NO_SESSION`]), with nothing read yet.
    pub fn claim_usage_source(&self, owner: &str, path: &str) -> Result<()> {
        self.conn.execute(
            "INSERT OR IGNORE INTO usage_sources (session_short_id, path, size, mtime_ns, offset, carry)
             VALUES (?1, ?2, 0, 0, 0, 'null')",
            params![owner, path],
        )?;
        Ok(())
    }

    /// Sessions (of any repository) working in `worktree`.
    pub fn sessions_in_worktree(&self, worktree: &str) -> Result<Vec<SessionRow>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {} FROM sessions WHERE worktree_path = ?1 ORDER BY created_at, id",
            super::SESSION_COLUMNS
        ))?;
        let rows = stmt.query_map(params![worktree], super::session_from_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Reads the new part of one source under the store's write lock, so
    /// two processes never count the same records twice: `read` gets the
    /// cursor as stored now and returns the new cursor and the tokens
    /// found (or `None`: nothing to record).
    pub fn advance_usage<E>(
        &self,
        session: &SessionRow,
        path: &str,
        read: impl FnOnce(
            Option<UsageCursor>,
        ) -> std::result::Result<Option<(UsageCursor, Vec<UsageDelta>)>, E>,
    ) -> std::result::Result<bool, E>
    where
        E: From<super::StoreError>,
    {
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(|e| E::from(e.into()))?;
        let before = cursor(&tx, &session.short_id, path).map_err(E::from)?;
        let Some((after, deltas)) = read(before)? else {
            return Ok(false);
        };
        write_usage(&tx, session, path, &after, &deltas).map_err(E::from)?;
        tx.commit().map_err(|e| E::from(e.into()))?;
        Ok(true)
    }

    /// Everything a session's agent recorded, all days added; `None` when
    /// nothing was read yet.
    pub fn session_usage(&self, short_id: &str) -> Result<Option<TokenUsage>> {
        Ok(self
            .conn
            .prepare_cached(
                "SELECT SUM(input_tokens), SUM(output_tokens), SUM(cache_read_tokens),
                        SUM(cache_write_tokens), SUM(cost_usd), COUNT(*)
                 FROM usage WHERE session_short_id = ?1",
            )?
            .query_row(params![short_id], |row| {
                let n: i64 = row.get(5)?;
                (n > 0).then(|| token_usage(row)).transpose()
            })?)
    }

    /// Rows of a repository (or every repository) from `since_day` on.
    pub fn usage_rows(&self, repo_id: Option<i64>, since_day: &str) -> Result<Vec<UsageRow>> {
        let mut stmt = self.conn.prepare(
            "SELECT input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, cost_usd,
                    session_short_id, session_name, provider, day
             FROM usage WHERE day >= ?1 AND (?2 IS NULL OR repo_id = ?2)
             ORDER BY day, session_short_id",
        )?;
        let rows = stmt.query_map(params![since_day, repo_id], |row| {
            Ok(UsageRow {
                tokens: token_usage(row)?,
                session_short_id: row.get(5)?,
                session_name: row.get(6)?,
                provider: row.get(7)?,
                day: row.get(8)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}

/// What [`Store::purge_usage`] deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UsagePurged {
    /// `usage` rows (a session and day) of sessions that no longer exist.
    pub rows: u64,
    /// `usage_sources` rows no session will read on.
    pub sources: u64,
}

impl Store {
    /// Read positions no session will use again: those of sessions that
    /// no longer exist (`owt delete` drops its own; a crash may leave
    /// some), and those of files no session owns ([`NO_SESSION`]) that
    /// are gone. As `(owner, path)`.
    pub fn stale_usage_sources(&self) -> Result<Vec<(String, String)>> {
        let mut stmt = self.conn.prepare(
            "SELECT session_short_id, path FROM usage_sources
             WHERE session_short_id = ?1
                OR session_short_id NOT IN (SELECT short_id FROM sessions)",
        )?;
        let rows = stmt.query_map(params![NO_SESSION], |row| Ok((row.get(0)?, row.get(1)?)))?;
        let mut stale = Vec::new();
        for row in rows {
            let (owner, path): (String, String) = row?;
            let gone = || !std::path::Path::new(&path).exists();
            if owner != NO_SESSION || gone() {
                stale.push((owner, path));
            }
        }
        Ok(stale)
    }

    /// How many `usage` rows belong to sessions that no longer exist.
    pub fn usage_rows_of_deleted_sessions(&self) -> Result<u64> {
        let n: i64 = self.conn.query_row(
            "SELECT COUNT(*) FROM usage WHERE session_short_id NOT IN (SELECT short_id FROM sessions)",
            [],
            |row| row.get(0),
        )?;
        Ok(n as u64)
    }

    /// Deletes the tokens of sessions that no longer exist last added to
    /// before `cutoff_ms` (a live session keeps all of its days, so its
    /// total stays whole), and the [stale read
    /// positions](Store::stale_usage_sources).
    pub fn purge_usage(&self, cutoff_ms: i64) -> Result<UsagePurged> {
        let stale = self.stale_usage_sources()?;
        let tx = Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)?;
        let rows = tx.execute(
            "DELETE FROM usage WHERE updated_at < ?1
                 AND session_short_id NOT IN (SELECT short_id FROM sessions)",
            params![cutoff_ms],
        )?;
        let mut sources = 0;
        for (owner, path) in &stale {
            sources += tx.execute(
                "DELETE FROM usage_sources WHERE session_short_id = ?1 AND path = ?2
                     AND (session_short_id = ?3
                          OR session_short_id NOT IN (SELECT short_id FROM sessions))",
                params![owner, path, NO_SESSION],
            )?;
        }
        tx.commit()?;
        Ok(UsagePurged {
            rows: rows as u64,
            sources: sources as u64,
        })
    }
}

fn token_usage(row: &rusqlite::Row<'_>) -> rusqlite::Result<TokenUsage> {
    let count = |i: usize| -> rusqlite::Result<u64> {
        Ok(row.get::<_, Option<i64>>(i)?.unwrap_or(0).max(0) as u64)
    };
    Ok(TokenUsage {
        input_tokens: count(0)?,
        output_tokens: count(1)?,
        cache_read_tokens: count(2)?,
        cache_write_tokens: count(3)?,
        cost_usd: row.get(4)?,
    })
}

fn cursor(conn: &rusqlite::Connection, short_id: &str, path: &str) -> Result<Option<UsageCursor>> {
    let row: Option<(i64, i64, i64, String)> = conn
        .prepare_cached(
            "SELECT size, mtime_ns, offset, carry FROM usage_sources
             WHERE session_short_id = ?1 AND path = ?2",
        )?
        .query_row(params![short_id, path], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
        })
        .optional()?;
    match row {
        None => Ok(None),
        Some((size, mtime_ns, offset, carry)) => Ok(Some(UsageCursor {
            size: size.max(0) as u64,
            mtime_ns,
            offset: offset.max(0) as u64,
            carry: serde_json::from_str(&carry)?,
        })),
    }
}

fn write_usage(
    tx: &Transaction<'_>,
    session: &SessionRow,
    path: &str,
    after: &UsageCursor,
    deltas: &[UsageDelta],
) -> Result<()> {
    tx.execute(
        "INSERT INTO usage_sources (session_short_id, path, size, mtime_ns, offset, carry)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
         ON CONFLICT(session_short_id, path) DO UPDATE SET size = excluded.size,
             mtime_ns = excluded.mtime_ns, offset = excluded.offset, carry = excluded.carry",
        params![
            session.short_id,
            path,
            after.size as i64,
            after.mtime_ns,
            after.offset as i64,
            serde_json::to_string(&after.carry)?
        ],
    )?;
    let now = now_ms();
    for d in deltas {
        tx.execute(
            "INSERT INTO usage (repo_id, session_short_id, session_name, provider, day,
                                input_tokens, output_tokens, cache_read_tokens, cache_write_tokens,
                                cost_usd, updated_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
             ON CONFLICT(session_short_id, day) DO UPDATE SET
                 input_tokens = input_tokens + excluded.input_tokens,
                 output_tokens = output_tokens + excluded.output_tokens,
                 cache_read_tokens = cache_read_tokens + excluded.cache_read_tokens,
                 cache_write_tokens = cache_write_tokens + excluded.cache_write_tokens,
                 cost_usd = CASE WHEN excluded.cost_usd IS NULL THEN cost_usd
                                 ELSE IFNULL(cost_usd, 0) + excluded.cost_usd END,
                 updated_at = excluded.updated_at",
            params![
                session.repo_id,
                session.short_id,
                session.name,
                session.provider,
                d.day,
                d.input_tokens,
                d.output_tokens,
                d.cache_read_tokens,
                d.cache_write_tokens,
                d.cost_usd,
                now
            ],
        )?;
    }
    Ok(())
}
