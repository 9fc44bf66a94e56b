//! Files owt writes into, or reads from, a checkout it does not control:
//! opened without following a link out of it, and only when they are
//! regular files.
//!
//! A repository can commit a symbolic link anywhere (`.mcp.json ->
//! ~/.claude/settings.json`, a folder `config -> /tmp/shared`), a FIFO or a
//! link to `/dev/zero`. Two helpers cover every file owt touches there:
//!
//! - [`write_beneath`] (and [`read_beneath`], for a read-modify-write):
//!   a path relative to a root folder is walked one component at a time,
//!   each opened relative to the folder before it with `O_NOFOLLOW`
//!   (`openat`), so no component may be a link and the walk cannot leave
//!   the root, whatever is renamed meanwhile. Missing folders are created
//!   (`mkdirat`) on the way. The last component must be a regular file (or
//!   missing, then created). This is the portable form of Linux's
//!   `openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, with the same
//!   guarantee, on every Unix.
//! - [`read_regular`]: a file owt reads for itself (configuration, a setup
//!   script): opened with `O_NONBLOCK` (a FIFO never blocks), checked with
//!   `fstat` to be a regular file (no device, FIFO or socket), read up to
//!   a size limit; with a `confine` folder, a link is followed only when it
//!   resolves inside that folder.
//!
//! Invariants: a refused file is left as it is, and nothing is created
//! outside the root; every error names the file. The system calls
//! (`openat`, `mkdirat`, the open flags) are [`crate::fs`]'s, the policy
//! (what is refused, every error) is here. owt-core re-exports this module
//! as `safe_fs` (`crate::safe_fs` there).

use std::ffi::OsStr;
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use crate::fs as sys_fs;

/// The largest configuration file owt reads (1 MiB).
pub const CONFIG_LIMIT: u64 = 1 << 20;

/// Why a file in a checkout was not read or written.
#[derive(Debug, thiserror::Error)]
pub enum SafeFsError {
    /// A component of the path is a symbolic link.
    #[error("{} is a symbolic link; owt never follows a link in a worktree", path.display())]
    Link { path: PathBuf },
    /// A link that resolves outside the folder it must stay in.
    #[error("{} is a link to outside {}; owt does not follow it", path.display(), root.display())]
    LinkOutside { path: PathBuf, root: PathBuf },
    /// A FIFO, device, socket or folder where a file was expected.
    #[error("{} is {what}, not a regular file", path.display())]
    NotRegular { path: PathBuf, what: &'static str },
    /// Larger than the limit owt reads.
    #[error("{} is larger than {limit} bytes; owt does not read it", path.display())]
    TooLarge { path: PathBuf, limit: u64 },
    /// An absolute path or one with `..`, where a path inside was needed.
    #[error("{} is not a path inside {}", path.display(), root.display())]
    NotBeneath { path: PathBuf, root: PathBuf },
    #[error("{}: {error}", path.display())]
    Io {
        path: PathBuf,
        error: std::io::Error,
    },
}

impl SafeFsError {
    fn io(path: &Path, error: impl Into<std::io::Error>) -> Self {
        SafeFsError::Io {
            path: path.to_path_buf(),
            error: error.into(),
        }
    }

    /// Whether the file was refused for what it is (a link, not a regular
    /// file, too large, outside), rather than an I/O failure.
    pub fn is_refusal(&self) -> bool {
        !matches!(self, SafeFsError::Io { .. })
    }
}

/// Writes `bytes` to `rel` beneath `root` (creating missing folders), never
/// through a link; with `mode`, the file gets those permission bits.
pub fn write_beneath(
    root: &Path,
    rel: &Path,
    bytes: &[u8],
    mode: Option<u32>,
) -> Result<(), SafeFsError> {
    let (dir, name) = open_parent(root, rel, true)?;
    let path = root.join(rel);
    let mut file = sys_fs::open_for_writing_in(&dir, name, mode.unwrap_or(0o644))
        .map_err(|e| refusal(&path, e))?;
    check_regular(&file, &path)?;
    if let Some(mode) = mode {
        file.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(|e| SafeFsError::io(&path, e))?;
    }
    file.set_len(0).map_err(|e| SafeFsError::io(&path, e))?;
    file.write_all(bytes).map_err(|e| SafeFsError::io(&path, e))
}

/// Reads `rel` beneath `root` (at most `limit` bytes), never through a link;
/// `None` when it (or a folder on its way) does not exist.
pub fn read_beneath(root: &Path, rel: &Path, limit: u64) -> Result<Option<Vec<u8>>, SafeFsError> {
    let path = root.join(rel);
    let (dir, name) = match open_parent(root, rel, false) {
        Ok(found) => found,
        Err(SafeFsError::Io { error, .. }) if error.kind() == std::io::ErrorKind::NotFound => {
            return Ok(None)
        }
        Err(e) => return Err(e),
    };
    match sys_fs::open_for_reading_in(&dir, name) {
        Ok(file) => read_open(file, &path, limit).map(Some),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(refusal(&path, e)),
    }
}

/// Whether `rel` beneath `root` is a symbolic link, or lies under one.
pub fn is_link_beneath(root: &Path, rel: &Path) -> bool {
    let mut at = root.to_path_buf();
    for c in rel.components() {
        at.push(c.as_os_str());
        if at
            .symlink_metadata()
            .is_ok_and(|m| m.file_type().is_symlink())
        {
            return true;
        }
    }
    false
}

/// Reads the regular file `path` (at most `limit` bytes); `None` when it
/// does not exist. With `confine`, links are followed only when the path
/// resolves inside that folder.
pub fn read_regular(
    path: &Path,
    limit: u64,
    confine: Option<&Path>,
) -> Result<Option<Vec<u8>>, SafeFsError> {
    if let Some(root) = confine {
        // Resolved whole (a link in a folder on the way counts too).
        let inside = match (path.canonicalize(), root.canonicalize()) {
            (Ok(target), Ok(root)) => target.starts_with(root),
            (Err(e), _) if e.kind() == std::io::ErrorKind::NotFound => {
                match path.symlink_metadata() {
                    Err(_) => return Ok(None),
                    // A dangling link: refused below as outside.
                    Ok(_) => false,
                }
            }
            _ => false,
        };
        if !inside {
            return Err(SafeFsError::LinkOutside {
                path: path.to_path_buf(),
                root: root.to_path_buf(),
            });
        }
    }
    match sys_fs::open_for_reading_nonblocking(path) {
        Ok(file) => read_open(file, path, limit).map(Some),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(SafeFsError::io(path, e)),
    }
}

/// Reads an open file: a regular one, of at most `limit` bytes.
fn read_open(file: File, path: &Path, limit: u64) -> Result<Vec<u8>, SafeFsError> {
    let size = check_regular(&file, path)?;
    let too_large = || SafeFsError::TooLarge {
        path: path.to_path_buf(),
        limit,
    };
    if size > limit {
        return Err(too_large());
    }
    let mut bytes = Vec::with_capacity(size as usize);
    file.take(limit + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| SafeFsError::io(path, e))?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(bytes)
}

/// The file's size, when it is a regular file.
fn check_regular(file: &File, path: &Path) -> Result<u64, SafeFsError> {
    let meta = file.metadata().map_err(|e| SafeFsError::io(path, e))?;
    let kind = meta.file_type();
    let what = if kind.is_file() {
        return Ok(meta.len());
    } else if kind.is_dir() {
        "a folder"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_socket() {
        "a socket"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else {
        "not a file"
    };
    Err(SafeFsError::NotRegular {
        path: path.to_path_buf(),
        what,
    })
}

/// Opens the folder holding `rel` beneath `root`, one component at a time
/// without following links (creating missing folders when `create`), and
/// the last component's name.
fn open_parent<'a>(
    root: &Path,
    rel: &'a Path,
    create: bool,
) -> Result<(OwnedFd, &'a OsStr), SafeFsError> {
    let not_beneath = || SafeFsError::NotBeneath {
        path: rel.to_path_buf(),
        root: root.to_path_buf(),
    };
    let mut names = Vec::new();
    for c in rel.components() {
        match c {
            Component::Normal(name) => names.push(name),
            Component::CurDir => {}
            _ => return Err(not_beneath()),
        }
    }
    let Some(last) = names.pop() else {
        return Err(not_beneath());
    };
    let mut dir = sys_fs::open_folder(root).map_err(|e| SafeFsError::io(root, e))?;
    let mut at = root.to_path_buf();
    for name in names {
        at.push(name);
        let next = match sys_fs::open_folder_in(&dir, name) {
            Err(e) if create && e.kind() == ErrorKind::NotFound => {
                match sys_fs::make_folder_in(&dir, name, 0o755) {
                    Ok(()) => {}
                    Err(e) if e.kind() == ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(SafeFsError::io(&at, e)),
                }
                sys_fs::open_folder_in(&dir, name)
            }
            other => other,
        };
        dir = next.map_err(|e| refusal(&at, e))?;
    }
    Ok((dir, last))
}

/// The error for a failed no-follow open of `path`: a link is a refusal
/// naming it, anything else an I/O error.
fn refusal(path: &Path, error: std::io::Error) -> SafeFsError {
    // ELOOP: the last component is a link (O_NOFOLLOW); ENOTDIR with
    // O_DIRECTORY | O_NOFOLLOW: a link (or a file) where a folder was
    // needed. ENXIO: a FIFO without a reader, opened for writing.
    let is_link = path
        .symlink_metadata()
        .is_ok_and(|m| m.file_type().is_symlink());
    let no_reader = sys_fs::is_fifo_without_reader(&error);
    if sys_fs::is_link_refused(&error)
        || (is_link && (no_reader || sys_fs::is_not_a_folder(&error)))
    {
        SafeFsError::Link {
            path: path.to_path_buf(),
        }
    } else if no_reader {
        SafeFsError::NotRegular {
            path: path.to_path_buf(),
            what: "a FIFO",
        }
    } else {
        SafeFsError::io(path, error)
    }
}

#[cfg(test)]
mod tests;
