//! Facts (the latest value per session and kind) and their history in
//! `events`.

use rusqlite::{params, OptionalExtension, TransactionBehavior};
use serde::{de::DeserializeOwned, Serialize};

use super::{now_ms, FactRow, Result, Store, StoreError};

impl Store {
    /// Records the latest value of a fact (replacing the previous one of the
    /// same kind).
    pub fn record_fact<T: Serialize>(&self, session_id: i64, kind: &str, value: &T) -> Result<()> {
        self.record_fact_at(session_id, kind, value, now_ms())
    }

    pub fn record_fact_at<T: Serialize>(
        &self,
        session_id: i64,
        kind: &str,
        value: &T,
        observed_at: i64,
    ) -> Result<()> {
        let value = serde_json::to_string(value)?;
        self.conn.execute(
            "INSERT INTO facts (session_id, kind, value, observed_at) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT(session_id, kind) DO UPDATE SET value = excluded.value, observed_at = excluded.observed_at",
            params![session_id, kind, value, observed_at],
        )?;
        Ok(())
    }

    /// Reads a fact and records what `update` makes of it in one `BEGIN
    /// IMMEDIATE` transaction, so no other process writes between the read
    /// and the write (a list kept in one fact — review comments — loses no
    /// entry to a concurrent writer). `update` returns the new value and
    /// what to give back; when it fails nothing is written.
    pub fn update_fact<T, R, E>(
        &self,
        session_id: i64,
        kind: &str,
        update: impl FnOnce(Option<T>) -> std::result::Result<(T, R), E>,
    ) -> std::result::Result<R, E>
    where
        T: Serialize + DeserializeOwned,
        E: From<StoreError>,
    {
        let tx = rusqlite::Transaction::new_unchecked(&self.conn, TransactionBehavior::Immediate)
            .map_err(StoreError::from)?;
        let stored: Option<String> = tx
            .query_row(
                "SELECT value FROM facts WHERE session_id = ?1 AND kind = ?2",
                params![session_id, kind],
                |row| row.get(0),
            )
            .optional()
            .map_err(StoreError::from)?;
        let old = match stored {
            Some(text) => Some(serde_json::from_str(&text).map_err(StoreError::from)?),
            None => None,
        };
        let (new, out) = update(old)?;
        let value = serde_json::to_string(&new).map_err(StoreError::from)?;
        tx.execute(
            "INSERT INTO facts (session_id, kind, value, observed_at) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT(session_id, kind) DO UPDATE SET value = excluded.value, observed_at = excluded.observed_at",
            params![session_id, kind, value, now_ms()],
        )
        .map_err(StoreError::from)?;
        tx.commit().map_err(StoreError::from)?;
        Ok(out)
    }

    /// Records a fact only if none of that kind exists yet; returns whether it
    /// was recorded.
    pub fn record_fact_once<T: Serialize>(
        &self,
        session_id: i64,
        kind: &str,
        value: &T,
    ) -> Result<bool> {
        let value = serde_json::to_string(value)?;
        let n = self.conn.execute(
            "INSERT OR IGNORE INTO facts (session_id, kind, value, observed_at) VALUES (?1, ?2, ?3, ?4)",
            params![session_id, kind, value, now_ms()],
        )?;
        Ok(n == 1)
    }

    pub fn clear_fact(&self, session_id: i64, kind: &str) -> Result<()> {
        self.conn.execute(
            "DELETE FROM facts WHERE session_id = ?1 AND kind = ?2",
            params![session_id, kind],
        )?;
        Ok(())
    }

    /// Every fact of a session.
    pub fn facts(&self, session_id: i64) -> Result<Vec<FactRow>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT kind, value, observed_at FROM facts WHERE session_id = ?1 ORDER BY kind",
        )?;
        let rows = stmt.query_map(params![session_id], |row| {
            let value: String = row.get(1)?;
            Ok((row.get::<_, String>(0)?, value, row.get::<_, i64>(2)?))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (kind, value, observed_at) = row?;
            out.push(FactRow {
                kind,
                value: serde_json::from_str(&value)?,
                observed_at,
            });
        }
        Ok(out)
    }

    /// One fact, decoded.
    pub fn fact<T: DeserializeOwned>(
        &self,
        session_id: i64,
        kind: &str,
    ) -> Result<Option<(T, i64)>> {
        // Cached: asked for every session at every look of the long-lived
        // processes (a statement parsed each time is most of their CPU).
        let row: Option<(String, i64)> = self
            .conn
            .prepare_cached(
                "SELECT value, observed_at FROM facts WHERE session_id = ?1 AND kind = ?2",
            )?
            .query_row(params![session_id, kind], |row| {
                Ok((row.get(0)?, row.get(1)?))
            })
            .optional()?;
        match row {
            None => Ok(None),
            Some((value, at)) => Ok(Some((serde_json::from_str(&value)?, at))),
        }
    }

    /// Appends to the event log (history: reports, sends, merges).
    pub fn add_event(
        &self,
        repo_id: i64,
        session_name: &str,
        kind: &str,
        detail: &str,
    ) -> Result<()> {
        self.conn.execute(
            "INSERT INTO events (repo_id, session_name, kind, detail, at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![repo_id, session_name, kind, detail, now_ms()],
        )?;
        Ok(())
    }

    /// `(kind, detail, count)` of events since `since_ms`.
    pub fn event_counts(
        &self,
        repo_id: Option<i64>,
        since_ms: i64,
    ) -> Result<Vec<(String, String, u64)>> {
        let mut stmt = self.conn.prepare(
            "SELECT kind, detail, COUNT(*) FROM events
             WHERE at >= ?1 AND (?2 IS NULL OR repo_id = ?2)
             GROUP BY kind, detail ORDER BY kind, detail",
        )?;
        let rows = stmt.query_map(params![since_ms, repo_id], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get::<_, i64>(2)? as u64))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }
}
