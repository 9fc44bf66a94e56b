//! Git tree helpers for the guard: a diff of two trees that skips every
//! subtree whose id is equal on both sides (so its cost grows with what
//! changed, not with the repository), and an overlay that writes a new tree
//! from a base tree plus a few path changes (rewriting only the trees on
//! those paths).
//!
//! Invariants: pure over the object database — reads trees, writes trees;
//! never touches an index, a working file or a ref.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use git2::{ObjectType, Oid, Repository};

/// A non-tree entry: blob (or link, or submodule commit) id and file mode.
pub type Entry = (Oid, i32);

pub const MODE_TREE: i32 = 0o040000;
pub const MODE_FILE: i32 = 0o100644;
pub const MODE_EXEC: i32 = 0o100755;
pub const MODE_LINK: i32 = 0o120000;

/// One changed path between two trees: `(path, old, new)`, at least one set.
pub type RawChange = (String, Option<Entry>, Option<Entry>);

/// The id of the empty tree.
pub fn empty_tree(repo: &Repository) -> Result<Oid, git2::Error> {
    repo.treebuilder(None)?.write()
}

/// Every non-tree path that differs between `old` and `new`, sorted by
/// path; identical subtrees are never opened.
pub fn diff_trees(
    repo: &Repository,
    old: Option<Oid>,
    new: Option<Oid>,
) -> Result<Vec<RawChange>, git2::Error> {
    let mut out = Vec::new();
    diff_rec(repo, old, new, "", &mut out)?;
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

fn diff_rec(
    repo: &Repository,
    old: Option<Oid>,
    new: Option<Oid>,
    prefix: &str,
    out: &mut Vec<RawChange>,
) -> Result<(), git2::Error> {
    if old == new {
        return Ok(());
    }
    let old_tree = old.map(|id| repo.find_tree(id)).transpose()?;
    let new_tree = new.map(|id| repo.find_tree(id)).transpose()?;
    let mut old_entries: HashMap<Vec<u8>, Entry> = old_tree
        .iter()
        .flat_map(|t| t.iter())
        .map(|e| (e.name_bytes().to_vec(), (e.id(), e.filemode())))
        .collect();
    let visit = |name: &[u8], o: Option<Entry>, n: Option<Entry>, out: &mut Vec<RawChange>| {
        if o == n {
            return Ok::<(), git2::Error>(());
        }
        let path = format!("{prefix}{}", String::from_utf8_lossy(name));
        let o_tree = o.filter(|e| e.1 == MODE_TREE).map(|e| e.0);
        let n_tree = n.filter(|e| e.1 == MODE_TREE).map(|e| e.0);
        let o_leaf = o.filter(|e| e.1 != MODE_TREE);
        let n_leaf = n.filter(|e| e.1 != MODE_TREE);
        if o_tree.is_some() || n_tree.is_some() {
            diff_rec(repo, o_tree, n_tree, &format!("{path}/"), out)?;
        }
        if o_leaf != n_leaf {
            out.push((path, o_leaf, n_leaf));
        }
        Ok(())
    };
    if let Some(tree) = &new_tree {
        for e in tree.iter() {
            let name = e.name_bytes();
            let o = old_entries.remove(name);
            visit(name, o, Some((e.id(), e.filemode())), out)?;
        }
    }
    let mut gone: Vec<(Vec<u8>, Entry)> = old_entries.into_iter().collect();
    gone.sort();
    for (name, e) in gone {
        visit(&name, Some(e), None, out)?;
    }
    Ok(())
}

/// The non-tree entry at `path` in `tree` (`None` when absent or a tree).
pub fn entry_at(repo: &Repository, tree: Oid, path: &str) -> Option<Entry> {
    let tree = repo.find_tree(tree).ok()?;
    let entry = tree.get_path(Path::new(path)).ok()?;
    (entry.kind() != Some(ObjectType::Tree)).then(|| (entry.id(), entry.filemode()))
}

/// Whether `path` is a tree in `tree`.
pub fn is_tree_at(repo: &Repository, tree: Oid, path: &str) -> bool {
    repo.find_tree(tree)
        .ok()
        .and_then(|t| t.get_path(Path::new(path)).ok())
        .is_some_and(|e| e.kind() == Some(ObjectType::Tree))
}

/// Every non-tree entry under directory `dir` of `tree` (full paths).
pub fn entries_under(repo: &Repository, tree: Oid, dir: &str) -> Vec<(String, Entry)> {
    let Ok(root) = repo.find_tree(tree) else {
        return Vec::new();
    };
    let Ok(entry) = root.get_path(Path::new(dir)) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if entry.kind() == Some(ObjectType::Tree) {
        if let Ok(changes) = diff_trees(repo, None, Some(entry.id())) {
            for (path, _, new) in changes {
                if let Some(new) = new {
                    out.push((format!("{dir}/{path}"), new));
                }
            }
        }
    }
    out
}

/// `base` with `changes` applied (`None` deletes a path); writes only the
/// trees on the changed paths. A path may turn from file to directory or
/// back when the change set says so.
pub fn overlay(
    repo: &Repository,
    base: Option<Oid>,
    changes: &BTreeMap<String, Option<Entry>>,
) -> Result<Oid, git2::Error> {
    let list: Vec<(&str, Option<Entry>)> = changes.iter().map(|(p, e)| (p.as_str(), *e)).collect();
    match overlay_rec(repo, base, &list)? {
        Some(id) => Ok(id),
        None => empty_tree(repo),
    }
}

type Group<'a> = (Option<Option<Entry>>, Vec<(&'a str, Option<Entry>)>);

/// Trees written by [`overlay_rec`], by (object database, base tree, change
/// list), so rewriting an unchanged subtree costs a lookup, not a write
/// (libgit2 re-touches an existing loose object on every write).
type MemoKey = (PathBuf, Option<Oid>, Vec<(String, Option<Entry>)>);

thread_local! {
    static MEMO: RefCell<HashMap<MemoKey, Option<Oid>>> = RefCell::new(HashMap::new());
}

const MEMO_LIMIT: usize = 50_000;

fn overlay_rec(
    repo: &Repository,
    base: Option<Oid>,
    changes: &[(&str, Option<Entry>)],
) -> Result<Option<Oid>, git2::Error> {
    let key: MemoKey = (
        repo.commondir().to_path_buf(),
        base,
        changes.iter().map(|(p, e)| (p.to_string(), *e)).collect(),
    );
    if let Some(found) = MEMO.with(|m| m.borrow().get(&key).copied()) {
        return Ok(found);
    }
    let result = overlay_write(repo, base, changes)?;
    MEMO.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() >= MEMO_LIMIT {
            m.clear();
        }
        m.insert(key, result);
    });
    Ok(result)
}

fn overlay_write(
    repo: &Repository,
    base: Option<Oid>,
    changes: &[(&str, Option<Entry>)],
) -> Result<Option<Oid>, git2::Error> {
    let base_tree = match base {
        Some(id) => Some(repo.find_tree(id)?),
        None => None,
    };
    let mut builder = repo.treebuilder(base_tree.as_ref())?;
    let mut groups: BTreeMap<&str, Group<'_>> = BTreeMap::new();
    for (path, entry) in changes {
        match path.split_once('/') {
            Some((first, rest)) => groups.entry(first).or_default().1.push((rest, *entry)),
            None => groups.entry(path).or_default().0 = Some(*entry),
        }
    }
    for (name, (direct, nested)) in groups {
        let existing = builder.get(name)?.map(|e| (e.id(), e.filemode()));
        if direct == Some(None) && existing.is_some_and(|e| e.1 != MODE_TREE) {
            builder.remove(name)?;
        }
        if !nested.is_empty() {
            let existing_tree = builder
                .get(name)?
                .filter(|e| e.filemode() == MODE_TREE)
                .map(|e| e.id());
            match overlay_rec(repo, existing_tree, &nested)? {
                Some(id) => {
                    builder.insert(name, id, MODE_TREE)?;
                }
                None => {
                    if existing_tree.is_some() {
                        builder.remove(name)?;
                    }
                }
            }
        }
        if let Some(Some((id, mode))) = direct {
            builder.insert(name, id, mode)?;
        }
    }
    if builder.is_empty() {
        return Ok(None);
    }
    Ok(Some(builder.write()?))
}

/// A tree with only `paths` of `tree` (the ones that are non-tree entries
/// there).
pub fn restrict<'a>(
    repo: &Repository,
    tree: Oid,
    paths: impl IntoIterator<Item = &'a String>,
) -> Result<Oid, git2::Error> {
    let mut changes = BTreeMap::new();
    for path in paths {
        if let Some(entry) = entry_at(repo, tree, path) {
            changes.insert(path.clone(), Some(entry));
        }
    }
    overlay(repo, None, &changes)
}
