//! The trash: where `owt delete` (and ship's clean-up) puts the files of a
//! worktree that git does not keep — ignored files (a local config, a
//! database, a long build), and with `--force` the uncommitted ones —
//! instead of deleting them: `$OWT_HOME/trash/<repo>/<session>-<time>/`,
//! the paths kept relative to the worktree, with `.owt-trash.json` saying
//! where they came from. `owt doctor` lists the trash; `owt db purge`
//! (and `owt doctor --fix`) delete entries older than a number of days.
//!
//! Invariants: a file is moved (renamed, or copied then removed across file
//! systems), never rewritten; the folders are private (0700); nothing
//! outside `$OWT_HOME/trash` is ever removed here except the moved source.

use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::clock;

/// Name of the file describing a trash entry.
const ABOUT_FILE: &str = ".owt-trash.json";

/// What a trash entry holds and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct About {
    pub session: String,
    pub repository: String,
    pub worktree: String,
    /// Unix ms.
    pub created_at: i64,
    /// Paths relative to the worktree (and to the entry).
    pub files: Vec<String>,
}

/// One entry of the trash.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub path: PathBuf,
    pub about: Option<About>,
    /// Unix ms (from `.owt-trash.json`, else the folder's mtime).
    pub created_at: i64,
    pub bytes: u64,
}

fn trash_root(home: &Path) -> PathBuf {
    home.join("trash")
}

fn private_dir(path: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(path)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o700))
}

/// `2026-01-01T12:00:00Z` of a Unix time in ms, compact: `20260101T120000Z`.
pub fn utc_stamp(ms: i64) -> String {
    clock::Utc::from_ms(ms).compact()
}

/// A trash entry being filled.
pub struct Filling {
    pub path: PathBuf,
    about: About,
}

/// Makes a new, empty trash entry for `session` of the repository called
/// `repo_name`.
pub fn begin(home: &Path, repo_name: &str, session: &str, worktree: &Path) -> io::Result<Filling> {
    let now = crate::store::now_ms();
    private_dir(&trash_root(home))?;
    let repo_dir = trash_root(home).join(crate::names::slugify(repo_name));
    private_dir(&repo_dir)?;
    let stem = format!("{session}-{}", utc_stamp(now));
    let mut path = repo_dir.join(&stem);
    let mut n = 2;
    while path.exists() {
        path = repo_dir.join(format!("{stem}-{n}"));
        n += 1;
    }
    private_dir(&path)?;
    Ok(Filling {
        path,
        about: About {
            session: session.to_string(),
            repository: repo_name.to_string(),
            worktree: worktree.display().to_string(),
            created_at: now,
            files: Vec::new(),
        },
    })
}

impl Filling {
    /// Moves `worktree/rel` (a file, link or folder) into the entry.
    pub fn take(&mut self, worktree: &Path, rel: &str) -> io::Result<()> {
        let rel = rel.trim_end_matches('/');
        let from = worktree.join(rel);
        let to = self.path.join(rel);
        if let Some(parent) = to.parent() {
            private_dir(parent)?;
        }
        match std::fs::rename(&from, &to) {
            Ok(()) => {}
            Err(e) if crate::platform::fd::is_cross_device(&e) => {
                copy_tree(&from, &to)?;
                remove_tree(&from)?;
            }
            Err(e) => return Err(e),
        }
        self.about.files.push(rel.to_string());
        self.write_about()
    }

    fn write_about(&self) -> io::Result<()> {
        let json = serde_json::to_vec_pretty(&self.about).map_err(io::Error::other)?;
        let file = self.path.join(ABOUT_FILE);
        std::fs::write(&file, json)?;
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600))
    }

    /// Removes the entry again when nothing was put in it.
    pub fn finish(self) -> Option<PathBuf> {
        if self.about.files.is_empty() {
            let _ = std::fs::remove_dir(&self.path);
            None
        } else {
            Some(self.path)
        }
    }
}

/// Copies a file, link or folder (modes kept, links copied as links).
fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(from)?;
    if meta.file_type().is_symlink() {
        std::os::unix::fs::symlink(std::fs::read_link(from)?, to)
    } else if meta.is_dir() {
        std::fs::create_dir(to)?;
        for entry in std::fs::read_dir(from)? {
            let entry = entry?;
            copy_tree(&entry.path(), &to.join(entry.file_name()))?;
        }
        std::fs::set_permissions(to, meta.permissions())
    } else {
        std::fs::copy(from, to).map(|_| ())
    }
}

/// Removes a file or folder, making read-only folders writable first (a
/// Go module cache is read-only).
pub fn remove_tree(path: &Path) -> io::Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if !meta.is_dir() {
        return std::fs::remove_file(path);
    }
    match std::fs::remove_dir_all(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            make_writable(path);
            std::fs::remove_dir_all(path)
        }
        Err(e) => Err(e),
    }
}

fn make_writable(dir: &Path) {
    let Ok(meta) = std::fs::symlink_metadata(dir) else {
        return;
    };
    if !meta.is_dir() {
        return;
    }
    let mode = meta.permissions().mode() | 0o700;
    let _ = std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode));
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            make_writable(&entry.path());
        }
    }
}

fn size_of(path: &Path) -> u64 {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return 0;
    };
    if meta.is_dir() {
        std::fs::read_dir(path)
            .map(|entries| entries.flatten().map(|e| size_of(&e.path())).sum())
            .unwrap_or(0)
    } else {
        meta.len()
    }
}

/// Every entry of the trash, oldest first.
pub fn entries(home: &Path) -> Vec<Entry> {
    let mut out = Vec::new();
    let Ok(repos) = std::fs::read_dir(trash_root(home)) else {
        return out;
    };
    for repo in repos.flatten() {
        let Ok(items) = std::fs::read_dir(repo.path()) else {
            continue;
        };
        for item in items.flatten() {
            let path = item.path();
            if !path.is_dir() {
                continue;
            }
            let about: Option<About> = std::fs::read(path.join(ABOUT_FILE))
                .ok()
                .and_then(|bytes| serde_json::from_slice(&bytes).ok());
            let created_at = about.as_ref().map(|a| a.created_at).unwrap_or_else(|| {
                item.metadata()
                    .and_then(|m| m.modified())
                    .ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_millis() as i64)
            });
            out.push(Entry {
                bytes: size_of(&path),
                path,
                about,
                created_at,
            });
        }
    }
    out.sort_by_key(|e| e.created_at);
    out
}

/// Deletes the entries older than `days`; returns their paths.
pub fn purge(home: &Path, days: u32) -> io::Result<Vec<PathBuf>> {
    let cutoff = crate::store::now_ms() - i64::from(days) * 86_400_000;
    let mut removed = Vec::new();
    for entry in entries(home) {
        if entry.created_at < cutoff {
            remove_tree(&entry.path)?;
            removed.push(entry.path);
        }
    }
    Ok(removed)
}

/// `1.2 MiB`.
pub fn human_bytes(bytes: u64) -> String {
    match bytes {
        0..1024 => format!("{bytes} B"),
        1024..1_048_576 => format!("{:.1} KiB", bytes as f64 / 1024.0),
        1_048_576..1_073_741_824 => format!("{:.1} MiB", bytes as f64 / 1_048_576.0),
        _ => format!("{:.1} GiB", bytes as f64 / 1_073_741_824.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_are_utc() {
        assert_eq!(utc_stamp(0), "19700101T000000Z");
        assert_eq!(utc_stamp(1_767_225_600_000), "20260101T000000Z");
        assert_eq!(utc_stamp(951_782_400_000 + 3_723_000), "20000229T010203Z");
    }

    #[test]
    fn moves_files_and_folders_and_lists_them() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let wt = dir.path().join("wt");
        std::fs::create_dir_all(wt.join("build/deep")).unwrap();
        std::fs::write(wt.join("build/deep/out.bin"), b"\x00\x01").unwrap();
        std::fs::write(wt.join(".env"), "SECRET=1\n").unwrap();
        let mut filling = begin(&home, "app", "fix-login", &wt).unwrap();
        filling.take(&wt, "build/").unwrap();
        filling.take(&wt, ".env").unwrap();
        let entry = filling.finish().unwrap();
        assert!(!wt.join("build").exists() && !wt.join(".env").exists());
        assert_eq!(
            std::fs::read(entry.join("build/deep/out.bin")).unwrap(),
            b"\x00\x01"
        );
        assert_eq!(
            std::fs::metadata(&entry).unwrap().permissions().mode() & 0o777,
            0o700
        );
        let listed = entries(&home);
        assert_eq!(listed.len(), 1);
        let about = listed[0].about.as_ref().unwrap();
        assert_eq!(about.files, vec!["build", ".env"]);
        assert_eq!(
            purge(&home, 1).unwrap(),
            Vec::<PathBuf>::new(),
            "a day old at least"
        );
        // Aged by two days: purged, and only the trash is touched.
        let about_file = entry.join(ABOUT_FILE);
        let mut aged: About = serde_json::from_slice(&std::fs::read(&about_file).unwrap()).unwrap();
        aged.created_at -= 2 * 86_400_000;
        std::fs::write(&about_file, serde_json::to_vec(&aged).unwrap()).unwrap();
        assert_eq!(purge(&home, 1).unwrap(), vec![entry.clone()]);
        assert!(!entry.exists() && wt.exists());
    }
}
