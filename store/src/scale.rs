//! Queries for running many agents on one machine: the sessions that run
//! and those that wait (`queued`), the start leases that keep two
//! processes from starting the same queued session, each session's block
//! of ports, and the peak memory agents reached.
//!
//! The store only keeps these facts; deciding whether a session may start
//! is `ops::queue`'s business, picking free ports `ops::ports`'s.

use std::ops::RangeInclusive;

use rusqlite::{params, OptionalExtension, TransactionBehavior};

use super::{now_ms, session_from_row, RepoRow, Result, SessionRow, Store, SESSION_COLUMNS};

/// The fact kinds the queries below look at (as owt-core's `status::kind`).
const HOST: &str = "host";
const EXIT: &str = "exit";
const HOST_LOST: &str = "host-lost";
const QUEUED: &str = "queued";

impl Store {
    /// The repository row with this id.
    pub fn repo_by_id(&self, id: i64) -> Result<Option<RepoRow>> {
        Ok(self
            .conn
            .query_row(
                "SELECT id, common_dir, main_worktree FROM repos WHERE id = ?1",
                params![id],
                |row| {
                    Ok(RepoRow {
                        id: row.get(0)?,
                        common_dir: row.get::<_, String>(1)?.into(),
                        main_worktree: row.get::<_, String>(2)?.into(),
                    })
                },
            )
            .optional()?)
    }

    /// Sessions of every repository whose agent was started and has not
    /// been seen to end (a host fact, no exit or host-lost fact), oldest
    /// first. Reconcile them to learn which of them really still run.
    pub fn running_sessions(&self) -> Result<Vec<SessionRow>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions s
             WHERE EXISTS (SELECT 1 FROM facts f WHERE f.session_id = s.id AND f.kind = ?1)
               AND NOT EXISTS (SELECT 1 FROM facts f WHERE f.session_id = s.id AND f.kind IN (?2, ?3))
             ORDER BY created_at, id"
        ))?;
        let rows = stmt.query_map(params![HOST, EXIT, HOST_LOST], session_from_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Sessions of every repository waiting to start (a `queued` fact, no
    /// host and no exit yet), in the order they were queued.
    pub fn queued_sessions(&self) -> Result<Vec<SessionRow>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions s
             WHERE EXISTS (SELECT 1 FROM facts f WHERE f.session_id = s.id AND f.kind = ?1)
               AND NOT EXISTS (SELECT 1 FROM facts f WHERE f.session_id = s.id AND f.kind IN (?2, ?3, ?4))
             ORDER BY (SELECT observed_at FROM facts f WHERE f.session_id = s.id AND f.kind = ?1), id"
        ))?;
        let rows = stmt.query_map(params![QUEUED, HOST, EXIT, HOST_LOST], session_from_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Whether any session waits to start (cheap: what an exiting host
    /// asks before it starts anything).
    pub fn any_queued(&self) -> Result<bool> {
        Ok(self.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM facts f WHERE f.kind = ?1
               AND NOT EXISTS (SELECT 1 FROM facts g WHERE g.session_id = f.session_id AND g.kind IN (?2, ?3, ?4)))",
            params![QUEUED, HOST, EXIT, HOST_LOST],
            |row| row.get(0),
        )?)
    }

    /// Takes the lease to start `session_id`, atomically across processes:
    /// only while nobody else holds an unexpired one, and only when
    /// `admit(running, starting)` agrees — `running` counts the sessions
    /// [`Store::running_sessions`] lists, `starting` the other sessions
    /// someone holds a lease to start. Returns whether the lease is ours
    /// (for `ttl_ms`; [`Store::release_start_lease`] gives it back).
    pub fn take_start_lease(
        &mut self,
        session_id: i64,
        owner: &str,
        ttl_ms: i64,
        admit: impl FnOnce(u32, u32) -> bool,
    ) -> Result<bool> {
        let now = now_ms();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute(
            "DELETE FROM start_leases WHERE expires_at <= ?1",
            params![now],
        )?;
        let held: bool = tx.query_row(
            "SELECT EXISTS (SELECT 1 FROM start_leases WHERE session_id = ?1)",
            params![session_id],
            |row| row.get(0),
        )?;
        if held {
            return Ok(false);
        }
        let running: u32 = tx.query_row(
            "SELECT COUNT(*) FROM sessions s
             WHERE EXISTS (SELECT 1 FROM facts f WHERE f.session_id = s.id AND f.kind = ?1)
               AND NOT EXISTS (SELECT 1 FROM facts f WHERE f.session_id = s.id AND f.kind IN (?2, ?3))",
            params![HOST, EXIT, HOST_LOST],
            |row| row.get(0),
        )?;
        let starting: u32 =
            tx.query_row("SELECT COUNT(*) FROM start_leases", [], |row| row.get(0))?;
        if !admit(running, starting) {
            return Ok(false);
        }
        tx.execute(
            "INSERT INTO start_leases (session_id, owner, expires_at) VALUES (?1, ?2, ?3)",
            params![session_id, owner, now + ttl_ms],
        )?;
        tx.commit()?;
        Ok(true)
    }

    /// Gives back a lease taken with [`Store::take_start_lease`] (only
    /// `owner`'s).
    pub fn release_start_lease(&self, session_id: i64, owner: &str) -> Result<()> {
        self.conn.execute(
            "DELETE FROM start_leases WHERE session_id = ?1 AND owner = ?2",
            params![session_id, owner],
        )?;
        Ok(())
    }

    /// Who holds an unexpired lease to start `session_id`, if anyone.
    pub fn start_lease(&self, session_id: i64) -> Result<Option<String>> {
        Ok(self
            .conn
            .query_row(
                "SELECT owner FROM start_leases WHERE session_id = ?1 AND expires_at > ?2",
                params![session_id, now_ms()],
                |row| row.get(0),
            )
            .optional()?)
    }

    /// The session's block of ports: its first port and how many.
    pub fn port_block(&self, session_id: i64) -> Result<Option<(u16, u16)>> {
        Ok(self
            .conn
            .prepare_cached("SELECT first_port, count FROM port_blocks WHERE session_id = ?1")?
            .query_row(params![session_id], |row| Ok((row.get(0)?, row.get(1)?)))
            .optional()?)
    }

    /// Every session's block of ports, by session id.
    pub fn port_blocks(&self) -> Result<Vec<(i64, u16, u16)>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT session_id, first_port, count FROM port_blocks ORDER BY first_port",
        )?;
        let rows = stmt.query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Gives `session_id` a block of `count` consecutive ports inside
    /// `range`, atomically across processes: the lowest block that
    /// overlaps no other session's block and whose every port `free`
    /// accepts (e.g. nothing listens on it now). A session that already
    /// has a block keeps it. `None` when no such block is left.
    pub fn allocate_ports(
        &mut self,
        session_id: i64,
        count: u16,
        range: RangeInclusive<u16>,
        mut free: impl FnMut(u16) -> bool,
    ) -> Result<Option<(u16, u16)>> {
        if let Some(block) = self.port_block(session_id)? {
            return Ok(Some(block));
        }
        if count == 0 {
            return Ok(None);
        }
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let taken: Vec<(u32, u32)> = {
            let mut stmt =
                tx.prepare("SELECT first_port, count FROM port_blocks ORDER BY first_port")?;
            let rows = stmt.query_map([], |row| {
                let first: u32 = row.get(0)?;
                let n: u32 = row.get(1)?;
                Ok((first, first + n))
            })?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let (lo, hi) = (u32::from(*range.start()), u32::from(*range.end()));
        let n = u32::from(count);
        let mut first = lo;
        let found = loop {
            if first + n - 1 > hi {
                break None;
            }
            // Past every block that overlaps [first, first + n).
            if let Some(&(_, end)) = taken
                .iter()
                .find(|(start, end)| *start < first + n && first < *end)
            {
                first = end;
                continue;
            }
            match (first..first + n).find(|p| !free(*p as u16)) {
                Some(busy) => first = busy + 1,
                None => break Some(first as u16),
            }
        };
        let Some(first) = found else {
            return Ok(None);
        };
        tx.execute(
            "INSERT INTO port_blocks (session_id, first_port, count) VALUES (?1, ?2, ?3)",
            params![session_id, first, count],
        )?;
        tx.commit()?;
        Ok(Some((first, count)))
    }

    /// Records the most resident memory a session's agent reached (kept
    /// after the session is removed, keyed by its short id).
    pub fn record_agent_peak(&self, short_id: &str, provider: &str, peak_bytes: u64) -> Result<()> {
        self.conn.execute(
            "INSERT INTO agent_peaks (short_id, provider, peak_bytes, observed_at) VALUES (?1, ?2, ?3, ?4)
             ON CONFLICT(short_id) DO UPDATE SET peak_bytes = MAX(peak_bytes, excluded.peak_bytes),
                                                 observed_at = excluded.observed_at",
            params![short_id, provider, peak_bytes as i64, now_ms()],
        )?;
        Ok(())
    }

    /// The peaks of the last `n` agents of `provider` to record one,
    /// newest first.
    pub fn agent_peaks(&self, provider: &str, n: u32) -> Result<Vec<u64>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT peak_bytes FROM agent_peaks WHERE provider = ?1 ORDER BY observed_at DESC LIMIT ?2",
        )?;
        let rows = stmt.query_map(params![provider, n], |row| row.get::<_, i64>(0))?;
        Ok(rows
            .map(|r| r.map(|v| v.max(0) as u64))
            .collect::<rusqlite::Result<_>>()?)
    }
}
