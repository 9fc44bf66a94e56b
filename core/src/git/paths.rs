//! Paths as git sees them: canonical, the same checkout, the checkout
//! enclosing a folder, the branch a `HEAD` file names.

use std::path::{Path, PathBuf};

use super::{GitError, Result};

/// The ref a `HEAD` file points at (`None` when detached or unreadable).
pub(super) fn head_ref(head_file: &Path) -> Option<String> {
    let text = std::fs::read_to_string(head_file).ok()?;
    text.trim().strip_prefix("ref: ").map(str::to_string)
}

pub(super) fn canonical(path: &Path) -> Result<PathBuf> {
    std::fs::canonicalize(path).map_err(|source| GitError::Io {
        path: path.to_path_buf(),
        error: source,
    })
}

/// The outermost checkout that encloses the checkout at `root` (a
/// superproject of a submodule, a repository holding a nested clone), if
/// any: the highest ancestor folder with a `.git` entry — not counting
/// the home folder and its ancestors (a dotfiles repository in `~` holds
/// everything).
pub fn outermost_enclosing_checkout(root: &Path) -> Option<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    root.ancestors()
        .skip(1)
        .filter(|dir| !home.as_deref().is_some_and(|h| h.starts_with(dir)))
        .filter(|dir| dir.join(".git").symlink_metadata().is_ok())
        .last()
        .map(Path::to_path_buf)
}

/// Whether two paths name the same folder (after resolving links).
pub fn same_path(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}
