//! Where owt's own programs are: the `owt` binary (what detached helpers,
//! agents' hooks and MCP entries run) and the session host binary
//! `owt-host` that `cargo install` puts beside it. `owt-host` is the
//! session host alone (`owt __host run`), so a host keeps half the
//! relocated data of the whole `owt` (bench/results.md, "Session 53").

use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};

/// The session host binary's file name.
pub const HOST_BINARY: &str = if cfg!(windows) {
    "owt-host.exe"
} else {
    "owt-host"
};
/// The `owt` binary's file name.
const OWT_BINARY: &str = if cfg!(windows) { "owt.exe" } else { "owt" };

/// The owt binary: this program, or the `owt` beside it when this program
/// is the session host binary.
pub fn owt() -> io::Result<PathBuf> {
    Ok(owt_for(std::env::current_exe()?))
}

/// The owt binary to start helpers with: `$OWT_BIN` when set (tests that
/// link owt-core into another executable), else [`owt`].
pub fn owt_to_run() -> io::Result<PathBuf> {
    match std::env::var_os("OWT_BIN").filter(|v| !v.is_empty()) {
        Some(bin) => Ok(PathBuf::from(bin)),
        None => owt(),
    }
}

/// The owt binary for a process whose program is `exe`.
fn owt_for(exe: PathBuf) -> PathBuf {
    if exe.file_name() == Some(OsStr::new(HOST_BINARY)) {
        exe.with_file_name(OWT_BINARY)
    } else {
        exe
    }
}

/// The program to start session hosts with, for the owt binary `owt`: the
/// session host binary beside it when there is one (a regular file, or a
/// link to one), else `owt` itself (its `__host run`: a binary copied
/// alone).
pub fn host_for(owt: &Path) -> PathBuf {
    let host = owt.with_file_name(HOST_BINARY);
    if std::fs::metadata(&host).is_ok_and(|m| m.is_file()) {
        host
    } else {
        owt.to_path_buf()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_binary_names_the_owt_beside_it_and_owt_names_itself() {
        assert_eq!(
            owt_for(PathBuf::from("/opt/bin").join(HOST_BINARY)),
            PathBuf::from("/opt/bin").join(OWT_BINARY)
        );
        assert_eq!(
            owt_for(PathBuf::from("/opt/bin").join(OWT_BINARY)),
            PathBuf::from("/opt/bin").join(OWT_BINARY)
        );
        // Only the exact name: a file that merely starts with it is not.
        let other = PathBuf::from("/opt/bin/owt-host-old");
        assert_eq!(owt_for(other.clone()), other);
    }

    #[test]
    fn hosts_run_from_the_host_binary_beside_owt_else_from_owt() {
        let dir = tempfile::tempdir().unwrap();
        let owt = dir.path().join(OWT_BINARY);
        std::fs::write(&owt, "").unwrap();
        assert_eq!(host_for(&owt), owt, "no host binary: owt itself");
        std::fs::create_dir(dir.path().join(HOST_BINARY)).unwrap();
        assert_eq!(host_for(&owt), owt, "a folder of that name is not one");
        std::fs::remove_dir(dir.path().join(HOST_BINARY)).unwrap();
        std::fs::write(dir.path().join(HOST_BINARY), "").unwrap();
        assert_eq!(host_for(&owt), dir.path().join(HOST_BINARY));
    }
}
