//! Notes (shared context for every agent of a repository) and messages
//! between agents.

use rusqlite::{params, TransactionBehavior};

use super::{now_ms, MessageRow, NoteRow, Result, Store};

impl Store {
    pub fn add_note(&self, repo_id: i64, text: &str) -> Result<i64> {
        self.conn.execute(
            "INSERT INTO notes (repo_id, text, created_at) VALUES (?1, ?2, ?3)",
            params![repo_id, text, now_ms()],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    pub fn notes(&self, repo_id: i64) -> Result<Vec<NoteRow>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, text, created_at FROM notes WHERE repo_id = ?1 ORDER BY id",
        )?;
        let rows = stmt.query_map(params![repo_id], |row| {
            Ok(NoteRow {
                id: row.get(0)?,
                text: row.get(1)?,
                created_at: row.get(2)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    pub fn clear_notes(&self, repo_id: i64) -> Result<u64> {
        Ok(self
            .conn
            .execute("DELETE FROM notes WHERE repo_id = ?1", params![repo_id])? as u64)
    }

    pub fn add_message(
        &self,
        repo_id: i64,
        from_session: Option<&str>,
        to_session: Option<&str>,
        body: &str,
    ) -> Result<i64> {
        self.conn.execute(
            "INSERT INTO messages (repo_id, from_session, to_session, body, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![repo_id, from_session, to_session, body, now_ms()],
        )?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Messages addressed to `session` (or broadcast by someone else) that
    /// it has not read; marks them read.
    pub fn take_messages(&mut self, repo_id: i64, session: &str) -> Result<Vec<MessageRow>> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let rows = {
            let mut stmt = tx.prepare(
                "SELECT m.id, m.from_session, m.to_session, m.body, m.created_at FROM messages m
                 WHERE m.repo_id = ?1
                   AND (m.to_session = ?2 OR (m.to_session IS NULL AND IFNULL(m.from_session, '') != ?2))
                   AND NOT EXISTS (SELECT 1 FROM message_reads r WHERE r.message_id = m.id AND r.session_name = ?2)
                 ORDER BY m.id",
            )?;
            let rows = stmt.query_map(params![repo_id, session], |row| {
                Ok(MessageRow {
                    id: row.get(0)?,
                    from_session: row.get(1)?,
                    to_session: row.get(2)?,
                    body: row.get(3)?,
                    created_at: row.get(4)?,
                })
            })?;
            rows.collect::<rusqlite::Result<Vec<_>>>()?
        };
        for m in &rows {
            tx.execute(
                "INSERT OR IGNORE INTO message_reads (message_id, session_name) VALUES (?1, ?2)",
                params![m.id, session],
            )?;
        }
        tx.commit()?;
        Ok(rows)
    }
}
