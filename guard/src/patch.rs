//! Full diffs for review: from a participant's merge base to its snapshot,
//! per file with status, modes, blob ids, counts and hunks with three lines
//! of context and both line numbers (what `git diff` shows), renames found
//! as git finds them.
//!
//! Invariants: pure over the object database (reads trees and blobs,
//! writes nothing); the snapshot is the guard's, so what is shown is what
//! ship commits.

use git2::{Delta, DiffFindOptions, DiffOptions, Oid, Patch, Repository};
use owt_protocol::review::{DiffFile, DiffHunk, DiffLine, FileStatus};

use super::GuardError;

/// Lines of context around each hunk (git's default).
pub const CONTEXT_LINES: u32 = 3;

/// The files that differ from `base_tree` (none: an empty tree) to
/// `snapshot`, in path order; only `only` (a path, old or new) when given.
/// Hunks are left out when `with_hunks` is false (counts are still there).
pub fn file_diffs(
    repo: &Repository,
    base_tree: Option<Oid>,
    snapshot: Oid,
    only: Option<&str>,
    with_hunks: bool,
) -> Result<Vec<DiffFile>, GuardError> {
    let old = base_tree.map(|t| repo.find_tree(t)).transpose()?;
    let new = repo.find_tree(snapshot)?;
    let mut opts = DiffOptions::new();
    opts.context_lines(CONTEXT_LINES)
        .include_typechange(true)
        .ignore_submodules(true);
    let mut diff = repo.diff_tree_to_tree(old.as_ref(), Some(&new), Some(&mut opts))?;
    let mut find = DiffFindOptions::new();
    find.renames(true);
    diff.find_similar(Some(&mut find))?;
    let mut files = Vec::new();
    for (i, delta) in diff.deltas().enumerate() {
        let path = |f: git2::DiffFile<'_>| f.path().map(|p| p.to_string_lossy().replace('\\', "/"));
        let old_path = path(delta.old_file());
        let new_path = path(delta.new_file());
        let status = match delta.status() {
            Delta::Added | Delta::Untracked | Delta::Copied => FileStatus::Added,
            Delta::Deleted => FileStatus::Deleted,
            Delta::Renamed => FileStatus::Renamed,
            Delta::Typechange => FileStatus::TypeChanged,
            Delta::Modified if delta.old_file().id() == delta.new_file().id() => {
                FileStatus::ModeChanged
            }
            _ => FileStatus::Modified,
        };
        let shown = match status {
            FileStatus::Deleted => old_path.clone(),
            _ => new_path.clone(),
        }
        .unwrap_or_default();
        if let Some(only) = only {
            if shown != only && old_path.as_deref() != Some(only) {
                continue;
            }
        }
        let mode = |f: git2::DiffFile<'_>| {
            let raw = u32::from(f.mode());
            (raw != 0 && !f.id().is_zero()).then(|| format!("{raw:o}"))
        };
        let blob = |f: git2::DiffFile<'_>| (!f.id().is_zero()).then(|| f.id().to_string());
        let mut file = DiffFile {
            path: shown,
            old_path: (status == FileStatus::Renamed)
                .then(|| old_path.clone())
                .flatten(),
            status,
            binary: false,
            old_mode: mode(delta.old_file()),
            new_mode: mode(delta.new_file()),
            base_blob: blob(delta.old_file()),
            agent_blob: blob(delta.new_file()),
            agent_uri: None,
            additions: 0,
            deletions: 0,
            reviewed: false,
            hunks: Vec::new(),
        };
        if status != FileStatus::ModeChanged {
            if let Some(patch) = Patch::from_diff(&diff, i)? {
                file.binary = patch.delta().flags().is_binary();
                if !file.binary {
                    fill_hunks(&patch, &mut file, with_hunks)?;
                }
            }
        }
        files.push(file);
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}

fn fill_hunks(patch: &Patch<'_>, file: &mut DiffFile, with_hunks: bool) -> Result<(), GuardError> {
    let (_, additions, deletions) = patch.line_stats()?;
    file.additions = additions as u32;
    file.deletions = deletions as u32;
    if !with_hunks {
        return Ok(());
    }
    for h in 0..patch.num_hunks() {
        let (hunk, n_lines) = patch.hunk(h)?;
        let mut lines = Vec::with_capacity(n_lines);
        for l in 0..n_lines {
            let line = patch.line_in_hunk(h, l)?;
            let origin = match line.origin() {
                c @ (' ' | '+' | '-') => c,
                // `\ No newline at end of file` markers: told by the line
                // they follow (its content has no newline).
                _ => continue,
            };
            let content = line.content();
            let no_newline = !content.ends_with(b"\n");
            let text = content.strip_suffix(b"\n").unwrap_or(content);
            lines.push(DiffLine {
                origin: origin.to_string(),
                text: String::from_utf8_lossy(text).into_owned(),
                old_line: line.old_lineno(),
                new_line: line.new_lineno(),
                no_newline,
            });
        }
        file.hunks.push(DiffHunk {
            header: String::from_utf8_lossy(hunk.header())
                .trim_end()
                .to_string(),
            old_start: hunk.old_start(),
            old_lines: hunk.old_lines(),
            new_start: hunk.new_start(),
            new_lines: hunk.new_lines(),
            lines,
        });
    }
    Ok(())
}

/// Zero-context hunks between two versions of one file (`None`: absent),
/// as `(old_start, old_lines, new_start, new_lines)`; `None` when either
/// is binary.
pub fn blob_hunks(
    repo: &Repository,
    old: Option<Oid>,
    new: Option<Oid>,
) -> Result<Option<Vec<super::Hunk>>, GuardError> {
    super::changes::HunkCache::default().hunks(repo, old, new)
}
