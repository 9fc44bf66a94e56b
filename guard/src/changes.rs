//! Changes of a participant: the paths and hunks between a base tree (its
//! merge base with its base branch) and its snapshot, with renames found
//! (exact first, then by line similarity), deletions, binary files and mode
//! changes told apart.
//!
//! Invariants: pure over the object database. Hunks are computed with zero
//! context lines (git's xdiff, the same as `git diff -U0`) and cached by the
//! pair of blob ids, so an unchanged file is never diffed twice.

use std::collections::{HashMap, HashSet};

use git2::{DiffOptions, Oid, Patch, Repository};
use owt_protocol::guard::LineRange;
use serde::{Deserialize, Serialize};

use super::tree::{self, Entry, RawChange, MODE_LINK};
use super::GuardError;

/// How a path changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ChangeKind {
    Added,
    Deleted,
    Modified,
    /// Only the file mode (e.g. the executable bit) changed.
    ModeChanged,
    /// File ↔ symlink (or submodule).
    TypeChanged,
    Renamed,
}

/// One changed hunk: `old_*` in base coordinates, `new_*` in the
/// participant's file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hunk {
    pub old_start: u32,
    pub old_lines: u32,
    pub new_start: u32,
    pub new_lines: u32,
}

impl Hunk {
    /// The base lines this hunk replaces; for a pure insertion, an empty
    /// range before the line that follows it.
    pub fn base_range(&self) -> LineRange {
        if self.old_lines == 0 {
            LineRange {
                start: self.old_start + 1,
                lines: 0,
            }
        } else {
            LineRange {
                start: self.old_start,
                lines: self.old_lines,
            }
        }
    }

    /// The lines of the participant's file this hunk wrote.
    pub fn new_range(&self) -> LineRange {
        if self.new_lines == 0 {
            LineRange {
                start: self.new_start + 1,
                lines: 0,
            }
        } else {
            LineRange {
                start: self.new_start,
                lines: self.new_lines,
            }
        }
    }
}

/// Whether two base ranges intersect or are separated by at most `gap`
/// unchanged lines.
pub fn ranges_near(a: LineRange, b: LineRange, gap: u32) -> bool {
    let (a0, a1) = (a.start, a.start + a.lines);
    let (b0, b1) = (b.start, b.start + b.lines);
    a0 <= b1 + gap && b0 <= a1 + gap
}

/// One changed path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub path: String,
    /// The path in the base, for a rename.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old_path: Option<String>,
    pub kind: ChangeKind,
    #[serde(skip)]
    pub old: Option<Entry>,
    #[serde(skip)]
    pub new: Option<Entry>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub binary: bool,
    pub hunks: Vec<Hunk>,
}

impl Change {
    /// Every path this change touches (the old path of a rename too).
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.path.as_str()).chain(self.old_path.as_deref())
    }
}

/// Hunks by `(old blob, new blob)`; `None` for binary content.
#[derive(Debug, Default)]
pub struct HunkCache {
    map: HashMap<(Oid, Oid), Option<Vec<Hunk>>>,
}

impl HunkCache {
    /// Hunks from `old` to `new` (either may be absent); `None` when either
    /// side is binary.
    pub fn hunks(
        &mut self,
        repo: &Repository,
        old: Option<Oid>,
        new: Option<Oid>,
    ) -> Result<Option<Vec<Hunk>>, GuardError> {
        let key = (old.unwrap_or_else(Oid::zero), new.unwrap_or_else(Oid::zero));
        if let Some(found) = self.map.get(&key) {
            return Ok(found.clone());
        }
        let result = blob_hunks(repo, old, new)?;
        if self.map.len() > 100_000 {
            self.map.clear();
        }
        self.map.insert(key, result.clone());
        Ok(result)
    }
}

fn blob_hunks(
    repo: &Repository,
    old: Option<Oid>,
    new: Option<Oid>,
) -> Result<Option<Vec<Hunk>>, GuardError> {
    // A blob over 16 MiB is compared by id only, like a binary one.
    let blob = |id: Oid| super::big::small_blob(repo, id).ok_or(());
    let (Ok(old_blob), Ok(new_blob)) = (old.map(blob).transpose(), new.map(blob).transpose())
    else {
        return Ok(None);
    };
    if old_blob.as_ref().is_some_and(|b| b.is_binary())
        || new_blob.as_ref().is_some_and(|b| b.is_binary())
    {
        return Ok(None);
    }
    let mut opts = DiffOptions::new();
    opts.context_lines(0).interhunk_lines(0);
    let patch = Patch::from_buffers(
        old_blob.as_ref().map_or(&[][..], |b| b.content()),
        None,
        new_blob.as_ref().map_or(&[][..], |b| b.content()),
        None,
        Some(&mut opts),
    )?;
    let mut hunks = Vec::with_capacity(patch.num_hunks());
    for i in 0..patch.num_hunks() {
        let (hunk, _) = patch.hunk(i)?;
        hunks.push(Hunk {
            old_start: hunk.old_start(),
            old_lines: hunk.old_lines(),
            new_start: hunk.new_start(),
            new_lines: hunk.new_lines(),
        });
    }
    Ok(Some(hunks))
}

/// Renames are looked for by similarity only among this many deletions ×
/// additions (exact renames are always found).
const MAX_SIMILARITY_PAIRS: usize = 4096;
/// Share of common lines for a rename with edits (git's default is 50%).
const RENAME_SIMILARITY: f64 = 0.5;

/// The changes from `base` to `snapshot`.
pub fn changes(
    repo: &Repository,
    base: Option<Oid>,
    snapshot: Oid,
    cache: &mut HunkCache,
) -> Result<Vec<Change>, GuardError> {
    let raw = tree::diff_trees(repo, base, Some(snapshot))?;
    changes_from_raw(repo, raw, cache)
}

/// [`changes`] from an already computed tree diff.
pub fn changes_from_raw(
    repo: &Repository,
    raw: Vec<RawChange>,
    cache: &mut HunkCache,
) -> Result<Vec<Change>, GuardError> {
    let Renames { renamed, used_old } = renames(repo, &raw);
    let mut out = Vec::with_capacity(raw.len());
    for (path, old, new) in &raw {
        if new.is_none() && used_old.contains(path.as_str()) {
            continue;
        }
        let (old_path, old) = match renamed.get(path) {
            Some((old_path, entry)) => (Some(old_path.clone()), Some(*entry)),
            None => (None, *old),
        };
        let kind = match (old, new) {
            (None, _) => ChangeKind::Added,
            (_, None) => ChangeKind::Deleted,
            (Some(o), Some(n)) if old_path.is_some() => {
                let _ = (o, n);
                ChangeKind::Renamed
            }
            (Some(o), Some(n)) if (o.1 == MODE_LINK) != (n.1 == MODE_LINK) => {
                ChangeKind::TypeChanged
            }
            (Some(o), Some(n)) if o.0 == n.0 => ChangeKind::ModeChanged,
            _ => ChangeKind::Modified,
        };
        let blob_id = |e: Option<Entry>| e.filter(|e| e.1 & 0o170000 == 0o100000).map(|e| e.0);
        let (hunks, binary) = if kind == ChangeKind::ModeChanged || kind == ChangeKind::TypeChanged
        {
            (Vec::new(), false)
        } else {
            match cache.hunks(repo, blob_id(old), blob_id(*new))? {
                Some(h) => (h, false),
                None => (Vec::new(), true),
            }
        };
        out.push(Change {
            path: path.clone(),
            old_path,
            kind,
            old,
            new: *new,
            binary,
            hunks,
        });
    }
    Ok(out)
}

/// The renames in a tree diff.
#[derive(Default)]
struct Renames<'r> {
    /// New path -> (old path, old entry).
    renamed: HashMap<String, (String, Entry)>,
    /// The deleted paths a rename took.
    used_old: HashSet<&'r str>,
}

impl Renames<'_> {
    fn insert(&mut self, added: &RawChange, deleted: &RawChange) {
        self.renamed
            .insert(added.0.clone(), (deleted.0.clone(), deleted.1.unwrap()));
    }
}

/// The renames among `raw`'s deletions and additions: exact ones (the same
/// blob) first, then by line similarity among the rest.
fn renames<'r>(repo: &Repository, raw: &'r [RawChange]) -> Renames<'r> {
    let mut renames = Renames::default();
    let deleted: Vec<&RawChange> = raw
        .iter()
        .filter(|(_, o, n)| o.is_some() && n.is_none())
        .collect();
    let added: Vec<&RawChange> = raw
        .iter()
        .filter(|(_, o, n)| o.is_none() && n.is_some())
        .collect();
    if deleted.is_empty() || added.is_empty() {
        return renames;
    }
    let mut by_blob: HashMap<Oid, Vec<&RawChange>> = HashMap::new();
    for d in &deleted {
        by_blob.entry(d.1.unwrap().0).or_default().push(d);
    }
    for a in &added {
        let id = a.2.unwrap().0;
        if let Some(candidates) = by_blob.get(&id) {
            if let Some(d) = candidates
                .iter()
                .find(|d| !renames.used_old.contains(d.0.as_str()))
            {
                renames.used_old.insert(d.0.as_str());
                renames.insert(a, d);
            }
        }
    }
    let left_deleted: Vec<&RawChange> = deleted
        .into_iter()
        .filter(|d| !renames.used_old.contains(d.0.as_str()))
        .collect();
    let left_added: Vec<&RawChange> = added
        .into_iter()
        .filter(|a| !renames.renamed.contains_key(&a.0))
        .collect();
    if !left_deleted.is_empty()
        && !left_added.is_empty()
        && left_deleted.len() * left_added.len() <= MAX_SIMILARITY_PAIRS
    {
        similar_renames(repo, &left_deleted, &left_added, &mut renames);
    }
    renames
}

/// Each added file renamed from the deleted one it shares most lines with
/// (at least [`RENAME_SIMILARITY`] of them), each deleted file taken once.
fn similar_renames<'r>(
    repo: &Repository,
    deleted: &[&'r RawChange],
    added: &[&RawChange],
    renames: &mut Renames<'r>,
) {
    let old_lines: Vec<_> = deleted
        .iter()
        .map(|d| line_counts(repo, d.1.unwrap().0))
        .collect();
    for a in added {
        let Some(new_lines) = line_counts(repo, a.2.unwrap().0) else {
            continue;
        };
        let new_total: u32 = new_lines.values().sum();
        let mut best: Option<(f64, usize)> = None;
        for (i, d) in deleted.iter().enumerate() {
            if renames.used_old.contains(d.0.as_str()) {
                continue;
            }
            let Some(old) = &old_lines[i] else { continue };
            let old_total: u32 = old.values().sum();
            let common: u32 = new_lines
                .iter()
                .map(|(line, n)| (*n).min(old.get(line).copied().unwrap_or(0)))
                .sum();
            let score = f64::from(common) / f64::from(old_total.max(new_total).max(1));
            if score >= RENAME_SIMILARITY && best.is_none_or(|(s, _)| score > s) {
                best = Some((score, i));
            }
        }
        if let Some((_, i)) = best {
            let d = deleted[i];
            renames.used_old.insert(d.0.as_str());
            renames.insert(a, d);
        }
    }
}

/// How many times each line occurs in a text blob (`None` for a binary or
/// large one, over 1 MiB).
fn line_counts(repo: &Repository, id: Oid) -> Option<HashMap<Vec<u8>, u32>> {
    let blob = super::big::small_blob(repo, id)?;
    if blob.is_binary() || blob.size() > 1 << 20 {
        return None;
    }
    let mut map = HashMap::new();
    for line in blob.content().split_inclusive(|b| *b == b'\n') {
        *map.entry(line.to_vec()).or_insert(0) += 1;
    }
    Some(map)
}
