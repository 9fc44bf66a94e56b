//! The status store: one SQLite file per user (`$OWT_HOME/owt.db`).
//!
//! Owns the schema, its migrations and every query. It stores *facts* —
//! what was observed (a session was created, its host started with a pid,
//! output was last seen at a time, the agent exited with a code, a hook
//! reported an event) — never display states: those are derived at read time
//! by [`crate::status::derive_status`].
//!
//! Everything is keyed by repository (its common git dir), so two
//! repositories may each have a session with the same name.
//!
//! Invariants: WAL journal, a busy timeout on every connection, foreign keys
//! on; every write that must be atomic across processes runs in a
//! `BEGIN IMMEDIATE` transaction; this module never touches git or a PTY.
//! The state folder is private: `$OWT_HOME` and its folders 0700, every
//! file owt writes there 0600 ([`write_private`]); an install made before
//! that is fixed the first time the store is opened, with a log line.

mod leases;
mod migrations;
mod scale;
mod usage;

use std::path::{Path, PathBuf};
use std::time::Duration;

use owt_protocol::SessionKind;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use serde::{de::DeserializeOwned, Serialize};

pub use migrations::SCHEMA_VERSION;
pub use usage::{UsageCursor, UsageDelta, UsagePurged, UsageRow, NO_SESSION};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot create the owt state folder {path}: {error}")]
    CreateHome {
        path: PathBuf,
        error: std::io::Error,
    },
    #[error("cannot open the status store {path}: {error}")]
    Open {
        path: PathBuf,
        error: rusqlite::Error,
    },
    #[error("the status store {path} has schema version {found}, newer than this owt ({supported}); upgrade owt")]
    TooNew {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    #[error("the status store {path} is empty (0 bytes) beside its write-ahead log: it was truncated while owt processes had it open{holders}, and owt cannot read it any more; move it aside with `mkdir {path}.broken && mv {path} {path}-* {path}.broken/` (owt then starts a new store), and run `owt doctor --fix` in each repository to re-adopt the sessions that still run")]
    Truncated { path: String, holders: String },
    #[error("status store: {0}")]
    Sql(rusqlite::Error),
    #[error("a session of this machine is already called `{0}`")]
    NameTaken(String),
    #[error("status store: bad stored value: {0}")]
    Json(serde_json::Error),
}

// Each variant prints its cause in its own message, so none is also a
// `source` (that would print it twice under `{:#}`).
impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError::Sql(e)
    }
}

impl From<serde_json::Error> for StoreError {
    fn from(e: serde_json::Error) -> Self {
        StoreError::Json(e)
    }
}

impl StoreError {
    /// The SQLite error underneath, if any.
    pub fn sqlite(&self) -> Option<&rusqlite::Error> {
        match self {
            StoreError::Open { error, .. } | StoreError::Sql(error) => Some(error),
            _ => None,
        }
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

impl StoreError {
    /// Whether this is SQLite failing on the file system under the store —
    /// full, read-only, an I/O error, unopenable — rather than on the data.
    /// [`storage_diagnosis`] then says why.
    pub fn is_storage_failure(&self) -> bool {
        self.sqlite().is_some_and(is_storage_failure)
    }
}

/// Whether `sql` is SQLite failing on the file system (see
/// [`StoreError::is_storage_failure`]).
pub fn is_storage_failure(sql: &rusqlite::Error) -> bool {
    use rusqlite::ErrorCode;
    matches!(
        sql.sqlite_error_code(),
        Some(
            ErrorCode::DiskFull
                | ErrorCode::SystemIoFailure
                | ErrorCode::ReadOnly
                | ErrorCode::CannotOpen
        )
    )
}

/// Below this much free space, a failed write is blamed on a full disk.
const NEARLY_FULL_BYTES: u64 = 1024 * 1024;

/// What the file system says about `dir` (the folder holding the store)
/// when a write failed: read-only, full, or not writable; `None` when it
/// looks fine.
pub fn storage_diagnosis(dir: &Path) -> Option<String> {
    use rustix::fs::{Access, StatVfsMountFlags};
    let st = rustix::fs::statvfs(dir).ok()?;
    let path = dir;
    let dir = dir.display();
    if st.f_flag.contains(StatVfsMountFlags::RDONLY) {
        return Some(format!(
            "{dir} is on a read-only file system; remount it read-write, or set OWT_HOME to a writable folder"
        ));
    }
    let free = st.f_bavail.saturating_mul(st.f_frsize);
    if free < NEARLY_FULL_BYTES {
        return Some(format!(
            "the disk holding {dir} is full ({} KiB free); free some space, or set OWT_HOME to a folder on another disk",
            free / 1024
        ));
    }
    if rustix::fs::access(path, Access::WRITE_OK).is_err() {
        return Some(format!(
            "{dir} is not writable by you; fix its permissions, or set OWT_HOME to a writable folder"
        ));
    }
    None
}

fn file_identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// The error for a store file emptied under its write-ahead log (`: >
/// owt.db` while hosts run): every open would wait out the busy timeout and
/// fail with "database is locked".
fn truncated(path: &Path) -> Option<StoreError> {
    let db = std::fs::metadata(path).ok()?;
    let beside = |suffix: &str| {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        PathBuf::from(name).exists()
    };
    // A new store gets its header before its -wal and -shm files exist.
    if db.len() != 0 || !(beside("-wal") || beside("-shm")) {
        return None;
    }
    let holders = holders_of(path);
    Some(StoreError::Truncated {
        path: path.display().to_string(),
        holders: if holders.is_empty() {
            String::new()
        } else {
            format!(" ({})", holders.join(", "))
        },
    })
}

/// `pid N (name)` of the processes that hold `path` open.
fn holders_of(path: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return out;
    };
    for entry in procs.flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|s| s.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        let holds = fds
            .flatten()
            .filter_map(|fd| std::fs::read_link(fd.path()).ok())
            .any(|target| target == path);
        if holds {
            let name = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
            out.push(format!("pid {pid} ({})", name.trim()));
        }
    }
    out
}

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

/// Writes `bytes` to `path` readable by its owner only (0600).
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.write_all(bytes)
}

/// Makes `home` 0700 and every folder and file owt keeps in it private
/// (folders 0700, files 0600): its top level, `logs/` and `run/`. The
/// trash's folders are 0700 and its files keep their own modes. Logs what
/// it changed.
fn make_private(home: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mut fixed = Vec::new();
    let mut fix = |path: &Path, meta: &std::fs::Metadata| {
        let mode = meta.permissions().mode() & 0o7777;
        let want = if meta.is_dir() { 0o700 } else { 0o600 };
        if mode & 0o077 != 0
            && std::fs::set_permissions(path, std::fs::Permissions::from_mode(want)).is_ok()
        {
            fixed.push(format!("{} ({mode:o} → {want:o})", path.display()));
        }
    };
    let Ok(meta) = std::fs::symlink_metadata(home) else {
        return;
    };
    fix(home, &meta);
    for dir in [
        home.to_path_buf(),
        home.join("logs"),
        home.join("run"),
        home.join("trash"),
    ] {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            if meta.file_type().is_symlink() {
                continue;
            }
            // The trash's entries are folders; the files inside keep their modes.
            if dir.ends_with("trash") && !meta.is_dir() {
                continue;
            }
            fix(&entry.path(), &meta);
        }
    }
    if !fixed.is_empty() {
        tracing::warn!(
            "made owt's state folder private (it held tasks, notes and messages readable by other users): {}",
            fixed.join(", ")
        );
    }
}

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

    /// The repository row for `common_dir`, created on first use.
    pub fn ensure_repo(&self, common_dir: &Path, main_worktree: &Path) -> Result<RepoRow> {
        let common = common_dir.to_string_lossy();
        let main = main_worktree.to_string_lossy();
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
            Some(row) => {
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
                SessionRow {
                    task: new.task.to_string(),
                    branch: new.branch.to_string(),
                    base_branch: new.base_branch.to_string(),
                    worktree_path: PathBuf::from(&location),
                    provider: new.provider.to_string(),
                    kind: new.kind,
                    ..row
                }
            }
            None => {
                let short_id = new_short_id(&tx, random_u32)?;
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
                SessionRow {
                    id,
                    repo_id: new.repo_id,
                    name: new.name.to_string(),
                    short_id,
                    task: new.task.to_string(),
                    branch: new.branch.to_string(),
                    base_branch: new.base_branch.to_string(),
                    worktree_path: PathBuf::from(&location),
                    provider: new.provider.to_string(),
                    kind: new.kind,
                    created_at: new.created_at,
                }
            }
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
        let row: Option<(String, i64)> = self
            .conn
            .query_row(
                "SELECT value, observed_at FROM facts WHERE session_id = ?1 AND kind = ?2",
                params![session_id, kind],
                |row| Ok((row.get(0)?, row.get(1)?)),
            )
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

const SESSION_COLUMNS: &str = "id, repo_id, name, short_id, task, branch, base_branch, worktree_path, provider, kind, created_at";

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

fn session_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<SessionRow> {
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
fn new_short_id(tx: &rusqlite::Transaction<'_>, mut random: impl FnMut() -> u32) -> Result<String> {
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

#[cfg(test)]
mod tests;
