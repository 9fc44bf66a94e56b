//! Paths written in the configuration: `~/` and relative to the
//! repository.

use std::path::{Path, PathBuf};

/// A configured `base_directory` as a path: `~/` expanded, relative paths
/// taken from `repo_root`.
pub fn resolve_base_directory(dir: &str, repo_root: &Path) -> PathBuf {
    let dir = expand_home(dir);
    if dir.is_absolute() {
        dir
    } else {
        repo_root.join(dir)
    }
}

/// Resolves `.` and `..` without touching the file system.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// `~/x` → `$HOME/x`.
pub fn expand_home(path: &str) -> PathBuf {
    if let Some(rest) = path.strip_prefix("~/") {
        if let Some(home) = std::env::var_os("HOME") {
            return PathBuf::from(home).join(rest);
        }
    }
    PathBuf::from(path)
}
