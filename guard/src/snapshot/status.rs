//! Which paths of a checkout may differ from HEAD: found in this process
//! by one walk compared with the index as git does, else by `git status`
//! ([`WorkState::status_in_process`] and its one fallback).

use std::collections::{BTreeSet, HashMap, HashSet};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use git2::Repository;

use super::super::GuardError;
use super::WorkState;

impl WorkState {
    /// The paths whose working state may differ from HEAD, found in this
    /// process: one walk of the checkout (every folder listed, every file
    /// lstat-ed, compared with its index entry as git does), untracked
    /// files that are not ignored, and HEAD's diff against the index. It
    /// may name more than `git status` does (racily clean files, touched
    /// files): `evaluate` settles each by content, and its stat cache keeps
    /// that cheap the next time. Nothing is written. `None` when the
    /// checkout holds what this walk does not model (an index libgit2
    /// cannot read, a path that is not UTF-8): then git is asked.
    pub(crate) fn status_in_process(&self) -> Option<Vec<String>> {
        // A standalone copy of the index, dropped after the walk: the
        // repository's own would stay loaded (megabytes on a big checkout,
        // for every participant of a long-lived `owt lsp`).
        let index_path = self.repo.path().join("index");
        let index_mtime = std::fs::metadata(&index_path)
            .ok()
            .map_or((i64::MAX, 0), |m| (m.mtime(), m.mtime_nsec()));
        let index = git2::Index::open(&index_path).ok()?;
        let IndexPaths {
            names,
            entries,
            mut candidates,
        } = IndexPaths::read(&index)?;
        let (tracked, tracked_dirs) = tracked_maps(&names, &entries);
        let mut seen = vec![false; entries.len()];
        let mut walk = Walk {
            state: self,
            tracked: &tracked,
            entries: &entries,
            seen: &mut seen,
            tracked_dirs: &tracked_dirs,
            index_mtime,
            candidates: &mut candidates,
        };
        walk.folder(&self.worktree, "")?;
        // Tracked files the walk did not meet: deleted, or now a folder.
        for (i, (range, _, skip)) in entries.iter().enumerate() {
            if !seen[i] && !skip {
                candidates.insert(names[range.clone()].to_string());
            }
        }
        self.staged_changes(index, &tracked, &mut candidates)?;
        Some(candidates.into_iter().collect())
    }

    /// Adds the paths staged in `index` (HEAD's tree against it) to
    /// `candidates`, through a repository handle of its own, so the trees
    /// this may read are not kept in the long-lived handle's object cache.
    /// The index's tree comes from its cache of trees when that is valid
    /// (nearly always: git keeps it on checkout and commit), so an index
    /// that matches HEAD costs nothing to compare. Writing it adds tree
    /// objects to the object database at most; the index file is not
    /// written.
    fn staged_changes(
        &self,
        mut index: git2::Index,
        tracked: &HashMap<&str, usize>,
        candidates: &mut BTreeSet<String>,
    ) -> Option<()> {
        let scratch = Repository::open(self.repo.path()).ok()?;
        let index_tree = index.write_tree_to(&scratch).ok();
        match self.head_tree {
            Some(head_tree) if index_tree != Some(head_tree) => {
                let head_tree = scratch.find_tree(head_tree).ok()?;
                let mut opts = git2::DiffOptions::new();
                opts.ignore_submodules(true).include_typechange(true);
                let diff = scratch
                    .diff_tree_to_index(Some(&head_tree), Some(&index), Some(&mut opts))
                    .ok()?;
                for delta in diff.deltas() {
                    for file in [delta.old_file(), delta.new_file()] {
                        if let Some(path) = file.path().and_then(Path::to_str) {
                            candidates.insert(path.to_string());
                        }
                    }
                }
            }
            // The index is HEAD's tree: nothing staged.
            Some(_) => {}
            // No commit yet: everything in the index is new.
            None => candidates.extend(tracked.keys().map(|p| p.to_string())),
        }
        Some(())
    }

    /// Paths `git status` lists (owt-sys's one reading of a checkout's
    /// status; git's own is several times faster than libgit2's on big
    /// checkouts: preloaded index, untracked cache). It takes no lock.
    pub(super) fn status_with_git(&self) -> Result<Vec<String>, GuardError> {
        crate::platform::git::GitCli::new(&self.worktree)
            .status()
            .map(|entries| entries.into_iter().map(|e| e.path).collect())
            .map_err(|e| GuardError::GitCli(e.to_string()))
    }
}

/// The index's paths in one buffer with tables of ranges into it (few,
/// large allocations: the walk's working set is freed whole after it and
/// leaves no small objects scattered over the heap), and the paths that are
/// candidates whatever the walk finds (conflicted, intent-to-add).
struct IndexPaths {
    names: String,
    /// Each entry's path in `names`, stat data, and whether the walk never
    /// looks at it (a sparse entry or a submodule).
    entries: Vec<(std::ops::Range<usize>, IndexStat, bool)>,
    candidates: BTreeSet<String>,
}

impl IndexPaths {
    /// `None` when a path is not UTF-8.
    fn read(index: &git2::Index) -> Option<IndexPaths> {
        const SKIP_WORKTREE: u16 = 1 << 14;
        const INTENT_TO_ADD: u16 = 1 << 13;
        const MODE_GITLINK: u32 = 0o160_000;
        let mut paths = IndexPaths {
            names: String::new(),
            entries: Vec::with_capacity(index.len()),
            candidates: BTreeSet::new(),
        };
        for entry in index.iter() {
            let path = std::str::from_utf8(&entry.path).ok()?;
            let stage = (entry.flags >> 12) & 3;
            if stage != 0 || entry.flags_extended & INTENT_TO_ADD != 0 {
                paths.candidates.insert(path.to_string());
            }
            // Skipped (sparse) entries and submodules are never looked at,
            // as `git status --ignore-submodules=all` does not.
            let skip = entry.flags_extended & SKIP_WORKTREE != 0 || entry.mode == MODE_GITLINK;
            let start = paths.names.len();
            paths.names.push_str(path);
            paths
                .entries
                .push((start..paths.names.len(), IndexStat::of(&entry), skip));
        }
        Some(paths)
    }
}

/// Each tracked path's place in `entries`, and every folder that holds a
/// tracked path.
fn tracked_maps<'a>(
    names: &'a str,
    entries: &[(std::ops::Range<usize>, IndexStat, bool)],
) -> (HashMap<&'a str, usize>, HashSet<&'a str>) {
    let mut tracked: HashMap<&str, usize> = HashMap::with_capacity(entries.len());
    let mut tracked_dirs: HashSet<&str> = HashSet::new();
    for (i, (range, _, _)) in entries.iter().enumerate() {
        let path = &names[range.clone()];
        tracked.insert(path, i);
        let mut dir = path;
        while let Some(slash) = dir.rfind('/') {
            dir = &dir[..slash];
            if !tracked_dirs.insert(dir) {
                break;
            }
        }
    }
    (tracked, tracked_dirs)
}

/// One walk of a checkout for [`WorkState::status_in_process`]. `tracked`
/// maps each index path to its place in `entries` (its stat data and
/// whether it is never looked at) and in `seen` (whether the walk met it).
struct Walk<'a> {
    state: &'a WorkState,
    tracked: &'a HashMap<&'a str, usize>,
    entries: &'a [(std::ops::Range<usize>, IndexStat, bool)],
    seen: &'a mut [bool],
    tracked_dirs: &'a HashSet<&'a str>,
    /// The index file's mtime (seconds, nanoseconds).
    index_mtime: (i64, i64),
    candidates: &'a mut BTreeSet<String>,
}

impl Walk<'_> {
    /// Walks the folder `abs` (`rel` from the worktree root, "" for the
    /// root). `None` on a name that is not UTF-8.
    fn folder(&mut self, abs: &Path, rel: &str) -> Option<()> {
        let Ok(entries) = std::fs::read_dir(abs) else {
            return Some(());
        };
        for entry in entries.flatten() {
            let name = entry.file_name().into_string().ok()?;
            if name == ".git" {
                continue;
            }
            let child = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            if file_type.is_dir() {
                if self
                    .tracked
                    .get(child.as_str())
                    .is_some_and(|i| self.entries[*i].2)
                {
                    // A submodule's checkout.
                    continue;
                }
                if self.tracked_dirs.contains(child.as_str()) {
                    self.folder(&entry.path(), &child)?;
                } else if !entry.path().join(".git").exists() && !self.state.ignored(&child, true) {
                    // An untracked folder that is neither ignored nor a
                    // repository of its own (`git status` lists those as
                    // one entry, which names no file).
                    self.folder(&entry.path(), &child)?;
                }
                continue;
            }
            match self.tracked.get(child.as_str()).copied() {
                Some(i) if self.entries[i].2 => {}
                Some(i) => {
                    self.seen[i] = true;
                    let changed = match entry.metadata() {
                        Ok(meta) => stat_differs(&self.entries[i].1, &meta, self.index_mtime),
                        Err(_) => true,
                    };
                    if changed {
                        self.candidates.insert(child);
                    }
                }
                None => {
                    if !self.state.ignored(&child, false) {
                        self.candidates.insert(child);
                    }
                }
            }
        }
        Some(())
    }
}

/// What of an index entry the walk compares with a file's lstat.
struct IndexStat {
    mode: u32,
    size: u32,
    ino: u32,
    mtime: (i32, u32),
    ctime: (i32, u32),
}

impl IndexStat {
    fn of(entry: &git2::IndexEntry) -> IndexStat {
        IndexStat {
            mode: entry.mode,
            size: entry.file_size,
            ino: entry.ino,
            mtime: (entry.mtime.seconds(), entry.mtime.nanoseconds()),
            ctime: (entry.ctime.seconds(), entry.ctime.nanoseconds()),
        }
    }
}

/// Whether a file's lstat no longer matches its index entry, as git judges
/// it (size, times, inode, type and executable bit; an entry whose mtime is
/// not older than the index file's is "racily clean" and always looked at:
/// the file may have changed within the same clock tick). Nanoseconds count
/// only when the index recorded them; without them, the same second counts
/// as racy.
fn stat_differs(entry: &IndexStat, meta: &std::fs::Metadata, index_mtime: (i64, i64)) -> bool {
    let same_time = |(secs, nanos): (i32, u32), meta_secs: i64, meta_nanos: i64| {
        i64::from(secs) == meta_secs && (nanos == 0 || i64::from(nanos) == meta_nanos)
    };
    let kind = entry.mode & 0o170_000;
    let kind_matches = if meta.file_type().is_symlink() {
        kind == 0o120_000
    } else if meta.is_file() {
        kind == 0o100_000 && ((entry.mode & 0o111 != 0) == (meta.mode() & 0o111 != 0))
    } else {
        false
    };
    !kind_matches
        // The index keeps the low 32 bits of sizes and inodes.
        || entry.size != meta.len() as u32
        || entry.ino != meta.ino() as u32
        || !same_time(entry.mtime, meta.mtime(), meta.mtime_nsec())
        || !same_time(entry.ctime, meta.ctime(), meta.ctime_nsec())
        || racy(entry.mtime, index_mtime)
}

fn racy((secs, nanos): (i32, u32), (index_secs, index_nanos): (i64, i64)) -> bool {
    if nanos == 0 {
        i64::from(secs) >= index_secs
    } else {
        (i64::from(secs), i64::from(nanos)) >= (index_secs, index_nanos)
    }
}

#[cfg(test)]
mod racy_tests {
    use super::racy;

    #[test]
    fn an_entry_not_older_than_the_index_is_racy() {
        // With nanoseconds: only an entry at or after the index's instant.
        assert!(!racy((100, 5), (100, 6)));
        assert!(racy((100, 6), (100, 6)));
        assert!(racy((100, 7), (100, 6)));
        assert!(!racy((99, 999_999_999), (100, 0)));
        // Without (an index written without them): the whole second.
        assert!(racy((100, 0), (100, 900_000_000)));
        assert!(!racy((99, 0), (100, 0)));
    }
}
