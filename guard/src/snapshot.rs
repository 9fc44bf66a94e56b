//! Working-state snapshots: the git tree of everything a participant has —
//! committed, staged, unstaged and untracked-but-not-ignored files, plus
//! unsaved editor buffers — built without touching its index, its working
//! files or its branch.
//!
//! A [`WorkState`] keeps, per participant, its HEAD, its merge base with its
//! base branch and the *dirty set*: the paths whose working content differs
//! from HEAD's tree, with the blob written for each. The snapshot is HEAD's
//! tree with the dirty set (and overrides) laid over it
//! ([`super::tree::overlay`]).
//!
//! Invariants: a full scan walks the checkout once (or asks `git status`
//! where the walk does not apply); afterwards only
//! the paths reported changed (or HEAD's own diff when HEAD moves) are
//! looked at again, and a file whose size, mtime and inode are unchanged is
//! never re-hashed. Blobs go through git's filters (`blob_path` inside the
//! work tree), so CRLF conversion and `.gitattributes` hold; a file over
//! 16 MiB is streamed into a blob instead, unfiltered, and compared by id
//! only ([`super::big`], which remembers its id by its stat across runs).
//! The only writes are new objects in the object database and those ids
//! (`<git common dir>/owt-big-blobs/`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use git2::{Oid, Repository};

use super::commit_graph::{merge_base, GraphGit};
use super::tree::{self, Entry, MODE_EXEC, MODE_FILE, MODE_LINK};
use super::GuardError;

mod status;

/// What identifies a file's content on disk without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct StatKey {
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    ino: u64,
    mode: u32,
}

impl StatKey {
    fn of(meta: &std::fs::Metadata) -> StatKey {
        StatKey {
            size: meta.len(),
            mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
            ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
            ino: meta.ino(),
            mode: meta.mode(),
        }
    }
}

/// One participant's working state.
pub struct WorkState {
    pub worktree: PathBuf,
    pub base_branch: String,
    /// HEAD commit (`None` while unborn).
    pub head: Option<Oid>,
    pub head_tree: Option<Oid>,
    /// The base branch's tip when last looked at.
    pub base_tip: Option<Oid>,
    /// Merge base of HEAD with the base branch (HEAD itself when none).
    pub merge_base: Option<Oid>,
    pub merge_base_tree: Option<Oid>,
    /// Paths whose working content differs from HEAD (`None`: deleted).
    pub dirty: BTreeMap<String, Option<Entry>>,
    /// Unsaved editor buffers (path relative to the worktree → text).
    pub overrides: BTreeMap<String, String>,
    /// The snapshot tree.
    pub snapshot: Option<Oid>,
    /// Where a full scan asks for the journal first.
    pub journal: Option<std::sync::Arc<dyn super::source::JournalSource>>,
    /// How the last full scan found its paths.
    pub last_scan: Option<ScanSource>,
    /// A participant with no checkout here (a session on a remote): its
    /// working state is the commit this ref names (tree = the snapshot,
    /// parent = its HEAD), fetched from the remote.
    pub pinned: Option<String>,
    stat_cache: HashMap<String, (StatKey, Entry)>,
    /// `core.autocrlf` or `info/attributes` (looked up once).
    global_filters: Option<bool>,
    /// git reading a commit-graph, for a deep history (set by full scans).
    pub history: Option<GraphGit>,
    repo: Repository,
}

/// Where a full scan found the paths that may differ from HEAD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanSource {
    /// The session host's journal (no walk).
    Journal,
    /// A walk of the checkout in this process.
    Walk,
    /// `git status` (or libgit2's), where the walk does not apply.
    Git,
    /// A snapshot commit fetched from a remote (no checkout here).
    Snapshot,
}

impl ScanSource {
    /// As `owt guard --json` names it.
    pub fn name(self) -> &'static str {
        match self {
            ScanSource::Journal => "journal",
            ScanSource::Walk => "walk",
            ScanSource::Git => "git",
            ScanSource::Snapshot => "snapshot",
        }
    }
}

impl std::fmt::Debug for WorkState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkState")
            .field("worktree", &self.worktree)
            .field("head", &self.head)
            .field("snapshot", &self.snapshot)
            .field("dirty", &self.dirty.len())
            .finish()
    }
}

impl WorkState {
    /// Opens the checkout at `worktree`; nothing is scanned yet.
    pub fn open(worktree: &Path, base_branch: &str) -> Result<WorkState, GuardError> {
        let repo = Repository::open(worktree)?;
        let worktree = repo
            .workdir()
            .map(Path::to_path_buf)
            .ok_or_else(|| GuardError::Bare(worktree.to_path_buf()))?;
        Ok(WorkState {
            worktree,
            base_branch: base_branch.to_string(),
            head: None,
            head_tree: None,
            base_tip: None,
            merge_base: None,
            merge_base_tree: None,
            dirty: BTreeMap::new(),
            overrides: BTreeMap::new(),
            snapshot: None,
            journal: None,
            last_scan: None,
            pinned: None,
            stat_cache: HashMap::new(),
            global_filters: None,
            history: None,
            repo,
        })
    }

    /// A participant without a checkout here, whose working state is the
    /// snapshot commit at `snapshot_ref` in the repository at `repo_dir`
    /// (see [`WorkState::pinned`]); nothing is read yet.
    pub fn open_pinned(
        repo_dir: &Path,
        snapshot_ref: &str,
        base_branch: &str,
    ) -> Result<WorkState, GuardError> {
        Ok(WorkState {
            worktree: PathBuf::new(),
            base_branch: base_branch.to_string(),
            head: None,
            head_tree: None,
            base_tip: None,
            merge_base: None,
            merge_base_tree: None,
            dirty: BTreeMap::new(),
            overrides: BTreeMap::new(),
            snapshot: None,
            journal: None,
            last_scan: None,
            pinned: Some(snapshot_ref.to_string()),
            stat_cache: HashMap::new(),
            global_filters: None,
            history: None,
            repo: Repository::open(repo_dir)?,
        })
    }

    /// Re-reads a pinned participant's snapshot commit (and the merge base
    /// of its parent with the base branch). Returns whether the snapshot
    /// changed.
    fn read_pinned(&mut self) -> Result<bool, GuardError> {
        let before = self.snapshot;
        self.read_refs()?;
        self.last_scan = Some(ScanSource::Snapshot);
        Ok(before != self.snapshot)
    }

    pub fn repo(&self) -> &Repository {
        &self.repo
    }

    /// The git dir of this checkout (`<common>/worktrees/<name>` for a
    /// linked worktree).
    pub fn git_dir(&self) -> PathBuf {
        self.repo.path().to_path_buf()
    }

    /// Re-reads HEAD and the base tip, finds the paths that may differ
    /// from HEAD (the session host's journal when it holds for the index
    /// and HEAD seen now; else the in-process walk; else the `git` CLI;
    /// else libgit2's status) and re-evaluates each. Returns whether the
    /// snapshot changed.
    pub fn scan_full(&mut self) -> Result<bool, GuardError> {
        if self.pinned.is_some() {
            return self.read_pinned();
        }
        // Asked before HEAD and the index are read: whatever moves after
        // the answer shows up as a mismatch below.
        let view = self.journal.as_ref().and_then(|journal| journal.ask());
        self.scan_from(view)
    }

    /// A full scan that trusts `view` (a journal's answer) when it holds
    /// for the index and HEAD read now, and walks otherwise.
    pub(crate) fn scan_from(
        &mut self,
        view: Option<owt_protocol::host::JournalView>,
    ) -> Result<bool, GuardError> {
        self.read_refs()?;
        if let Some(view) = view.filter(|v| v.ready) {
            let head_tree = self.head_tree.map(|t| t.to_string());
            if view.head_tree == head_tree && view.index == super::source::index_id(&self.git_dir())
            {
                self.last_scan = Some(ScanSource::Journal);
                return self.apply_journal(&view.paths);
            }
        }
        let paths = self.candidates_for_refs()?;
        self.apply_scan(paths)
    }

    /// Reads HEAD and returns every path that may differ from it, found by
    /// a walk of the checkout (what a journal starts from).
    pub(crate) fn candidates(&mut self) -> Result<Vec<String>, GuardError> {
        self.read_refs()?;
        self.candidates_for_refs()
    }

    fn candidates_for_refs(&mut self) -> Result<Vec<String>, GuardError> {
        if let Some(paths) = self.status_in_process() {
            self.last_scan = Some(ScanSource::Walk);
            return Ok(paths);
        }
        self.last_scan = Some(ScanSource::Git);
        self.status_with_git()
    }

    /// A full scan from a journal's paths (files or folders; every other
    /// path matches HEAD).
    fn apply_journal(&mut self, paths: &[String]) -> Result<bool, GuardError> {
        self.dirty.clear();
        for path in paths {
            // Only plain relative paths inside the checkout: never `..`, an
            // absolute path or the git dir, whatever a host sent.
            let inside = Path::new(path)
                .components()
                .all(|c| matches!(c, std::path::Component::Normal(name) if name != ".git"));
            if inside {
                self.evaluate_any(path)?;
            }
        }
        self.rebuild()
    }

    /// A full scan with `git status` as the source of paths (what the
    /// in-process walk is checked against).
    #[cfg(test)]
    pub(crate) fn scan_full_with_git(&mut self) -> Result<bool, GuardError> {
        self.read_refs()?;
        let paths = self.status_with_git()?;
        self.apply_scan(paths)
    }

    fn apply_scan(&mut self, paths: Vec<String>) -> Result<bool, GuardError> {
        self.dirty.clear();
        for path in paths {
            self.evaluate(&path)?;
        }
        self.rebuild()
    }

    /// Re-evaluates `paths` (relative to the worktree, or absolute inside
    /// it; folders are expanded). Returns whether the snapshot changed.
    pub fn refresh_paths(&mut self, paths: &[PathBuf]) -> Result<bool, GuardError> {
        if self.pinned.is_some() {
            return Ok(false);
        }
        let mut rels = BTreeSet::new();
        for path in paths {
            let rel = if path.is_absolute() {
                match path.strip_prefix(&self.worktree) {
                    Ok(rel) => rel.to_path_buf(),
                    Err(_) => continue,
                }
            } else {
                path.clone()
            };
            let rel = rel.to_string_lossy().trim_end_matches('/').to_string();
            if rel.is_empty() || rel == ".git" || rel.starts_with(".git/") {
                continue;
            }
            rels.insert(rel);
        }
        for rel in rels {
            self.evaluate_any(&rel)?;
        }
        self.rebuild()
    }

    /// HEAD, the index or a ref changed: re-reads HEAD and the base tip;
    /// when HEAD moved, re-evaluates only the dirty paths and the paths
    /// HEAD's own diff names. Returns whether the snapshot changed.
    pub fn refresh_refs(&mut self) -> Result<bool, GuardError> {
        if self.pinned.is_some() {
            return self.read_pinned();
        }
        let old_head_tree = self.head_tree;
        self.read_refs()?;
        if old_head_tree != self.head_tree {
            let mut paths: BTreeSet<String> = self.dirty.keys().cloned().collect();
            for (path, _, _) in tree::diff_trees(&self.repo, old_head_tree, self.head_tree)? {
                paths.insert(path);
            }
            self.dirty.clear();
            for path in paths {
                self.evaluate(&path)?;
            }
        }
        self.rebuild()
    }

    /// Replaces the unsaved-buffer overrides. Returns whether the snapshot
    /// changed.
    pub fn set_overrides(
        &mut self,
        overrides: BTreeMap<String, String>,
    ) -> Result<bool, GuardError> {
        if self.pinned.is_some() {
            return Ok(false);
        }
        self.overrides = overrides;
        self.rebuild()
    }

    fn read_refs(&mut self) -> Result<(), GuardError> {
        let head = if let Some(pinned) = &self.pinned {
            // The snapshot commit's parent is the session's HEAD; a ref not
            // fetched yet (or removed) is no snapshot at all.
            let commit = self
                .repo
                .find_reference(pinned)
                .and_then(|r| r.peel_to_commit())
                .ok();
            self.snapshot = commit.as_ref().map(|c| c.tree_id());
            commit.and_then(|c| c.parent(0).ok())
        } else {
            match self.repo.head() {
                Ok(head) => Some(head.peel_to_commit()?),
                Err(e) if e.code() == git2::ErrorCode::UnbornBranch => None,
                Err(e) => return Err(e.into()),
            }
        };
        self.head = head.as_ref().map(|c| c.id());
        self.head_tree = head.as_ref().map(|c| c.tree_id());
        self.base_tip = self
            .repo
            .find_branch(&self.base_branch, git2::BranchType::Local)
            .ok()
            .and_then(|b| b.get().target());
        self.merge_base = match (self.head, self.base_tip) {
            (Some(head), Some(base)) => {
                Some(merge_base(&self.repo, self.history.as_ref(), head, base))
            }
            (head, _) => head,
        };
        self.merge_base_tree = match self.merge_base {
            Some(id) => Some(self.repo.find_commit(id)?.tree_id()),
            None => None,
        };
        Ok(())
    }

    /// A path that may be a file, a folder, or gone.
    fn evaluate_any(&mut self, rel: &str) -> Result<(), GuardError> {
        let abs = self.worktree.join(rel);
        let meta = std::fs::symlink_metadata(&abs).ok();
        let in_head_tree = self
            .head_tree
            .is_some_and(|t| tree::is_tree_at(&self.repo, t, rel));
        let prefix = format!("{rel}/");
        let mut paths: BTreeSet<String> = self
            .dirty
            .range(prefix.clone()..)
            .take_while(|(p, _)| p.starts_with(&prefix))
            .map(|(p, _)| p.clone())
            .collect();
        if in_head_tree {
            if let Some(head_tree) = self.head_tree {
                for (path, _) in tree::entries_under(&self.repo, head_tree, rel) {
                    paths.insert(path);
                }
            }
        }
        if meta.as_ref().is_some_and(|m| m.is_dir()) {
            if self.ignored(rel, true) && !in_head_tree {
                // An ignored folder: nothing in it counts.
            } else {
                self.walk(&abs, rel, &mut paths);
            }
        } else {
            paths.insert(rel.to_string());
        }
        for path in paths {
            self.evaluate(&path)?;
        }
        Ok(())
    }

    fn walk(&self, abs: &Path, rel: &str, out: &mut BTreeSet<String>) {
        let Ok(entries) = std::fs::read_dir(abs) else {
            return;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name == ".git" {
                continue;
            }
            let child_rel = format!("{rel}/{name}");
            let Ok(ft) = entry.file_type() else { continue };
            if ft.is_dir() {
                if !self.ignored(&child_rel, true) || self.tracked_dir(&child_rel) {
                    self.walk(&entry.path(), &child_rel, out);
                }
            } else {
                out.insert(child_rel);
            }
        }
    }

    fn tracked_dir(&self, rel: &str) -> bool {
        self.head_tree
            .is_some_and(|t| tree::is_tree_at(&self.repo, t, rel))
    }

    fn ignored(&self, rel: &str, dir: bool) -> bool {
        let path = if dir {
            PathBuf::from(format!("{rel}/"))
        } else {
            PathBuf::from(rel)
        };
        self.repo.is_path_ignored(&path).unwrap_or(false)
    }

    /// Sets `rel`'s dirty entry from what is on disk now.
    fn evaluate(&mut self, rel: &str) -> Result<(), GuardError> {
        let head_entry = self
            .head_tree
            .and_then(|t| tree::entry_at(&self.repo, t, rel));
        let working = self.working_entry(rel, head_entry.is_some())?;
        if working == head_entry {
            self.dirty.remove(rel);
        } else {
            self.dirty.insert(rel.to_string(), working);
        }
        Ok(())
    }

    /// The entry the file at `rel` would have if committed now (`None`:
    /// absent, a folder, or untracked and ignored).
    fn working_entry(&mut self, rel: &str, tracked: bool) -> Result<Option<Entry>, GuardError> {
        let abs = self.worktree.join(rel);
        let Ok(meta) = std::fs::symlink_metadata(&abs) else {
            self.stat_cache.remove(rel);
            return Ok(None);
        };
        if meta.is_dir() || (!tracked && self.ignored(rel, false)) {
            return Ok(None);
        }
        let key = StatKey::of(&meta);
        if let Some((cached, entry)) = self.stat_cache.get(rel) {
            if *cached == key {
                return Ok(Some(*entry));
            }
        }
        let entry = if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&abs).map_err(|source| GuardError::Io {
                path: abs.clone(),
                error: source,
            })?;
            let id = self.repo.blob(target.as_os_str().as_encoded_bytes())?;
            (id, MODE_LINK)
        } else if meta.is_file() {
            let id = if meta.len() > super::big::BIG_FILE {
                // Streamed, compared by id only (no filters, no diff).
                match super::big::big_blob(&self.repo, &abs, &meta)? {
                    Some(id) => id,
                    None => return Ok(None),
                }
            } else if self.needs_filters(rel) {
                match self.repo.blob_path(&abs) {
                    Ok(id) => id,
                    // Vanished between the stat and the read.
                    Err(_) if !abs.exists() => return Ok(None),
                    Err(e) => return Err(e.into()),
                }
            } else {
                // Still a regular file of at most 16 MiB when opened (a
                // FIFO swapped in since the stat is never read).
                match crate::safe_fs::read_regular(&abs, super::big::BIG_FILE, None) {
                    Ok(Some(bytes)) => self.repo.blob(&bytes)?,
                    Ok(None) => return Ok(None),
                    Err(e) if e.is_refusal() => return Ok(None),
                    Err(e) => {
                        return Err(GuardError::Io {
                            path: abs,
                            error: std::io::Error::other(e.to_string()),
                        })
                    }
                }
            };
            let mode = if meta.permissions().mode() & 0o111 != 0 {
                MODE_EXEC
            } else {
                MODE_FILE
            };
            (id, mode)
        } else {
            return Ok(None);
        };
        self.stat_cache.insert(rel.to_string(), (key, entry));
        Ok(Some(entry))
    }

    /// Whether git's filters (CRLF, `.gitattributes`) may change this
    /// file's content on the way in. Asking libgit2 to filter loads the
    /// index for attributes, which costs with the repository's size, so it
    /// is done only when a filter may apply: `core.autocrlf` set, an
    /// `info/attributes` file, or a `.gitattributes` in the file's folder or
    /// any folder above it.
    fn needs_filters(&mut self, rel: &str) -> bool {
        if self.global_filters.is_none() {
            let autocrlf = self
                .repo
                .config()
                .ok()
                .and_then(|c| c.get_string("core.autocrlf").ok())
                .is_some_and(|v| v != "false");
            let info = self.repo.commondir().join("info/attributes").exists();
            self.global_filters = Some(autocrlf || info);
        }
        if self.global_filters == Some(true) {
            return true;
        }
        let mut dir = Path::new(rel).parent();
        while let Some(d) = dir {
            if self.worktree.join(d).join(".gitattributes").exists() {
                return true;
            }
            dir = d.parent();
        }
        false
    }

    /// Writes the snapshot tree; returns whether it changed.
    fn rebuild(&mut self) -> Result<bool, GuardError> {
        let mut changes = self.dirty.clone();
        for (path, text) in &self.overrides {
            let mode = changes
                .get(path)
                .copied()
                .flatten()
                .or_else(|| {
                    self.head_tree
                        .and_then(|t| tree::entry_at(&self.repo, t, path))
                })
                .map_or(MODE_FILE, |e| e.1);
            let id = self.repo.blob(text.as_bytes())?;
            changes.insert(path.clone(), Some((id, mode)));
        }
        let snapshot = if changes.is_empty() {
            match self.head_tree {
                Some(t) => t,
                None => tree::empty_tree(&self.repo)?,
            }
        } else {
            tree::overlay(&self.repo, self.head_tree, &changes)?
        };
        let changed = self.snapshot != Some(snapshot);
        self.snapshot = Some(snapshot);
        Ok(changed)
    }
}
