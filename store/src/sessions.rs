//! The `sessions` table: reserving names, adopting lost sessions, the
//! rows of remote sessions, lookups and removal.

use std::path::PathBuf;

use owt_protocol::SessionKind;
use rusqlite::{params, OptionalExtension, TransactionBehavior};

use super::{
    now_ms, remote_location, NewSession, RemoteSessionRecord, Result, SessionRow, Store,
    StoreError, REMOTE_SCHEME,
};

impl Store {
    /// Reserves a unique name (`name`, `name-2`, …) and inserts the session,
    /// atomically across processes. `taken` is asked about names the store
    /// does not know (an existing folder or branch) and may veto them.
    pub fn insert_session(
        &mut self,
        new: &NewSession<'_>,
        mut taken: impl FnMut(&str) -> bool,
    ) -> Result<SessionRow> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let mut n = 1u32;
        let name = loop {
            let candidate = crate::names::candidate_name(new.name, n);
            let exists: bool = tx.query_row(
                "SELECT EXISTS(SELECT 1 FROM sessions WHERE repo_id = ?1 AND name = ?2)",
                params![new.repo_id, candidate],
                |row| row.get(0),
            )?;
            if !exists && !taken(&candidate) {
                break candidate;
            }
            n += 1;
        };
        let branch = new.branch_template.replace("{name}", &name);
        let worktree = new.worktree_template.replace("{name}", &name);
        let short_id = new_short_id(&tx, random_u32)?;
        let created_at = now_ms();
        tx.execute(
            "INSERT INTO sessions (repo_id, name, short_id, task, branch, base_branch,
                                   worktree_path, provider, kind, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                new.repo_id,
                name,
                short_id,
                new.task,
                branch,
                new.base_branch,
                worktree,
                new.provider,
                new.kind.as_str(),
                created_at
            ],
        )?;
        let id = tx.last_insert_rowid();
        tx.execute(
            "INSERT INTO events (repo_id, session_name, kind, detail, at) VALUES (?1, ?2, 'created', ?3, ?4)",
            params![new.repo_id, name, new.provider, created_at],
        )?;
        tx.commit()?;
        Ok(SessionRow {
            id,
            repo_id: new.repo_id,
            name,
            short_id,
            task: new.task.to_string(),
            branch,
            base_branch: new.base_branch.to_string(),
            worktree_path: PathBuf::from(worktree),
            provider: new.provider.to_string(),
            kind: new.kind,
            created_at,
        })
    }

    /// Inserts a session the store had lost (re-adopted by `owt doctor
    /// --fix` from its worktree's metadata or its live host), keeping its
    /// id and short id — the host records facts under them — when they are
    /// free. Fails when the short id or the name is taken.
    pub fn adopt_session(&mut self, row: &SessionRow) -> Result<SessionRow> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let id_free: bool = tx.query_row(
            "SELECT NOT EXISTS(SELECT 1 FROM sessions WHERE id = ?1)",
            params![row.id],
            |r| r.get(0),
        )?;
        let id: Option<i64> = id_free.then_some(row.id);
        tx.execute(
            "INSERT INTO sessions (id, repo_id, name, short_id, task, branch, base_branch,
                                   worktree_path, provider, kind, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                id,
                row.repo_id,
                row.name,
                row.short_id,
                row.task,
                row.branch,
                row.base_branch,
                row.worktree_path.to_string_lossy(),
                row.provider,
                row.kind.as_str(),
                row.created_at
            ],
        )?;
        let id = tx.last_insert_rowid();
        tx.execute(
            "INSERT INTO events (repo_id, session_name, kind, detail, at) VALUES (?1, ?2, 'adopted', ?3, ?4)",
            params![row.repo_id, row.name, row.provider, now_ms()],
        )?;
        tx.commit()?;
        Ok(SessionRow { id, ..row.clone() })
    }

    /// Sessions of a repository that run on this machine, oldest first.
    ///
    /// Sessions recorded from a remote ([`SessionRow::remote`]) are left
    /// out: nothing that works on local worktrees (guard, doctor, sync,
    /// cleanup of folders) may ever take a remote path for a local one.
    /// [`Store::all_sessions`] has both.
    pub fn sessions(&self, repo_id: i64) -> Result<Vec<SessionRow>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE repo_id = ?1
             AND worktree_path NOT LIKE '{REMOTE_SCHEME}%' ORDER BY created_at, id"
        ))?;
        let rows = stmt.query_map(params![repo_id], session_from_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Every session of a repository, local and remote, oldest first.
    pub fn all_sessions(&self, repo_id: i64) -> Result<Vec<SessionRow>> {
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE repo_id = ?1 ORDER BY created_at, id"
        ))?;
        let rows = stmt.query_map(params![repo_id], session_from_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// The sessions of a repository recorded from `remote` (every remote
    /// when `None`), oldest first.
    pub fn remote_sessions(&self, repo_id: i64, remote: Option<&str>) -> Result<Vec<SessionRow>> {
        let prefix = match remote {
            Some(name) => format!("{REMOTE_SCHEME}{name}/"),
            None => REMOTE_SCHEME.to_string(),
        };
        let mut stmt = self.conn.prepare_cached(&format!(
            "SELECT {SESSION_COLUMNS} FROM sessions WHERE repo_id = ?1
             AND substr(worktree_path, 1, length(?2)) = ?2 ORDER BY created_at, id"
        ))?;
        let rows = stmt.query_map(params![repo_id, prefix], session_from_row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    /// Records (or updates) a session that runs on a remote, under its
    /// exact local name (`REMOTE:name`). Fails when a session of this
    /// machine holds that name.
    pub fn upsert_remote_session(&mut self, new: &RemoteSessionRecord<'_>) -> Result<SessionRow> {
        let location = remote_location(new.remote, new.worktree);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let existing: Option<SessionRow> = tx
            .query_row(
                &format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE repo_id = ?1 AND name = ?2"),
                params![new.repo_id, new.name],
                session_from_row,
            )
            .optional()?;
        let row = match existing {
            Some(row) if row.remote().is_none() => {
                return Err(StoreError::NameTaken(new.name.to_string()))
            }
            Some(row) => update_remote_row(&tx, row, new, &location)?,
            None => insert_remote_row(&tx, new, &location)?,
        };
        tx.commit()?;
        Ok(row)
    }

    pub fn session_by_name(&self, repo_id: i64, name: &str) -> Result<Option<SessionRow>> {
        Ok(self
            .conn
            .query_row(
                &format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE repo_id = ?1 AND name = ?2"),
                params![repo_id, name],
                session_from_row,
            )
            .optional()?)
    }

    pub fn session_by_id(&self, id: i64) -> Result<Option<SessionRow>> {
        Ok(self
            .conn
            .query_row(
                &format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE id = ?1"),
                params![id],
                session_from_row,
            )
            .optional()?)
    }

    pub fn session_by_short_id(&self, short_id: &str) -> Result<Option<SessionRow>> {
        Ok(self
            .conn
            .query_row(
                &format!("SELECT {SESSION_COLUMNS} FROM sessions WHERE short_id = ?1"),
                params![short_id],
                session_from_row,
            )
            .optional()?)
    }

    /// Removes a session and its facts; records a `removed` event (with
    /// `how`, e.g. `deleted` or `shipped`) for usage counts.
    pub fn remove_session(&mut self, session: &SessionRow, how: &str) -> Result<()> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        tx.execute("DELETE FROM sessions WHERE id = ?1", params![session.id])?;
        // Its tokens stay in `usage` (for `owt usage`); its read positions go.
        tx.execute(
            "DELETE FROM usage_sources WHERE session_short_id = ?1",
            params![session.short_id],
        )?;
        tx.execute(
            "INSERT INTO events (repo_id, session_name, kind, detail, at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![session.repo_id, session.name, how, session.provider, now_ms()],
        )?;
        tx.commit()?;
        Ok(())
    }
}

/// Updates the row of a remote session the store already has.
fn update_remote_row(
    tx: &rusqlite::Transaction<'_>,
    row: SessionRow,
    new: &RemoteSessionRecord<'_>,
    location: &str,
) -> Result<SessionRow> {
    tx.execute(
        "UPDATE sessions SET task = ?2, branch = ?3, base_branch = ?4, worktree_path = ?5,
                                 provider = ?6, kind = ?7 WHERE id = ?1",
        params![
            row.id,
            new.task,
            new.branch,
            new.base_branch,
            location,
            new.provider,
            new.kind.as_str()
        ],
    )?;
    Ok(SessionRow {
        task: new.task.to_string(),
        branch: new.branch.to_string(),
        base_branch: new.base_branch.to_string(),
        worktree_path: PathBuf::from(location),
        provider: new.provider.to_string(),
        kind: new.kind,
        ..row
    })
}

/// Inserts the row of a remote session seen for the first time.
fn insert_remote_row(
    tx: &rusqlite::Transaction<'_>,
    new: &RemoteSessionRecord<'_>,
    location: &str,
) -> Result<SessionRow> {
    let short_id = new_short_id(tx, random_u32)?;
    tx.execute(
        "INSERT INTO sessions (repo_id, name, short_id, task, branch, base_branch,
                                   worktree_path, provider, kind, created_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            new.repo_id,
            new.name,
            short_id,
            new.task,
            new.branch,
            new.base_branch,
            location,
            new.provider,
            new.kind.as_str(),
            new.created_at
        ],
    )?;
    let id = tx.last_insert_rowid();
    tx.execute(
            "INSERT INTO events (repo_id, session_name, kind, detail, at) VALUES (?1, ?2, 'created', ?3, ?4)",
            params![new.repo_id, new.name, new.provider, now_ms()],
        )?;
    Ok(SessionRow {
        id,
        repo_id: new.repo_id,
        name: new.name.to_string(),
        short_id,
        task: new.task.to_string(),
        branch: new.branch.to_string(),
        base_branch: new.base_branch.to_string(),
        worktree_path: PathBuf::from(location),
        provider: new.provider.to_string(),
        kind: new.kind,
        created_at: new.created_at,
    })
}

pub(crate) const SESSION_COLUMNS: &str = "id, repo_id, name, short_id, task, branch, base_branch, worktree_path, provider, kind, created_at";

/// The stored `kind` column; anything but `worktree` or `branch` is an
/// error (nothing acts on a session it cannot classify).
fn session_kind(text: &str) -> rusqlite::Result<SessionKind> {
    SessionKind::parse(text).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            9,
            rusqlite::types::Type::Text,
            format!("unknown session kind `{text}`").into(),
        )
    })
}

pub(crate) fn session_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<SessionRow> {
    Ok(SessionRow {
        id: row.get(0)?,
        repo_id: row.get(1)?,
        name: row.get(2)?,
        short_id: row.get(3)?,
        task: row.get(4)?,
        branch: row.get(5)?,
        base_branch: row.get(6)?,
        worktree_path: PathBuf::from(row.get::<_, String>(7)?),
        provider: row.get(8)?,
        kind: session_kind(row.get_ref(9)?.as_str()?)?,
        created_at: row.get(10)?,
    })
}

/// A random 8-hex-digit id not used by any session (names the host
/// socket), nor by the tokens of a deleted one (they are kept under it).
pub(super) fn new_short_id(
    tx: &rusqlite::Transaction<'_>,
    mut random: impl FnMut() -> u32,
) -> Result<String> {
    loop {
        let id = format!("{:08x}", random());
        let exists: bool = tx.query_row(
            "SELECT EXISTS(SELECT 1 FROM sessions WHERE short_id = ?1)
                 OR EXISTS(SELECT 1 FROM usage WHERE session_short_id = ?1)",
            params![id],
            |row| row.get(0),
        )?;
        if !exists {
            return Ok(id);
        }
    }
}

fn random_u32() -> u32 {
    let mut buf = [0u8; 4];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        use std::io::Read;
        if f.read_exact(&mut buf).is_ok() {
            return u32::from_le_bytes(buf);
        }
    }
    // Fallback: time and pid.
    (now_ms() as u32) ^ std::process::id().rotate_left(16)
}
