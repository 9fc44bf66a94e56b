//! The conflicts a merge would have, computed in memory.

use git2::{MergeOptions, Oid, Repository};
use owt_protocol::ConflictFile;

use super::Result;

/// The conflicts a merge of `branch_tip` and `base_tip` would have, computed
/// in memory (nothing on disk changes).
pub fn predict(repo: &Repository, branch_tip: Oid, base_tip: Oid) -> Result<Vec<ConflictFile>> {
    let ours = repo.find_commit(branch_tip)?;
    let theirs = repo.find_commit(base_tip)?;
    let mut opts = MergeOptions::new();
    opts.find_renames(true);
    let index = repo.merge_commits(&ours, &theirs, Some(&opts))?;
    if !index.has_conflicts() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for conflict in index.conflicts()? {
        let conflict = conflict?;
        let entry = conflict
            .our
            .as_ref()
            .or(conflict.their.as_ref())
            .or(conflict.ancestor.as_ref());
        let Some(entry) = entry else { continue };
        let path = String::from_utf8_lossy(&entry.path).into_owned();
        let lines = match (&conflict.ancestor, &conflict.our, &conflict.their) {
            (ancestor, Some(our), Some(their)) => {
                let empty;
                let ancestor = match ancestor {
                    Some(a) => a,
                    None => {
                        empty = git2::IndexEntry {
                            path: our.path.clone(),
                            ..empty_entry(repo)?
                        };
                        &empty
                    }
                };
                match repo.merge_file_from_index(ancestor, our, their, None) {
                    Ok(result) => marker_ranges(result.content()),
                    Err(_) => Vec::new(),
                }
            }
            // Modify/delete: the whole file.
            _ => Vec::new(),
        };
        out.push(ConflictFile { path, lines });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out.dedup_by(|a, b| a.path == b.path);
    Ok(out)
}

fn empty_entry(repo: &Repository) -> Result<git2::IndexEntry> {
    let blob = repo.blob(b"")?;
    Ok(git2::IndexEntry {
        ctime: git2::IndexTime::new(0, 0),
        mtime: git2::IndexTime::new(0, 0),
        dev: 0,
        ino: 0,
        mode: 0o100644,
        uid: 0,
        gid: 0,
        file_size: 0,
        id: blob,
        flags: 0,
        flags_extended: 0,
        path: Vec::new(),
    })
}

/// Line ranges (1-based, inclusive) of conflict blocks `<<<<<<<` … `>>>>>>>`
/// in a merged file.
pub fn marker_ranges(content: &[u8]) -> Vec<(u32, u32)> {
    let mut ranges = Vec::new();
    let mut start = None;
    for (i, line) in content.split(|b| *b == b'\n').enumerate() {
        let n = i as u32 + 1;
        if line.starts_with(b"<<<<<<<") {
            start = Some(n);
        } else if line.starts_with(b">>>>>>>") {
            if let Some(s) = start.take() {
                ranges.push((s, n));
            }
        }
    }
    ranges
}
