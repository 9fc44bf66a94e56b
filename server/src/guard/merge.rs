//! Three-way merge verdicts of two trees over a base tree, in memory.
//!
//! Two backends give the same answer as `git merge-tree --write-tree`:
//! - **libgit2** (`merge_trees`) on trees *restricted* to the paths either
//!   side changed, so the cost grows with the changes, not the repository.
//!   Used when neither side deletes a path and no file/folder clash exists,
//!   where libgit2 and git's `ort` agree (content merges, additions, modes).
//! - **git** (`git merge-tree --write-tree --merge-base=…`, git ≥ 2.40) for
//!   everything involving deletions — renames, directory renames, edit vs
//!   delete, file vs folder — where libgit2 and `ort` can disagree and git's
//!   answer is the truth.
//!
//! Invariants: no index, working file or ref is touched; only objects are
//! written.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Stdio};

use git2::{MergeOptions, Oid, Repository};

use super::tree::{self, RawChange};
use super::GuardError;

/// Which engine gave a verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// Nothing to merge: one side changed nothing.
    Trivial,
    Libgit2,
    GitCli,
}

/// The result of merging two trees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergeOutcome {
    /// No conflict at all.
    pub clean: bool,
    /// Conflicting paths, sorted (git may report a conflict — a file moved
    /// by a directory rename — with paths named only in its messages; those
    /// are used then).
    pub conflicts: Vec<String>,
    /// The merged tree (conflicting paths take `theirs` where it has the
    /// path; with git, the tree carries conflict markers); only when asked.
    pub tree: Option<Oid>,
    pub backend: Backend,
}

/// Whether any path of `a` is a folder prefix of a path of `b`.
fn folder_clash(a: &BTreeSet<&str>, b: &BTreeSet<&str>) -> bool {
    a.iter().any(|p| {
        let prefix = format!("{p}/");
        b.range(prefix.as_str()..)
            .next()
            .is_some_and(|q| q.starts_with(&prefix))
    })
}

/// Merges `ours` and `theirs` (trees) over `base` (a tree).
pub fn merge_trees(
    repo: &Repository,
    base: Oid,
    ours: Oid,
    theirs: Oid,
    want_tree: bool,
) -> Result<MergeOutcome, GuardError> {
    merge_trees_with_diffs(repo, base, ours, theirs, None, want_tree)
}

/// [`merge_trees`], given the two tree diffs from `base` when the caller
/// has them already.
pub fn merge_trees_with_diffs(
    repo: &Repository,
    base: Oid,
    ours: Oid,
    theirs: Oid,
    diffs: Option<(&[RawChange], &[RawChange])>,
    want_tree: bool,
) -> Result<MergeOutcome, GuardError> {
    let (ours_diff, theirs_diff) = match diffs {
        Some((o, t)) => (o.to_vec(), t.to_vec()),
        None => (
            tree::diff_trees(repo, Some(base), Some(ours))?,
            tree::diff_trees(repo, Some(base), Some(theirs))?,
        ),
    };
    if ours_diff.is_empty() || theirs_diff.is_empty() || ours == theirs {
        let tree = if ours_diff.is_empty() { theirs } else { ours };
        return Ok(MergeOutcome {
            clean: true,
            conflicts: Vec::new(),
            tree: want_tree.then_some(tree),
            backend: Backend::Trivial,
        });
    }
    let ours_paths: BTreeSet<&str> = ours_diff.iter().map(|c| c.0.as_str()).collect();
    let theirs_paths: BTreeSet<&str> = theirs_diff.iter().map(|c| c.0.as_str()).collect();
    let deletes = |d: &[RawChange]| d.iter().any(|c| c.2.is_none());
    let needs_git = deletes(&ours_diff)
        || deletes(&theirs_diff)
        || folder_clash(&ours_paths, &theirs_paths)
        || folder_clash(&theirs_paths, &ours_paths);
    if needs_git {
        return merge_with_git(repo.path(), base, ours, theirs, want_tree);
    }
    if ours_paths.is_disjoint(&theirs_paths) {
        let tree = if want_tree {
            let changes: BTreeMap<String, Option<tree::Entry>> = theirs_diff
                .iter()
                .map(|(p, _, n)| (p.clone(), *n))
                .collect();
            Some(tree::overlay(repo, Some(ours), &changes)?)
        } else {
            None
        };
        return Ok(MergeOutcome {
            clean: true,
            conflicts: Vec::new(),
            tree,
            backend: Backend::Libgit2,
        });
    }
    // Without deletions (so without renames) only paths both sides changed
    // can conflict: merge just those.
    let paths: BTreeSet<String> = ours_paths
        .intersection(&theirs_paths)
        .map(|p| p.to_string())
        .collect();
    let base_r = repo.find_tree(tree::restrict(repo, base, &paths)?)?;
    let ours_r = repo.find_tree(tree::restrict(repo, ours, &paths)?)?;
    let theirs_r = repo.find_tree(tree::restrict(repo, theirs, &paths)?)?;
    let mut opts = MergeOptions::new();
    opts.find_renames(false);
    let index = repo.merge_trees(&base_r, &ours_r, &theirs_r, Some(&opts))?;
    let mut conflicts = BTreeSet::new();
    let mut resolved: BTreeMap<String, Option<tree::Entry>> = BTreeMap::new();
    if index.has_conflicts() {
        for conflict in index.conflicts()? {
            let conflict = conflict?;
            let side = conflict
                .their
                .as_ref()
                .or(conflict.our.as_ref())
                .or(conflict.ancestor.as_ref());
            if let Some(entry) = side {
                let path = String::from_utf8_lossy(&entry.path).into_owned();
                conflicts.insert(path.clone());
                let keep = conflict.their.as_ref().map(|e| (e.id, e.mode as i32));
                resolved.insert(path, keep);
            }
        }
    }
    let tree = if want_tree {
        let mut changes: BTreeMap<String, Option<tree::Entry>> = theirs_diff
            .iter()
            .filter(|(p, _, _)| !paths.contains(p))
            .map(|(p, _, n)| (p.clone(), *n))
            .collect();
        for path in &paths {
            changes.insert(path.clone(), None);
        }
        for entry in index.iter() {
            if (entry.flags >> 12) & 0x3 != 0 {
                continue;
            }
            let path = String::from_utf8_lossy(&entry.path).into_owned();
            changes.insert(path, Some((entry.id, entry.mode as i32)));
        }
        changes.extend(resolved);
        Some(tree::overlay(repo, Some(ours), &changes)?)
    } else {
        None
    };
    Ok(MergeOutcome {
        clean: conflicts.is_empty(),
        conflicts: conflicts.into_iter().collect(),
        tree,
        backend: Backend::Libgit2,
    })
}

/// `git merge-tree --write-tree` on trees with an explicit base.
pub fn merge_with_git(
    git_dir: &Path,
    base: Oid,
    ours: Oid,
    theirs: Oid,
    want_tree: bool,
) -> Result<MergeOutcome, GuardError> {
    let output = Command::new("git")
        .arg("--git-dir")
        .arg(git_dir)
        .args(["merge-tree", "--write-tree", "--name-only", "-z"])
        .arg(format!("--merge-base={base}"))
        .arg(ours.to_string())
        .arg(theirs.to_string())
        .stdin(Stdio::null())
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .map_err(|source| GuardError::Io {
            path: git_dir.to_path_buf(),
            error: source,
        })?;
    let code = output.status.code();
    if code != Some(0) && code != Some(1) {
        return Err(GuardError::GitCli(
            String::from_utf8_lossy(&output.stderr).trim().to_string(),
        ));
    }
    let sides = [ours.to_string(), theirs.to_string()];
    let (clean, tree, conflicts) = parse_merge_tree(&output.stdout, code == Some(0), &sides);
    Ok(MergeOutcome {
        clean,
        conflicts,
        tree: if want_tree { tree } else { None },
        backend: Backend::GitCli,
    })
}

/// Reads `git merge-tree --write-tree --name-only -z` output: the tree,
/// and the conflicting paths (from the conflicted-file section, else from
/// the `CONFLICT` messages). A file/folder clash moves a file aside as
/// `path~<side>`; `sides` are the names given for the two sides, stripped.
pub fn parse_merge_tree(
    stdout: &[u8],
    clean: bool,
    sides: &[String],
) -> (bool, Option<Oid>, Vec<String>) {
    let normalize = |path: String| {
        sides
            .iter()
            .find_map(|side| path.strip_suffix(&format!("~{side}")).map(str::to_string))
            .unwrap_or(path)
    };
    let mut fields = stdout.split(|b| *b == 0);
    let tree = fields
        .next()
        .and_then(|hex| Oid::from_str(&String::from_utf8_lossy(hex)).ok());
    let mut conflicts = BTreeSet::new();
    if clean {
        return (true, tree, Vec::new());
    }
    for field in fields.by_ref() {
        if field.is_empty() {
            break;
        }
        conflicts.insert(normalize(String::from_utf8_lossy(field).into_owned()));
    }
    if conflicts.is_empty() {
        // Messages: <n> NUL <path>… NUL <type> NUL <message> NUL, repeated.
        while let Some(count) = fields.next() {
            let Ok(n) = String::from_utf8_lossy(count).parse::<usize>() else {
                break;
            };
            let paths: Vec<String> = fields
                .by_ref()
                .take(n)
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .collect();
            let kind = fields.next().unwrap_or_default();
            let _message = fields.next();
            if kind.starts_with(b"CONFLICT") {
                conflicts.extend(paths.into_iter().map(normalize));
            }
        }
    }
    (false, tree, conflicts.into_iter().collect())
}
