//! owt-store: the status store, one SQLite file per user
//! (`$OWT_HOME/owt.db`), and [`names`] (session names, branch names and
//! worktree paths; the store picks a free session name with it). owt-core
//! re-exports both: `owt_core::store`, `owt_core::names`.
//!
//! Owns the schema, its migrations and every query. It stores *facts* —
//! what was observed (a session was created, its host started with a pid,
//! output was last seen at a time, the agent exited with a code, a hook
//! reported an event) — never display states: those are derived at read time
//! by owt-core's `status::derive_status`.
//!
//! Everything is keyed by repository (its common git dir), so two
//! repositories may each have a session with the same name.
//!
//! Invariants: WAL journal, a busy timeout on every connection, foreign keys
//! on; every write that must be atomic across processes runs in a
//! `BEGIN IMMEDIATE` transaction; this crate never touches git or a PTY
//! (it does not depend on `git2` or `portable-pty`: `scripts/check-layers`)
//! and has no `unsafe`.
//! The state folder is private: `$OWT_HOME` and its folders 0700, every
//! file owt writes there 0600 ([`write_private`]); an install made before
//! that is fixed the first time the store is opened, with a log line.

#![forbid(unsafe_code)]

pub mod names;

// The platform layer, by the name owt-core gives it.
use owt_sys as platform;

mod error;
mod facts;
mod files;
mod leases;
mod migrations;
mod notes;
mod scale;
mod sessions;
mod usage;

use std::path::{Path, PathBuf};
use std::time::Duration;

use owt_protocol::SessionKind;
use rusqlite::{params, Connection, OptionalExtension};

pub use error::{is_storage_failure, storage_diagnosis, Result, StoreError};
pub use files::write_private;
use files::{file_identity, make_private, truncated};
pub use migrations::SCHEMA_VERSION;
pub(crate) use sessions::{session_from_row, SESSION_COLUMNS};
pub use usage::{UsageCursor, UsageDelta, UsagePurged, UsageRow, NO_SESSION};

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// One stored session (a row of `sessions`).
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRow {
    pub id: i64,
    pub repo_id: i64,
    pub name: String,
    pub short_id: String,
    pub task: String,
    pub branch: String,
    pub base_branch: String,
    pub worktree_path: PathBuf,
    pub provider: String,
    pub kind: SessionKind,
    pub created_at: i64,
}

/// How a remote session's `worktree_path` starts: `remote://NAME/path`
/// (never a local path, which is absolute).
pub const REMOTE_SCHEME: &str = "remote://";

/// The stored location of a remote session's worktree.
pub fn remote_location(remote: &str, worktree: &str) -> String {
    format!(
        "{REMOTE_SCHEME}{remote}/{}",
        worktree.trim_start_matches('/')
    )
}

impl SessionRow {
    /// `(remote, worktree path on the remote)` of a session recorded from
    /// a remote; `None` for a session of this machine.
    pub fn remote(&self) -> Option<(&str, String)> {
        let location = self.worktree_path.to_str()?;
        let rest = location.strip_prefix(REMOTE_SCHEME)?;
        let (remote, path) = rest.split_once('/')?;
        Some((remote, format!("/{path}")))
    }
}

/// What [`Store::upsert_remote_session`] records.
#[derive(Debug, Clone)]
pub struct RemoteSessionRecord<'a> {
    pub repo_id: i64,
    pub remote: &'a str,
    /// The local name: `REMOTE:name`.
    pub name: &'a str,
    pub task: &'a str,
    pub branch: &'a str,
    pub base_branch: &'a str,
    /// Absolute, on the remote.
    pub worktree: &'a str,
    pub provider: &'a str,
    pub kind: SessionKind,
    /// Already shifted into this machine's clock.
    pub created_at: i64,
}

/// What `insert_session` needs; the name is a wish: on collision `-2`, `-3`, …
/// is appended.
#[derive(Debug, Clone)]
pub struct NewSession<'a> {
    pub repo_id: i64,
    pub name: &'a str,
    pub task: &'a str,
    /// `{name}` is replaced by the chosen name.
    pub branch_template: &'a str,
    pub base_branch: &'a str,
    /// `{name}` is replaced by the chosen name.
    pub worktree_template: &'a str,
    pub provider: &'a str,
    pub kind: SessionKind,
}

/// A repository known to the store.
#[derive(Debug, Clone, PartialEq)]
pub struct RepoRow {
    pub id: i64,
    pub common_dir: PathBuf,
    pub main_worktree: PathBuf,
}

/// A stored note (shared context for every agent of a repository).
#[derive(Debug, Clone, PartialEq)]
pub struct NoteRow {
    pub id: i64,
    pub text: String,
    pub created_at: i64,
}

/// A message between agents (or from the human) of one repository.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageRow {
    pub id: i64,
    pub from_session: Option<String>,
    /// `None` for a broadcast.
    pub to_session: Option<String>,
    pub body: String,
    pub created_at: i64,
}

/// The latest value of one kind of fact about a session.
#[derive(Debug, Clone, PartialEq)]
pub struct FactRow {
    pub kind: String,
    pub value: serde_json::Value,
    pub observed_at: i64,
}

pub struct Store {
    conn: Connection,
    path: PathBuf,
    /// Device and inode of the file opened, to notice when it is replaced.
    identity: Option<(u64, u64)>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

/// How long a writer waits for another process's transaction.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

impl Store {
    /// Opens (creating if needed) `$home/owt.db` and migrates it. The
    /// folder and the database files are made private first.
    pub fn open(home: &Path) -> Result<Store> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(home)
            .map_err(|source| StoreError::CreateHome {
                path: home.to_path_buf(),
                error: source,
            })?;
        make_private(home);
        let db = home.join("owt.db");
        // SQLite gives the -wal and -shm files the database file's mode.
        if !db.exists() {
            let _ = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&db);
        }
        Store::open_file(&db)
    }

    pub fn open_file(path: &Path) -> Result<Store> {
        if let Some(err) = truncated(path) {
            return Err(err);
        }
        let open_err = |source| StoreError::Open {
            path: path.to_path_buf(),
            error: source,
        };
        let conn = Connection::open(path).map_err(open_err)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(open_err)?;
        // journal_mode=WAL needs a write lock the first time; the busy
        // timeout covers concurrent first opens.
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(open_err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(open_err)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(open_err)?;
        let mut store = Store {
            conn,
            path: path.to_path_buf(),
            identity: file_identity(path),
        };
        migrations::migrate(&mut store.conn, path)?;
        Ok(store)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// How the file this store was opened on changed since (`deleted`,
    /// `replaced`, `truncated`), if it did: a long-lived process (`owt
    /// lsp`) then still reads the old file and should open the store again.
    pub fn replaced(&self) -> Option<&'static str> {
        match (file_identity(&self.path), self.identity) {
            (None, _) => Some("was deleted"),
            (Some(now), Some(then)) if now != then => Some("was replaced"),
            _ if std::fs::metadata(&self.path).is_ok_and(|m| m.len() == 0) => Some("was truncated"),
            _ => None,
        }
    }

    pub fn conn(&self) -> &Connection {
        &self.conn
    }

    /// Runs `read` in one read transaction: its queries see one state of
    /// the store and share one read lock. Each statement outside a
    /// transaction takes and drops the write-ahead log's read lock itself
    /// (a listing of 64 sessions makes some 400 queries). `read` must not
    /// write: the store is read-only while it runs (a write fails), for a
    /// read transaction cannot always become a write one (another
    /// connection's commit since it began makes it fail at once). Inside a
    /// transaction already, `read` just runs.
    pub fn reading<T>(&self, read: impl FnOnce(&Store) -> T) -> T {
        if !self.conn.is_autocommit() {
            return read(self);
        }
        if let Err(e) = self
            .conn
            .execute_batch("PRAGMA query_only = ON; BEGIN DEFERRED")
        {
            tracing::debug!("reading the store without a read transaction: {e}");
            let _ = self.conn.execute_batch("PRAGMA query_only = OFF");
            return read(self);
        }
        // Ended however `read` ends (a panic caught by a long-lived
        // process too): the store takes writes again after it.
        struct EndRead<'a>(&'a Connection);
        impl Drop for EndRead<'_> {
            fn drop(&mut self) {
                for end in ["ROLLBACK", "PRAGMA query_only = OFF"] {
                    if let Err(e) = self.0.execute_batch(end) {
                        tracing::warn!("ending a read of the store ({end}): {e}");
                    }
                }
            }
        }
        let _end = EndRead(&self.conn);
        read(self)
    }

    /// The repository row for `common_dir`, created on first use.
    pub fn ensure_repo(&self, common_dir: &Path, main_worktree: &Path) -> Result<RepoRow> {
        let common = common_dir.to_string_lossy();
        let main = main_worktree.to_string_lossy();
        // Read first: every command opens its repository's row, and a write
        // (even one that changes nothing) waits for any writer.
        let known: Option<(i64, String)> = self
            .conn
            .query_row(
                "SELECT id, main_worktree FROM repos WHERE common_dir = ?1",
                params![common],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()?;
        if let Some((id, known_main)) = known {
            if known_main == main {
                return Ok(RepoRow {
                    id,
                    common_dir: common_dir.to_path_buf(),
                    main_worktree: main_worktree.to_path_buf(),
                });
            }
        }
        self.conn.execute(
            "INSERT INTO repos (common_dir, main_worktree, created_at) VALUES (?1, ?2, ?3)
             ON CONFLICT(common_dir) DO UPDATE SET main_worktree = excluded.main_worktree
             WHERE main_worktree != excluded.main_worktree",
            params![common, main, now_ms()],
        )?;
        let id = self.conn.query_row(
            "SELECT id FROM repos WHERE common_dir = ?1",
            params![common],
            |row| row.get(0),
        )?;
        Ok(RepoRow {
            id,
            common_dir: common_dir.to_path_buf(),
            main_worktree: main_worktree.to_path_buf(),
        })
    }

    /// The hash and time of the trusted content of the file at `path`.
    pub fn trusted_file(&self, path: &Path) -> Result<Option<(String, i64)>> {
        Ok(self
            .conn
            .query_row(
                "SELECT sha256, trusted_at FROM trusted_files WHERE path = ?1",
                params![path.to_string_lossy()],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
            .optional()?)
    }

    /// Trusts the file at `path` with content hashing to `sha256` (and no
    /// other content).
    pub fn trust_file(&self, path: &Path, sha256: &str) -> Result<()> {
        self.conn.execute(
            "INSERT INTO trusted_files (path, sha256, trusted_at) VALUES (?1, ?2, ?3)
             ON CONFLICT(path) DO UPDATE SET sha256 = excluded.sha256, trusted_at = excluded.trusted_at",
            params![path.to_string_lossy(), sha256, now_ms()],
        )?;
        Ok(())
    }

    /// Forgets the trust in the file at `path`; returns whether it was trusted.
    pub fn revoke_file(&self, path: &Path) -> Result<bool> {
        Ok(self.conn.execute(
            "DELETE FROM trusted_files WHERE path = ?1",
            params![path.to_string_lossy()],
        )? > 0)
    }

    /// Deletes messages and events older than `days`.
    pub fn purge(&self, days: u32) -> Result<(u64, u64)> {
        let cutoff = now_ms() - i64::from(days) * 86_400_000;
        let messages = self.conn.execute(
            "DELETE FROM messages WHERE created_at < ?1",
            params![cutoff],
        )?;
        let events = self
            .conn
            .execute("DELETE FROM events WHERE at < ?1", params![cutoff])?;
        Ok((messages as u64, events as u64))
    }

    pub fn vacuum(&self) -> Result<()> {
        self.conn
            .execute_batch("PRAGMA wal_checkpoint(TRUNCATE); VACUUM;")?;
        Ok(())
    }

    pub fn count(&self, table: &str) -> Result<u64> {
        // `table` is one of our own table names, never user input.
        debug_assert!(table.chars().all(|c| c.is_ascii_lowercase() || c == '_'));
        let n: i64 = self
            .conn
            .query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |row| {
                row.get(0)
            })?;
        Ok(n as u64)
    }

    pub fn schema_version(&self) -> Result<u32> {
        Ok(self
            .conn
            .pragma_query_value(None, "user_version", |row| row.get(0))?)
    }

    pub fn journal_mode(&self) -> Result<String> {
        Ok(self
            .conn
            .pragma_query_value(None, "journal_mode", |row| row.get(0))?)
    }

    pub fn integrity_check(&self) -> Result<String> {
        Ok(self
            .conn
            .pragma_query_value(None, "quick_check", |row| row.get(0))?)
    }
}

#[cfg(test)]
mod tests;
