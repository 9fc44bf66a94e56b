//! Three-way merge verdicts of two trees over a base tree, in memory.
//!
//! Two backends give the same answer as `git merge-tree --write-tree`:
//! - **libgit2** (`merge_trees`) on trees *restricted* to the paths both
//!   sides changed, so the cost grows with the changes, not the repository.
//!   Used where no rename, directory rename or file/folder clash can be
//!   involved ([`needs_git`]), where libgit2 and git's `ort` agree (content
//!   merges, additions, modes).
//! - **git** (`git merge-tree --write-tree --merge-base=…`, git ≥ 2.40) for
//!   the rest — renames, directory renames, edit vs delete, file vs folder
//!   — where libgit2 and `ort` can disagree and git's answer is the truth;
//!   and, given commits, for histories with several merge bases
//!   ([`merge_commits_with_git`]), which git merges recursively.
//!
//! Invariants: no index, working file or ref is touched; only objects are
//! written.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::path::Path;

use git2::{MergeOptions, Oid, Repository};

use super::commit_graph::CommitGraph;
use super::tree::{self, RawChange};
use super::GuardError;
use crate::platform::git::GitCli;

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

/// Whether git must judge a merge of these two diffs (from the same base):
/// where renames (a deletion and an addition on one side), directory
/// renames or file/folder clashes may be involved, libgit2 and git's `ort`
/// can disagree. Elsewhere a merge is path by path, and only paths both
/// sides changed can conflict. Deletions far from the other side's changes
/// (a file the base's history removed, which the session never touched)
/// do not send a merge to git:
/// - a path both changed that one side deleted (edit/delete, a rename's
///   source, rename/rename);
/// - a path both changed that one side added while that side also deleted
///   something (a rename's target);
/// - a path one side added under a folder (not the top one) in which the
///   other deleted something (a directory rename moves it);
/// - a file on one side where the other has a folder.
pub fn needs_git(
    ours: &[RawChange],
    theirs: &[RawChange],
    ours_paths: &BTreeSet<&str>,
    theirs_paths: &BTreeSet<&str>,
) -> bool {
    if folder_clash(ours_paths, theirs_paths) || folder_clash(theirs_paths, ours_paths) {
        return true;
    }
    let deletes = |d: &[RawChange]| d.iter().any(|c| c.2.is_none());
    let (ours_deletes, theirs_deletes) = (deletes(ours), deletes(theirs));
    if !ours_deletes && !theirs_deletes {
        return false;
    }
    fn index(d: &[RawChange]) -> BTreeMap<&str, (bool, bool)> {
        d.iter()
            .map(|(p, o, n)| (p.as_str(), (o.is_none(), n.is_none())))
            .collect()
    }
    let (ours_kinds, theirs_kinds) = (index(ours), index(theirs));
    for path in ours_paths.intersection(theirs_paths) {
        let (o_added, o_deleted) = ours_kinds[path];
        let (t_added, t_deleted) = theirs_kinds[path];
        if o_deleted || t_deleted || (o_added && ours_deletes) || (t_added && theirs_deletes) {
            return true;
        }
    }
    added_under_emptied(ours, theirs) || added_under_emptied(theirs, ours)
}

/// Whether `b` added a path under a folder (not the top one) in which `a`
/// deleted a path.
fn added_under_emptied(a: &[RawChange], b: &[RawChange]) -> bool {
    let mut folders: BTreeSet<&str> = BTreeSet::new();
    for (path, _, new) in a {
        if new.is_none() {
            let mut dir = path.as_str();
            while let Some((up, _)) = dir.rsplit_once('/') {
                if !folders.insert(up) {
                    break;
                }
                dir = up;
            }
        }
    }
    if folders.is_empty() {
        return false;
    }
    b.iter()
        .filter(|(_, old, _)| old.is_none())
        .any(|(path, _, _)| {
            let mut dir = path.as_str();
            while let Some((up, _)) = dir.rsplit_once('/') {
                if folders.contains(up) {
                    return true;
                }
                dir = up;
            }
            false
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
    if needs_git(&ours_diff, &theirs_diff, &ours_paths, &theirs_paths) {
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
    let (conflicts, resolved) = index_conflicts(&index)?;
    let tree = if want_tree {
        Some(merged_tree(
            repo,
            ours,
            &theirs_diff,
            &paths,
            &index,
            resolved,
        )?)
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

/// An entry (id, mode) per path, or `None` for a path the merge removes.
type Resolved = BTreeMap<String, Option<tree::Entry>>;

/// The conflicting paths of a merge index, and how each is resolved in
/// the merged tree (their side's entry, or removed).
fn index_conflicts(index: &git2::Index) -> Result<(BTreeSet<String>, Resolved), GuardError> {
    let mut conflicts = BTreeSet::new();
    let mut resolved = Resolved::new();
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
    Ok((conflicts, resolved))
}

/// `ours` with `theirs_diff` laid over it, the restricted `paths` taken
/// from the merge `index` (and the conflicting ones as `resolved`).
fn merged_tree(
    repo: &Repository,
    ours: Oid,
    theirs_diff: &[RawChange],
    paths: &BTreeSet<String>,
    index: &git2::Index,
    resolved: Resolved,
) -> Result<Oid, GuardError> {
    let mut changes: Resolved = theirs_diff
        .iter()
        .filter(|(p, _, _)| !paths.contains(p))
        .map(|(p, _, n)| (p.clone(), *n))
        .collect();
    for path in paths {
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
    Ok(tree::overlay(repo, Some(ours), &changes)?)
}

/// `git merge-tree --write-tree` on trees with an explicit base.
pub fn merge_with_git(
    git_dir: &Path,
    base: Oid,
    ours: Oid,
    theirs: Oid,
    want_tree: bool,
) -> Result<MergeOutcome, GuardError> {
    git_merge_tree(git_dir, None, Some(base), ours, theirs, want_tree)
}

/// `git merge-tree --write-tree` on two commits: git finds their merge
/// bases itself (and merges several recursively, as `git merge` does),
/// reading `graph` when given (brought up to date with the two commits
/// first: [`CommitGraph::cover`]).
pub fn merge_commits_with_git(
    git_dir: &Path,
    graph: Option<&mut CommitGraph>,
    ours: Oid,
    theirs: Oid,
    want_tree: bool,
) -> Result<MergeOutcome, GuardError> {
    let graph = graph.map(|g| {
        g.cover(&[ours, theirs]);
        &*g
    });
    git_merge_tree(git_dir, graph, None, ours, theirs, want_tree)
}

/// [`merge_commits_with_git`] for each of `merges` (`(ours, theirs)`), the
/// same verdicts and trees, in `jobs` `git merge-tree --stdin` processes
/// at most (the merges split between them, run side by side): each
/// process reads the history its merge bases need once for all its
/// merges, where one process per merge reads it again each time (most of
/// a merge's cost in a big history without a commit-graph). In the order
/// given. With `graph`, git reads it (brought up to date with the commits
/// first: [`CommitGraph::cover`]) and parses no commit it holds.
pub fn merge_commits_batch(
    git_dir: &Path,
    graph: Option<&mut CommitGraph>,
    merges: &[(Oid, Oid)],
    jobs: usize,
) -> Result<Vec<MergeOutcome>, GuardError> {
    if merges.is_empty() {
        return Ok(Vec::new());
    }
    let graph = graph.map(|g| {
        let commits: Vec<Oid> = merges.iter().flat_map(|(o, t)| [*o, *t]).collect();
        g.cover(&commits);
        &*g
    });
    let per_job = merges.len().div_ceil(jobs.max(1));
    let results: Vec<Result<Vec<MergeOutcome>, GuardError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = merges
            .chunks(per_job)
            .map(|chunk| scope.spawn(move || merge_tree_stdin(git_dir, graph, chunk)))
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(GuardError::Internal("a merge thread panicked".into())))
            })
            .collect()
    });
    let mut out = Vec::with_capacity(merges.len());
    for result in results {
        out.extend(result?);
    }
    Ok(out)
}

/// One `git merge-tree --stdin` for `merges`: its output is, per merge,
/// the status (`1` clean, `0` not), then what `-z --name-only` prints for
/// one merge (tree; with conflicts, the conflicting paths, an empty field
/// and the messages), then an empty field.
fn merge_tree_stdin(
    git_dir: &Path,
    graph: Option<&CommitGraph>,
    merges: &[(Oid, Oid)],
) -> Result<Vec<MergeOutcome>, GuardError> {
    let args: Vec<OsString> = vec![
        "--git-dir".into(),
        git_dir.into(),
        "merge-tree".into(),
        "--stdin".into(),
        "--write-tree".into(),
        "--name-only".into(),
        "-z".into(),
        "--allow-unrelated-histories".into(),
    ];
    let input: String = merges.iter().map(|(o, t)| format!("{o} {t}\n")).collect();
    let output = runner(git_dir, graph)
        .output_with_input(&args, input.into_bytes())
        .map_err(|source| GuardError::Io {
            path: git_dir.to_path_buf(),
            error: source,
        })?;
    if !output.status.success() {
        return Err(GuardError::GitCli(
            String::from_utf8_lossy(&output.stderr).trim().to_string(),
        ));
    }
    let mut fields = output.stdout.split(|b| *b == 0);
    merges
        .iter()
        .map(|(ours, theirs)| {
            let (clean, one) = one_merge(&mut fields).ok_or_else(|| {
                GuardError::GitCli("git merge-tree --stdin: output not understood".into())
            })?;
            let sides = [ours.to_string(), theirs.to_string()];
            let (clean, tree, conflicts) = parse_merge_tree(&one, clean, &sides);
            Ok(MergeOutcome {
                clean,
                conflicts,
                tree,
                backend: Backend::GitCli,
            })
        })
        .collect()
}

/// The next merge of `git merge-tree --stdin -z --name-only`'s output
/// `fields`: whether it is clean, and its own output as one merge prints
/// it (what [`parse_merge_tree`] reads); `None` when malformed.
fn one_merge<'a>(fields: &mut impl Iterator<Item = &'a [u8]>) -> Option<(bool, Vec<u8>)> {
    let clean = match fields.next()? {
        b"1" => true,
        b"0" => false,
        _ => return None,
    };
    let mut one: Vec<u8> = Vec::new();
    let mut keep = |field: &[u8]| {
        one.extend_from_slice(field);
        one.push(0);
    };
    keep(fields.next()?);
    if clean {
        return fields.next()?.is_empty().then_some((clean, one));
    }
    // The conflicting paths, up to an empty field.
    loop {
        let path = fields.next()?;
        keep(path);
        if path.is_empty() {
            break;
        }
    }
    // Messages: <n> NUL <path>… NUL <type> NUL <message> NUL, up to an
    // empty field.
    loop {
        let count = fields.next()?;
        if count.is_empty() {
            return Some((clean, one));
        }
        keep(count);
        let n: usize = std::str::from_utf8(count).ok()?.parse().ok()?;
        for _ in 0..n + 2 {
            keep(fields.next()?);
        }
    }
}

/// git in `git_dir`, reading `graph` when given.
fn runner(git_dir: &Path, graph: Option<&CommitGraph>) -> GitCli {
    graph.map_or_else(|| GitCli::new(git_dir), CommitGraph::git)
}

fn git_merge_tree(
    git_dir: &Path,
    graph: Option<&CommitGraph>,
    base: Option<Oid>,
    ours: Oid,
    theirs: Oid,
    want_tree: bool,
) -> Result<MergeOutcome, GuardError> {
    let mut args: Vec<OsString> = vec![
        "--git-dir".into(),
        git_dir.into(),
        "merge-tree".into(),
        "--write-tree".into(),
        "--name-only".into(),
        "-z".into(),
    ];
    match base {
        Some(base) => args.push(format!("--merge-base={base}").into()),
        None => args.push("--allow-unrelated-histories".into()),
    }
    args.push(ours.to_string().into());
    args.push(theirs.to_string().into());
    let output = runner(git_dir, graph)
        .output(&args)
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
