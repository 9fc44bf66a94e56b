//! Your unsaved editor buffers, for the pre-edit hook: every running `owt
//! lsp` keeps a small record of its open documents whose text differs
//! from the file on disk, `$OWT_HOME/unsaved/<pid>.json` (0600, replaced
//! atomically); `owt hook --pre-edit`, a separate short-lived process,
//! reads the records of the servers still running.
//!
//! A record names, per such document, its absolute path, the git blob id
//! of the file on disk, and the lines of that file the buffer replaces
//! (in the file's coordinates): no text. A record whose server is gone
//! (killed: its pid dead, or reused by another process that started at
//! another time) is ignored, and removed by the next server that starts;
//! an entry whose file changed on disk since (its blob id) is ignored.
//!
//! Invariant: only `owt lsp` writes or removes records, each its own
//! (named by its pid), and the stale ones of dead servers; the hook only
//! reads.

use std::path::{Path, PathBuf};

use owt_protocol::guard::LineRange;
use serde::{Deserialize, Serialize};
use similar::{DiffOp, TextDiff};

/// The folder under `$OWT_HOME`.
pub const DIR: &str = "unsaved";

/// What one `owt lsp` has unsaved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    pub pid: u32,
    /// When the process started (clock ticks after boot, field 22 of
    /// `/proc/PID/stat`): a pid reused by another process is not this
    /// server.
    pub started: Option<u64>,
    /// When the record was written (Unix ms).
    pub updated_ms: i64,
    pub files: Vec<UnsavedFile>,
}

/// One open document whose text is not the file on disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnsavedFile {
    /// Absolute, symlinks resolved.
    pub path: PathBuf,
    /// The git blob id of the file on disk the lines count in; `None`: no
    /// such file yet (the buffer would create it).
    pub disk: Option<String>,
    /// The lines of the file on disk the buffer changes (1-based; `lines:
    /// 0` is an insertion before `start`).
    pub lines: Vec<LineRange>,
}

/// `$OWT_HOME/unsaved/<pid>.json`.
pub fn record_path(home: &Path, pid: u32) -> PathBuf {
    home.join(DIR).join(format!("{pid}.json"))
}

/// The git blob id of `bytes`.
pub fn blob_id(bytes: &[u8]) -> Option<String> {
    git2::Oid::hash_object(git2::ObjectType::Blob, bytes)
        .ok()
        .map(|oid| oid.to_string())
}

/// `path` with its folder's symlinks resolved (the file itself may not
/// exist yet).
pub fn resolved(path: &Path) -> PathBuf {
    if let Ok(path) = std::fs::canonicalize(path) {
        return path;
    }
    path.parent()
        .and_then(|dir| std::fs::canonicalize(dir).ok())
        .and_then(|dir| Some(dir.join(path.file_name()?)))
        .unwrap_or_else(|| path.to_path_buf())
}

/// What the buffer `text` of `path` changes against the file on disk;
/// `None` when it is the file on disk (saved) or an empty buffer of a
/// file that does not exist.
pub fn unsaved_file(path: &Path, text: &str) -> Option<UnsavedFile> {
    let path = resolved(path);
    // A regular file of at most 16 MiB (a FIFO or a link to a device is
    // taken for a missing file).
    let on_disk = crate::safe_fs::read_regular(&path, super::big::BIG_FILE, None);
    match on_disk.ok().flatten().ok_or(()) {
        Ok(disk) => {
            if disk == text.as_bytes() {
                return None;
            }
            let disk_text = String::from_utf8_lossy(&disk);
            let lines = changed_old_lines(&disk_text, text);
            Some(UnsavedFile {
                path,
                disk: blob_id(&disk),
                lines,
            })
        }
        Err(_) if text.is_empty() => None,
        Err(_) => Some(UnsavedFile {
            path,
            disk: None,
            lines: vec![LineRange {
                start: 1,
                lines: text.lines().count() as u32,
            }],
        }),
    }
}

/// Writes this process's record (0600, atomically: the hook never reads
/// half of it).
pub fn write(home: &Path, record: &Record) -> std::io::Result<()> {
    super::pid_record::write(&home.join(DIR), &format!("{}.json", record.pid), record)
}

/// Removes the record of `pid` (nothing when there is none).
pub fn remove(home: &Path, pid: u32) {
    let _ = std::fs::remove_file(record_path(home, pid));
}

pub use super::pid_record::start_ticks;

/// Whether the server that wrote `record` still runs.
fn is_live(record: &Record) -> bool {
    super::pid_record::still_running(record.pid, record.started)
}

/// Every record under `home`, with its file name's pid.
fn records(home: &Path) -> Vec<(PathBuf, Option<Record>)> {
    let Ok(entries) = std::fs::read_dir(home.join(DIR)) else {
        return Vec::new();
    };
    entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            let record = super::pid_record::read(&p);
            (p, record)
        })
        .collect()
}

/// The unsaved documents of every running `owt lsp`.
pub fn live(home: &Path) -> Vec<UnsavedFile> {
    records(home)
        .into_iter()
        .filter_map(|(_, record)| record)
        .filter(is_live)
        .flat_map(|record| record.files)
        .collect()
}

/// Removes the records of servers that are gone (killed before they
/// could remove their own), and unreadable ones.
pub fn remove_stale(home: &Path) {
    for (path, record) in records(home) {
        if !record.as_ref().is_some_and(is_live) {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The lines of `old` that `new` replaces or deletes, in `old`'s
/// numbering (1-based); an insertion is an empty range before its line.
pub(super) fn changed_old_lines(old: &str, new: &str) -> Vec<LineRange> {
    TextDiff::from_lines(old, new)
        .ops()
        .iter()
        .filter_map(|op| match *op {
            DiffOp::Equal { .. } => None,
            DiffOp::Delete {
                old_index, old_len, ..
            }
            | DiffOp::Replace {
                old_index, old_len, ..
            } => Some(LineRange {
                start: old_index as u32 + 1,
                lines: old_len as u32,
            }),
            DiffOp::Insert { old_index, .. } => Some(LineRange {
                start: old_index as u32 + 1,
                lines: 0,
            }),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_is_unsaved_where_it_differs_from_the_file_on_disk() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a.txt");
        std::fs::write(&file, "1\n2\n3\n4\n").unwrap();
        assert_eq!(unsaved_file(&file, "1\n2\n3\n4\n"), None, "saved");
        let unsaved = unsaved_file(&file, "1\nTWO\n3\nnew\n4\n").unwrap();
        assert_eq!(
            unsaved.lines,
            vec![
                LineRange { start: 2, lines: 1 },
                LineRange { start: 4, lines: 0 }
            ]
        );
        assert_eq!(unsaved.disk, blob_id(b"1\n2\n3\n4\n"));
        assert_eq!(unsaved.path, file.canonicalize().unwrap());
        let new = unsaved_file(&dir.path().join("new.txt"), "x\ny\n").unwrap();
        assert_eq!(
            (new.disk, new.lines),
            (None, vec![LineRange { start: 1, lines: 2 }])
        );
        assert_eq!(unsaved_file(&dir.path().join("empty.txt"), ""), None);
    }

    #[test]
    fn records_of_dead_servers_are_ignored_and_removed() {
        let home = tempfile::tempdir().unwrap();
        let file = UnsavedFile {
            path: "/r/a.txt".into(),
            disk: None,
            lines: vec![],
        };
        let me = std::process::id();
        let mine = Record {
            pid: me,
            started: start_ticks(me),
            updated_ms: 0,
            files: vec![file.clone()],
        };
        write(home.path(), &mine).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(record_path(home.path(), me))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        // A live pid that started at another time: reused, not the server.
        let reused = Record {
            started: start_ticks(me).map(|t| t + 1),
            pid: 1,
            ..mine.clone()
        };
        write(home.path(), &reused).unwrap();
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let dead_pid = child.id();
        child.wait().unwrap();
        write(
            home.path(),
            &Record {
                pid: dead_pid,
                started: None,
                ..mine.clone()
            },
        )
        .unwrap();
        assert_eq!(live(home.path()), vec![file]);
        remove_stale(home.path());
        let left: Vec<_> = std::fs::read_dir(home.path().join(DIR))
            .unwrap()
            .flatten()
            .map(|e| e.file_name().into_string().unwrap())
            .collect();
        assert_eq!(left, vec![format!("{me}.json")]);
        remove(home.path(), me);
        assert!(live(home.path()).is_empty());
    }
}
