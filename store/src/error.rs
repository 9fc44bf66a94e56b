//! What can go wrong with the store, and what the file system says when a
//! write failed (read-only, full, not writable).

use std::path::{Path, PathBuf};

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
    let space = crate::platform::fs::space(dir).ok()?;
    let path = dir;
    let dir = dir.display();
    if space.read_only {
        return Some(format!(
            "{dir} is on a read-only file system; remount it read-write, or set OWT_HOME to a writable folder"
        ));
    }
    let free = space.free_bytes;
    if free < NEARLY_FULL_BYTES {
        return Some(format!(
            "the disk holding {dir} is full ({} KiB free); free some space, or set OWT_HOME to a folder on another disk",
            free / 1024
        ));
    }
    if !crate::platform::fs::writable_by_me(path) {
        return Some(format!(
            "{dir} is not writable by you; fix its permissions, or set OWT_HOME to a writable folder"
        ));
    }
    None
}
