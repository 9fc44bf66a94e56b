//! git's lock files (`index.lock`, `HEAD.lock`, …), found where a killed
//! git left them.

use std::path::{Path, PathBuf};

use super::{same_path, Repo};

/// A lock file git holds while it changes something (`index.lock`,
/// `HEAD.lock`, `refs/heads/main.lock`, …), left behind when git is killed.
#[derive(Debug, Clone, PartialEq)]
pub struct LockFile {
    pub path: PathBuf,
    /// Last modification, Unix ms.
    pub modified_ms: i64,
}

impl Repo {
    /// Every lock file under the common dir: its top level, `refs/`, and
    /// each linked worktree's admin folder.
    pub fn lock_files(&self) -> Vec<LockFile> {
        let mut out = Vec::new();
        collect_locks(&self.common_dir, false, &mut out);
        collect_locks(&self.common_dir.join("refs"), true, &mut out);
        if let Ok(entries) = std::fs::read_dir(self.common_dir.join("worktrees")) {
            for entry in entries.flatten() {
                collect_locks(&entry.path(), false, &mut out);
                collect_locks(&entry.path().join("refs"), true, &mut out);
            }
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        out
    }

    /// The admin folder of the linked worktree at `path`, if it is one.
    pub fn admin_dir_of(&self, path: &Path) -> Option<PathBuf> {
        let name = self
            .worktrees()
            .ok()?
            .into_iter()
            .find(|wt| same_path(&wt.path, path))?
            .name;
        Some(self.common_dir.join("worktrees").join(name))
    }
}

fn collect_locks(dir: &Path, recurse: bool, out: &mut Vec<LockFile>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() {
            if recurse {
                collect_locks(&path, true, out);
            }
        } else if path.extension().is_some_and(|e| e == "lock")
            && path.file_name().is_some_and(|n| n != "owt-worktree.lock")
        {
            let modified_ms = entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_millis() as i64);
            out.push(LockFile { path, modified_ms });
        }
    }
}
