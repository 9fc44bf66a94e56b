//! The store's files on disk: the private state folder (0700 folders,
//! 0600 files), the identity of the file opened, and a file truncated
//! under its write-ahead log.

use std::path::{Path, PathBuf};

use super::StoreError;

pub(super) fn file_identity(path: &Path) -> Option<(u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()))
}

/// The error for a store file emptied under its write-ahead log (`: >
/// owt.db` while hosts run): every open would wait out the busy timeout and
/// fail with "database is locked".
pub(super) fn truncated(path: &Path) -> Option<StoreError> {
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
    use crate::platform::procs;
    let mut out = Vec::new();
    for pid in procs::pids() {
        let Some(files) = procs::open_files(pid) else {
            continue;
        };
        if files.iter().any(|target| target == path) {
            let name = procs::command_name(pid).unwrap_or_default();
            out.push(format!("pid {pid} ({name})"));
        }
    }
    out
}

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
///
/// What is inside a private folder is out of other users' reach whatever
/// its mode: a folder's entries are looked at only when it, or `home`, was
/// open (an install made by an older owt). Every start opens the store:
/// `logs/` alone holds a few files per session ever started.
pub(super) fn make_private(home: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let mut fixed = Vec::new();
    // Whether `path` was open to other users (and is private now).
    let mut fix = |path: &Path, meta: &std::fs::Metadata| {
        let mode = meta.permissions().mode() & 0o7777;
        let want = if meta.is_dir() { 0o700 } else { 0o600 };
        if mode & 0o077 == 0 {
            return false;
        }
        if std::fs::set_permissions(path, std::fs::Permissions::from_mode(want)).is_ok() {
            fixed.push(format!("{} ({mode:o} → {want:o})", path.display()));
        }
        true
    };
    let Ok(meta) = std::fs::symlink_metadata(home) else {
        return;
    };
    let home_was_open = fix(home, &meta);
    let mut open_dirs = Vec::new();
    let Ok(top) = std::fs::read_dir(home) else {
        return;
    };
    // The top level always: SQLite gives new -wal and -shm files the
    // database's mode.
    for entry in top.flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        if meta.file_type().is_symlink() {
            continue;
        }
        let path = entry.path();
        if fix(&path, &meta) || (home_was_open && meta.is_dir()) {
            open_dirs.push(path);
        }
    }
    for dir in open_dirs {
        let Some(name) = dir.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if !["logs", "run", "trash"].contains(&name) {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(meta) = entry.metadata() else { continue };
            if meta.file_type().is_symlink() {
                continue;
            }
            // The trash's entries are folders; the files inside keep their modes.
            if name == "trash" && !meta.is_dir() {
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
